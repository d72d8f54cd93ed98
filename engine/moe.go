package engine

import (
	"time"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/pool"
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
// token count, as roofline's catalog counts it), on the placement's
// target for the experts operator.
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
	return nil
}
