package probes

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/peak"
)

func TestPickMixed(t *testing.T) {
	k := func(name, unavail string) peak.Kernel { return peak.Kernel{Name: name, Unavailable: unavail} }
	cases := []struct {
		ks   []peak.Kernel
		a, b string
	}{
		{[]peak.Kernel{k("avx2_fma_fp64", ""), k("avx2_fma_fp32", ""), k("amx_bf16", "unavailable: CPU lacks AMX-TILE")}, "avx2_fma_fp32", "avx2_fma_fp64"},
		{[]peak.Kernel{k("avx512_fma_fp32", ""), k("avx512_bf16_dp", ""), k("amx_bf16", "")}, "amx_bf16", "avx512_fma_fp32"},
		{[]peak.Kernel{k("avx512_fma_fp32", ""), k("avx512_bf16_dp", ""), k("avx512_fma_fp64", "")}, "avx512_fma_fp32", "avx512_bf16_dp"},
		{[]peak.Kernel{k("neon_fma_fp32", ""), k("sme_fmopa_fp32", "")}, "sme_fmopa_fp32", "neon_fma_fp32"},
		{[]peak.Kernel{k("sse_mul_add_fp32", "")}, "", ""},
		// With precisions known, the matrix unit is paired with the vector
		// kernel of its own precision.
		{[]peak.Kernel{
			{Name: "avx512_fma_fp32", ISA: "avx512", Precision: "fp32"},
			{Name: "avx512_bf16_dp", ISA: "avx512", Precision: "bf16"},
			{Name: "amx_bf16", ISA: "amx", Precision: "bf16"},
		}, "amx_bf16", "avx512_bf16_dp"},
	}
	for _, c := range cases {
		a, b, ok := pickMixed(c.ks)
		if c.a == "" {
			if ok {
				t.Errorf("picked %s, %s from a single kernel", a.Name, b.Name)
			}
			continue
		}
		if !ok || a.Name != c.a || b.Name != c.b {
			t.Errorf("picked %s, %s (ok %v), want %s, %s", a.Name, b.Name, ok, c.a, c.b)
		}
	}
}

func TestMixedSection(t *testing.T) {
	r := newTestRunner(t, kernels.BestMem())
	r.plan.cores = len(r.pool.workers)
	r.plan.maxWS, r.plan.dramWS = 8<<20, 8<<20
	prog := &countProgress{}
	r.prog = prog
	m, err := r.mixedSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if runtime.NumCPU() < 2 {
		if !strings.HasPrefix(m.Unavailable, "unavailable: needs at least 2 cores") {
			t.Fatalf("mixed on 1 CPU: %+v", m)
		}
		return
	}
	if len(prog.steps) != r.mixedSteps() {
		t.Errorf("%d steps, mixedSteps says %d", len(prog.steps), r.mixedSteps())
	}
	kinds := map[string]bool{}
	for _, e := range m.Experiments {
		kinds[e.Kind] = true
		if len(e.Groups) != 2 || e.Additivity <= 0 || e.SumAlone <= 0 || e.Together <= 0 {
			t.Errorf("%s: %+v", e.Kind, e)
		}
		for _, g := range e.Groups {
			if g.Alone.N != r.cfg.Reps || g.Together.N != r.cfg.Reps || len(g.CPUs) == 0 {
				t.Errorf("%s group %s: %+v", e.Kind, g.Name, g)
			}
		}
		if a, b := e.Groups[0].CPUs, e.Groups[1].CPUs; a[0] == b[0] {
			t.Errorf("%s: groups share CPU %d", e.Kind, a[0])
		}
		t.Logf("%s (%s): %s alone %.1f together %.1f, %s alone %.1f together %.1f, additivity %.2f",
			e.Kind, e.Unit, e.Groups[0].Name, e.Groups[0].Alone.Median, e.Groups[0].Together.Median,
			e.Groups[1].Name, e.Groups[1].Alone.Median, e.Groups[1].Together.Median, e.Additivity)
	}
	if !kinds["read_bandwidth"] {
		t.Error("no read_bandwidth experiment")
	}
	if _, _, ok := pickMixed(peak.Kernels()); ok && !kinds["compute"] {
		t.Error("no compute experiment although two kernels are available")
	}
}

func TestMixedNeedsTwoCores(t *testing.T) {
	r := newTestRunner(t, kernels.BestMem())
	r.plan.cores = 1
	m, err := r.mixedSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Unavailable != "unavailable: needs at least 2 cores, have 1" {
		t.Fatalf("%+v", m)
	}
}
