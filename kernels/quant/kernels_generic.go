//go:build purego || (!amd64 && !arm64)

package quant

// archImpls: no assembly in this build (tag purego, or neither amd64 nor
// arm64).
func archImpls() []*impl { return nil }
