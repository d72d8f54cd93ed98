package roofline

import (
	"testing"

	"github.com/cpubench/bench/results"
)

// reuseOf returns operator name's operands in c (the dense layer, then the
// head).
func reuseOf(t *testing.T, c *Catalog, name string) map[string]Operand {
	t.Helper()
	for _, o := range append(append([]Operator{}, c.Layers[0].Ops...), c.Head...) {
		if o.Name == name {
			m := map[string]Operand{}
			for _, p := range o.Operands {
				k := p.Buffer
				if p.Write {
					k = "W" + k
				}
				m[k] = p
			}
			return m
		}
	}
	t.Fatalf("no operator %s", name)
	return nil
}

// TestReuseDistances checks the reuse distances of a Qwen3-like dense
// model's operators against the engine's order of buffers: an input
// written by the operator just before is at distance 0, a buffer last
// touched before a projection's weights at no less than those weights, an
// in-place write at 0 (the operator just read it), every layer's weights
// and new KV positions at no less than the other layers' weights (a whole
// forward call); operands' bytes add up to the operator's bytes.
func TestReuseDistances(t *testing.T) {
	arch := Arch{Name: "q", Dim: 1024, Intermediate: 3072, Layers: 3, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 5000, QKNorm: true}
	for _, r := range []Request{
		{Phase: Decode, Batch: 4, Tokens: 1, Context: 512, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}},
		{Phase: Prefill, Batch: 1, Tokens: 256, Context: 256, Weight: "bf16", Act: "fp32", KV: "bf16", Routing: Routing{Kind: "uniform"}},
	} {
		c, err := BuildCatalog(arch, r)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := DTypeBytes(r.Weight)
		downWeights := 1024 * 3072 * w
		layerWeights := 0.0
		for _, o := range c.Layers[0].Ops {
			layerWeights += o.Bytes.Weights
		}
		otherLayers := 2 * layerWeights
		an := reuseOf(t, c, OpAttnNorm)
		if an["x"].Distance != 0 {
			t.Errorf("%s attn_norm: x (written by ffn_residual) at %v, want 0", r.Phase, an["x"].Distance)
		}
		if an["Wxb"].Distance < downWeights {
			t.Errorf("%s attn_norm: xb (last read by up_proj) at %v, want ≥ down_proj's weights %v", r.Phase, an["Wxb"].Distance, downWeights)
		}
		rope := reuseOf(t, c, OpRoPE)
		if rope["q"].Distance != 0 || rope["k"].Distance != 0 || rope["Wq"].Distance != 0 {
			t.Errorf("%s rope: q, k just normed, want distance 0: %+v", r.Phase, rope)
		}
		res := reuseOf(t, c, OpAttnResidual)
		if res["ob"].Distance != 0 || res["Wx"].Distance != 0 || res["x"].Distance < 4*1024*1024*w {
			t.Errorf("%s attn_residual: ob 0, x written in place 0, x read after the attention projections' weights: %+v", r.Phase, res)
		}
		kv := reuseOf(t, c, OpKVWrite)
		if kv["Wkv2"].Distance < otherLayers {
			t.Errorf("%s kv_write: new KV positions at %v, want ≥ the other layers' weights %v", r.Phase, kv["Wkv2"].Distance, otherLayers)
		}
		if reuseOf(t, c, OpQProj)["w2.q_proj"].Distance < otherLayers {
			t.Errorf("%s q_proj's weights: want a whole forward call's distance", r.Phase)
		}
		for _, o := range append(append([]Operator{}, c.Layers[0].Ops...), c.Head...) {
			if len(o.Operands) == 0 {
				t.Errorf("%s %s: no operands", r.Phase, o.Name)
			}
			var in, out float64
			for _, p := range o.Operands {
				if p.Write {
					out += p.Bytes
				} else {
					in += p.Bytes
				}
			}
			b := o.Bytes
			if !nearRel(in, b.ActIn+b.Weights+b.KVRead) || !nearRel(out, b.ActOut+b.KVWrite) {
				t.Errorf("%s %s: operands read %v, write %v; bytes %+v", r.Phase, o.Name, in, out, b)
			}
		}
	}
	moe := Arch{Name: "m", Dim: 256, Intermediate: 512, Layers: 2, MoELayers: 2, Experts: 4, ExpertsPerToken: 2, MoEIntermediate: 128, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 100}
	c, err := BuildCatalog(moe, Request{Phase: Decode, Batch: 1, Tokens: 1, Context: 8, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range c.Layers[0].Ops {
		if o.Operands != nil {
			t.Fatalf("MoE %s has operands", o.Name)
		}
	}
}

// TestOperandLevels: a vector operator's operands are timed at the level
// their reuse distance leaves them in (capacity ≥ ReuseMargin × (distance
// + bytes)), a write to lines in DRAM at DRAM's write rate (in place, at
// its read roof); a decode-sized
// one counts cold lines only for its weights and the operands in a shared
// level.
func TestOperandLevels(t *testing.T) {
	m := callMachine()
	for i := range m.LevelRoofs {
		if m.LevelRoofs[i].Level == "DRAM" {
			m.LevelRoofs[i].WriteGBps = m.LevelRoofs[i].GBps / 2
		}
	}
	const kb = 1 << 10
	o := vector(OpAttnResidual, KindElementwise, 16, 1024, 1, 2, 4) // 64 KiB each of x, ob, x out
	o.Operands = []Operand{
		{Buffer: "x", Bytes: 64 * kb, Distance: 100 * kb},             // 2×164 KiB: L2
		{Buffer: "ob", Bytes: 64 * kb},                                // act 192 KiB: L2
		{Buffer: "x", Bytes: 64 * kb, Write: true, Distance: 1 << 30}, // DRAM, written
	}
	cb, ok := m.memTime(o, 1, 1<<30)
	if !ok {
		t.Fatal("no level roofs")
	}
	want := 64*kb/50e9 + 64*kb/50e9 + 64*kb/5e9
	if !nearRel(cb.Seconds, want) {
		t.Errorf("memTime %v s, want %v (L2 read, L2 read, DRAM write roof)", cb.Seconds, want)
	}
	if got := m.coldLines(o, 1); got != 1024 {
		t.Errorf("cold lines %v, want 1024 (the DRAM write's)", got)
	}

	// In place (RoPE's q, Distance 0): the lines it writes were just
	// read, so there is no write-allocate, and their write-back is the
	// caches' eviction, outside the call's time: the read alone, at DRAM's
	// read roof.
	const mb = 1 << 20
	r := vector(OpRoPE, KindNonlinear, 1024, 1024, 3, 1, 4) // 4 MiB of q in and out: act 8 MiB > L2
	r.Operands = []Operand{
		{Buffer: "q", Bytes: 4 * mb, Distance: 8 * mb},
		{Buffer: "q", Bytes: 4 * mb, Write: true},
	}
	if cb, _ := m.memTime(r, 1, 1<<30); !nearRel(cb.Seconds, 4*mb/10e9) {
		t.Errorf("in place: memTime %v s, want %v (the read at DRAM's read roof; the write-back not in the call)", cb.Seconds, 4*mb/10e9)
	}
	r.Operands[1].Distance = 8 * mb // written elsewhere since: write-allocate, at the write roof
	if cb, _ := m.memTime(r, 1, 1<<30); !nearRel(cb.Seconds, 4*mb/10e9+4*mb/5e9) {
		t.Errorf("not in place: memTime %v s, want %v (DRAM read, DRAM write roof)", cb.Seconds, 4*mb/10e9+4*mb/5e9)
	}
}

// TestDRAMWriteGBps: half the copy kernel's median at the largest working
// set of that thread count, else the write kernel's there.
func TestDRAMWriteGBps(t *testing.T) {
	bw := func(k string, th int, ws int64, g float64) results.Bandwidth {
		return results.Bandwidth{Kernel: k, Threads: th, WorkingSetBytes: ws, GBps: results.Stat{Median: g}}
	}
	mem := &results.Memory{WorkingSet: []results.Bandwidth{
		bw("write", 1, 1<<20, 90), bw("write", 1, 1<<30, 30), bw("read", 1, 1<<31, 50), bw("write", 2, 1<<29, 40),
		bw("copy", 2, 1<<20, 200), bw("copy", 2, 1<<29, 60),
	}}
	for _, c := range []struct {
		threads int
		want    float64
		from    string
	}{{1, 30, "the write kernel's"}, {2, 30, "half the copy kernel's"}, {4, 0, ""}} {
		if got, from := dramWriteGBps(mem, c.threads); got != c.want || from != c.from {
			t.Errorf("%d threads: %v (%q), want %v (%q)", c.threads, got, from, c.want, c.from)
		}
	}
}
