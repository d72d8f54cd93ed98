package engine

import (
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
}

type cell struct {
	ns     int64
	calls  int
	tokens int
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
	c.ns += int64(time.Since(start))
	c.calls++
	c.tokens += tokens
	if c.t != nil && c.t.obs != nil {
		c.t.obs(phaseName(c.p), c.op)
	}
}

// list returns every operator that ran, phase by phase, layer by layer
// (model-level operators first), ops in execution order.
func (t *timers) list() []Timing {
	var out []Timing
	for p := range 2 {
		for i, c := range t.head[p] {
			if c.calls > 0 {
				out = append(out, Timing{phaseName(p), headOps[i], -1, float64(c.ns) * 1e-9, c.calls, c.tokens})
			}
		}
		for l, row := range t.layer[p] {
			for i, c := range row {
				if c.calls > 0 {
					out = append(out, Timing{phaseName(p), layerOps[i], l, float64(c.ns) * 1e-9, c.calls, c.tokens})
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
