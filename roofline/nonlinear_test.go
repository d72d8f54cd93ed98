package roofline

import (
	"math"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestNonlinearRateFor: each non-linear operator is timed at its own
// kernel's rate at its row width — between two measured widths, the rate
// of a row time interpolated linearly in width; outside them, the
// nearest's —, the softmax's rate standing in for kernels without one.
func TestNonlinearRateFor(t *testing.T) {
	n := &Nonlinear{GElemsPerS: 2, Rates: []NonlinearRate{
		{Kernel: "rmsnorm", RowElems: 128, GElemsPerS: 3},
		{Kernel: "rmsnorm", RowElems: 1024, GElemsPerS: 9},
		{Kernel: "rmsnorm", RowElems: 4096, GElemsPerS: 10},
		{Kernel: "silu", GElemsPerS: 4},
		{Kernel: "softmax", RowElems: 128, GElemsPerS: 1.5},
		{Kernel: "softmax", RowElems: 4096, GElemsPerS: 2.3},
	}}
	for _, c := range []struct {
		op    string
		width int
		want  float64
	}{
		{OpQKNorm, 128, 3},
		{OpAttnNorm, 1024, 9},
		{OpFinalNorm, 5120, 10},
		{OpFFNNorm, 300, 300 / (128.0/3 + 172.0/896*(1024.0/9-128.0/3))}, // row time between 128's and 1024's
		{OpAttnNorm, 64, 3}, // below the smallest: its rate
		{OpSiLUMul, 3072, 4},
		{OpExpertSiLUMul, 768, 4},
		{OpRoPE, 128, 2}, // no rope rate: the softmax's
		{OpSoftmax, 0, 2.3},
	} {
		if got, used := n.RateFor(c.op, c.width); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("RateFor(%s, %d) = %v (%s), want %v", c.op, c.width, got, used, c.want)
		}
	}
}

// TestNonlinearRatesFromProfile: the profile's one-thread points become
// rates per kernel and row, the fastest backend's, × the workers;
// multi-thread points and kernels no operator runs are left out.
func TestNonlinearRatesFromProfile(t *testing.T) {
	st := func(v float64) results.Stat { return results.Stat{Median: v, N: 5} }
	pts := []results.NonlinearPoint{
		{Kernel: "rmsnorm", Backend: "go", RowElems: 128, Threads: 1, GElemsPerSec: st(0.3)},
		{Kernel: "rmsnorm", Backend: "avx512", RowElems: 128, Threads: 1, GElemsPerSec: st(4)},
		{Kernel: "rmsnorm", Backend: "avx512", RowElems: 128, Threads: 2, GElemsPerSec: st(8)},
		{Kernel: "gelu_tanh", Backend: "avx512", Threads: 1, GElemsPerSec: st(1.8)},
		{Kernel: "silu", Backend: "avx2", Threads: 1, GElemsPerSec: st(1.8)},
	}
	got := nonlinearRates(pts, 2)
	want := []NonlinearRate{{Kernel: "rmsnorm", RowElems: 128, GElemsPerS: 8}, {Kernel: "silu", GElemsPerS: 3.6}}
	if len(got) != len(want) {
		t.Fatalf("nonlinearRates = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Kernel != want[i].Kernel || got[i].RowElems != want[i].RowElems || math.Abs(got[i].GElemsPerS-want[i].GElemsPerS) > 1e-12 {
			t.Errorf("rate %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestColdLines: with the probe's cold-line cost, a decode-sized vector
// operator on the caller, while the weights stream from DRAM, takes at
// least its lines × that cost (kv_write's K half one line per element);
// without the cost, or with the weights in a cache, the roofs alone.
func TestColdLines(t *testing.T) {
	kv := Operator{Name: OpKVWrite, Kind: KindElementwise, Elems: 2048, Rows: 16, Width: 128}
	kv.Bytes.KVWrite = 2048 * 4
	m := &Machine{}
	if got, want := m.coldLines(kv, 1), 1024+4096/64.0; got != want {
		t.Errorf("kv_write lines %v, want %v", got, want)
	}
	add := Operator{Name: OpAttnResidual, Kind: KindElementwise, Elems: 1024, Rows: 1, Width: 1024}
	add.Bytes.ActIn, add.Bytes.ActOut = 8192, 4096
	if got := m.coldLines(add, 1); got != 192 {
		t.Errorf("residual lines %v, want 192", got)
	}
}
