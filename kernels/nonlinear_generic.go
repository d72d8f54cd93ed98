//go:build purego || !(amd64 || arm64)

package kernels

import "github.com/cpubench/bench/kernels/registry"

// archNonlinearImpls: no non-linear assembly in this build (tag purego, or
// a GOARCH without it; amd64 and arm64 have nonlinear_amd64.go / nonlinear_arm64.go).
func archNonlinearImpls() []registry.Entry[*nlKernels] { return nil }
