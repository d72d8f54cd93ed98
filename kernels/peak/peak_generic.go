//go:build purego || !(amd64 || arm64)

package peak

import "github.com/cpubench/bench/kernels/registry"

// archKernels: no assembly in this build (tag purego, or a GOARCH other
// than amd64 and arm64), so no compute ceilings.
func archKernels() []registry.Entry[build] { return nil }

func wideKernel(string) (Kernel, bool) { return Kernel{}, false }

func addChainImpl(int) (uint64, bool) { return 0, false }
