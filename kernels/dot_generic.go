//go:build purego || !amd64

package kernels

import "github.com/cpubench/bench/kernels/registry"

// archDotImpls: no DotRows/AxpyRows assembly in this build (tag purego, or
// a GOARCH other than amd64, arm64 included: they use the Go loops).
func archDotImpls() []registry.Entry[*dotImpl] { return nil }
