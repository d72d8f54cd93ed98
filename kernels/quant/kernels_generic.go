//go:build purego || !amd64

package quant

// archImpls: no assembly in this build (tag purego, or not amd64).
func archImpls() []*impl { return nil }
