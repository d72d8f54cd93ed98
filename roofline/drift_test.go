package roofline

import (
	"math"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestDrifted: on the drifted machine a DRAM-bound GEMV takes 1/dram the
// time and a compute-bound GEMM 1/compute, the original machine is left
// as it was, and factors ≤ 0 change nothing.
func TestDrifted(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	gemv := linear(OpQProj, 1, 16384, 8192, 4, 4) // 512 MiB of weights: DRAM
	gemm := linear(OpQProj, 512, 3072, 3072, 4, 4)
	place := func(m *Machine, o Operator) Placed {
		ps, err := PlaceCall(m, "fp32", []Operator{o}, math.Inf(1))
		if err != nil {
			t.Fatal(err)
		}
		return ps[0]
	}
	// The probe fixture has no compute ceilings: the GEMM on a machine
	// file's cores target.
	c := &Machine{Schema: MachineSchemaV1, Name: "c", Targets: []Target{{Name: "cores", Kind: KindCores, Workers: 2,
		CeilingsGFLOPS: map[string]float64{"fp32": 100}, BandwidthGBps: 20}}}
	v0, g0 := place(m, gemv), place(c, gemm)
	if v0.Bound != "DRAM" || math.Abs(g0.Time/(gemm.FLOPs/100e9)-1) > 1e-9 {
		t.Fatalf("GEMV bound %s; GEMM %v s, want its compute time", v0.Bound, g0.Time)
	}
	v1, g1 := place(m.Drifted(0.5, 2), gemv), place(c.Drifted(0.5, 2), gemm)
	if r := (v1.Time - v1.FixedSeconds) / (v0.Time - v0.FixedSeconds); math.Abs(r-2) > 1e-3 { // its activations stay at their cache level
		t.Errorf("GEMV at DRAM ×0.5: time ×%v, want ×2", r)
	}
	if r := (g1.Time - g1.FixedSeconds) / (g0.Time - g0.FixedSeconds); math.Abs(r-0.5) > 1e-9 {
		t.Errorf("GEMM at compute ×2: time ×%v, want ×0.5", r)
	}
	if v := place(m, gemv); v.Time != v0.Time {
		t.Errorf("the original machine changed: %v, was %v", v.Time, v0.Time)
	}
	if v := place(m.Drifted(0, -1), gemv); v.Time != v0.Time {
		t.Errorf("factors ≤ 0 changed the GEMV: %v, was %v", v.Time, v0.Time)
	}
}
