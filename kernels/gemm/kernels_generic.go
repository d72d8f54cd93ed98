//go:build purego || !amd64

package gemm

// archImpls: no assembly in this build (tag purego, or a GOARCH without
// kernels: arm64 runs the "go" backends); only the "go" backends exist.
func archImpls() []*impl { return nil }
