package probes

import (
	"testing"

	"github.com/cpubench/bench/kernels/quant"
)

func TestUpconvertK(t *testing.T) {
	want := map[quant.Format]int{quant.Q8_0: 2048, quant.Q4_0: 4096, quant.Int2: 8192, quant.Int1: 16384}
	for f, k := range want {
		if got := upconvertK(f); got != k {
			t.Errorf("upconvertK(%s) = %d, want %d", f, got, k)
		}
	}
}
