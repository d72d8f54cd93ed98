package roofline

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestEffectiveBandwidthPaper reproduces the low-bit paper's §III-F numbers:
// 2-bit (B = 8): γ_P = 1.25 → 6.4, γ_E = 2.175 → 3.68 bytes/cycle;
// 1-bit (B = 4): γ_P = 2.4 → 1.7, γ_E = 4.71 → 0.85 bytes/cycle.
func TestEffectiveBandwidthPaper(t *testing.T) {
	for _, c := range []struct{ B, gamma, cap, printed, tol float64 }{
		{8, 1.25, 6.4, 6.4, 1e-12}, {8, 2.175, 3.678, 3.68, 0.005},
		{4, 2.4, 1.667, 1.7, 0.05}, {4, 4.71, 0.849, 0.85, 0.005},
	} {
		got := EffectiveBandwidth(100, c.B, c.gamma) // β large: the compute cap binds
		if !near(got, c.printed, c.tol) {
			t.Errorf("ebw(B=%v, γ=%v) = %v, paper %v", c.B, c.gamma, got, c.printed)
		}
		if got := EffectiveBandwidth(0.8, c.B, c.gamma); got != math.Min(0.8, c.B/c.gamma) {
			t.Errorf("β-bound case: %v", got)
		}
	}
}

// TestPerCoreBeta shows the paper's printed β (§IV-B) follow from treating
// GB/s as GiB/s: SI units give 7% less. The inputs are the per-core shares
// the paper prints (ARL: "each core can draw 4 GB/s", rounded from 98/24).
func TestPerCoreBeta(t *testing.T) {
	for _, c := range []struct {
		name           string
		gbps           float64
		cores          int
		pGHz, eGHz     float64
		printP, printE float64
	}{
		{"ARL", 4, 1, 5.4, 4.5, 0.8, 0.95},
		{"ARLH", 5.36, 1, 4, 3.6, 1.44, 1.6},
		{"LNL", 12.1, 1, 4.1, 3.7, 3.18, 3.52},
	} {
		p := PerCoreBytesPerCycle(c.gbps, c.cores, c.pGHz, GiB)
		e := PerCoreBytesPerCycle(c.gbps, c.cores, c.eGHz, GiB)
		if !near(p, c.printP, 0.015) || !near(e, c.printE, 0.02) {
			t.Errorf("%s GiB: β_P %.3f β_E %.3f, paper %v %v", c.name, p, e, c.printP, c.printE)
		}
		if si := PerCoreBytesPerCycle(c.gbps, c.cores, c.pGHz, 1e9); si >= c.printP {
			t.Errorf("%s SI β_P %.3f ≥ printed %v", c.name, si, c.printP)
		}
	}
}

// TestModeledBandwidth reproduces §IV-B: 1-bit GEMV modeled at ≈55 GB/s on
// ARLH (6 P + 8 E cores) and ≈37 GB/s on LNL (4 P + 4 E).
func TestModeledBandwidth(t *testing.T) {
	arlh := ModeledBandwidth(75, 4, GiB, CoreGroup{6, 4, 2.4}, CoreGroup{8, 3.6, 4.71})
	if !near(arlh, 55, 0.5) {
		t.Errorf("ARLH 1-bit modeled %v, paper ≈55", arlh)
	}
	lnl := ModeledBandwidth(97, 4, GiB, CoreGroup{4, 4.1, 2.4}, CoreGroup{4, 3.7, 4.71})
	if !near(lnl, 37, 1) {
		t.Errorf("LNL 1-bit modeled %v, paper ≈37", lnl)
	}
	// 2-bit on ARL: every core is bandwidth-bound, so the model gives the full 98.
	if arl := ModeledBandwidth(98, 8, GiB, CoreGroup{8, 5.4, 1.25}, CoreGroup{16, 4.5, 2.175}); !near(arl, 98, 1e-9) {
		t.Errorf("ARL 2-bit modeled %v, want 98", arl)
	}
}

// TestAmdahl tests Eq. 4 itself, not the paper's rounded prints: at the
// printed α the formula differs from the printed speedups, and the printed
// pairs imply α ≈ 0.874 (1B) and α ≈ 0.956 (8B).
func TestAmdahl(t *testing.T) {
	for _, c := range []struct{ alpha, x, want float64 }{
		{0.87, 8, 1 / (0.13 + 0.87/8)}, {0.87, 16, 1 / (0.13 + 0.87/16)},
		{0.96, 8, 6.25}, {0.96, 16, 10}, {0, 8, 1}, {1, 8, 8},
	} {
		if got := AmdahlSpeedup(c.alpha, c.x); !near(got, c.want, 1e-12) {
			t.Errorf("s(%v, %v) = %v, want %v", c.alpha, c.x, got, c.want)
		}
	}
	// Printed: 4.3 and 5.5 (α "0.87"); 6.1 and 9.6 (α "0.96").
	for _, c := range []struct{ s8, s16, lo, hi float64 }{{4.3, 5.5, 0.86, 0.885}, {6.1, 9.6, 0.95, 0.965}} {
		a8, a16 := AmdahlAlpha(c.s8, 8), AmdahlAlpha(c.s16, 16)
		if a8 < c.lo || a8 > c.hi || a16 < c.lo || a16 > c.hi {
			t.Errorf("implied α %v, %v outside [%v, %v]", a8, a16, c.lo, c.hi)
		}
		if !near(AmdahlSpeedup(a8, 8), c.s8, 1e-9) {
			t.Error("AmdahlAlpha does not invert AmdahlSpeedup")
		}
	}
}

// TestOWRTable2 reproduces every row of PIM-SHERPA Table 2 (FLOP/B ≈ 4).
func TestOWRTable2(t *testing.T) {
	rows := []struct {
		sl                             int
		gemm, sum, sumPct, max, maxPct float64
	}{
		{1, 1, 4, 400, 3, 300}, {4, 1, 4, 400, 3, 300}, {8, 2, 5, 250, 3, 150}, {16, 4, 7, 175, 4, 100},
		{32, 8, 11, 138, 8, 100}, {64, 16, 19, 119, 16, 100}, {128, 32, 35, 109, 32, 100}, {192, 48, 51, 106, 48, 100},
	}
	for _, w := range rows {
		r, err := OWRLatency(w.sl, 4)
		if err != nil {
			t.Fatal(err)
		}
		if r.GEMM != w.gemm || r.DRAM != 1 || r.Online != 3 || r.Sum != w.sum || r.Max != w.max ||
			math.Round(r.SumPct) != w.sumPct || math.Round(r.MaxPct) != w.maxPct {
			t.Errorf("SL %d: %+v, want %+v", w.sl, r, w)
		}
	}
	if _, err := OWRLatency(0, 4); err == nil {
		t.Error("SL 0 accepted")
	}
}
