package main

import (
	"testing"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// TestDriftFidelity: no diagnostic where no check ran; else every
// predicted operator gets its prediction on the drifted machine (the
// factors handed to Drifted), within the noise threshold too, and the
// count is never the counted figure.
func TestDriftFidelity(t *testing.T) {
	one, two := 1.0, 2.0
	res := &runResult{Ops: []runOp{
		{Phase: roofline.Decode, Op: "q_proj", MeasuredS: 2, PredictedS: &one},
		{Phase: roofline.Decode, Op: "rope", MeasuredS: 1, PredictedS: &two},
		{Phase: roofline.Decode, Op: "embed", MeasuredS: 1},
	}}
	m := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "m", Targets: []roofline.Target{{Name: "cores", Kind: roofline.KindCores,
		CeilingsGFLOPS: map[string]float64{"fp32": 100}, BandwidthGBps: 20}}}
	var got *roofline.Machine
	predict := func(mach *roofline.Machine) (map[[2]string]float64, error) {
		got = mach
		return map[[2]string]float64{{"decode", "q_proj"}: 2, {"decode", "rope"}: 1.5, {"decode", "embed"}: 1}, nil
	}
	d, err := driftFidelity(res, m, results.Noise{}, predict)
	if d != nil || err != nil || got != nil {
		t.Fatalf("no check: %+v, %v (predicted: %v)", d, err, got != nil)
	}
	d, err = driftFidelity(res, m, results.Noise{DRAMNowGBps: 19, DRAMProfileGBps: 20, GEMMRatio: 0.95}, predict)
	if err != nil || d == nil || d.DRAMFactor != 0.95 || got == nil {
		t.Fatalf("within the threshold: %+v, %v", d, err)
	}
	d, err = driftFidelity(res, m, results.Noise{DRAMNowGBps: 10, DRAMProfileGBps: 20, GEMMRatio: 1.5}, predict)
	if err != nil || d == nil {
		t.Fatalf("drifted: %+v, %v", d, err)
	}
	if d.DRAMFactor != 0.5 || d.ComputeFactor != 1.5 || got.Targets[0].BandwidthGBps != 10 || got.Targets[0].CeilingsGFLOPS["fp32"] != 150 {
		t.Errorf("factors %v, %v; machine β %v, π %v", d.DRAMFactor, d.ComputeFactor, got.Targets[0].BandwidthGBps, got.Targets[0].CeilingsGFLOPS)
	}
	if p := res.Ops[0].PredictedDriftS; p == nil || *p != 2 || res.Ops[2].PredictedDriftS != nil {
		t.Errorf("predicted at drift: %v, %v", res.Ops[0].PredictedDriftS, res.Ops[2].PredictedDriftS)
	}
	if f := d.Fidelity; f.Rows != 2 || f.Within != 1 || f.Counted {
		t.Errorf("fidelity %+v: want 1 of 2 rows, not counted", f)
	}
}
