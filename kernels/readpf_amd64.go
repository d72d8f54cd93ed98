//go:build !purego

package kernels

import (
	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// readPFAVX2 returns the sum of x (the loop of readPFGo), prefetching
// every cache line ahead bytes before loading it (PREFETCHT0); generated
// by _asm/readpf into readpf_amd64.s.
//
//go:noescape
func readPFAVX2(x []float64, ahead int) float64

// readPFImpls is the AVX2 kernel, usable where the CPU has AVX2.
func readPFImpls() []registry.Entry[readPFFunc] {
	return []registry.Entry[readPFFunc]{{Name: "avx2", ISA: "avx2", Value: readPFAVX2,
		Lacks: func() string { return lacks("AVX2", cpu.X86.HasAVX2) }}}
}
