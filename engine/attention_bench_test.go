package engine

import (
	"context"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// TestAttentionBench runs AttentionBench's prefill and decode with one
// worker per available fp32 backend (the portable one, the cores' best
// and, on a CPU with SME, sme-fp32: each its own cache layout, the mixed
// case) and on the row-major caches of the kv-packing ablation, and
// checks sampled outputs against the float64 reference.
func TestAttentionBench(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		cpus = []int{0}
	}
	var bes []gemm.Backend
	for _, b := range gemm.Backends() {
		if b.DType == gemm.FP32 && b.Unavailable == "" {
			bes = append(bes, b)
		}
	}
	if len(bes) < 2 {
		bes = append(bes, bes...)
	}
	t.Logf("workers' backends: %v", bes)
	pc := make([]int, len(bes))
	for i := range pc {
		pc[i] = cpus[i%len(cpus)]
	}
	p, err := pool.New(pool.Options{CPUs: pc, Spin: -1, CallerSpin: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, kvPack := range []bool{false, true} {
		o := AttentionBenchOptions{Heads: 4, KVHeads: 2, HeadDim: 24, MaxSeq: 70, Seqs: 3, Width: 40, KVPackPerCall: kvPack, Workers: bes}
		a, err := NewAttentionBench(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Do(func(m *pool.Master) error { return a.Prefill(context.Background(), m, p.All(), 70) }); err != nil {
			t.Fatal(err)
		}
		for _, r := range []int{0, 1, 31, 32, 33, 69} {
			for h := range o.Heads {
				if e, err := a.CheckOutput(r, 0, r, h); err != nil || e > 1e-5 {
					t.Errorf("kv-packing %v: prefill row %d head %d: relative error %g (%v)", kvPack, r, h, e, err)
				}
			}
		}
		// The pipelined prefill on pairs of workers: the same outputs.
		gs, err := p.Groups(p.Size()-p.Size()/2, p.Size()/2)
		if err != nil {
			t.Fatal(err)
		}
		clear(a.out)
		if err := p.Do(func(m *pool.Master) error { return a.PrefillPipelined(context.Background(), m, gs[0], gs[1], 70) }); err != nil {
			t.Fatal(err)
		}
		for _, r := range []int{0, 1, 31, 32, 33, 69} {
			for h := range o.Heads {
				if e, err := a.CheckOutput(r, 0, r, h); err != nil || e > 1e-5 {
					t.Errorf("kv-packing %v: pipelined prefill row %d head %d: relative error %g (%v)", kvPack, r, h, e, err)
				}
			}
		}
		for _, width := range []int{1, 3, 40} {
			if err := p.Do(func(m *pool.Master) error { return a.Decode(context.Background(), m, p.All(), 50, 3, width) }); err != nil {
				t.Fatal(err)
			}
			for s := range 3 {
				for _, i := range []int{0, width - 1} {
					for h := range o.Heads {
						if e, err := a.CheckOutput(s*width+i, s, 50-width+i, h); err != nil || e > 1e-5 {
							t.Errorf("kv-packing %v: decode width %d sequence %d token %d head %d: relative error %g (%v)", kvPack, width, s, i, h, e, err)
						}
					}
				}
			}
		}
	}
}

func TestAttentionBenchErrors(t *testing.T) {
	best, err := gemm.Best(gemm.FP32)
	if err != nil {
		t.Fatal(err)
	}
	bf, _ := gemm.Best(gemm.BF16)
	ok := AttentionBenchOptions{Heads: 4, KVHeads: 2, HeadDim: 8, MaxSeq: 8, Seqs: 1, Workers: []gemm.Backend{best}}
	for name, mod := range map[string]func(*AttentionBenchOptions){
		"heads":   func(o *AttentionBenchOptions) { o.Heads = 3 },
		"context": func(o *AttentionBenchOptions) { o.MaxSeq = 0 },
		"seqs":    func(o *AttentionBenchOptions) { o.Seqs = 0 },
		"workers": func(o *AttentionBenchOptions) { o.Workers = nil },
		"bf16":    func(o *AttentionBenchOptions) { o.Workers = []gemm.Backend{bf} },
	} {
		o := ok
		mod(&o)
		if _, err := NewAttentionBench(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestAttentionBenchStops(t *testing.T) {
	best, err := gemm.Best(gemm.FP32)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(pool.Options{CPUs: []int{0}, Spin: -1, CallerSpin: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a, err := NewAttentionBench(AttentionBenchOptions{Heads: 2, KVHeads: 1, HeadDim: 8, MaxSeq: 64, Seqs: 1, Workers: []gemm.Backend{best}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Do(func(m *pool.Master) error { return a.Prefill(ctx, m, p.All(), 64) }); err == nil {
		t.Error("a cancelled prefill ran")
	}
}
