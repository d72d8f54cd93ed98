package roofline_test

import (
	"math"
	"strings"
	"testing"

	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/roofline"
)

// TestOWRTableAndModel: OWRTable at FLOP/B 4 is Table 2's rows, and
// LayoutModel at Table 2's rates (bf16, copy at a third of the read
// bandwidth) gives the same SUM and MAX ratios and the crossover 3·FLOP/B.
func TestOWRTableAndModel(t *testing.T) {
	rows, err := roofline.OWRTable(4, roofline.Table2Lengths)
	if err != nil {
		t.Fatal(err)
	}
	wantSum := []float64{400, 400, 250, 175, 137.5, 118.75, 109.375, 106.25}
	wantMax := []float64{300, 300, 150, 100, 100, 100, 100, 100}
	m := roofline.LayoutModel{GFLOPS: 4 * 60, ReadGBps: 60, CopyGBps: 20, BytesPerWeight: 2}
	for i, r := range rows {
		if math.Abs(r.SumPct-wantSum[i]) > 1e-9 || math.Abs(r.MaxPct-wantMax[i]) > 1e-9 {
			t.Errorf("SL %d: SUM %.4g%% MAX %.4g%%, want %.4g%% %.4g%%", r.InputSL, r.SumPct, r.MaxPct, wantSum[i], wantMax[i])
		}
		mr, err := m.At(r.InputSL, 1e9)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(100*mr.SumOverGEMM-r.SumPct) > 1e-9 || math.Abs(100*mr.MaxOverGEMM-r.MaxPct) > 1e-9 {
			t.Errorf("SL %d: model SUM %.4g MAX %.4g, Table 2 %.4g %.4g", r.InputSL, mr.SumOverGEMM, mr.MaxOverGEMM, r.SumPct, r.MaxPct)
		}
	}
	if c := m.Crossover(); math.Abs(c-roofline.OWRCrossover(4)) > 1e-9 || c != 12 {
		t.Errorf("crossover %v, want 12", c)
	}
	if m.FLOPPerByte() != 4 {
		t.Errorf("FLOP/B %v", m.FLOPPerByte())
	}
	if _, err := roofline.OWRTable(0, []int{1}); err == nil {
		t.Error("FLOP/B 0: no error")
	}
	for _, bad := range []roofline.LayoutModel{{}, {GFLOPS: 1, ReadGBps: 1, CopyGBps: math.Inf(1), BytesPerWeight: 2}} {
		if _, err := bad.At(1, 1); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v", bad, err)
		}
	}
	if _, err := m.At(0, 1); err == nil {
		t.Error("SL 0: no error")
	}
}

// TestLayoutCapacity: Llama 3.2 1B in bf16 is the paper's 2.47 GB of
// host-friendly weights (§6), its OWR buffer the paper's 32 MiB (2048 ×
// 8192 × 2 B), and against the paper's duplication (every weight twice)
// OWR saves close to its 48.5 %.
func TestLayoutCapacity(t *testing.T) {
	mc, err := models.Load("llama-3.2-1b")
	if err != nil {
		t.Fatal(err)
	}
	a, err := mc.Arch()
	if err != nil {
		t.Fatal(err)
	}
	c, err := roofline.LayoutCapacityOf(a, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.Decode/1e9-2.47) > 0.01 {
		t.Errorf("decode layout %.4g GB, want 2.47", c.Decode/1e9)
	}
	if c.OWRBuffer != 2048*8192*2 {
		t.Errorf("owr buffer %v, want 2048·8192·2", c.OWRBuffer)
	}
	if math.Abs(c.OWRSavingWD-0.485) > 0.01 || c.DDBSavingWD >= c.OWRSavingWD || c.OWR >= c.Duplicate || c.DDB >= c.Duplicate {
		t.Errorf("%+v", c)
	}
	if _, err := roofline.LayoutCapacityOf(a, 0); err == nil {
		t.Error("0 bytes per weight: no error")
	}
}
