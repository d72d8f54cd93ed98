package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels"
)

// This file is an independent float64 specification of the forward pass
// (plain loops, none of the engine's kernels or kernels.RoPEInvFreq) and
// the tests that hold the fp32 engine to it on small random models of
// every family the engine runs: Llama (adjacent and half-split RoPE, with
// and without Llama 3 scaling, GQA and MHA, untied head), Qwen3 (QK-norm,
// tied head) and Qwen3-MoE (routed experts, with and without
// renormalization, dense and sparse layer patterns).

// refInvFreq returns the RoPE inverse frequencies θ^(-2i/d), i < d/2, with
// Llama 3 scaling when s is not nil, written from transformers'
// _compute_llama3_parameters (modeling_rope_utils.py):
//
//	low_freq_wavelen  = old_context_len / low_freq_factor
//	high_freq_wavelen = old_context_len / high_freq_factor
//	wavelen = 2π / inv_freq
//	inv_freq_llama = where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
//	smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
//	smoothed = (1 - smooth) · inv_freq_llama / factor + smooth · inv_freq_llama
//	medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen)
//	inv_freq_llama = where(medium, smoothed, inv_freq_llama)
func refInvFreq(d int, theta float64, s *kernels.RoPEScaling) []float64 {
	inv := make([]float64, d/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(theta, float64(2*i)/float64(d))
	}
	if s == nil {
		return inv
	}
	old := float64(s.OriginalMaxPositionEmbeddings)
	lowWavelen, highWavelen := old/s.LowFreqFactor, old/s.HighFreqFactor
	for i, f := range inv {
		wavelen := 2 * math.Pi / f
		llama := f
		if wavelen > lowWavelen {
			llama = f / s.Factor
		}
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
			smooth := (old/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			llama = (1-smooth)*llama/s.Factor + smooth*llama
		}
		inv[i] = llama
	}
	return inv
}

// refMatVec returns W·x for the row-major [len(W)/len(x)][len(x)] W.
func refMatVec(W []float32, x []float64) []float64 {
	k := len(x)
	y := make([]float64, len(W)/k)
	for i := range y {
		var s float64
		for j, xv := range x {
			s += float64(W[i*k+j]) * xv
		}
		y[i] = s
	}
	return y
}

// refRMSNorm returns x[i]·w[i]/sqrt(mean(x²)+eps).
func refRMSNorm(x []float64, w []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * r * float64(w[i])
	}
	return out
}

// refRoPE rotates, in place, every head of x (heads of hd elements) by the
// angles pos·inv[i]: pairs (2i, 2i+1) for RoPEAdjacent (llama2.c, GPT-J),
// (i, i+hd/2) for RoPEHalf (HF rotate_half).
func refRoPE(x []float64, hd, pos int, inv []float64, layout kernels.RoPELayout) {
	for h := 0; h < len(x); h += hd {
		for i := range hd / 2 {
			a, b := h+2*i, h+2*i+1
			if layout == kernels.RoPEHalf {
				a, b = h+i, h+i+hd/2
			}
			sin, cos := math.Sincos(float64(pos) * inv[i])
			x[a], x[b] = x[a]*cos-x[b]*sin, x[a]*sin+x[b]*cos
		}
	}
}

// refSwiGLU returns Down·(SiLU(Gate·x) ⊙ Up·x).
func refSwiGLU(gate, up, down []float32, x []float64) []float64 {
	g, u := refMatVec(gate, x), refMatVec(up, x)
	for i := range g {
		g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
	}
	return refMatVec(down, g)
}

// refMoE is Qwen3-MoE's sparse block (transformers Qwen3MoeSparseMoeBlock)
// on one row: p = softmax(Router·x) over the experts, the TopK largest
// (ties to the lower index), weights p_e (divided by their sum with
// NormTopK), output Σ weight_e · SwiGLU_e(x). gap is the smallest relative
// distance between a chosen and an unchosen probability, so that a test
// can tell a routing flip from a numerical error.
func refMoE(c Config, l *LayerWeights, x []float64) (out []float64, gap float64) {
	logits := refMatVec(l.Router, x)
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = max(mx, v)
	}
	p := make([]float64, len(logits))
	var sum float64
	for e, v := range logits {
		p[e] = math.Exp(v - mx)
		sum += p[e]
	}
	for e := range p {
		p[e] /= sum
	}
	chosen := make([]bool, len(p))
	sel := make([]int, 0, c.TopK)
	for range c.TopK {
		best := -1
		for e, v := range p {
			if !chosen[e] && (best < 0 || v > p[best]) {
				best = e
			}
		}
		chosen[best] = true
		sel = append(sel, best)
	}
	gap = math.Inf(1)
	for e, v := range p {
		if !chosen[e] {
			last := p[sel[len(sel)-1]]
			gap = min(gap, (last-v)/last)
		}
	}
	var norm float64 = 1
	if c.NormTopK {
		norm = 0
		for _, e := range sel {
			norm += p[e]
		}
	}
	out = make([]float64, len(x))
	for _, e := range sel {
		ex := &l.Experts[e]
		y := refSwiGLU(ex.Gate, ex.Up, ex.Down, x)
		for i := range out {
			out[i] += p[e] / norm * y[i]
		}
	}
	return out, gap
}

// refForward is the forward pass in float64, one position at a time with
// a float64 KV cache: the logits after each of tokens, and the smallest
// routing gap of refMoE over all MoE layers and positions (+Inf for a
// dense model). Per layer (pre-norm residual blocks):
//
//	h = RMSNorm(x)·attn_norm;  q, k, v = Wq·h, Wk·h, Wv·h
//	QKNorm: q, k = per-head RMSNorm(q)·q_norm, RMSNorm(k)·k_norm
//	q, k = RoPE(q, pos), RoPE(k, pos)
//	head hq (KV head hq/(Heads/KVHeads)): softmax_j(q·k_j/√HeadDim)·v_j, j ≤ pos
//	x += Wo·att;  h = RMSNorm(x)·ffn_norm
//	x += Down·(SiLU(Gate·h) ⊙ Up·h), or refMoE(h) in an MoE layer
//
// then logits = LMHead·(RMSNorm(x)·final_norm), LMHead = Embed when tied.
func refForward(w *Weights, tokens []int) (logits [][]float64, gap float64) {
	c := w.Config
	d, hd, eps := c.Dim, c.HeadDim, float64(c.RMSEps)
	group := c.Heads / c.KVHeads
	inv := refInvFreq(hd, c.RoPETheta, c.RoPEScaling)
	kc := make([][][]float64, c.Layers) // [layer][pos][KVDim]
	vc := make([][][]float64, c.Layers)
	gap = math.Inf(1)
	for pos, tok := range tokens {
		x := make([]float64, d)
		for i := range x {
			x[i] = float64(w.Embed[tok*d+i])
		}
		for li := range w.Layers {
			l := &w.Layers[li]
			h := refRMSNorm(x, l.AttnNorm, eps)
			q, k, v := refMatVec(l.Wq, h), refMatVec(l.Wk, h), refMatVec(l.Wv, h)
			if c.QKNorm {
				for o := 0; o < len(q); o += hd {
					copy(q[o:o+hd], refRMSNorm(q[o:o+hd], l.QNorm, eps))
				}
				for o := 0; o < len(k); o += hd {
					copy(k[o:o+hd], refRMSNorm(k[o:o+hd], l.KNorm, eps))
				}
			}
			refRoPE(q, hd, pos, inv, c.RoPELayout)
			refRoPE(k, hd, pos, inv, c.RoPELayout)
			kc[li], vc[li] = append(kc[li], k), append(vc[li], v)

			att := make([]float64, c.QDim())
			for hq := range c.Heads {
				ko := hq / group * hd
				lo := 0 // the sliding window's first position
				if c.SlidingWindow > 0 {
					lo = max(0, pos-c.SlidingWindow+1)
				}
				s := make([]float64, pos+1)
				mx := math.Inf(-1)
				for j := range s {
					if j < lo {
						s[j] = math.Inf(-1) // e^-Inf = 0: outside the window
						continue
					}
					for i := range hd {
						s[j] += q[hq*hd+i] * kc[li][j][ko+i]
					}
					s[j] /= math.Sqrt(float64(hd))
					mx = max(mx, s[j])
				}
				var sum float64
				for j := range s {
					s[j] = math.Exp(s[j] - mx)
					sum += s[j]
				}
				for j := range s {
					for i := range hd {
						att[hq*hd+i] += s[j] / sum * vc[li][j][ko+i]
					}
				}
			}
			o := refMatVec(l.Wo, att)
			for i := range x {
				x[i] += o[i]
			}

			h = refRMSNorm(x, l.FFNNorm, eps)
			if c.IsMoE(li) {
				var g float64
				o, g = refMoE(c, l, h)
				gap = min(gap, g)
			} else {
				o = refSwiGLU(l.Gate, l.Up, l.Down, h)
			}
			for i := range x {
				x[i] += o[i]
			}
		}
		head := w.LMHead
		if c.TiedEmbeddings {
			head = w.Embed
		}
		logits = append(logits, refMatVec(head, refRMSNorm(x, w.FinalNorm, eps)))
	}
	return logits, gap
}

// refWeights draws weights of shape c from a seeded PCG: every matrix
// (embeddings included) N(0, 0.1²), norm weights uniform in [0.8, 1.2].
func refWeights(c Config, seed uint64) *Weights {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	mat := func(n, k int) []float32 {
		out := make([]float32, n*k)
		for i := range out {
			out[i] = float32(0.1 * rng.NormFloat64())
		}
		return out
	}
	norm := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(0.8 + 0.4*rng.Float64())
		}
		return out
	}
	d, q, kv := c.Dim, c.QDim(), c.KVDim()
	w := &Weights{Config: c, Embed: mat(c.Vocab, d), FinalNorm: norm(d), Layers: make([]LayerWeights, c.Layers)}
	for i := range w.Layers {
		l := &w.Layers[i]
		l.AttnNorm, l.Wq, l.Wk, l.Wv, l.Wo, l.FFNNorm = norm(d), mat(q, d), mat(kv, d), mat(kv, d), mat(d, q), norm(d)
		if c.QKNorm {
			l.QNorm, l.KNorm = norm(c.HeadDim), norm(c.HeadDim)
		}
		if c.IsMoE(i) {
			l.Router = mat(c.Experts, d)
			l.Experts = make([]ExpertWeights, c.Experts)
			for e := range l.Experts {
				l.Experts[e] = ExpertWeights{Gate: mat(c.MoEIntermediate, d), Up: mat(c.MoEIntermediate, d), Down: mat(d, c.MoEIntermediate)}
			}
		} else {
			l.Gate, l.Up, l.Down = mat(c.Intermediate, d), mat(c.Intermediate, d), mat(d, c.Intermediate)
		}
	}
	if !c.TiedEmbeddings {
		w.LMHead = mat(c.Vocab, d)
	}
	return w
}

// refConfigs are the small models of TestReference: every RoPE layout,
// Llama 3 scaling on and off, MHA and GQA 4:1, tied and untied heads,
// QK-norm, and Qwen3-MoE with 8 experts, top-2, with and without
// renormalization, all layers MoE, a dense first layer (mlp_only_layers)
// and every other layer MoE (decoder_sparse_step 2).
func refConfigs() []Config {
	// HeadDim 16, θ 10⁴: wavelengths 2π·10^(i/2) = 6.3, 19.9, 62.8, …;
	// with an original context of 32, low 1, high 4 (bounds 32 and 8),
	// frequency 0 is kept, 1 smoothed and 2-7 divided by the factor, so
	// all three regimes turn the 24 positions by measurable angles.
	scaling := &kernels.RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 32}
	llama := Config{Dim: 32, Intermediate: 48, Layers: 2, Heads: 8, KVHeads: 2, HeadDim: 8, Vocab: 40, MaxSeq: 64,
		RoPETheta: 10000, RMSEps: 1e-5}
	with := func(c Config, f func(*Config)) Config {
		f(&c)
		return c
	}
	qwen := Config{Dim: 32, Intermediate: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 64,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, TiedEmbeddings: true, QKNorm: true}
	moe := with(qwen, func(c *Config) {
		c.Layers, c.Intermediate, c.Experts, c.TopK, c.MoEIntermediate, c.NormTopK = 3, 0, 8, 2, 16, true
	})
	return []Config{
		with(llama, func(c *Config) { c.Name, c.RoPELayout = "llama-adjacent-gqa4", kernels.RoPEAdjacent }),
		with(llama, func(c *Config) {
			c.Name, c.RoPELayout, c.Heads, c.KVHeads = "llama-adjacent-mha", kernels.RoPEAdjacent, 4, 4
		}),
		with(llama, func(c *Config) { c.Name, c.RoPELayout = "llama-half-gqa4", kernels.RoPEHalf }),
		with(llama, func(c *Config) {
			c.Name, c.RoPELayout, c.Heads, c.KVHeads, c.HeadDim = "llama3-scaled-half-gqa4", kernels.RoPEHalf, 4, 1, 16
			c.RoPETheta, c.RoPEScaling = 10000, scaling
		}),
		with(llama, func(c *Config) {
			c.Name, c.RoPELayout, c.Heads, c.KVHeads, c.HeadDim = "llama3-scaled-adjacent-mha", kernels.RoPEAdjacent, 2, 2, 16
			c.RoPEScaling = scaling
		}),
		with(qwen, func(c *Config) { c.Name = "qwen3-dense" }),
		with(moe, func(c *Config) { c.Name = "qwen3-moe-norm" }),
		with(moe, func(c *Config) { c.Name, c.NormTopK = "qwen3-moe-no-norm", false }),
		with(moe, func(c *Config) { c.Name, c.Intermediate, c.DenseLayers = "qwen3-moe-dense-layer0", 40, []int{0} }),
		with(moe, func(c *Config) {
			c.Name, c.Layers, c.Intermediate, c.SparseStep, c.NormTopK = "qwen3-moe-sparse-step2", 4, 40, 2, false
		}),
		// More positions than two attention tiles (refLong).
		with(llama, func(c *Config) {
			c.Name, c.RoPELayout, c.Heads, c.KVHeads, c.HeadDim, c.MaxSeq = "llama-half-gqa4-long", kernels.RoPEHalf, 4, 1, 16, refLong
		}),
		// A sliding window shorter than a tile, over more than two tiles.
		with(llama, func(c *Config) {
			c.Name, c.RoPELayout, c.Heads, c.KVHeads, c.HeadDim, c.MaxSeq = "llama-half-gqa2-window-long", kernels.RoPEHalf, 4, 2, 16, refLong
			c.SlidingWindow = 100
		}),
	}
}

// refLong is the number of tokens TestReference runs on a model named
// *-long: more than two attnTile tiles, prefilled in blocks of the
// engine's attention rows and decoded past a tile boundary.
const refLong = 2*attnTile + 45

// Tolerances of TestReference, relative to scale = max_j |reference logit
// j| at the position.
//
// refTol (fp32 engine vs float64): fp32 rounds each operation by at most
// u = 2^-24 ≈ 6e-8; the dot products of length K ≤ 48 here err by at most
// K·u·Σ|x·w| (kernels/gemm's bound) and typically √K·u, and each layer
// runs about ten such operators (norm, q/k/v, attention scores and sums,
// o, gate/up/down or the experts) whose relative errors add along the
// residual stream; with at most four layers and the LM head that is of
// order 50·√48·u ≈ 2e-5 of the logits' scale in the worst alignment
// (measured: under 1e-6). 1e-4·scale leaves a factor of five over that
// estimate while still catching any wrong formula (a wrong RoPE pair, a
// missing scale, a flipped expert: errors of 1e-2..1 of the scale).
//
// refTightTol (prefill+decode vs decode one by one, both fp32 engine):
// the same operations in a different summation order (GEMM blocking by M,
// the attention's GEMM tiles vs its scalar loop), so a few u per operator:
// 1e-5·scale, ten times below refTol (measured: under 1e-6).
const (
	refTol      = 1e-4
	refTightTol = 1e-5
)

// refSequences draws len(lens) random token sequences from rng, sequence
// s its prompt of lens[s] tokens and steps more, with the float64
// reference logits of every position.
func refSequences(w *Weights, rng *rand.Rand, lens []int, steps int) (toks [][]int, want [][][]float64) {
	toks, want = make([][]int, len(lens)), make([][][]float64, len(lens))
	for s, n := range lens {
		toks[s] = make([]int, n+steps)
		for i := range toks[s] {
			toks[s][i] = rng.IntN(w.Config.Vocab)
		}
		want[s], _ = refForward(w, toks[s])
	}
	return toks, want
}

// refScale is max(max_j |x_j|, 1e-3): the logits' magnitude at a position.
func refScale(x []float64) float64 {
	s := 1e-3
	for _, v := range x {
		s = max(s, math.Abs(v))
	}
	return s
}

// newRefModel builds the engine for w on backend ("" the default),
// skipping the test when the engine refuses an MoE model.
func newRefModel(t *testing.T, w *Weights, backend string) *Model {
	t.Helper()
	m, err := New(w, Options{Backend: backend})
	if err != nil {
		if w.Config.Experts > 0 && strings.Contains(err.Error(), "MoE") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// testReference runs every refConfigs model on backend: PrefillAll of N
// tokens (24, or refLong) against refForward at every position (refTol),
// Prefill of the first N-7 (N-10) then Decode of the rest, and Decode of
// all N from an empty cache, against each other (refTightTol) and the
// reference (refTol).
func testReference(t *testing.T, backend string) {
	for ci, c := range refConfigs() {
		N, T := 24, 17
		if strings.HasSuffix(c.Name, "-long") {
			N, T = refLong, refLong-10
		}
		t.Run(c.Name, func(t *testing.T) {
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			w := refWeights(c, uint64(ci+1))
			rng := rand.New(rand.NewPCG(uint64(ci), 99))
			toks := make([]int, N)
			for i := range toks {
				toks[i] = rng.IntN(c.Vocab)
			}
			want, gap := refForward(w, toks)
			if gap < 1e-4 {
				t.Fatalf("routing near-tie (relative gap %.2g): fp32 may pick another expert; change the seed", gap)
			}
			m := newRefModel(t, w, backend)
			worst := 0.0
			check := func(what string, p int, got []float32, ref []float64, tol float64) {
				t.Helper()
				sc := refScale(ref)
				for j, g := range got {
					e := math.Abs(float64(g) - ref[j])
					if !(e <= tol*sc) {
						t.Fatalf("%s: position %d logit %d: %v, want %v: error %.3g > %g·scale (scale %.3g)", what, p, j, g, ref[j], e, tol, sc)
					}
					if tol == refTol {
						worst = max(worst, e/sc)
					}
				}
			}
			f64 := func(x []float32) []float64 {
				out := make([]float64, len(x))
				for i, v := range x {
					out[i] = float64(v)
				}
				return out
			}

			s, err := m.NewSession(N)
			if err != nil {
				t.Fatal(err)
			}
			all, err := s.PrefillAll(toks)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != N*c.Vocab {
				t.Fatalf("PrefillAll: %d logits, want %d", len(all), N*c.Vocab)
			}
			for p := range N {
				check("PrefillAll", p, all[p*c.Vocab:(p+1)*c.Vocab], want[p], refTol)
			}

			one, err := m.NewSession(N)
			if err != nil {
				t.Fatal(err)
			}
			stepwise := make([][]float64, N)
			for p, tok := range toks {
				l, err := one.Decode(tok)
				if err != nil {
					t.Fatal(err)
				}
				stepwise[p] = f64(l)
				check("Decode from empty", p, l, want[p], refTol)
			}

			pd, err := m.NewSession(N)
			if err != nil {
				t.Fatal(err)
			}
			l, err := pd.Prefill(toks[:T])
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("Prefill(%d) vs Decode one by one", T), T-1, l, stepwise[T-1], refTightTol)
			for p := T; p < N; p++ {
				if l, err = pd.Decode(toks[p]); err != nil {
					t.Fatal(err)
				}
				check("Decode after Prefill vs Decode one by one", p, l, stepwise[p], refTightTol)
			}
			t.Logf("largest error vs reference: %.3g of the logits' scale", worst)
		})
	}
}

// TestReferenceDefaultBackend holds the engine on its default cores backend
// (gemm.ChoosePair, the cores' best fp32 backend) to
// refForward.
func TestReferenceDefaultBackend(t *testing.T) { testReference(t, "") }

// TestReferenceGoBackend holds the engine on the pure-Go fp32 kernels
// ("go-fp32") to refForward.
func TestReferenceGoBackend(t *testing.T) { testReference(t, "go-fp32") }

// TestRefInvFreq checks refInvFreq on the Llama 3.1 parameters (θ 5·10⁵,
// head dim 128, factor 8, low 1, high 4, original context 8192), whose
// wavelengths 2π·θ^(i/64) put i ≤ 28 below 2048 (kept), i ≥ 35 above 8192
// (divided by 8) and 29..34 in between; i = 32 (wavelength 2π·√θ ≈
// 4442.9, smooth (8192/4442.9 - 1)/3 ≈ 0.28128) worked out by hand:
// (1-0.28128)/8 + 0.28128 ≈ 0.371122 of the unscaled frequency.
func TestRefInvFreq(t *testing.T) {
	s := &kernels.RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	plain, scaled := refInvFreq(128, 500000, nil), refInvFreq(128, 500000, s)
	for i, f := range plain {
		if want := math.Pow(500000, -float64(i)/64); math.Abs(f-want) > 1e-15*want {
			t.Fatalf("unscaled inv freq %d: %g, want %g", i, f, want)
		}
		switch r := scaled[i] / f; {
		case i <= 28 && r != 1:
			t.Errorf("i=%d: scaled by %g, want kept", i, r)
		case i >= 35 && math.Abs(r-0.125) > 1e-15:
			t.Errorf("i=%d: scaled by %g, want 1/8", i, r)
		case i > 28 && i < 35 && !(r > 0.125 && r < 1):
			t.Errorf("i=%d: scaled by %g, want between 1/8 and 1", i, r)
		}
	}
	if r := scaled[32] / plain[32]; math.Abs(r-0.371122) > 1e-6 {
		t.Errorf("i=32: scaled by %.7f, want 0.371122", r)
	}
}
