//go:build amd64 || 386

package cpu

import "github.com/klauspost/cpuid/v2"

func detect() {
	c := &cpuid.CPU
	X86.HasSSE2 = c.Supports(cpuid.SSE2)
	X86.HasAVX = c.Supports(cpuid.AVX)
	X86.HasAVX2 = c.Supports(cpuid.AVX2)
	X86.HasFMA = c.Supports(cpuid.FMA3)
	X86.HasF16C = c.Supports(cpuid.F16C)
	X86.HasAVX512F = c.Supports(cpuid.AVX512F)
	X86.HasAVX512BW = c.Supports(cpuid.AVX512BW)
	X86.HasAVX512DQ = c.Supports(cpuid.AVX512DQ)
	X86.HasAVX512VL = c.Supports(cpuid.AVX512VL)
	X86.HasAVX512BF16 = c.Supports(cpuid.AVX512BF16)
	X86.HasAVX512FP16 = c.Supports(cpuid.AVX512FP16)
	X86.HasAVX512VNNI = c.Supports(cpuid.AVX512VNNI)
	X86.HasAVXVNNI = c.Supports(cpuid.AVXVNNI)
	X86.HasGFNI = c.Supports(cpuid.GFNI)
	X86.HasAMXTile = c.Supports(cpuid.AMXTILE)
	X86.HasAMXBF16 = c.Supports(cpuid.AMXBF16)
	X86.HasAMXInt8 = c.Supports(cpuid.AMXINT8)
	RawFeatures = c.FeatureSet()
}
