package roofline

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
)

// Arch is the shape of a decoder-only transformer, with the meaning of the
// HuggingFace config.json keys named in each field's comment. Package models
// loads it from JSON; it is plain data here.
type Arch struct {
	Name           string
	Dim            int  // hidden_size: the model (residual stream) width
	Intermediate   int  // intermediate_size (dense MLP)
	Layers         int  // num_hidden_layers
	Heads          int  // num_attention_heads
	KVHeads        int  // num_key_value_heads
	HeadDim        int  // head_dim (hidden_size / num_attention_heads when absent)
	Vocab          int  // vocab_size
	QKNorm         bool // per-head RMSNorm on q and k (Qwen3)
	TiedEmbeddings bool // tie_word_embeddings
	// MoE (zero Experts = dense model).
	Experts         int // num_experts
	ExpertsPerToken int // num_experts_per_tok
	MoEIntermediate int // moe_intermediate_size
	// MoELayers is how many of Layers have an MoE MLP; the others are dense
	// (from decoder_sparse_step and mlp_only_layers).
	MoELayers int
}

// Validate rejects shapes the catalog cannot use.
func (a Arch) Validate() error {
	pos := []struct {
		key string
		v   int
	}{{"hidden_size", a.Dim}, {"num_hidden_layers", a.Layers}, {"num_attention_heads", a.Heads},
		{"num_key_value_heads", a.KVHeads}, {"head_dim", a.HeadDim}, {"vocab_size", a.Vocab}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("model %s: %s %d: must be ≥ 1", a.Name, p.key, p.v)
		}
	}
	if a.Heads%a.KVHeads != 0 {
		return fmt.Errorf("model %s: num_attention_heads %d is not a multiple of num_key_value_heads %d", a.Name, a.Heads, a.KVHeads)
	}
	if a.MoELayers < 0 || a.MoELayers > a.Layers {
		return fmt.Errorf("model %s: %d MoE layers of %d", a.Name, a.MoELayers, a.Layers)
	}
	if a.MoELayers < a.Layers && a.Intermediate <= 0 {
		return fmt.Errorf("model %s: intermediate_size %d: must be ≥ 1", a.Name, a.Intermediate)
	}
	if a.MoELayers > 0 {
		if a.Experts <= 0 || a.ExpertsPerToken <= 0 || a.ExpertsPerToken > a.Experts || a.MoEIntermediate <= 0 {
			return fmt.Errorf("model %s: MoE needs num_experts ≥ num_experts_per_tok ≥ 1 and moe_intermediate_size ≥ 1 (have %d, %d, %d)",
				a.Name, a.Experts, a.ExpertsPerToken, a.MoEIntermediate)
		}
	}
	return nil
}

// Phase is a phase of a request: Prefill (the prompt's tokens in one
// forward call) or Decode (one new token per sequence per call).
type Phase string

// Phases of a request.
const (
	Prefill Phase = "prefill"
	Decode  Phase = "decode"
)

// Phases lists the phases in request order.
func Phases() []Phase { return []Phase{Prefill, Decode} }

// Routing is how an MoE router spreads tokens over experts in the model:
// "uniform" (every expert gets ⌊A/E⌋ or ⌈A/E⌉ of the A = tokens·top-k
// assignments) or "zipf" with exponent S (expert i gets a share ∝ 1/(i+1)^S,
// capped at one assignment per token per expert).
type Routing struct {
	Kind string  `json:"kind"`
	S    float64 `json:"s,omitempty"`
}

// String spells the routing as the --routing flag does: "uniform", "zipf:1.2".
func (r Routing) String() string {
	if r.Kind == "zipf" {
		return "zipf:" + strconv.FormatFloat(r.S, 'g', -1, 64)
	}
	return r.Kind
}

// ParseRouting parses "uniform", "zipf" (S = 1) or "zipf:S".
func ParseRouting(s string) (Routing, error) {
	switch {
	case s == "uniform" || s == "":
		return Routing{Kind: "uniform"}, nil
	case s == "zipf":
		return Routing{Kind: "zipf", S: 1}, nil
	case strings.HasPrefix(s, "zipf:"):
		v, err := strconv.ParseFloat(strings.TrimPrefix(s, "zipf:"), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return Routing{}, fmt.Errorf("routing %q: zipf exponent must be a number > 0", s)
		}
		return Routing{Kind: "zipf", S: v}, nil
	}
	return Routing{}, fmt.Errorf("routing %q: want uniform, zipf or zipf:S", s)
}

// Request is the shape of one forward pass: B sequences each adding T new
// tokens, attending to C positions in all (C ≥ T; the KV cache holds C−T
// earlier positions). Prefill of a fresh prompt has C = T; one decode step
// has T = 1.
type Request struct {
	Phase   Phase   `json:"phase"`
	Batch   int     `json:"batch"`
	Tokens  int     `json:"tokens"`
	Context int     `json:"context"`
	Weight  string  `json:"weight_dtype"`
	Act     string  `json:"act_dtype"`
	KV      string  `json:"kv_dtype"`
	Routing Routing `json:"routing"`
}

// dtypeBytes is the storage size of each element type, in bytes. Block
// scales of quantized formats are not counted, except in GGUF's block
// formats (kernels/quant), whose sizes are ggml's block sizes: q8_0 34/32
// and q4_0 18/32 bytes per weight (an fp16 scale per 32), q4_k 144/256,
// q6_k 210/256, tq2_0 66/256 and tq1_0 54/256 (per 256-weight
// super-block).
var dtypeBytes = map[string]float64{
	"fp32": 4, "f32": 4, "float32": 4,
	"fp16": 2, "f16": 2, "float16": 2, "bf16": 2, "bfloat16": 2,
	"fp8": 1, "int8": 1, "q8": 1,
	"int4": 0.5, "q4": 0.5, "mxfp4": 0.5,
	"q8_0": 34.0 / 32, "q4_0": 18.0 / 32,
	"q4_k": 144.0 / 256, "q6_k": 210.0 / 256, "tq2_0": 66.0 / 256, "tq1_0": 54.0 / 256,
	"int2": 0.25, "q2": 0.25,
	"int1": 0.125, "q1": 0.125,
}

// DTypeBytes returns the bytes per element of a dtype name.
func DTypeBytes(name string) (float64, error) {
	b, ok := dtypeBytes[strings.ToLower(name)]
	if !ok {
		var names []string
		for k := range dtypeBytes {
			names = append(names, k)
		}
		sort.Strings(names)
		return 0, fmt.Errorf("dtype %q: want one of %s", name, strings.Join(names, ", "))
	}
	return b, nil
}

// Validate rejects nonsense shapes with a message naming the flag-like key.
func (r Request) Validate() error {
	if r.Phase != Prefill && r.Phase != Decode {
		return fmt.Errorf("phase %q: must be prefill or decode", r.Phase)
	}
	if r.Batch < 1 {
		return fmt.Errorf("batch %d: must be ≥ 1", r.Batch)
	}
	if r.Tokens < 1 {
		return fmt.Errorf("tokens %d: must be ≥ 1", r.Tokens)
	}
	if r.Context < r.Tokens {
		return fmt.Errorf("context %d: must be ≥ tokens (%d): the context includes the new tokens", r.Context, r.Tokens)
	}
	for _, d := range []struct{ key, v string }{{"weight dtype", r.Weight}, {"activation dtype", r.Act}, {"kv dtype", r.KV}} {
		if _, err := DTypeBytes(d.v); err != nil {
			return fmt.Errorf("%s: %w", d.key, err)
		}
	}
	if r.Routing.Kind != "uniform" && r.Routing.Kind != "zipf" {
		return fmt.Errorf("routing %q: want uniform or zipf", r.Routing.Kind)
	}
	return nil
}

// CheckCounts refuses a request whose integer counts overflow at arch's
// shapes: the catalog counts token rows M = B·T, q and k elements M·(H +
// Hkv)·head dim, attention rows B·H·T (the q element count bounds it),
// routed assignments M·top-k and router logits M·experts, and the
// weights' widths heads·head dim and 2·moe_intermediate as ints. Each
// product is checked with math/bits; the error names the product.
func (r Request) CheckCounts(arch Arch) error {
	hq, ok := mulInt(arch.Heads+arch.KVHeads, arch.HeadDim)
	if _, ok2 := mulInt(r.Batch, r.Tokens, hq); !ok || !ok2 || arch.Heads+arch.KVHeads < arch.Heads {
		return fmt.Errorf("B·T·(heads + kv heads)·head dim of model %s overflows a 64-bit count (%d·%d·%d·%d)",
			arch.Name, r.Batch, r.Tokens, arch.Heads+arch.KVHeads, arch.HeadDim)
	}
	for _, p := range []struct {
		what string
		xs   []int
	}{
		{"B·T·hidden", []int{r.Batch, r.Tokens, arch.Dim}},
		{"B·T·intermediate", []int{r.Batch, r.Tokens, arch.Intermediate}},
		{"B·T·experts", []int{r.Batch, r.Tokens, arch.Experts}},
		{"B·T·moe intermediate", []int{r.Batch, r.Tokens, arch.MoEIntermediate}},
		{"B·T·experts per token·moe intermediate", []int{r.Batch, r.Tokens, arch.ExpertsPerToken, arch.MoEIntermediate}},
		{"2·moe intermediate", []int{2, arch.MoEIntermediate}},
	} {
		if _, ok := mulInt(p.xs...); !ok {
			return fmt.Errorf("%s of model %s overflows a 64-bit count (%s)", p.what, arch.Name, fmtProduct(p.xs))
		}
	}
	return nil
}

// mulInt is the product of non-negative xs and whether it fits in an int
// (math/bits: no wrap-around).
func mulInt(xs ...int) (int, bool) {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > math.MaxInt {
			return 0, false
		}
		p = lo
	}
	return int(p), true
}

func fmtProduct(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "·")
}

// Bytes is the memory traffic of one operator, split by origin. Every
// tensor is counted once per operator (perfect on-chip reuse within the
// operator, none across operators: an unfused execution).
type Bytes struct {
	Weights float64 `json:"weights"`
	ActIn   float64 `json:"act_in"`
	ActOut  float64 `json:"act_out"`
	KVRead  float64 `json:"kv_read"`
	KVWrite float64 `json:"kv_write"`
}

// Total is the sum of all parts.
func (b Bytes) Total() float64 { return b.Weights + b.ActIn + b.ActOut + b.KVRead + b.KVWrite }

func (b Bytes) add(o Bytes, k float64) Bytes {
	return Bytes{b.Weights + k*o.Weights, b.ActIn + k*o.ActIn, b.ActOut + k*o.ActOut, b.KVRead + k*o.KVRead, b.KVWrite + k*o.KVWrite}
}

// Operator is one operator of a layer for one request shape. For linear
// and attention operators M, N, K are the GEMM extents of Y[M×N] = X[M×K]·W
// (for attention, M counts query rows over all sequences and heads);
// element-wise operators have Elems instead.
type Operator struct {
	Name  string `json:"name"`
	Kind  OpKind `json:"kind"`
	Shape string `json:"shape"`
	M     int    `json:"m,omitempty"`
	N     int    `json:"n,omitempty"`
	K     int    `json:"k,omitempty"`
	// Elems is the number of elements a non-linear operator transforms.
	Elems float64 `json:"elems,omitempty"`
	FLOPs float64 `json:"flops"`
	Bytes Bytes   `json:"bytes"`
	// Expert is the expert index of an MoE expert FFN, -1 otherwise.
	Expert int `json:"expert"`
	// RoutedTokens is the number of tokens routed to the expert.
	RoutedTokens int `json:"routed_tokens,omitempty"`
	// Rows and Width are a row-wise vector operator's extents (Elems =
	// Rows·Width): the engine parallelizes over rows, and runs the
	// operator on the caller alone when it is small (Threads).
	Rows  int `json:"rows,omitempty"`
	Width int `json:"width,omitempty"`
	// RowCalls, where not 0, is how many calls of its row kernel a
	// vector operator makes when that is not Rows: RoPE rotates each
	// token's q row and its k row in one call each, over all their heads
	// (engine/batch.go), 2·M calls for its M·(H+Hkv) rows of one head.
	// The calibration's per-row cost multiplies it (CalibrationRows).
	RowCalls int `json:"row_calls,omitempty"`
	// QueryRows is, on an attention's QKᵀ (the operator that carries its
	// call), the query rows over all heads, B·H·T: on the tiled prefill
	// path Q is packed and scaled per row before the tiles and the output
	// divided per row after them, and decode's vector path runs one job
	// per sequence and KV head (B·H/group of them) whose setup does not
	// grow with the context (measured here: the same 4 MiB of cold KV took
	// 76 µs at batch 1 and 132 µs at batch 4). A calibration's per-row cost
	// (ClassParams.RowSeconds, fitted per calibration key, so prefill's and
	// decode's apart where their bounds differ) multiplies it.
	QueryRows int `json:"query_rows,omitempty"`
	// Attn is an attention operator's (qk, softmax, pv) shape, for the
	// work of a tiled kernel (Machine.AttnPlan, tiled.go); nil on others.
	Attn *AttnShape `json:"-"`
	// Operands are the buffers the operator reads and writes with their
	// reuse distances (setReuse; nil for MoE catalogs). The per-call
	// model times a vector operator's activations by them.
	Operands []Operand `json:"-"`
}

// Intensity is the arithmetic intensity I = W / Q of SMEPilot §3.2, in
// FLOP/byte.
func (o Operator) Intensity() float64 {
	q := o.Bytes.Total()
	if q == 0 {
		return 0
	}
	return o.FLOPs / q
}

// FLOPs per element of the vector operators (an exp, rsqrt or division
// counts as one FLOP):
const (
	rmsnormFLOPs  = 4 // square, accumulate, multiply by rsqrt, multiply by weight
	ropeFLOPs     = 3 // x·cos − y·sin (two multiplies and one add per output)
	softmaxFLOPs  = 5 // max, subtract, exp, sum, divide
	siluMulFLOPs  = 5 // g / (1 + exp(−g)) · u: negate, exp, add, divide, multiply
	residualFLOPs = 1
)

// Layer is the operator list of one kind of decoder layer and how many
// layers of the model have it.
type Layer struct {
	Kind  string     `json:"kind"` // "dense" or "moe"
	Count int        `json:"count"`
	Ops   []Operator `json:"ops"`
	// IdleExperts is the number of experts that received no token.
	IdleExperts int `json:"idle_experts,omitempty"`
}

// Catalog is every operator of a forward pass: the layer operators (once
// per kind of layer) and the model-level operators (embedding, final norm,
// LM head).
type Catalog struct {
	Model   string     `json:"model"`
	Request Request    `json:"request"`
	Layers  []Layer    `json:"layers"`
	Head    []Operator `json:"head"`
}

// Totals sums FLOPs and bytes.
type Totals struct {
	FLOPs float64 `json:"flops"`
	Bytes Bytes   `json:"bytes"`
}

// Intensity is total FLOPs over total bytes.
func (t Totals) Intensity() float64 {
	if q := t.Bytes.Total(); q > 0 {
		return t.FLOPs / q
	}
	return 0
}

// Sum totals a list of operators.
func Sum(ops []Operator) Totals {
	var t Totals
	for _, o := range ops {
		t.FLOPs += o.FLOPs
		t.Bytes = t.Bytes.add(o.Bytes, 1)
	}
	return t
}

// ModelTotals is the whole forward pass: each layer kind times its count,
// plus the head operators.
func (c *Catalog) ModelTotals() Totals {
	t := Sum(c.Head)
	for _, l := range c.Layers {
		lt := Sum(l.Ops)
		t.FLOPs += float64(l.Count) * lt.FLOPs
		t.Bytes = t.Bytes.add(lt.Bytes, float64(l.Count))
	}
	return t
}

// LogitRows is the number of rows the LM head computes: the last token of
// each sequence in prefill (inference engines need only the next-token
// logits), every new token in decode.
func (r Request) LogitRows() int {
	if r.Phase == Prefill {
		return r.Batch
	}
	return r.Batch * r.Tokens
}

// CausalPairs is the number of (query, key) pairs that causal masking
// leaves for one sequence and head: T new queries at positions C−T..C−1,
// query i attending to the C−T+i+1 positions up to and including itself,
// Σ = T·(C−T) + T·(T+1)/2. Decode (T = 1) gives C; prefill from scratch
// (C = T) gives T(T+1)/2.
func CausalPairs(tokens, context int) float64 {
	t, c := float64(tokens), float64(context)
	return t*(c-t) + t*(t+1)/2
}

// linear is Y[M×N] = X[M×K]·Wᵀ with W stored [N×K]: 2·M·N·K FLOPs; bytes
// W (N·K), X (M·K), Y (M·N).
func linear(name string, m, n, k int, w, a float64) Operator {
	M, N, K := float64(m), float64(n), float64(k)
	return Operator{
		Name: name, Kind: KindLinear, M: m, N: n, K: k, Expert: -1,
		Shape: fmt.Sprintf("%d×%d · %d×%d", m, k, k, n),
		FLOPs: 2 * M * N * K,
		Bytes: Bytes{Weights: N * K * w, ActIn: M * K * a, ActOut: M * N * a},
	}
}

// ExpertFFN is MoE expert e's FFN for the n tokens routed to it (model
// width h, expert intermediate mi, w and a bytes per weight and per
// activation): gate and up as one n×h · h×2mi GEMM, then down n×mi ·
// mi×h; 6·n·h·mi FLOPs; every weight read once. Placed on its own
// (SMEPilot §4.1: each expert by its routed token count).
func ExpertFFN(e, n, h, mi int, w, a float64) Operator {
	N, Hd, MI := float64(n), float64(h), float64(mi)
	return Operator{
		Name: ExpertOp(e), Kind: KindLinear, M: n, N: 2 * mi, K: h,
		Expert: e, RoutedTokens: n,
		Shape: fmt.Sprintf("%d×%d · %d×%d, %d×%d · %d×%d", n, h, h, 2*mi, n, mi, mi, h),
		FLOPs: 6 * N * Hd * MI,
		Bytes: Bytes{Weights: 3 * Hd * MI * w, ActIn: (N*Hd + N*MI) * a, ActOut: (2*N*MI + N*Hd) * a},
	}
}

// vector is an element-wise operator over rows×width elements reading `in`
// tensors of that size and writing one.
func vector(name string, kind OpKind, rows, width int, flopsPerElem, in float64, a float64) Operator {
	e := float64(rows) * float64(width)
	return Operator{
		Name: name, Kind: kind, Elems: e, Expert: -1, Rows: rows, Width: width,
		Shape: fmt.Sprintf("%d×%d", rows, width),
		FLOPs: flopsPerElem * e,
		Bytes: Bytes{ActIn: in * e * a, ActOut: e * a},
	}
}

// BuildCatalog lists every operator of a forward pass of arch for request
// r (issue 5, part 2). Conventions, all per layer:
//
//   - M = B·T token rows. Projections are linear(M, out, in).
//   - RMSNorm reads x and its weight (hidden values, activation dtype) and writes y.
//   - QK-norm (Qwen3) is one RMSNorm per head on q and k: M·(H+Hkv) rows of head_dim.
//   - RoPE rotates q and k in place (cos/sin tables are not counted);
//     kv_write then reads the rotated k and v_proj's output and stores both
//     in the KV cache (KVWrite, kv dtype), as the engine does.
//   - QKᵀ and P·V count causal masking (CausalPairs per sequence and head)
//     and GQA: each KV head is read once per sequence for its H/Hkv query
//     heads. Scores and probabilities are materialized in the activation
//     dtype (unfused attention; a fused kernel moves fewer bytes).
//   - MoE: router linear(M, E, hidden), router softmax over M·E logits, one
//     "expert" operator per expert with routed tokens n (gate, up and down
//     GEMMs together: 6·n·hidden·moe_inter FLOPs, 3·hidden·moe_inter weight
//     elements), one SiLU·mul over all routed rows, and the weighted combine
//     of the top-k outputs.
//   - The head is the embedding gather (M rows), the final norm and the LM
//     head on LogitRows rows.
func BuildCatalog(arch Arch, r Request) (*Catalog, error) {
	if err := arch.Validate(); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if err := r.CheckCounts(arch); err != nil {
		return nil, fmt.Errorf("batch %d × tokens %d: %w", r.Batch, r.Tokens, err)
	}
	w, _ := DTypeBytes(r.Weight)
	a, _ := DTypeBytes(r.Act)
	kvb, _ := DTypeBytes(r.KV)
	B, T, C := r.Batch, r.Tokens, r.Context
	M := B * T
	h, H, Hkv, d := arch.Dim, arch.Heads, arch.KVHeads, arch.HeadDim
	g := H / Hkv

	attn := func() []Operator {
		var ops []Operator
		n := vector(OpAttnNorm, KindNonlinear, M, h, rmsnormFLOPs, 1, a)
		n.Bytes.Weights = float64(h) * a
		ops = append(ops, n,
			linear(OpQProj, M, H*d, h, w, a),
			linear(OpKProj, M, Hkv*d, h, w, a),
			linear(OpVProj, M, Hkv*d, h, w, a))
		if arch.QKNorm {
			qn := vector(OpQKNorm, KindNonlinear, M*(H+Hkv), d, rmsnormFLOPs, 1, a)
			qn.Bytes.Weights = 2 * float64(d) * a
			ops = append(ops, qn)
		}
		rope := vector(OpRoPE, KindNonlinear, M*(H+Hkv), d, ropeFLOPs, 1, a)
		rope.RowCalls = 2 * M
		ops = append(ops, rope)
		kvw := vector(OpKVWrite, KindElementwise, M*2*Hkv, d, 0, 1, a)
		kvw.Bytes.ActOut, kvw.Bytes.KVWrite = 0, kvw.Elems*kvb
		ops = append(ops, kvw)

		pairs := float64(B) * float64(H) * CausalPairs(T, C)
		kv := float64(B) * float64(C) * float64(Hkv) * float64(d) * kvb
		qk := Operator{
			Name: OpQK, Kind: KindAttention, M: B * H * T, N: C, K: d, Expert: -1,
			Shape: fmt.Sprintf("%d×(%d×%d · %d×%d) causal", B*Hkv, g*T, d, d, C),
			FLOPs: 2 * float64(d) * pairs,
			Bytes: Bytes{ActIn: float64(M*H*d) * a, KVRead: kv, ActOut: pairs * a},
		}
		qk.QueryRows = B * H * T
		sm := Operator{
			Name: OpSoftmax, Kind: KindNonlinear, Elems: pairs, Expert: -1,
			Shape: fmt.Sprintf("%d×%d causal", B*H*T, C),
			FLOPs: softmaxFLOPs * pairs,
			Bytes: Bytes{ActIn: pairs * a, ActOut: pairs * a},
		}
		pv := Operator{
			Name: OpPV, Kind: KindAttention, M: B * H * T, N: d, K: C, Expert: -1,
			Shape: fmt.Sprintf("%d×(%d×%d · %d×%d) causal", B*Hkv, g*T, C, C, d),
			FLOPs: 2 * float64(d) * pairs,
			Bytes: Bytes{ActIn: pairs * a, KVRead: kv, ActOut: float64(M*H*d) * a},
		}
		shape := &AttnShape{B: B, T: T, C: C, H: H, KVHeads: Hkv, D: d}
		qk.Attn, sm.Attn, pv.Attn = shape, shape, shape
		ops = append(ops, qk, sm, pv,
			linear(OpOProj, M, h, H*d, w, a),
			vector(OpAttnResidual, KindElementwise, M, h, residualFLOPs, 2, a))
		n2 := vector(OpFFNNorm, KindNonlinear, M, h, rmsnormFLOPs, 1, a)
		n2.Bytes.Weights = float64(h) * a
		return append(ops, n2)
	}

	c := &Catalog{Model: arch.Name, Request: r}
	if dense := arch.Layers - arch.MoELayers; dense > 0 {
		ops := attn()
		fi := arch.Intermediate
		sm := vector(OpSiLUMul, KindNonlinear, M, fi, siluMulFLOPs, 2, a)
		ops = append(ops,
			linear(OpGateProj, M, fi, h, w, a),
			linear(OpUpProj, M, fi, h, w, a),
			sm,
			linear(OpDownProj, M, h, fi, w, a),
			vector(OpFFNResidual, KindElementwise, M, h, residualFLOPs, 2, a))
		c.Layers = append(c.Layers, Layer{Kind: "dense", Count: dense, Ops: ops})
	}
	if arch.MoELayers > 0 {
		ops := attn()
		E, k, mi := arch.Experts, arch.ExpertsPerToken, arch.MoEIntermediate
		counts, err := RouteTokens(M, E, k, r.Routing)
		if err != nil {
			return nil, err
		}
		ops = append(ops, linear(OpRouter, M, E, h, w, a))
		rs := vector(OpRouterTopK, KindNonlinear, M, E, softmaxFLOPs, 1, a)
		rs.Bytes.ActOut = float64(M*k) * (a + 4) // top-k weights and int32 indices
		ops = append(ops, rs)
		idle, routed := 0, 0
		for e, n := range counts {
			if n == 0 {
				idle++
				continue
			}
			routed += n
			ops = append(ops, ExpertFFN(e, n, h, mi, w, a))
		}
		ops = append(ops, vector(OpExpertSiLUMul, KindNonlinear, routed, mi, siluMulFLOPs, 2, a))
		comb := vector(OpMoECombine, KindElementwise, M, h, float64(2*k), float64(k), a)
		comb.Bytes.ActIn += float64(M*k) * a // the routing weights
		ops = append(ops, comb,
			vector(OpFFNResidual, KindElementwise, M, h, residualFLOPs, 2, a))
		c.Layers = append(c.Layers, Layer{Kind: "moe", Count: arch.MoELayers, Ops: ops, IdleExperts: idle})
	}

	R := r.LogitRows()
	emb := Operator{Name: OpEmbed, Kind: KindElementwise, Elems: float64(M * h), Expert: -1,
		Shape: fmt.Sprintf("gather %d of %d×%d", M, arch.Vocab, h),
		Bytes: Bytes{Weights: float64(M*h) * w, ActOut: float64(M*h) * a}}
	fn := vector(OpFinalNorm, KindNonlinear, R, h, rmsnormFLOPs, 1, a)
	fn.Bytes.Weights = float64(h) * a
	c.Head = []Operator{emb, fn, linear(OpLMHead, R, arch.Vocab, h, w, a)}
	setReuse(c, float64(H)/float64(H+Hkv))
	return c, nil
}

// RouteTokens spreads tokens·topK expert assignments over `experts`
// experts and returns the routed token count of each expert (index 0 is
// the hottest under zipf). No expert receives more than `tokens`, since a
// token picks distinct experts. Uniform routing gives ⌈A/E⌉ to the first
// A mod E experts and ⌊A/E⌋ to the rest; Zipf routing gives expert i a
// share ∝ 1/(i+1)^S, water-filled under the cap, then rounded by largest
// remainder so the counts sum to A exactly.
func RouteTokens(tokens, experts, topK int, r Routing) ([]int, error) {
	if tokens < 0 || experts < 1 || topK < 1 || topK > experts {
		return nil, fmt.Errorf("route %d tokens to top-%d of %d experts: need tokens ≥ 0 and 1 ≤ top-k ≤ experts", tokens, topK, experts)
	}
	A := tokens * topK
	out := make([]int, experts)
	switch r.Kind {
	case "uniform", "":
		for i := range out {
			out[i] = A / experts
			if i < A%experts {
				out[i]++
			}
		}
		return out, nil
	case "zipf":
	default:
		return nil, fmt.Errorf("routing %q: want uniform or zipf", r.Kind)
	}
	if !(r.S > 0) {
		return nil, fmt.Errorf("routing zipf: exponent %v: must be > 0", r.S)
	}
	wt := make([]float64, experts)
	for i := range wt {
		wt[i] = math.Pow(float64(i+1), -r.S)
	}
	capd := make([]bool, experts)
	x := make([]float64, experts)
	cp := float64(tokens)
	for {
		rem, W := float64(A), 0.0
		for i := range wt {
			if capd[i] {
				rem -= cp
			} else {
				W += wt[i]
			}
		}
		changed := false
		for i := range wt {
			if capd[i] {
				x[i] = cp
				continue
			}
			x[i] = rem * wt[i] / W
			if x[i] > cp {
				capd[i], changed = true, true
			}
		}
		if !changed {
			break
		}
	}
	sum := 0
	type frac struct {
		i int
		f float64
	}
	var fr []frac
	for i, v := range x {
		out[i] = int(math.Floor(v + 1e-9))
		if out[i] > tokens {
			out[i] = tokens
		}
		sum += out[i]
		fr = append(fr, frac{i, v - float64(out[i])})
	}
	sort.SliceStable(fr, func(p, q int) bool { return fr[p].f > fr[q].f })
	for j := 0; sum < A; j = (j + 1) % len(fr) {
		if i := fr[j].i; out[i] < tokens {
			out[i]++
			sum++
		}
	}
	return out, nil
}
