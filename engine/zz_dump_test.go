package engine

import (
	"fmt"
	"os"
	"testing"

	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

func TestZZDump(t *testing.T) {
	pf := os.Getenv("ZZPROF")
	p, err := results.ReadProfile(pf)
	if err != nil {
		t.Skip(err)
	}
	m, err := roofline.FromProfile(p, pf)
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := models.Load("qwen3-0.6b")
	c, _ := FromModel(mc, HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: 4096})
	c.Layers = 2
	for _, cs := range []struct {
		ph      roofline.Phase
		b, t, c int
	}{{roofline.Prefill, 1, 128, 128}, {roofline.Prefill, 1, 512, 512}, {roofline.Prefill, 1, 2048, 2048}, {roofline.Decode, 1, 1, 130}, {roofline.Decode, 4, 1, 130}} {
		r := roofline.Request{Phase: cs.ph, Batch: cs.b, Tokens: cs.t, Context: cs.c, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: roofline.Routing{Kind: "uniform"}}
		mm := WithAttentionPlan(m, c)
		a, err := roofline.Analyze(mm, c.Arch(), r, "fp32")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("== %s b%d t%d\n", cs.ph, cs.b, cs.t)
		for _, o := range a.Layers[0].Ops {
			if o.Kind == roofline.KindLinear {
				continue
			}
			fmt.Printf("%-14s %8.2f us thr %d calls %d fixed %.2f roof %-5s bound %-12s bytes %.0f (w %.0f in %.0f out %.0f kvw %.0f) elems %.0f w %d\n", o.Name, o.Time*1e6, o.Threads, o.Calls, o.FixedSeconds*1e6, o.Roof, o.Bound, o.Bytes.Total(), o.Bytes.Weights, o.Bytes.ActIn, o.Bytes.ActOut, o.Bytes.KVWrite, o.Elems, o.Width)
		}
	}
}
