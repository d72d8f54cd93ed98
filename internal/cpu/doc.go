// Package cpu reads the CPU's ISA features once, at init, into package-level
// bools that kernels dispatch on. x86 features come from klauspost/cpuid/v2;
// arm64 features come from AT_HWCAP/AT_HWCAP2 (SVE, SME and SME2 are exposed
// by neither cpuid/v2 nor golang.org/x/sys/cpu).
//
// Tests force slower paths with the Disable functions, each of which returns
// its own undo: `defer cpu.DisableAVX512()()`.
//
// This package imports no other package of bench.
package cpu
