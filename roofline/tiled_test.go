package roofline

import (
	"math"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestTiledWorkCausal: with one-key tiles, one-row slivers and panels and
// no padding, the tiles compute exactly the causal pairs: QKᵀ and P·V
// 2·d FLOPs a pair, one softmax element a pair, one row per pair.
func TestTiledWorkCausal(t *testing.T) {
	for _, a := range []AttnShape{
		{B: 1, T: 7, C: 7, H: 2, KVHeads: 1, D: 3},
		{B: 2, T: 5, C: 12, H: 4, KVHeads: 2, D: 8},
	} {
		s := AttentionSchedule{Tile: 1, Rows: 3, TileM: 1, PanelN: 1, Pad: 1}
		w := s.TiledWork(a)
		pairs := float64(a.B) * float64(a.H) * CausalPairs(a.T, a.C)
		if want := 2 * float64(a.D) * pairs; w.QKFLOPs != want || w.PVFLOPs != want {
			t.Errorf("%+v: QKᵀ %v, P·V %v FLOPs, want %v", a, w.QKFLOPs, w.PVFLOPs, want)
		}
		if w.ScoreElems != pairs || w.RowTiles != pairs {
			t.Errorf("%+v: %v score elements over %v row tiles, want %v each", a, w.ScoreElems, w.RowTiles, pairs)
		}
		if want := float64(a.B * a.H * a.T * a.D); w.QueryElems != want {
			t.Errorf("%+v: %v query elements, want %v", a, w.QueryElems, want)
		}
	}
}

// TestTiledWorkByHand: one job of 4 rows over one tile of 4 keys (head dim
// 1, slivers and panels of 1, runs padded to 4): QKᵀ computes the 10
// causal scores, P·V the whole 4×4 tile (masked probabilities are zeros),
// every softmax run covers the padded 4, and each row is rescaled once and
// divided once.
func TestTiledWorkByHand(t *testing.T) {
	s := AttentionSchedule{Tile: 4, Rows: 4, TileM: 1, PanelN: 1, Pad: 4}
	w := s.TiledWork(AttnShape{B: 1, T: 4, C: 4, H: 1, KVHeads: 1, D: 1})
	if w.QKFLOPs != 2*10 || w.PVFLOPs != 2*16 || w.ScoreElems != 16 || w.RowTiles != 4 || w.RescaleElems != 8 {
		t.Errorf("%+v", w)
	}
	// Slivers of 2 rows: the diagonal's panels start at the sliver of the
	// first row that sees them (rows 0–1 for keys 0–1, rows 2–3 for keys
	// 2–3): 4·2 + 2·2 = 12 scores.
	s.TileM = 2
	if w := s.TiledWork(AttnShape{B: 1, T: 4, C: 4, H: 1, KVHeads: 1, D: 1}); w.QKFLOPs != 2*(2*4+2*2) {
		t.Errorf("slivers of 2: QKᵀ %v FLOPs, want %v", w.QKFLOPs, 2*(2*4+2*2))
	}
}

// TestTiledWorkEngineTiling: at the engine's tiling (tile 256, 48 rows,
// MR 12, NR 32, group 2, head dim 128) the tiles compute more than the
// causal count, the more so the shorter the prompt.
func TestTiledWorkEngineTiling(t *testing.T) {
	s := AttentionSchedule{Tile: 256, Rows: 48, TileM: 12, PanelN: 32, Pad: 16, VecRows: 8}
	prev := math.Inf(1)
	for _, T := range []int{128, 512, 2048} {
		a := AttnShape{B: 1, T: T, C: T, H: 16, KVHeads: 8, D: 128}
		w := s.TiledWork(a)
		causal := 4 * 128 * 16 * CausalPairs(T, T)
		r := (w.QKFLOPs + w.PVFLOPs) / causal
		if !(r > 1 && r < prev) {
			t.Errorf("prompt %d: computed/causal %.3f (previous prompt %.3f)", T, r, prev)
		}
		prev = r
		if s.Vector(a) {
			t.Errorf("prompt %d: a prefill on the vector path", T)
		}
	}
	if !s.Vector(AttnShape{B: 4, T: 1, C: 100, H: 16, KVHeads: 8, D: 128}) {
		t.Error("a decode step (1 row × group 2 < 8) not on the vector path")
	}
}

// TestTiledAttentionPrediction: with the engine's tiling on the machine, a
// probed profile's prefill attention is predicted from the tiles' work:
// its softmax in the core's caches (the catalog's materialized scores of a
// 2048-token prompt are DRAM-sized) and, with the probe's softmax rates
// per row width, a short prompt slower than the causal count (its runs are
// short rows); without the rates (an older profile) it still predicts;
// decode unchanged.
func TestTiledAttentionPrediction(t *testing.T) {
	for _, f := range []string{"profile-zen5-2core-knee.json", "profile-amd-epyc-2core.json"} {
		p, err := results.ReadProfile("../results/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := FromProfile(p, f)
		if err != nil {
			t.Fatal(err)
		}
		checkTiledPrediction(t, f, m)
	}
}

func checkTiledPrediction(t *testing.T, f string, m *Machine) {
	rates := m.Nonlinear != nil && len(m.Nonlinear.Rates) > 0
	arch := Arch{Name: "qwen3-0.6b-like", Dim: 1024, Intermediate: 3072, Layers: 1, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 1000}
	plan := AttentionSchedule{Tile: 256, Rows: 48, TileM: 12, PanelN: 32, Pad: 16, VecRows: 8}
	tiled := *m
	tiled.AttnPlan = &plan
	attn := func(m *Machine, r Request) (total float64, softmax Placed) {
		r.Weight, r.Act, r.KV, r.Routing = "fp32", "fp32", "fp32", Routing{Kind: "uniform"}
		a, err := Analyze(m, arch, r, "fp32")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range a.Layers[0].Ops {
			if ClassOf(o.Operator) == ClassAttention {
				total += o.Time
			}
			if o.Name == OpSoftmax {
				softmax = o
			}
		}
		return total, softmax
	}
	for _, T := range []int{128, 2048} {
		r := Request{Phase: Prefill, Batch: 1, Tokens: T, Context: T}
		causal, _ := attn(m, r)
		got, sm := attn(&tiled, r)
		if rates && (sm.Bound != BoundCompute+"/L2" || T == 128 && !(got > causal)) {
			t.Errorf("%s: prefill %d: tiled %v s (softmax bound %q), causal %v s", f, T, got, sm.Bound, causal)
		}
	}
	r := Request{Phase: Decode, Batch: 4, Tokens: 1, Context: 513}
	if a, b := func() float64 { v, _ := attn(m, r); return v }(), func() float64 { v, _ := attn(&tiled, r); return v }(); a != b {
		t.Errorf("%s: decode: %v s with the plan, %v without", f, b, a)
	}
}
