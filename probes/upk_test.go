package probes

import (
	"testing"

	"github.com/cpubench/bench/kernels/quant"
)

func TestUpconvertK(t *testing.T) {
	want := map[quant.Format]int{quant.Q8_0: 2048, quant.Q4_0: 4096, quant.Int2: 8192, quant.Int1: 16384}
	for f, k := range want {
		if got := upconvertK(f, quant.PanelRows); got != k {
			t.Errorf("upconvertK(%s, %d) = %d, want %d", f, quant.PanelRows, got, k)
		}
	}
	// One column-order group of 16 rows holds the same 8 KiB.
	for f, k := range map[quant.Format]int{quant.Q8_0: 512, quant.Q4_0: 1024, quant.Int2: 2048, quant.Int1: 4096} {
		if got := upconvertK(f, quant.ColRows); got != k {
			t.Errorf("upconvertK(%s, %d) = %d, want %d", f, quant.ColRows, got, k)
		}
	}
}
