package roofline

import (
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

func TestFromProfileComputeSections(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Targets) != 1 || m.HasCeilings("fp32") || !strings.Contains(strings.Join(m.Notes, "\n"), "no measured compute ceiling") {
		t.Fatalf("without compute: targets %v notes %v", m.Targets, m.Notes)
	}
	// Synthetic sections (test values only).
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	p.Compute = &results.Compute{Peaks: []results.ComputePeak{
		{Kernel: "avx2_fma_fp32", ISA: "avx2", Precision: "fp32", Threads: 1, Rate: st(85)},
		{Kernel: "avx2_fma_fp32", ISA: "avx2", Precision: "fp32", Threads: 2, Rate: st(160)},
		{Kernel: "avx512_bf16_dp", ISA: "avx512", Precision: "bf16", Threads: 2, Rate: st(300)},
		{Kernel: "amx_bf16", ISA: "amx", Precision: "bf16", Threads: 1, Rate: st(1500)},
	}}
	p.Mixed = &results.Mixed{Experiments: []results.MixedExperiment{
		{Kind: "compute", Unit: "GFLOP/s", Together: 1700, Groups: []results.MixedGroup{{Name: "amx_bf16", Kernel: "amx_bf16"}, {Name: "avx512_bf16_dp", Kernel: "avx512_bf16_dp"}}},
		{Kind: "read_bandwidth", Unit: "GB/s", Together: 18},
	}}
	p.Nonlinear = &results.Nonlinear{Points: []results.NonlinearPoint{
		{Kernel: "softmax", Backend: "avx2", RowElems: 1024, Threads: 1, GElemsPerSec: st(1)},
		{Kernel: "softmax", Backend: "avx2", RowElems: 4096, Threads: 1, GElemsPerSec: st(2)},
		{Kernel: "softmax", Backend: "go", RowElems: 4096, Threads: 1, GElemsPerSec: st(0.5)},
	}}
	m, err = FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	cores, _ := m.Target("cores")
	// A pair of different precisions gives no mixed ceiling.
	q := *p
	q.Mixed = &results.Mixed{Experiments: []results.MixedExperiment{
		{Kind: "compute", Unit: "GFLOP/s", Together: 1700, Groups: []results.MixedGroup{{Name: "amx_bf16", Kernel: "amx_bf16"}, {Name: "avx2_fma_fp32", Kernel: "avx2_fma_fp32"}}},
	}}
	if m2, err := FromProfile(&q, "q.json"); err != nil {
		t.Fatal(err)
	} else if _, ok := m2.Target("mixed"); ok {
		t.Error("mixed target from a bf16 + fp32 pair")
	}
	if cores.Ceiling("fp32") != 160 || cores.Ceiling("bf16") != 300 {
		t.Errorf("cores ceilings %v, want fp32 160 (all threads) and bf16 300", cores.CeilingsGFLOPS)
	}
	mat, ok := m.Target("matrix")
	if !ok || mat.Ceiling("bf16") != 1500 || mat.Kind != KindMatrix {
		t.Errorf("matrix target %+v", mat)
	}
	mix, ok := m.Target("mixed")
	if !ok || mix.Ceiling("bf16") != 1700 || mix.BandwidthGBps != 18 {
		t.Errorf("mixed target %+v", mix)
	}
	if m.Nonlinear == nil || m.Nonlinear.GElemsPerS != 2*float64(cores.Workers) {
		t.Errorf("nonlinear %+v (cores workers %d)", m.Nonlinear, cores.Workers)
	}
	// With a ceiling, the ridge point exists and a GEMM can be compute-bound.
	if r := cores.Ridge("fp32"); !(r > 0) {
		t.Errorf("ridge %v", r)
	}
}

func TestFromProfileAttainedGEMM(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	p.Compute = &results.Compute{Peaks: []results.ComputePeak{
		{Kernel: "avx2_fma_fp32", ISA: "avx2", Precision: "fp32", Threads: 2, Rate: st(178)},
		{Kernel: "avx2_fma_fp64", ISA: "avx2", Precision: "fp64", Threads: 2, Rate: st(88)},
	}}
	p.Matrix = &results.Matrix{GEMM: []results.GEMMResult{
		{Backend: "avx2-fp32", DType: "fp32", M: 512, N: 3072, K: 3072, Threads: 1, GFLOPS: st(80)},
		{Backend: "avx2-fp32", DType: "fp32", M: 512, N: 3072, K: 3072, Threads: 2, GFLOPS: st(150)},
		{Backend: "avx2-bf16", DType: "bf16", M: 512, N: 3072, K: 3072, Threads: 2, GFLOPS: st(140)},
	}}
	m, err := FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	cores, _ := m.Target("cores")
	if cores.Ceiling("fp32") != 150 || cores.Ceiling("bf16") != 140 || cores.Ceiling("fp64") != 88 {
		t.Errorf("ceilings %v: want attained fp32 150 and bf16 140 (2 threads), FMA peak fp64 88", cores.CeilingsGFLOPS)
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "attained GEMM") {
		t.Errorf("notes %v do not say the ceilings are attained GEMM", m.Notes)
	}
}

// A real profile with every section (bench probe on a 2-core EPYC VM): the
// cores target gets attained GEMM ceilings, FMA peaks for fp64, and the
// probed non-linear throughput.
func TestFromProfileAllSections(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core-all-sections.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromProfile(p, "all.json")
	if err != nil {
		t.Fatal(err)
	}
	cores, _ := m.Target("cores")
	for _, g := range p.Matrix.GEMM {
		if g.Threads == 2 && g.DType == "fp32" && cores.Ceiling("fp32") != g.GFLOPS.Median {
			t.Errorf("fp32 ceiling %v, want the attained GEMM %v", cores.Ceiling("fp32"), g.GFLOPS.Median)
		}
	}
	if !(cores.Ceiling("fp64") > 0) || m.Nonlinear == nil || !(m.Nonlinear.GElemsPerS > 0) {
		t.Errorf("fp64 ceiling %v, nonlinear %+v", cores.Ceiling("fp64"), m.Nonlinear)
	}
	if r := cores.Ridge("fp32"); !(r > 1 && r < 100) {
		t.Errorf("fp32 ridge %v FLOP/byte", r)
	}
}
