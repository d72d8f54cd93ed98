package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/roofline"
)

// moeBuffers are the MoE FFN's working buffers, grown on demand.
type moeBuffers struct {
	logits []float32 // [T][Experts] router logits, then probabilities
	rows   [][]int   // per expert: the rows routed to it
	wts    [][]float32
	xg, hg []float32 // gathered rows [n][Dim], gate [n][MoEIntermediate]
	ug, yg []float32 // up [n][MoEIntermediate], down [n][Dim]
}

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// moeFFN computes the Qwen3-MoE sparse block (transformers
// Qwen3MoeSparseMoeBlock) for the T rows of xb into out (T×Dim):
//
//	p = softmax(Router·x) over the experts;
//	S = the TopK experts of largest p (ties to the lower index);
//	w_e = p_e / Σ_{e∈S} p_e with NormTopK, else p_e;
//	out = Σ_{e∈S} w_e · Down_e(SiLU(Gate_e·x) ⊙ Up_e·x).
//
// Each routed expert runs as GEMMs over the rows routed to it (M = its
// token count, as roofline's catalog counts it). Under a fixed placement
// every expert runs on its target; under auto each expert gets its own
// placement from its routed token count (SMEPilot §4.1: few tokens, a
// memory-bound GEMV-like call → cores; many → matrix or mixed), see
// expertPlacement.
func (b *Batch) moeFFN(ms *pool.Master, plan opPlan, l *layer, tm *[nLayerOps]cell, out, xb []float32, T int) error {
	m := b.m
	c := m.Config
	d, E, K, mi := c.Dim, c.Experts, c.TopK, c.MoEIntermediate
	bf := &b.moe
	bf.logits = growF(bf.logits, T*E)
	if len(bf.rows) != E {
		bf.rows, bf.wts = make([][]int, E), make([][]float32, E)
	}
	for e := range bf.rows {
		bf.rows[e], bf.wts[e] = bf.rows[e][:0], bf.wts[e][:0]
	}

	st := time.Now()
	if err := m.runLinear(ms, l.router, bf.logits, xb[:T*d], T, plan.get(OpRouter), &b.t.use); err != nil {
		return err
	}
	tm[iRouter].add(st, T)

	st = time.Now()
	top := make([]int, K)
	for t := range T {
		p := bf.logits[t*E : (t+1)*E]
		kernels.Softmax(p, p)
		// Top-K by selection: K passes, each taking the largest remaining
		// (the lowest index on ties).
		var sum float32
		for j := range K {
			best := -1
			for e, v := range p {
				taken := false
				for _, u := range top[:j] {
					if u == e {
						taken = true
						break
					}
				}
				if !taken && (best < 0 || v > p[best]) {
					best = e
				}
			}
			top[j] = best
			sum += p[best]
		}
		for _, e := range top {
			w := p[e]
			if c.NormTopK {
				w /= sum
			}
			bf.rows[e] = append(bf.rows[e], t)
			bf.wts[e] = append(bf.wts[e], w)
		}
	}
	tm[iRouterTopK].add(st, T)

	clear(out[:T*d])
	var expertsNS, combineNS int64
	for e, rows := range bf.rows {
		n := len(rows)
		if n == 0 {
			continue
		}
		st = time.Now()
		x := &l.experts[e]
		bf.xg = growF(bf.xg, n*d)
		for i, r := range rows {
			copy(bf.xg[i*d:(i+1)*d], xb[r*d:(r+1)*d])
		}
		bf.hg, bf.ug, bf.yg = growF(bf.hg, n*mi), growF(bf.ug, n*mi), growF(bf.yg, n*d)
		pl := plan.get(OpExperts)
		if m.Placement == PlaceAuto {
			var err error
			if pl, err = m.expertPlacement(n); err != nil {
				return err
			}
		}
		if err := m.runLinear(ms, x.gate, bf.hg, bf.xg, n, pl, &b.t.use); err != nil {
			return err
		}
		if err := m.runLinear(ms, x.up, bf.ug, bf.xg, n, pl, &b.t.use); err != nil {
			return err
		}
		kernels.SiLUMul(bf.hg, bf.hg, bf.ug)
		if err := m.runLinear(ms, x.down, bf.yg, bf.hg, n, pl, &b.t.use); err != nil {
			return err
		}
		mid := time.Now()
		expertsNS += int64(mid.Sub(st))
		for i, r := range rows {
			w, o, y := bf.wts[e][i], out[r*d:(r+1)*d], bf.yg[i*d:(i+1)*d]
			for j := range o {
				o[j] += w * y[j]
			}
		}
		combineNS += int64(time.Since(mid))
	}
	tm[iExperts].ns += expertsNS
	tm[iExperts].calls++
	tm[iExperts].tokens += T
	tm[iMoECombine].ns += combineNS
	tm[iMoECombine].calls++
	tm[iMoECombine].tokens += T
	// The experts and their combine interleave: an OpObserver sees them as
	// one operator, OpExperts.
	if c := &tm[iExperts]; c.t != nil && c.t.obs != nil {
		c.t.obs(phaseName(c.p), OpExperts)
	}
	return nil
}

// expertPlacement is auto's placement of one expert's FFN with n routed
// tokens (SMEPilot §4.1): roofline.Place on the expert's own shape
// (roofline.ExpertFFN, at the plan's precision), the target's kind mapped
// to a placement as plan does; cached per n.
func (m *Model) expertPlacement(n int) (Placement, error) {
	m.planMu.Lock()
	defer m.planMu.Unlock()
	if p, ok := m.expertPlans[n]; ok {
		return p, nil
	}
	prec := m.planPrecision()
	b, err := roofline.DTypeBytes(prec)
	if err != nil {
		return "", fmt.Errorf("engine: auto placement of an expert: %w", err)
	}
	c := m.Config
	ps, err := roofline.Place(m.opts.Machine, prec, []roofline.Operator{roofline.ExpertFFN(0, n, c.Dim, c.MoEIntermediate, b, b)})
	if err != nil {
		return "", fmt.Errorf("engine: auto placement of an expert: %w", err)
	}
	p := PlaceCores
	if t, ok := m.opts.Machine.Target(ps[0].Target); ok {
		switch t.Kind {
		case roofline.KindMatrix:
			p = PlaceMatrix
		case roofline.KindMixed:
			p = PlaceMixed
		}
	}
	if m.expertPlans == nil {
		m.expertPlans = map[int]Placement{}
	}
	m.expertPlans[n] = p
	return p, nil
}

// ExpertPlans returns auto's placement of an expert FFN by its routed
// token count for every count seen so far (nil under a fixed placement or
// before an MoE call).
func (m *Model) ExpertPlans() map[int]Placement {
	m.planMu.Lock()
	defer m.planMu.Unlock()
	if m.expertPlans == nil {
		return nil
	}
	out := make(map[int]Placement, len(m.expertPlans))
	for n, p := range m.expertPlans {
		out[n] = p
	}
	return out
}

// ExpertPlanNote says how auto placed the MoE experts so far, by routed
// token count per placement ("auto placed each MoE expert by its routed
// tokens (SMEPilot §4.1): cores for 1–3 tokens, matrix for 12–40"); ""
// when ExpertPlans is empty.
func (m *Model) ExpertPlanNote() string {
	plans := m.ExpertPlans()
	if len(plans) == 0 {
		return ""
	}
	lo, hi := map[Placement]int{}, map[Placement]int{}
	for n, p := range plans {
		if v, ok := lo[p]; !ok || n < v {
			lo[p] = n
		}
		hi[p] = max(hi[p], n)
	}
	var parts []string
	for _, p := range Placements() {
		if _, ok := lo[p]; !ok {
			continue
		}
		r := fmt.Sprint(lo[p])
		if hi[p] != lo[p] {
			r += "–" + fmt.Sprint(hi[p])
		}
		parts = append(parts, fmt.Sprintf("%s for %s tokens", p, r))
	}
	return "auto placed each MoE expert by its routed tokens (SMEPilot §4.1): " + strings.Join(parts, ", ")
}
