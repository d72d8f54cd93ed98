package engine

import (
	"slices"
	"sort"
	"time"

	"github.com/cpubench/bench/roofline"
)

// Operator names: roofline's vocabulary (roofline/ops.go), which its
// catalog (roofline.BuildCatalog) also uses, so that measured and
// predicted times join on (phase, name).
const (
	OpEmbed    = roofline.OpEmbed
	OpAttnNorm = roofline.OpAttnNorm
	OpQProj    = roofline.OpQProj
	OpKProj    = roofline.OpKProj
	OpVProj    = roofline.OpVProj
	OpQKNorm   = roofline.OpQKNorm
	OpRoPE     = roofline.OpRoPE
	// OpKVWrite stores the new K and V rows into the KV cache (timed apart
	// from RoPE, issue #16).
	OpKVWrite = roofline.OpKVWrite
	// OpAttention is the fused causal attention (scores, online softmax and
	// the weighted sum of V in one tiled kernel); roofline's catalog splits
	// it into qk, softmax and pv (AttentionParts).
	OpAttention    = roofline.OpAttention
	OpOProj        = roofline.OpOProj
	OpAttnResidual = roofline.OpAttnResidual
	OpFFNNorm      = roofline.OpFFNNorm
	OpGateProj     = roofline.OpGateProj
	OpUpProj       = roofline.OpUpProj
	OpSiLUMul      = roofline.OpSiLUMul
	OpDownProj     = roofline.OpDownProj
	// MoE FFN operators (roofline's catalog names, except OpExperts: the
	// routed experts' gate, up, SiLU-mul and down together, which the
	// catalog lists per expert as "expert N" plus expert_silu_mul).
	OpRouter      = roofline.OpRouter
	OpRouterTopK  = roofline.OpRouterTopK
	OpExperts     = roofline.OpExperts
	OpMoECombine  = roofline.OpMoECombine
	OpFFNResidual = roofline.OpFFNResidual
	OpFinalNorm   = roofline.OpFinalNorm
	OpLMHead      = roofline.OpLMHead
	// OpAttnGather and OpFFNGather are NUMA policy tp's Gathers (tp.go;
	// ArcLight §3.3): the sum of the groups' o_proj or down_proj partial
	// sums into the residual, with the wait for the slowest group. They
	// take the place of attn_residual and ffn_residual; roofline's catalog
	// has no tp operators, so they get no prediction (tpOps).
	OpAttnGather = roofline.OpAttnGather
	OpFFNGather  = roofline.OpFFNGather
)

// tpOps are the operators only NUMA policy tp runs.
var tpOps = []string{OpAttnGather, OpFFNGather}

// layerOps are the per-layer operators in execution order; headOps the
// model-level ones (Layer -1 in Timing).
var (
	layerOps = []string{OpAttnNorm, OpQProj, OpKProj, OpVProj, OpQKNorm, OpRoPE, OpKVWrite, OpAttention,
		OpOProj, OpAttnResidual, OpFFNNorm, OpGateProj, OpUpProj, OpSiLUMul, OpDownProj,
		OpRouter, OpRouterTopK, OpExperts, OpMoECombine, OpFFNResidual, OpAttnGather, OpFFNGather}
	headOps = []string{OpEmbed, OpFinalNorm, OpLMHead}
)

// Operator indices into a timer row.
const (
	iAttnNorm = iota
	iQProj
	iKProj
	iVProj
	iQKNorm
	iRoPE
	iKVWrite
	iAttention
	iOProj
	iAttnResidual
	iFFNNorm
	iGateProj
	iUpProj
	iSiLUMul
	iDownProj
	iRouter
	iRouterTopK
	iExperts
	iMoECombine
	iFFNResidual
	iAttnGather
	iFFNGather
	nLayerOps
)

const (
	iEmbed = iota
	iFinalNorm
	iLMHead
	nHeadOps
)

// Phases, as roofline's.
const (
	Prefill = roofline.Prefill
	Decode  = roofline.Decode
)

// Timing is one operator's measured time in one phase and layer.
type Timing struct {
	Phase   roofline.Phase // Prefill or Decode
	Op      string         // roofline catalog name
	Layer   int            // decoder layer, or -1 for embed, final_norm, lm_head
	Seconds float64        // wall-clock seconds, summed over calls
	Calls   int            // forward calls (Prefill or Decode) that ran the operator
	Tokens  int            // tokens processed, summed over calls (M of the GEMMs)
	// InterruptedCalls are the calls that took InterruptedFactor× or more
	// the median of their neighbours (Interrupted), and InterruptedSeconds
	// their time above that median, part of Seconds.
	InterruptedCalls   int
	InterruptedSeconds float64
}

// Uninterrupted is Seconds less InterruptedSeconds: the operator's time
// had none of its calls been interrupted.
func (t Timing) Uninterrupted() float64 { return t.Seconds - t.InterruptedSeconds }

// InterruptedFactor and InterruptedWindow define an interrupted call: one
// that took at least InterruptedFactor × the median of the calls of the
// same operator and layer with as many tokens at most InterruptedWindow
// calls before or after it (a window shifted inward at the ends; judged
// only with at least InterruptedWindow such neighbours). On a 2-vCPU VM a
// decode step's microsecond-sized operators (norms, residual adds, RoPE)
// take 1–5 µs a call and, once in 20–100 calls, 40–300 µs (measured here,
// 4 layers, 32 steps: medians 1.3–4.6 µs, maxima 45–305 µs, at random
// steps): time the host took (preemption, interrupts) that no roofline
// models, which, summed over the calls, moved these operators' totals
// 1.5–3× from run to run. The factor sits far above the calls' own
// spread (p90 over median 1.1–1.5 there) and far below such
// interruptions; a GEMV's calls (hundreds of µs) are seldom flagged, an
// interruption being a small share of them.
const (
	InterruptedFactor = 4
	InterruptedWindow = 4
)

// Interrupted returns how many of secs (one operator's calls in one layer,
// in order; tokens[i] the tokens of call i, nil: all alike) were
// interrupted (InterruptedFactor), and their seconds above the median of
// their neighbours.
func Interrupted(secs []float64, tokens []int) (calls int, excess float64) {
	n := len(secs)
	if n < InterruptedWindow+1 {
		return 0, 0
	}
	nb := make([]float64, 0, 2*InterruptedWindow)
	for i, d := range secs {
		lo, hi := i-InterruptedWindow, i+InterruptedWindow
		if lo < 0 {
			lo, hi = 0, min(n-1, 2*InterruptedWindow)
		}
		if hi > n-1 {
			lo, hi = max(0, n-1-2*InterruptedWindow), n-1
		}
		nb = nb[:0]
		for j := lo; j <= hi; j++ {
			if j != i && (tokens == nil || tokens[j] == tokens[i]) {
				nb = append(nb, secs[j])
			}
		}
		if len(nb) < InterruptedWindow {
			continue
		}
		slices.Sort(nb)
		med := nb[len(nb)/2]
		if len(nb)%2 == 0 {
			med = (nb[len(nb)/2-1] + nb[len(nb)/2]) / 2
		}
		if med > 0 && d >= InterruptedFactor*med {
			calls++
			excess += d - med
		}
	}
	return calls, excess
}

type cell struct {
	ns     int64
	calls  int
	tokens int
	// secs and toks are every call's time and tokens, in order
	// (Interrupted).
	secs []float64
	toks []int
	// t, p and op let add tell the timers' OpObserver which operator of
	// which phase ended.
	t  *timers
	p  int
	op string
}

// OpObserver is called when an operator of a forward call ends, after its
// time is taken and before the next operator's timer starts: phase and the
// roofline catalog name of the operator. It runs on the thread that drives
// the forward call (worker 0 under Model.Hold) while the other workers
// wait; hardware counters per operator class hook here (Batch.Observe).
type OpObserver func(phase roofline.Phase, op string)

// timers accumulates per (phase, layer, op).
type timers struct {
	layer [2][][nLayerOps]cell
	head  [2][nHeadOps]cell
	use   linUse     // linear-operator calls per backend (Batch.Use)
	obs   OpObserver // nil: none
}

func newTimers(layers int) *timers {
	t := &timers{}
	for p := range t.layer {
		t.layer[p] = make([][nLayerOps]cell, layers)
		for l := range t.layer[p] {
			for i := range t.layer[p][l] {
				t.layer[p][l][i] = cell{t: t, p: p, op: layerOps[i]}
			}
		}
		for i := range t.head[p] {
			t.head[p][i] = cell{t: t, p: p, op: headOps[i]}
		}
	}
	return t
}

func phaseName(p int) roofline.Phase {
	if p == 0 {
		return Prefill
	}
	return Decode
}

func (c *cell) add(start time.Time, tokens int) {
	d := time.Since(start)
	c.ns += int64(d)
	c.secs, c.toks = append(c.secs, d.Seconds()), append(c.toks, tokens)
	c.calls++
	c.tokens += tokens
	if c.t != nil && c.t.obs != nil {
		c.t.obs(phaseName(c.p), c.op)
	}
}

// timing is c's Timing as operator op of phase p in layer l.
func (c *cell) timing(p int, op string, l int) Timing {
	ic, is := Interrupted(c.secs, c.toks)
	return Timing{Phase: phaseName(p), Op: op, Layer: l, Seconds: float64(c.ns) * 1e-9, Calls: c.calls, Tokens: c.tokens,
		InterruptedCalls: ic, InterruptedSeconds: is}
}

// list returns every operator that ran, phase by phase, layer by layer
// (model-level operators first), ops in execution order.
func (t *timers) list() []Timing {
	var out []Timing
	for p := range 2 {
		for i := range t.head[p] {
			if c := &t.head[p][i]; c.calls > 0 {
				out = append(out, c.timing(p, headOps[i], -1))
			}
		}
		for l := range t.layer[p] {
			for i := range t.layer[p][l] {
				if c := &t.layer[p][l][i]; c.calls > 0 {
					out = append(out, c.timing(p, layerOps[i], l))
				}
			}
		}
	}
	return out
}

// Totals sums timings over layers: one Timing per (phase, op) with Layer
// -1, sorted by phase then by descending seconds.
func Totals(ts []Timing) []Timing {
	type key struct {
		phase roofline.Phase
		op    string
	}
	idx := map[key]int{}
	var out []Timing
	for _, t := range ts {
		k := key{t.Phase, t.Op}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Timing{Phase: t.Phase, Op: t.Op, Layer: -1})
		}
		out[i].Seconds += t.Seconds
		out[i].Calls += t.Calls
		out[i].Tokens += t.Tokens
		out[i].InterruptedCalls += t.InterruptedCalls
		out[i].InterruptedSeconds += t.InterruptedSeconds
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Phase != out[j].Phase {
			return out[i].Phase == Prefill
		}
		return out[i].Seconds > out[j].Seconds
	})
	return out
}

// IsLinear reports whether op multiplies by a weight matrix: the
// projections, the FFN's gate, up and down, the MoE router and routed
// experts (OpExperts also times the experts' SiLU-mul, a small share), and
// the LM head. In decode these are the GEMVs whose share α of the time
// bounds a lower-bit format's speedup (low-bit GEMV paper §IV-D, Eq. 4).
func IsLinear(op string) bool {
	switch op {
	case OpQProj, OpKProj, OpVProj, OpOProj, OpGateProj, OpUpProj, OpDownProj, OpRouter, OpExperts, OpLMHead:
		return true
	}
	return false
}

// LinearSeconds sums the measured seconds of the linear operators
// (IsLinear) of one phase, over layers and calls.
func LinearSeconds(ts []Timing, phase roofline.Phase) float64 {
	s := 0.0
	for _, t := range ts {
		if t.Phase == phase && IsLinear(t.Op) {
			s += t.Seconds
		}
	}
	return s
}
