//go:build purego || !(amd64 || arm64)

package peak

// archKernels: no assembly in this build (tag purego, or a GOARCH without
// compute kernels yet: arm64 NEON/SVE/SME are still to come), so no
// compute ceilings.
func archKernels(Microarch) []Kernel { return nil }

func wideKernel(string) (Kernel, bool) { return Kernel{}, false }

func addChainImpl(int) (uint64, bool) { return 0, false }
