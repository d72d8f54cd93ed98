//go:build purego || !(amd64 || arm64)

package gemm

// archImpls: no assembly in this build (tag purego, or a GOARCH without
// kernels: neither amd64 nor arm64); only the "go" backends exist.
func archImpls() []*impl { return nil }
