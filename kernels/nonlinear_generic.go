//go:build purego || !amd64

package kernels

// archNonlinearImpls: no non-linear assembly in this build (tag purego, or
// a GOARCH without it: arm64 NEON kernels are not written yet).
func archNonlinearImpls() []NonlinearImpl { return nil }

func bestNL() *nlKernels { return &goNLKernels }
