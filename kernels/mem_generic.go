//go:build purego || !(amd64 || arm64)

package kernels

// archMemImpls: no assembly in this build (tag purego, or a GOARCH without
// kernels); only the "go" implementation exists.
func archMemImpls() []MemImpl { return nil }
