//go:build purego || !(amd64 || arm64)

package kernels

// archNonlinearImpls: no non-linear assembly in this build (tag purego, or
// a GOARCH without it; amd64 and arm64 have nonlinear_amd64.go / nonlinear_arm64.go).
func archNonlinearImpls() []NonlinearImpl { return nil }

func bestNL() *nlKernels { return &goNLKernels }
