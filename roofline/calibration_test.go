package roofline

import (
	"strings"
	"testing"
)

// A GEMV whose weights fit the L2 is calibrated by the class's L2 entry;
// one whose weights are DRAM-sized is not (the class has no DRAM entry),
// and a compute-bound GEMM takes the entry of "compute" and the level
// holding its activations.
func TestCalibrationKeyedByLevel(t *testing.T) {
	m := callMachine()
	m.Calibration = &Calibration{Params: map[CalibrationKey]ClassParams{
		{Class: ClassGEMV, Threads: 2, Level: "L2"}:                   {Efficiency: 4},
		{Class: ClassGEMM, Threads: 2, Level: BoundCompute + "/DRAM"}: {Efficiency: 0.5},
	}}
	un := callMachine()
	for _, c := range []struct {
		o     Operator
		bound string
		scale float64 // calibrated / uncalibrated time
	}{
		{linear(OpQProj, 1, 256, 256, 4, 4), "L2", 0.25},            // 256 KiB of weights
		{linear(OpQProj, 1, 4096, 4096, 4, 4), "DRAM", 1},           // 64 MiB: uncalibrated
		{linear(OpQProj, 512, 1024, 1024, 4, 4), "compute/DRAM", 2}, // compute-bound, 4 MiB of activations
		{linear(OpQProj, 64, 1024, 1024, 4, 4), "compute/L2", 1},    // activations in the L2: uncalibrated
	} {
		got, err := Place(m, "fp32", []Operator{c.o})
		if err != nil {
			t.Fatal(err)
		}
		want, err := Place(un, "fp32", []Operator{c.o})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Bound != c.bound {
			t.Errorf("%s: bound %q, want %q", c.o.Shape, got[0].Bound, c.bound)
		}
		if r := got[0].Time / want[0].Time; !nearRel(r, c.scale) {
			t.Errorf("%s: calibrated/uncalibrated %v, want %v", c.o.Shape, r, c.scale)
		}
	}
}

// An entry without level (schema v1) applies at every level, after the
// level's own entries.
func TestCalibrationForFallbacks(t *testing.T) {
	o := linear(OpQProj, 1, 256, 256, 4, 4)
	c := &Calibration{Params: map[CalibrationKey]ClassParams{
		{Class: ClassGEMV}:                          {Efficiency: 1},
		{Class: ClassGEMV, Level: "L3"}:             {Efficiency: 3},
		{Class: ClassGEMV, Threads: 2, Level: "L3"}: {Efficiency: 32},
	}}
	for _, k := range []struct {
		threads int
		level   string
		eff     float64
	}{{2, "L3", 32}, {1, "L3", 3}, {2, "DRAM", 1}, {1, "", 1}} {
		p, ok := c.For(o, k.threads, k.level)
		if !ok || p.Efficiency != k.eff {
			t.Errorf("%d threads, level %q: %+v %v, want efficiency %v", k.threads, k.level, p, ok, k.eff)
		}
	}
	delete(c.Params, CalibrationKey{Class: ClassGEMV})
	if p, ok := c.For(o, 2, "DRAM"); ok {
		t.Errorf("DRAM with only L3 entries: %+v applied", p)
	}
}

func TestLastLevelBytes(t *testing.T) {
	if n := callMachine().LastLevelBytes(); n != 2<<20 {
		t.Errorf("last level %d bytes, want the 2-thread L2's 2 MiB", n)
	}
	if !strings.Contains(BoundCompute, "compute") {
		t.Fatal(BoundCompute)
	}
}

func TestCalibrationLevel(t *testing.T) {
	for _, c := range []struct{ class, bound, want string }{
		{ClassAttention, "compute/DRAM", BoundCompute},
		{ClassAttention, "compute/L2", BoundCompute},
		{ClassAttention, "compute/L1", "compute/L1"},
		{ClassAttention, "DRAM", "DRAM"},
		{ClassGEMM, "compute/L3", "compute/L3"},
		{ClassResidual, "L1", "L1"},
	} {
		if got := CalibrationLevel(c.class, c.bound); got != c.want {
			t.Errorf("CalibrationLevel(%s, %s) = %s, want %s", c.class, c.bound, got, c.want)
		}
	}
}

// The catalog gives an attention's QKᵀ its query rows and heads (B·H·T;
// decode B·H); a calibrated attention class adds its per-row cost to the
// QKᵀ only, with the fixed cost.
func TestCalibrationQueryRows(t *testing.T) {
	arch := Arch{Name: "t", Layers: 1, Dim: 256, Heads: 4, KVHeads: 2, HeadDim: 64, Intermediate: 512, Vocab: 1000}
	c := &Calibration{Params: map[CalibrationKey]ClassParams{{Class: ClassAttention}: {Efficiency: 1, FixedSeconds: 1e-6, RowSeconds: 1e-7}}}
	for _, q := range []struct {
		r    Request
		rows int
	}{
		{Request{Phase: Prefill, Batch: 2, Tokens: 64, Context: 64}, 2 * 4 * 64},
		{Request{Phase: Decode, Batch: 2, Tokens: 1, Context: 65}, 2 * 4},
	} {
		q.r.Weight, q.r.Act, q.r.KV, q.r.Routing = "fp32", "fp32", "fp32", Routing{Kind: "uniform"}
		cat, err := BuildCatalog(arch, q.r)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range cat.Layers[0].Ops {
			want := 0
			if o.Name == OpQK {
				want = q.rows
			}
			if o.QueryRows != want {
				t.Errorf("%s %s: query rows %d, want %d", q.r.Phase, o.Name, o.QueryRows, want)
			}
			if o.Name == OpQK || o.Name == OpPV {
				p, _ := c.For(o, 1, "")
				fixed := o.Name == OpQK
				if got, want := p.Apply(1e-3, o.QueryRows, fixed)-1e-3, map[bool]float64{true: 1e-6 + 1e-7*float64(want), false: 0}[fixed]; !nearRel(got+1, want+1) {
					t.Errorf("%s %s: added %v s, want %v", q.r.Phase, o.Name, got, want)
				}
			}
		}
	}
}

// The rows a calibration's per-row cost multiplies: an attention's query
// rows on its QKᵀ, a vector operator's rows, RoPE's row-kernel calls (one
// per token's q row and k row), none for a linear or the attention's
// softmax and P·V.
func TestCalibrationRows(t *testing.T) {
	arch := Arch{Name: "t", Layers: 1, Dim: 256, Heads: 4, KVHeads: 2, HeadDim: 64, Intermediate: 512, Vocab: 1000, QKNorm: true}
	r := Request{Phase: Prefill, Batch: 2, Tokens: 16, Context: 16, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
	cat, err := BuildCatalog(arch, r)
	if err != nil {
		t.Fatal(err)
	}
	const M = 2 * 16
	want := map[string]int{OpAttnNorm: M, OpQKNorm: M * (4 + 2), OpRoPE: 2 * M, OpKVWrite: M * 2 * 2, OpQK: 2 * 4 * 16, OpSoftmax: 0, OpPV: 0,
		OpQProj: 0, OpAttnResidual: M, OpFFNNorm: M, OpSiLUMul: M, OpDownProj: 0, OpFFNResidual: M}
	for _, o := range cat.Layers[0].Ops {
		if w, ok := want[o.Name]; ok && CalibrationRows(o) != w {
			t.Errorf("%s: calibration rows %d, want %d", o.Name, CalibrationRows(o), w)
		}
	}
	c := ClassParams{Efficiency: 0.5, FixedSeconds: 1e-6, RowSeconds: 1e-8}
	if got := c.Apply(1e-6, 100, true); !nearRel(got, 2e-6+1e-6+1e-6) {
		t.Errorf("Apply: %v s, want 4e-6", got)
	}
}
