package engine

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/models"
)

// randomWeights returns weights of shape c drawn uniformly, matrices
// scaled by 1/sqrt(fan-in) and norm weights around 1.
func randomWeights(c Config, rng *rand.Rand) *Weights {
	mat := func(n, k int) []float32 {
		out := make([]float32, n*k)
		s := 1.7 / math.Sqrt(float64(k))
		for i := range out {
			out[i] = float32((2*rng.Float64() - 1) * s)
		}
		return out
	}
	norm := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(0.5 + rng.Float64())
		}
		return out
	}
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Intermediate
	w := &Weights{Config: c, Embed: mat(c.Vocab, d), FinalNorm: norm(d), Layers: make([]LayerWeights, c.Layers)}
	for i := range w.Layers {
		w.Layers[i] = LayerWeights{AttnNorm: norm(d), Wq: mat(q, d), Wk: mat(kv, d), Wv: mat(kv, d), Wo: mat(d, q),
			FFNNorm: norm(d), Gate: mat(h, d), Up: mat(h, d), Down: mat(d, h)}
		if c.QKNorm {
			w.Layers[i].QNorm, w.Layers[i].KNorm = norm(c.HeadDim), norm(c.HeadDim)
		}
	}
	if !c.TiedEmbeddings {
		w.LMHead = mat(c.Vocab, d)
	}
	return w
}

// TestSyntheticShapes checks the HF-style paths the stories260K reference
// does not cover (half-split RoPE, Llama 3 scaling, QK-norm, an untied LM
// head, head dim ≠ dim/heads, one KV head) against refForward (the float64
// reference of reference_test.go), prefilled
// and then decoded.
func TestSyntheticShapes(t *testing.T) {
	scaling := &kernels.RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16}
	cases := []Config{
		{Name: "qwen3-like", Dim: 48, Intermediate: 80, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 64,
			RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, TiedEmbeddings: true, QKNorm: true},
		{Name: "llama3-like", Dim: 32, Intermediate: 64, Layers: 3, Heads: 4, KVHeads: 1, HeadDim: 8, Vocab: 50, MaxSeq: 64,
			RoPETheta: 500000, RoPELayout: kernels.RoPEHalf, RoPEScaling: scaling, RMSEps: 1e-5},
		{Name: "llama2c-like", Dim: 24, Intermediate: 40, Layers: 2, Heads: 3, KVHeads: 3, HeadDim: 8, Vocab: 30, MaxSeq: 64,
			RoPETheta: 10000, RoPELayout: kernels.RoPEAdjacent, RMSEps: 1e-5},
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			w := randomWeights(c, rand.New(rand.NewPCG(uint64(i), 7)))
			rng := rand.New(rand.NewPCG(uint64(i), 8))
			toks := make([]int, 40)
			for j := range toks {
				toks[j] = rng.IntN(c.Vocab)
			}
			want, _ := refForward(w, toks)
			m, err := New(w, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.NewSession(0)
			if err != nil {
				t.Fatal(err)
			}
			const T = 25
			all, err := s.PrefillAll(toks[:T])
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, p int, got []float32) {
				for j, g := range got {
					if d := math.Abs(float64(g) - want[p][j]); d > 2e-4*(1+math.Abs(want[p][j])) {
						t.Fatalf("%s position %d logit %d: %v, reference %v (diff %.3g)", what, p, j, g, want[p][j], d)
					}
				}
			}
			for p := range T {
				check("prefill", p, all[p*c.Vocab:(p+1)*c.Vocab])
			}
			for p := T; p < len(toks); p++ {
				l, err := s.Decode(toks[p])
				if err != nil {
					t.Fatal(err)
				}
				check("decode", p, l)
			}
		})
	}
}

// TestSynthetic checks Synthetic's shapes against the config (all layers
// and a prefix), determinism by seed, norms of 1, small entries, and that a
// short prefill and decode give finite logits.
func TestSynthetic(t *testing.T) {
	c := Config{Name: "tiny-qwen", Dim: 32, Intermediate: 48, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 37, MaxSeq: 32,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true}
	w, err := Synthetic(c, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.Config, c) || len(w.Layers) != 3 {
		t.Fatalf("config %+v, %d layers", w.Config, len(w.Layers))
	}
	for _, ts := range w.tensors() {
		if len(ts.data) != ts.want {
			t.Errorf("%s: %d floats, want %d", ts, len(ts.data), ts.want)
		}
	}
	if w.LMHead == nil || len(w.Layers[0].QNorm) != c.HeadDim {
		t.Errorf("untied head or QK-norm missing")
	}
	for _, n := range [][]float32{w.FinalNorm, w.Layers[1].AttnNorm, w.Layers[2].FFNNorm, w.Layers[0].KNorm} {
		for _, v := range n {
			if v != 1 {
				t.Fatalf("norm weight %v, want 1", v)
			}
		}
	}
	var ss float64
	for _, v := range w.Layers[0].Gate {
		ss += float64(v) * float64(v)
	}
	if sd := math.Sqrt(ss / float64(len(w.Layers[0].Gate))); sd < 0.015 || sd > 0.025 {
		t.Errorf("gate standard deviation %.4f, want about 0.02", sd)
	}

	same, _ := Synthetic(c, 0, 1)
	other, _ := Synthetic(c, 0, 2)
	if !slices.Equal(w.Embed, same.Embed) || !slices.Equal(w.Layers[2].Down, same.Layers[2].Down) {
		t.Error("same seed, different weights")
	}
	if slices.Equal(w.Embed, other.Embed) {
		t.Error("different seeds, same weights")
	}

	one, err := Synthetic(c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one.Config.Layers != 1 || len(one.Layers) != 1 {
		t.Fatalf("layers 1: config says %d, %d instantiated", one.Config.Layers, len(one.Layers))
	}
	for _, bad := range []int{-1, 4} {
		if _, err := Synthetic(c, bad, 1); err == nil || !strings.Contains(err.Error(), "synthetic layers") {
			t.Errorf("layers %d: %v", bad, err)
		}
	}

	tied := c
	tied.TiedEmbeddings, tied.QKNorm = true, false
	for _, cfg := range []Config{c, tied} {
		w, err := Synthetic(cfg, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(w, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewSession(0)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := s.Prefill([]int{1, 5, 9, 36, 0})
		if err != nil {
			t.Fatal(err)
		}
		for step := range 3 {
			for i, v := range logits {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s step %d logit %d: %v", cfg.Name, step, i, v)
				}
			}
			if logits, err = s.Decode(Argmax(logits)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSyntheticMoE: the shipped Qwen3-30B-A3B config converts to an MoE
// Config, and a small MoE config (with one dense layer) gets a router and
// every expert, runs, and times the MoE operators in MoE layers only.
func TestSyntheticMoE(t *testing.T) {
	mc, err := models.Load("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	big, err := FromModel(mc, HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: 4096, NormTopK: true})
	if err != nil || big.Experts != 128 || big.TopK != 8 || big.MoELayers() != 48 || !big.NormTopK {
		t.Fatalf("qwen3-30b-a3b: %+v, %v", big, err)
	}
	c := Config{Name: "tiny-moe", Dim: 32, Intermediate: 40, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 8, Vocab: 50, MaxSeq: 16,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true,
		Experts: 6, TopK: 2, MoEIntermediate: 24, NormTopK: true, SparseStep: 1, DenseLayers: []int{1}}
	w, err := Synthetic(c, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Layers[0].Experts) != 6 || w.Layers[1].Router != nil || w.Layers[1].Gate == nil {
		t.Fatalf("layer 0: %d experts; layer 1: router %v, gate %d floats", len(w.Layers[0].Experts), w.Layers[1].Router != nil, len(w.Layers[1].Gate))
	}
	m, err := New(w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := s.Prefill([]int{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decode(Argmax(logits)); err != nil {
		t.Fatal(err)
	}
	for _, tm := range s.Timings() {
		dense := tm.Op == OpGateProj || tm.Op == OpUpProj || tm.Op == OpSiLUMul || tm.Op == OpDownProj
		if tm.Layer == 1 && moeOp[tm.Op] || (tm.Layer == 0 || tm.Layer == 2) && dense {
			t.Errorf("%s layer %d: %s timed (layer 1 is dense, 0 and 2 MoE)", tm.Phase, tm.Layer, tm.Op)
		}
	}
}
