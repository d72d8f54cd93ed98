package kernels

import (
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// TestReadPFMatchesSpec checks ReadPF against its Go specification at
// lengths that exercise the block loop, the vector loop and the scalar
// tail, with the AVX2 kernel and with it disabled (the Go twin).
func TestReadPFMatchesSpec(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 31, 32, 33, 37, 64, 1000, 4099} {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i & 7) // exact sums, any order
		}
		want := readPFGo(x, 0)
		if got := ReadPF(x); got != want {
			t.Errorf("n=%d (%s): ReadPF %v, want %v", n, ReadPFISA(), got, want)
		}
		// Prefetch distances that reach past the end never fault.
		if got := readPF(x, 1<<20); got != want {
			t.Errorf("n=%d ahead 1 MiB: %v, want %v", n, got, want)
		}
	}
	undo := cpu.DisableAVX2()
	defer undo()
	if ReadPFISA() != "go" {
		t.Errorf("AVX2 disabled: ReadPFISA %q, want go", ReadPFISA())
	}
	if got := ReadPF([]float64{1, 2, 3}); got != 6 {
		t.Errorf("go twin: %v", got)
	}
}
