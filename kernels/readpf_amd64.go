//go:build !purego

package kernels

import "github.com/cpubench/bench/internal/cpu"

// readPFAVX2 returns the sum of x (the loop of readPFGo), prefetching
// every cache line ahead bytes before loading it (PREFETCHT0); generated
// by _asm/readpf into readpf_amd64.s.
//
//go:noescape
func readPFAVX2(x []float64, ahead int) float64

func readPF(x []float64, ahead int) float64 {
	if cpu.X86.HasAVX2 {
		return readPFAVX2(x, ahead)
	}
	return readPFGo(x, ahead)
}

func readPFISA() string {
	if cpu.X86.HasAVX2 {
		return "avx2"
	}
	return "go"
}
