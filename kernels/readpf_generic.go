//go:build purego || !amd64

package kernels

import "github.com/cpubench/bench/kernels/registry"

// No prefetching read kernel in this build (tag purego, or not amd64):
// ReadPF is its Go specification.
func readPFImpls() []registry.Entry[readPFFunc] { return nil }
