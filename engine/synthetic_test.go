package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cpubench/bench/kernels"
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
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Hidden
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

// naiveForward is the specification of the forward pass in float64, one
// position at a time: the logits after each of tokens.
func naiveForward(w *Weights, tokens []int) [][]float64 {
	c := w.Config
	d, hd, kvd := c.Dim, c.HeadDim, c.KVDim()
	matvec := func(W []float32, x []float64, n int) []float64 {
		k := len(x)
		y := make([]float64, n)
		for i := range y {
			for j, xv := range x {
				y[i] += float64(W[i*k+j]) * xv
			}
		}
		return y
	}
	rms := func(x []float64, wt []float32) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+float64(c.RMSEps))
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = v * r * float64(wt[i])
		}
		return out
	}
	inv := kernels.RoPEInvFreq(hd, c.RoPETheta, c.RoPEScaling)
	rope := func(x []float64, pos int) {
		for h := 0; h < len(x); h += hd {
			for i := range hd / 2 {
				a, b := h+2*i, h+2*i+1
				if c.RoPELayout == kernels.RoPEHalf {
					a, b = h+i, h+i+hd/2
				}
				s, co := math.Sincos(float64(pos) * inv[i])
				x[a], x[b] = x[a]*co-x[b]*s, x[a]*s+x[b]*co
			}
		}
	}
	kc := make([][][]float64, c.Layers)
	vc := make([][][]float64, c.Layers)
	var out [][]float64
	for pos, tok := range tokens {
		x := make([]float64, d)
		for i := range x {
			x[i] = float64(w.Embed[tok*d+i])
		}
		for li := range w.Layers {
			l := &w.Layers[li]
			xb := rms(x, l.AttnNorm)
			q, k, v := matvec(l.Wq, xb, c.QDim()), matvec(l.Wk, xb, kvd), matvec(l.Wv, xb, kvd)
			if c.QKNorm {
				for h := 0; h < len(q); h += hd {
					copy(q[h:h+hd], rms(q[h:h+hd], l.QNorm))
				}
				for h := 0; h < len(k); h += hd {
					copy(k[h:h+hd], rms(k[h:h+hd], l.KNorm))
				}
			}
			rope(q, pos)
			rope(k, pos)
			kc[li], vc[li] = append(kc[li], k), append(vc[li], v)
			att := make([]float64, c.QDim())
			for h := range c.Heads {
				kh := h / (c.Heads / c.KVHeads) * hd
				sc := make([]float64, pos+1)
				mx := math.Inf(-1)
				for j := range sc {
					for i := range hd {
						sc[j] += q[h*hd+i] * kc[li][j][kh+i]
					}
					sc[j] /= math.Sqrt(float64(hd))
					mx = max(mx, sc[j])
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				for j := range sc {
					for i := range hd {
						att[h*hd+i] += sc[j] / sum * vc[li][j][kh+i]
					}
				}
			}
			o := matvec(l.Wo, att, d)
			for i := range x {
				x[i] += o[i]
			}
			xb = rms(x, l.FFNNorm)
			g, u := matvec(l.Gate, xb, c.Hidden), matvec(l.Up, xb, c.Hidden)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			o = matvec(l.Down, g, d)
			for i := range x {
				x[i] += o[i]
			}
		}
		head := w.LMHead
		if c.TiedEmbeddings {
			head = w.Embed
		}
		out = append(out, matvec(head, rms(x, w.FinalNorm), c.Vocab))
	}
	return out
}

// TestSyntheticShapes checks the HF-style paths the stories260K reference
// does not cover (half-split RoPE, Llama 3 scaling, QK-norm, an untied LM
// head, head dim ≠ dim/heads, one KV head) against naiveForward, prefilled
// and then decoded.
func TestSyntheticShapes(t *testing.T) {
	scaling := &kernels.RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16}
	cases := []Config{
		{Name: "qwen3-like", Dim: 48, Hidden: 80, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 64,
			RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, TiedEmbeddings: true, QKNorm: true},
		{Name: "llama3-like", Dim: 32, Hidden: 64, Layers: 3, Heads: 4, KVHeads: 1, HeadDim: 8, Vocab: 50, MaxSeq: 64,
			RoPETheta: 500000, RoPELayout: kernels.RoPEHalf, RoPEScaling: scaling, RMSEps: 1e-5},
		{Name: "llama2c-like", Dim: 24, Hidden: 40, Layers: 2, Heads: 3, KVHeads: 3, HeadDim: 8, Vocab: 30, MaxSeq: 64,
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
			want := naiveForward(w, toks)
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
