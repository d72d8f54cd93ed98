package probes

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/results"
)

// TestMarginalCost recovers the rate and the per-call cost from synthetic
// times t = c + bytes/rate, one line per repetition.
func TestMarginalCost(t *testing.T) {
	const b0, b1 = 8704, 34816
	lines := []struct{ ns, gbps float64 }{{150, 40}, {120, 38}, {0, 50}, {400, 12.5}}
	var s0, s1 []float64
	for _, l := range lines {
		s0 = append(s0, l.ns*1e-9+b0/(l.gbps*1e9))
		s1 = append(s1, l.ns*1e-9+b1/(l.gbps*1e9))
	}
	gbps, ns, dropped, err := MarginalCost(b0, b1, s0, s1)
	if err != nil || dropped != 0 {
		t.Fatal(dropped, err)
	}
	if len(gbps) != len(lines) || len(ns) != len(lines) {
		t.Fatalf("%d rates, %d intercepts, want %d", len(gbps), len(ns), len(lines))
	}
	for i, l := range lines {
		if math.Abs(gbps[i]-l.gbps) > 1e-9*l.gbps || math.Abs(ns[i]-l.ns) > 1e-6 {
			t.Errorf("repetition %d: %v GB/s, %v ns; want %v, %v", i, gbps[i], ns[i], l.gbps, l.ns)
		}
	}
	// The whole-call rate of the small panel is below the marginal one by
	// the per-call cost: what γ from one call overstated.
	if whole := b0 / s0[0] / 1e9; !(whole < gbps[0]) {
		t.Errorf("whole-call %v GB/s not below marginal %v", whole, gbps[0])
	}
	// A larger panel streaming slower per byte (L2) gives a negative
	// intercept, kept as measured.
	_, ns, _, err = MarginalCost(100, 200, []float64{1e-6}, []float64{2.5e-6})
	if err != nil || !(ns[0] < 0) || math.Abs(ns[0]-(-500)) > 1e-6 {
		t.Errorf("steeper line: %v ns, %v; want -500", ns, err)
	}
	// A pair whose smaller panel was slowed down past the larger one is
	// left out and counted.
	gbps, ns, dropped, err = MarginalCost(b0, b1, []float64{s0[0], 2e-6, s0[1]}, []float64{s1[0], 1e-6, s1[1]})
	if err != nil || dropped != 1 || len(gbps) != 2 || math.Abs(gbps[1]-38) > 1e-9 || math.Abs(ns[1]-120) > 1e-6 {
		t.Errorf("one pair left out: %v GB/s, %v ns, %d dropped, %v", gbps, ns, dropped, err)
	}
}

func TestMarginalCostErrors(t *testing.T) {
	for _, c := range []struct {
		b0, b1 int64
		s0, s1 []float64
		want   string
	}{
		{0, 10, []float64{1}, []float64{2}, "panel bytes 0 and 10"},
		{10, 10, []float64{1}, []float64{2}, "panel bytes 10 and 10"},
		{20, 10, []float64{1}, []float64{2}, "panel bytes 20 and 10"},
		{10, 20, nil, nil, "0 and 0 repetitions"},
		{10, 20, []float64{1, 2}, []float64{2}, "2 and 1 repetitions"},
		{10, 20, []float64{1, math.NaN()}, []float64{2, 3}, "repetition 1: times NaN s and 3 s"},
		{10, 20, []float64{1}, []float64{math.Inf(1)}, "repetition 0: times 1 s and +Inf s"},
		{10, 20, []float64{-1}, []float64{2}, "repetition 0: times -1 s"},
		{10, 20, []float64{3, 2}, []float64{3, 2}, "in all 2 repetitions 20 B took no longer than 10 B (e.g. 3e+09 ns against 3e+09 ns)"},
	} {
		_, _, _, err := MarginalCost(c.b0, c.b1, c.s0, c.s1)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("MarginalCost(%d, %d, %v, %v) = %v, want one line with %q", c.b0, c.b1, c.s0, c.s1, err, c.want)
		}
	}
}

// TestQuantEBWMarginal: γ comes from the marginal rate, not the whole
// call's, and ebw = min(β, 32/γ) per thread count.
func TestQuantEBWMarginal(t *testing.T) {
	up := UpconvertCost{Rows: 16, K: [2]int{4096, 16384}, Bytes: [2]int64{12288, 49152},
		PanelGBps: results.Stat{Median: 20, N: 5}, MarginalGBps: results.Stat{Median: 36, N: 5}, PerCallNs: results.Stat{Median: 270, N: 5}}
	mem := &results.Memory{Levels: []results.LevelBandwidth{{Level: "DRAM", Threads: 1, GBps: results.Stat{Median: 26}}, {Level: "DRAM", Threads: 2, GBps: results.Stat{Median: 56}}}}
	gemv := []results.GEMMResult{{Backend: "x-int1", M: 1, Threads: 2, WeightGBps: 40}}
	q := quantEBW("x-int1", quant.Int1, up, 3.6e9, "test", mem, []int{1, 2}, gemv)
	if want := 32 * 3.6e9 / 36e9; math.Abs(q.GammaCycles-want) > 1e-12 {
		t.Errorf("γ %v, want %v (the marginal rate's)", q.GammaCycles, want)
	}
	if q.MarginalGBps == nil || q.MarginalGBps.Median != 36 || q.PerCallNs == nil || q.PerCallNs.Median != 270 || q.UpconvertGBps.Median != 20 ||
		len(q.PanelBytes) != 2 || q.PanelBytes[1] != 49152 || !strings.Contains(q.GammaMethod, "12288 and 49152 B") {
		t.Errorf("record %+v", q)
	}
	if len(q.Points) != 2 {
		t.Fatalf("points %+v", q.Points)
	}
	// 1 thread: β 26 GB/s below B/γ 36 GB/s: memory-bound at 26.
	if p := q.Points[0]; p.Limit != results.LimitMemory || math.Abs(p.EBWGBps-26) > 1e-9 {
		t.Errorf("1 thread: %+v", p)
	}
	mem.Levels[0].GBps.Median = 40 // β above B/γ: up-convert-bound at 36 GB/s per thread
	q = quantEBW("x-int1", quant.Int1, up, 3.6e9, "test", mem, []int{1, 2}, gemv)
	if p := q.Points[0]; p.Limit != results.LimitUpConvert || math.Abs(p.EBWGBps-36) > 1e-9 {
		t.Errorf("1 thread, β 40 GB/s: %+v", p)
	}
	if p := q.Points[1]; p.Limit != results.LimitMemory || math.Abs(p.EBWGBps-56) > 1e-9 || p.MeasuredGBps != 40 || math.Abs(p.Ratio-40.0/56) > 1e-12 {
		t.Errorf("2 threads: %+v", p)
	}
	// No marginal rate (or no clock): no γ, no points.
	if q := quantEBW("x-int1", quant.Int1, UpconvertCost{}, 3.6e9, "test", mem, []int{1}, nil); q.GammaCycles != 0 || len(q.Points) != 0 {
		t.Errorf("no marginal rate: %+v", q)
	}
}

// TestHeldEBW: the formats without kernels of their own get their layout
// format's record, without its measured GEMV.
func TestHeldEBW(t *testing.T) {
	kernel := map[quant.Format]bool{}
	for _, f := range quant.KernelFormats() {
		kernel[f] = true
	}
	for _, f := range quant.Formats() {
		k, held := heldAs[f]
		if held == kernel[f] || (held && (!kernel[k] || f.BytesPerWeight() != k.BytesPerWeight())) {
			t.Errorf("%s: heldAs %q (kernel format: %v)", f, k, kernel[f])
		}
	}
	be := quant.Backend{Name: "x"}
	q := results.QuantEBW{Format: "int2", Backend: "x-int2", BytesPerWeight: 0.3125, GammaCycles: 3, GammaMethod: "marginal: m",
		Points: []results.QuantEBWPoint{{Threads: 2, EBWGBps: 50, MeasuredGBps: 45, Ratio: 0.9}}}
	h := heldEBW(q, be)
	if len(h) != 2 || h[0].Format != "tq2_0" || h[1].Format != "tq1_0" || h[1].Backend != "x-tq1_0" {
		t.Fatalf("held %+v", h)
	}
	for _, r := range h {
		if r.GammaCycles != 3 || r.Points[0].EBWGBps != 50 || r.Points[0].MeasuredGBps != 0 || r.Points[0].Ratio != 0 ||
			!strings.Contains(r.GammaMethod, "int2's kernel") || !strings.Contains(r.GammaMethod, "marginal: m") {
			t.Errorf("%+v", r)
		}
	}
	if q.Points[0].MeasuredGBps != 45 {
		t.Error("heldEBW changed its argument's points")
	}
	if h := heldEBW(results.QuantEBW{Format: "q8_0"}, be); len(h) != 0 {
		t.Errorf("q8_0: %+v", h)
	}
}

// TestGEMVRowsDRAMSized checks that the matrix section's quantized GEMV
// weight is maxWS bytes less at most 64 rows (so a maxWS of 4× the LLC
// keeps it 4× the LLC but for a rounding), for every kernel format and the
// probe's working sets: a weight that fits the caches would report cache
// bandwidth as the kernel's DRAM rate.
func TestGEMVRowsDRAMSized(t *testing.T) {
	for _, ws := range []int64{64 << 20, 92 << 20, 1 << 30} {
		for _, f := range quant.KernelFormats() {
			bpw := f.BytesPerWeight()
			n := gemvRows(ws, bpw)
			got := float64(n) * gemvK * bpw
			if n%64 != 0 || got > float64(ws) || got <= float64(ws)-64*gemvK*bpw {
				t.Errorf("%s at maxWS %d B: N %d gives a %.0f B weight: want a multiple of 64 rows within 64 rows below maxWS", f, ws, n, got)
			}
		}
	}
}

// The up-convert measurement (γ) times the kernel Mul runs on the weights
// as the engine repacks them: its panels are one tile of the backend's
// layout for every format (a column-order group where
// Backend.ColumnFormats holds the format, q4_k and q6_k included on the
// AVX-512 backends), at a K the format accepts.
func TestUpconvertPanelLayout(t *testing.T) {
	for _, be := range quant.Backends() {
		if be.Unavailable != "" {
			continue
		}
		for _, f := range quant.KernelFormats() {
			rows := upconvertRows(be, f)
			k := upconvertK(f, rows)
			w, err := NewQuantWeights(be, f, rows, k, 3)
			if err != nil {
				t.Fatalf("%s %s: %v", be.Name, f, err)
			}
			want := quant.LaneOrder
			if slices.Contains(be.ColumnFormats(), f) {
				want = quant.ColumnOrder
			}
			if w.W.Layout() != want || w.W.RowTile() != rows {
				t.Errorf("%s %s: panel of %d rows in %s (row tile %d), want %s", be.Name, f, rows, w.W.Layout(), w.W.RowTile(), want)
			}
		}
	}
}
