package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/gguf"
	"github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/kernels/quant"
)

// dequantized returns a copy of w with its quantized linear matrices
// dequantized (Weights.Dequantize), w untouched.
func dequantized(w *Weights) *Weights {
	c := *w
	c.Layers = slices.Clone(w.Layers)
	for i := range c.Layers {
		c.Layers[i].Experts = slices.Clone(w.Layers[i].Experts)
	}
	c.Dequantize()
	return &c
}

// quantConfigs are refConfigs' families at dims the block formats take
// (every K a multiple of 32): Llama with GQA and an untied head, Qwen3
// with QK-norm and a tied head, Qwen3-MoE (8 experts, top-2).
func quantConfigs() []Config {
	var out []Config
	for _, c := range refConfigs() {
		switch c.Name {
		case "llama-adjacent-gqa4", "qwen3-dense":
			c.Intermediate = 64
			out = append(out, c)
		case "qwen3-moe-norm":
			c.MoEIntermediate = 32
			out = append(out, c)
			// Every expert routed: the routing weights are continuous in
			// the router logits, so activation rounding cannot flip an
			// expert and the reference comparison holds at every seed.
			c.Name, c.Layers, c.Experts, c.TopK = "qwen3-moe-all-routed", 2, 4, 4
			out = append(out, c)
		}
	}
	return out
}

// Tolerances of TestQuantReference, relative to the logits' scale
// (refScale), for the engine on quantized weights against refForward on
// the same weights dequantized (float64, unquantized activations).
//
// quantTol: the only error beyond the fp32 engine's (refTol, 1e-4) is the
// rounding of every linear operator's input to int8 per 32-element block:
// each activation moves by at most d_x/2 = max|x_block|/254, about 0.4% of
// the block's largest value, so a dot product of K terms moves by about
// (max|x|/254)·‖w‖/√3, of order 0.5% of its typical size (max|x| ≈ 2.5
// rms for these Gaussian activations). Every layer runs 7 such operators,
// 3 in series along any path (q/k/v, o, gate/up then down), their errors
// adding along the residual stream, plus the LM head: through 2-3 layers,
// a few percent of the logits' scale at the worst of 40 logits × 20
// positions. Measured on the avx512vnni backend over 12 seeds × the 4
// configs × both formats (96 models): median 1.8e-2, largest 5.8e-2 of
// the scale (q8_0 and q4_0 alike: the weights' own rounding is in the
// reference). quantTol = 0.15 leaves a factor of 2.6 over the largest and
// still catches a wrong block, scale, nibble order or offset (errors of
// order 1 of the scale).
//
// quantTightTol (prefill+decode vs decode one by one, batched vs alone):
// each row is quantized alone either way (per-row block scales), so these
// differ only by float summation order (kernels per tile height, the
// attention's tiles), a few ulps — measured at most 7e-7 of the scale over
// the same 96 models — except where such an ulp moves an activation
// across a rounding boundary of the next quantization: one quantum d_x in
// one element, about 1e-3 of that operator's output. 2e-3 allows one.
// int2 and int1 (the low-bit paper's formats) get 1.5e-2: with 2 and 1
// bit per weight the coarser model moves further after a flip (measured
// up to 6.8e-3 of the scale, int2 on the all-routed MoE config, the
// avx512vnni backend); so do the ternary formats (held as int2) and q4_k
// (measured 5.4e-3 on llama-adjacent-gqa4 with the Go tiles and the
// avx512vnni backend alike: these configs' rows of 32-64 weights fill one
// or two of a 256-weight super-block's 8 sub-blocks, whose 6-bit scales
// and mins are then coarse).
const (
	quantTol      = 0.15
	quantTightTol = 2e-3
)

// tightTol is quantTightTol for format f.
func tightTol(f quant.Format) float64 {
	switch f {
	case quant.Int2, quant.Int1, quant.TQ2_0, quant.TQ1_0, quant.Q4_K:
		return 1.5e-2
	}
	return quantTightTol
}

// TestQuantReference: the engine on q8_0 and q4_0 weights (Weights.Quantize
// of refWeights) against refForward on the dequantized weights, on the Go
// backend and the best one: PrefillAll and decode from empty (quantTol),
// prefill then decode against decode one by one (quantTightTol), and a
// batched decode step against each slot decoded alone (quantTightTol).
func TestQuantReference(t *testing.T) {
	backends := []string{"go"}
	if b := quant.Best(); b.Name != "go" {
		backends = append(backends, b.Name)
		if raceEnabled {
			backends = backends[1:] // the purego pass runs the Go backend's cases
		}
	}
	for ci, c := range quantConfigs() {
		for _, f := range quant.Formats() {
			for _, be := range backends {
				t.Run(fmt.Sprintf("%s/%s/%s", c.Name, f, be), func(t *testing.T) {
					testQuantReference(t, c, uint64(ci+1), f, be)
				})
			}
		}
	}
}

func testQuantReference(t *testing.T, c Config, seed uint64, f quant.Format, be string) {
	const N, T = 20, 13
	w := refWeights(c, seed)
	if err := w.Quantize(f); err != nil {
		t.Fatal(err)
	}
	if fs := w.WeightFormats(); len(fs) != 1 || fs[string(f)] == 0 {
		t.Fatalf("weight formats %v, want only %s", fs, f)
	}
	if c.TiedEmbeddings && (w.LMHeadQ == nil || w.Embed == nil) {
		t.Fatalf("tied head: LMHeadQ %v, Embed %d values", w.LMHeadQ != nil, len(w.Embed))
	}
	rng := rand.New(rand.NewPCG(seed, 77))
	toks := make([]int, N)
	for i := range toks {
		toks[i] = rng.IntN(c.Vocab)
	}
	want, gap := refForward(dequantized(w), toks)
	// With top-k of several experts, a rounded activation can flip a
	// near-tie between the k-th and the next expert (relative gaps here
	// are often below the 1% the rounding moves a router logit by): then
	// only the engine-against-itself checks run.
	vsRef := c.TopK == c.Experts || gap > 0.1
	if !vsRef {
		t.Logf("routing gap %.2g: comparing the engine with itself only", gap)
	}
	m, err := New(w, Options{QuantBackend: be})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Quant == nil || m.Quant.Name != be || m.WeightFormat != string(f) {
		t.Fatalf("model quant backend %v, weight format %q", m.Quant, m.WeightFormat)
	}
	var worst, worstTight float64
	check := func(what string, p int, got []float32, ref []float64, tol float64) {
		t.Helper()
		sc := refScale(ref)
		if tol == quantTol && !vsRef {
			return
		}
		for j, g := range got {
			e := math.Abs(float64(g) - ref[j])
			if !(e <= tol*sc) {
				t.Fatalf("%s: position %d logit %d: %v, want %v: error %.3g > %g·scale (scale %.3g)", what, p, j, g, ref[j], e, tol, sc)
			}
			if tol == quantTol {
				worst = max(worst, e/sc)
			} else {
				worstTight = max(worstTight, e/sc)
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
	for p := range N {
		check("PrefillAll", p, all[p*c.Vocab:(p+1)*c.Vocab], want[p], quantTol)
	}
	one, _ := m.NewSession(N)
	stepwise := make([][]float64, N)
	for p, tok := range toks {
		l, err := one.Decode(tok)
		if err != nil {
			t.Fatal(err)
		}
		stepwise[p] = f64(l)
		check("Decode from empty", p, l, want[p], quantTol)
	}
	pd, _ := m.NewSession(N)
	l, err := pd.Prefill(toks[:T])
	if err != nil {
		t.Fatal(err)
	}
	check(fmt.Sprintf("Prefill(%d) vs Decode one by one", T), T-1, l, stepwise[T-1], tightTol(f))
	for p := T; p < N; p++ {
		if l, err = pd.Decode(toks[p]); err != nil {
			t.Fatal(err)
		}
		check("Decode after Prefill vs Decode one by one", p, l, stepwise[p], tightTol(f))
	}

	// Batched decode: slots holding 5, 9 and 2 tokens of their own
	// sequences decode one token together; each row against that slot
	// decoded alone.
	b, err := m.NewBatch(3, N)
	if err != nil {
		t.Fatal(err)
	}
	lens := []int{5, 9, 2}
	seqs := make([][]int, len(lens))
	for s, n := range lens {
		seqs[s] = make([]int, n+1)
		for i := range seqs[s] {
			seqs[s][i] = rng.IntN(c.Vocab)
		}
		if _, err := b.Prefill(s, seqs[s][:n]); err != nil {
			t.Fatal(err)
		}
	}
	slots := []int{2, 0, 1}
	next := []int{seqs[2][2], seqs[0][5], seqs[1][9]}
	got, err := b.Decode(slots, next)
	if err != nil {
		t.Fatal(err)
	}
	got = slices.Clone(got)
	for i, sl := range slots {
		alone, _ := m.NewSession(N)
		if _, err := alone.Prefill(seqs[sl][:lens[sl]]); err != nil {
			t.Fatal(err)
		}
		l, err := alone.Decode(next[i])
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("batched decode row %d (slot %d) vs alone", i, sl), lens[sl], got[i*c.Vocab:(i+1)*c.Vocab], f64(l), tightTol(f))
	}
	t.Logf("largest error vs reference %.3g, between engine runs %.3g of the logits' scale", worst, worstTight)
}

// TestQuantErrors: quantized weights refuse the placements and ablation
// that cannot run them, auto becomes cores, and bad synthetic dtypes and
// shapes are named.
func TestQuantErrors(t *testing.T) {
	c := quantConfigs()[0]
	w := refWeights(c, 1)
	if err := w.Quantize(quant.Q4_0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Placement: PlaceMixed, Threads: 2}, "engine: placement mixed with q4_0 weights: not supported (quantized weights run on the cores' quant backend)"},
		{Options{Placement: PlaceMatrix}, "engine: placement matrix with q4_0 weights: not supported"},
		{Options{PackPerCall: true}, "engine: ablation packing with q4_0 weights: not supported"},
		{Options{QuantBackend: "nope"}, `quant: backend "nope": unknown`},
	} {
		m, err := New(w, tc.o)
		if err == nil {
			m.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
	if _, err := ParseWeightDType("q3_k"); err == nil || err.Error() != `engine: weight dtype "q3_k": want fp32, q8_0, q4_0, int2, int1, q4_k, q6_k, tq2_0, tq1_0` {
		t.Errorf("ParseWeightDType(q3_k) = %v", err)
	}
	bad := refConfigs()[0] // Intermediate 48: down's K is not a multiple of 32
	if _, err := SyntheticAs(bad, 0, 1, "q8_0"); err == nil || !strings.Contains(err.Error(), "tensor w2 layer 0") {
		t.Errorf("SyntheticAs with K = 48: %v, want an error naming tensor w2 layer 0", err)
	}
	nan := refWeights(c, 1)
	nan.Layers[1].Wk[5] = float32(math.NaN())
	if err := nan.Quantize(quant.Q8_0); err == nil || !strings.Contains(err.Error(), "tensor wk layer 1") {
		t.Errorf("Quantize with a NaN: %v, want an error naming tensor wk layer 1", err)
	}
}

// TestSyntheticAs: q8_0 and q4_0 synthetic weights are the fp32 ones
// quantized (same draws), hold no float32 linear matrix, and take about
// 1.0625 and 0.5625 bytes per linear weight.
func TestSyntheticAs(t *testing.T) {
	for _, c := range quantConfigs() {
		for _, f := range quant.Formats() {
			w, err := SyntheticAs(c, 0, 3, string(f))
			if err != nil {
				t.Fatal(err)
			}
			want := dequantized(w)
			ref, err := Synthetic(c, 0, 3)
			if err != nil {
				t.Fatal(err)
			}
			if err := ref.Quantize(f); err != nil {
				t.Fatal(err)
			}
			got := dequantized(ref)
			for i, s := range want.linearSlots() {
				if !slices.Equal(*s.f, *got.linearSlots()[i].f) {
					t.Errorf("%s %s: %s differs from the fp32 draw quantized", c.Name, f, s.t)
				}
			}
			fs := w.WeightFormats()
			if len(fs) != 1 {
				t.Errorf("%s %s: formats %v", c.Name, f, fs)
			}
			var qb int64
			var padded float64
			gran := 64 // a block pair; the 256-weight formats' K-quants: a super-block
			if f == quant.Q4_K || f == quant.Q6_K {
				gran = quant.SuperLen
			}
			for _, s := range w.linearSlots() {
				qb += (*s.q).Bytes()
				padded += float64((s.t.n+3)/4*4) * float64((s.t.k+gran-1)/gran*gran)
			}
			// The bytes are the format's but for the padding of the packed
			// layout: N to a multiple of 4 rows, K to a whole pair (K = 32
			// here: twice the blocks) or, for q4_k and q6_k, to a whole
			// super-block (8 times).
			if r := float64(qb) / padded; math.Abs(r-f.BytesPerWeight()) > 1e-9 {
				t.Errorf("%s %s: %.4f bytes per padded weight, want %.4f", c.Name, f, r, f.BytesPerWeight())
			}
			if w.Bytes() != qb+4*int64(len(w.Embed)+len(w.FinalNorm))+normBytes(w) {
				t.Errorf("%s %s: Bytes %d", c.Name, f, w.Bytes())
			}
		}
	}
}

func normBytes(w *Weights) int64 {
	var n int64
	for _, l := range w.Layers {
		n += 4 * int64(len(l.AttnNorm)+len(l.FFNNorm)+len(l.QNorm)+len(l.KNorm))
	}
	return n
}

// TestRunQuantChunks: runQuant's paths — X quantized by worker 0 alone or
// in row chunks, columns split over the workers at panel boundaries, an N
// that is no multiple of the panel height and an M no multiple of the
// tile height — give what one quant.Mul over the whole matrix gives (each
// row is quantized alone either way, so only summation order may differ).
func TestRunQuantChunks(t *testing.T) {
	c := quantConfigs()[0]
	w := refWeights(c, 1)
	if err := w.Quantize(quant.Q8_0); err != nil {
		t.Fatal(err)
	}
	threads := min(len(allowedCPUs(t)), 3)
	m, err := New(w, Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	for _, sh := range []struct{ M, N, K int }{{1, 70, 1024}, {3, 9, 64}, {67, 70, 1024}, {130, 33, 512}} {
		wf := make([]float32, sh.N*sh.K)
		for i := range wf {
			wf[i] = float32(rng.NormFloat64())
		}
		q, err := quant.Quantize(quant.Q8_0, wf, sh.N, sh.K)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, sh.M*sh.K)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var a quant.Activations
		if err := a.Quantize(quant.Q8_0, x, sh.M, sh.K); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, sh.M*sh.N)
		if err := quant.Mul(*m.Quant, q, &a, want, sh.N, 0, sh.N); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, sh.M*sh.N)
		l := &linear{op: OpQProj, n: sh.N, k: sh.K, q: q}
		if err := m.pool.Do(func(ms *pool.Master) error { return m.runQuant(ms, l, got, x, sh.M) }); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if e := math.Abs(float64(got[i] - want[i])); !(e <= 1e-5*(1+math.Abs(float64(want[i])))) {
				t.Fatalf("M=%d N=%d K=%d (%d threads): y[%d] = %v, one Mul gives %v", sh.M, sh.N, sh.K, threads, i, got[i], want[i])
			}
		}
	}
}

// mixedTypes writes the attention matrices and the untied head as Q8_0,
// the FFN's (experts and router included) and token_embd as Q4_0, the
// norms as F32.
func mixedTypes(t namedTensor) gguf.Type {
	switch {
	case len(t.ne) < 2:
		return gguf.F32
	case strings.Contains(t.name, ".attn_") || t.name == "output.weight":
		return gguf.Q8_0
	}
	return gguf.Q4_0
}

// TestGGUFQuantized: a GGUF file with Q8_0 and Q4_0 matrices loads them
// quantized (their float32 fields nil, about 1.0625 and 0.5625 bytes per
// weight), the Q4_0 embedding dequantized as ggml does (checkLoaded's
// bound) and, when tied, kept quantized for the head; the engine on it
// matches the fp32 engine on the same file dequantized within quantTol
// (only the activations' rounding differs), and --layers-style loading
// reads the first layers alone.
func TestGGUFQuantized(t *testing.T) {
	tied := tinyConfig("qwen3")
	tied.TiedEmbeddings = true
	for _, tc := range []struct {
		arch string
		c    Config
	}{{"qwen3", tinyConfig("qwen3")}, {"qwen3", tied}, {"qwen3moe", tinyConfig("qwen3moe")}} {
		t.Run(fmt.Sprintf("%s-tied=%v", tc.arch, tc.c.TiedEmbeddings), func(t *testing.T) {
			orig := tinyWeights(tc.c, 9)
			data := ggufFromWeights(orig, tc.arch, mixedTypes).bytes()
			w, err := readGGUFBytes(data, "q.gguf")
			if err != nil {
				t.Fatal(err)
			}
			checkLoaded(t, orig, w, mixedTypes)
			l0 := &w.Layers[0]
			if l0.Wq != nil || l0.WqQ == nil || l0.WqQ.Format != quant.Q8_0 {
				t.Errorf("attn_q: float %d values, quantized %v", len(l0.Wq), l0.WqQ)
			}
			if tc.c.IsMoE(0) {
				if x := l0.Experts[1]; x.Gate != nil || x.DownQ == nil || x.DownQ.Format != quant.Q4_0 || l0.RouterQ == nil {
					t.Errorf("expert 1: float gate %d values, down %v, router %v", len(x.Gate), x.DownQ, l0.RouterQ)
				}
			} else if l0.Gate != nil || l0.GateQ == nil || l0.GateQ.Format != quant.Q4_0 {
				t.Errorf("ffn_gate: float %d values, quantized %v", len(l0.Gate), l0.GateQ)
			}
			if w.LMHeadQ == nil || w.LMHead != nil || len(w.Embed) != tc.c.Vocab*tc.c.Dim {
				t.Errorf("head: quantized %v, float %d values; embedding %d values", w.LMHeadQ, len(w.LMHead), len(w.Embed))
			}
			fs := w.WeightFormats()
			var qbytes int64
			for _, s := range w.linearSlots() {
				qbytes += (*s.q).Bytes()
			}
			// The file's bytes per weight, but for the packed layout's
			// padding (K = 32 rows hold one block: a pair doubles them).
			fileBytes := float64(fs["q8_0"])*quant.Q8_0.BytesPerWeight() + float64(fs["q4_0"])*quant.Q4_0.BytesPerWeight()
			if fs[FormatFP32] != 0 || float64(qbytes) < fileBytes || float64(qbytes) > 2*fileBytes {
				t.Errorf("formats %v: %d packed bytes, file %.0f", fs, qbytes, fileBytes)
			}

			quantized, err := New(w, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer quantized.Close()
			float, err := New(dequantized(w), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer float.Close()
			if float.Quant != nil || float.WeightFormat != FormatFP32 {
				t.Errorf("dequantized model: quant %v, format %q", float.Quant, float.WeightFormat)
			}
			toks := []int{1, 5, 2, 9, 3, 7, 7, 0}
			sq, _ := quantized.NewSession(0)
			sf, _ := float.NewSession(0)
			gq, err := sq.PrefillAll(toks)
			if err != nil {
				t.Fatal(err)
			}
			gf, err := sf.PrefillAll(toks)
			if err != nil {
				t.Fatal(err)
			}
			V := tc.c.Vocab
			for p := range toks {
				row := gf[p*V : (p+1)*V]
				sc := 1e-3
				for _, v := range row {
					sc = max(sc, math.Abs(float64(v)))
				}
				if d, j := maxAbsDiff(gq[p*V:(p+1)*V], row); d > quantTol*sc {
					t.Errorf("position %d logit %d: quantized engine %v, fp32 engine on the dequantized file %v (scale %.3g)", p, j, gq[p*V+j], row[j], sc)
				}
			}

			one, err := readGGUFLayersBytes(data, 1)
			if err != nil {
				t.Fatal(err)
			}
			if one.Config.Layers != 1 || len(one.Layers) != 1 {
				t.Errorf("1 layer read: config %d layers, %d loaded", one.Config.Layers, len(one.Layers))
			}
			if _, err := readGGUFLayersBytes(data, 3); err == nil || !strings.Contains(err.Error(), "layers 3: must be between 0 (all) and the file's 2") {
				t.Errorf("3 layers of 2: %v", err)
			}
		})
	}
}

func readGGUFLayersBytes(data []byte, layers int) (*Weights, error) {
	return ReadGGUFLayers(bytes.NewReader(data), int64(len(data)), "q.gguf", layers)
}

// TestGGUFQuantizedErrors: bad Q4_0 and Q8_0 data gives one error line
// naming the tensor.
func TestGGUFQuantizedErrors(t *testing.T) {
	c := tinyConfig("qwen3")
	g := ggufFromWeights(tinyWeights(c, 9), "qwen3", mixedTypes)
	g.tensor("output.weight").typ = gguf.Q4_0
	g.tensor("output.weight").data = encodeTensor(dequantized(tinyWeights(c, 9)).LMHead, gguf.Q4_0)
	good := g.bytes()
	if _, err := readGGUFBytes(good, "q.gguf"); err != nil {
		t.Fatal(err)
	}
	nan := func(name string, block int) []byte {
		h := g.clone()
		tt := h.tensor(name)
		tt.data = bytes.Clone(tt.data)
		bb := map[gguf.Type]int{gguf.Q8_0: 34, gguf.Q4_0: 18}[tt.typ]
		binary.LittleEndian.PutUint16(tt.data[block*bb:], 0x7e00)
		return h.bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated Q4_0", good[:len(good)-1], "engine: q.gguf: tensor output.weight: 432 bytes of data at offset"},
		{"NaN Q4_0 scale", nan("blk.1.ffn_down.weight", 3),
			"engine: q.gguf: tensor blk.1.ffn_down.weight: quant: q4_0 tensor 32×64: row 1 block 1: scale is NaN"},
		{"NaN Q8_0 scale", nan("blk.0.attn_k.weight", 0),
			"engine: q.gguf: tensor blk.0.attn_k.weight: quant: q8_0 tensor 32×32: row 0 block 0: scale is NaN"},
	} {
		w, err := readGGUFBytes(tc.data, "q.gguf")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || w != nil {
			t.Errorf("%s: %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
}
