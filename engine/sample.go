package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/pool"
)

// Argmax returns the index of the largest logit, the first on ties (as
// llama2.c's sample_argmax); NaNs are never chosen unless all are NaN
// (then 0). It panics on an empty slice.
func Argmax(logits []float32) int {
	if len(logits) == 0 {
		panic("engine: Argmax of no logits")
	}
	best := 0
	for i, v := range logits {
		if v > logits[best] || (logits[best] != logits[best] && v == v) {
			best = i
		}
	}
	return best
}

// Sampler draws token ids from logits: greedy when Temperature is 0,
// otherwise from softmax(logits/Temperature) restricted to the smallest
// set of most likely tokens whose probability reaches TopP (nucleus
// sampling; TopP ≥ 1 keeps every token). Draws come from a PCG seeded by
// NewSampler, so a sampler with the same seed draws the same ids.
type Sampler struct {
	Temperature float64
	TopP        float64

	rng   *rand.Rand
	probs []float32
	idx   []int
}

// NewSampler returns a sampler; temperature must be ≥ 0 and topP in
// (0, 1] (a topP near 0 keeps only the most likely token).
func NewSampler(temperature, topP float64, seed uint64) (*Sampler, error) {
	if !(temperature >= 0) || math.IsInf(temperature, 0) {
		return nil, fmt.Errorf("engine: sampler temperature %v: must be finite and ≥ 0", temperature)
	}
	if !(topP > 0 && topP <= 1) {
		return nil, fmt.Errorf("engine: sampler top-p %v: must be in (0, 1]", topP)
	}
	return &Sampler{Temperature: temperature, TopP: topP, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// Sample returns a token id drawn from logits (not modified).
func (s *Sampler) Sample(logits []float32) int { return s.sample(nil, logits) }

// sample is Sample with its vocabulary-wide passes run by vp (nil: the
// calling goroutine alone): the greedy argmax, the temperature scaling
// and the nucleus' sort, each split over vp's workers by vocabulary range
// and combined in index order, so the id drawn is the one the serial
// passes draw (same RNG stream, same tie-breaking: the first index of the
// maximum, the lower id first among equal logits). The softmax's sum runs
// serially, in the kernel's order (splitting it would change its rounding).
func (s *Sampler) sample(vp *vocabPar, logits []float32) int {
	if s.Temperature == 0 {
		return vp.argmax(logits)
	}
	n := len(logits)
	if cap(s.probs) < n {
		s.probs = make([]float32, n)
		s.idx = make([]int, n)
	}
	p := s.probs[:n]
	inv := float32(1 / s.Temperature)
	vp.each(n, func(i0, i1 int) {
		for i, v := range logits[i0:i1] {
			p[i0+i] = v * inv
		}
	})
	kernels.Softmax(p, p)
	u := s.rng.Float64()
	if s.TopP >= 1 {
		var cdf float64
		for i, v := range p {
			cdf += float64(v)
			if u < cdf {
				return i
			}
		}
		return vp.argmax(logits)
	}
	// Nucleus: most likely first (ties by lower id), keep the smallest prefix
	// whose mass reaches TopP, sample within it.
	idx := s.idx[:n]
	keep, mass := vp.nucleus(idx, logits, p, s.TopP)
	r := u * mass
	var cdf float64
	for _, id := range idx[:keep] {
		cdf += float64(p[id])
		if r < cdf {
			return id
		}
	}
	return idx[keep-1]
}

// nucleus sorts token ids by descending logit (ties by lower id) into idx
// far enough to hold the smallest prefix whose probability mass (p, summed
// in float64 in that order) reaches topP, and returns that prefix's length
// and mass (every id and the total mass when the sum never reaches topP).
func (vp *vocabPar) nucleus(idx []int, logits, p []float32, topP float64) (keep int, mass float64) {
	n := len(idx)
	desc := func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[b] > logits[a]:
			return 1
		}
		return 0
	}
	chunks := vp.chunks(n)
	if len(chunks) == 1 || slices.ContainsFunc(logits, func(v float32) bool { return v != v }) {
		// One range, or NaNs (which compare equal to everything, so that
		// the order is the serial sort's own): sort serially.
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		keep = n
		for i, id := range idx {
			mass += float64(p[id])
			if mass >= topP {
				return i + 1, mass
			}
		}
		return keep, mass
	}
	// Each worker sorts its range of ids stably; the runs are then merged
	// in order (a tie goes to the lower range, whose ids are lower) only
	// as far as the nucleus reaches: the stable sort's prefix.
	runs := vp.scratchIdx(n)
	vp.each(n, func(i0, i1 int) {
		r := runs[i0:i1]
		for i := range r {
			r[i] = i0 + i
		}
		slices.SortStableFunc(r, desc)
	})
	heads := make([]int, len(chunks))
	for c := range chunks {
		heads[c] = chunks[c][0]
	}
	for k := range n {
		best := -1
		for c, h := range heads {
			if h < chunks[c][1] && (best < 0 || desc(runs[h], runs[heads[best]]) < 0) {
				best = c
			}
		}
		id := runs[heads[best]]
		heads[best]++
		idx[k] = id
		mass += float64(p[id])
		if mass >= topP {
			return k + 1, mass
		}
	}
	return n, mass
}

// Generate feeds prompt (Prefill), then samples n tokens one by one,
// feeding each back (Decode), and returns the n sampled ids. Each draw
// runs inside the forward call that made its logits, on the worker pool
// (Batch.PrefillNext, DecodeNext); the ids are those sm.Sample draws.
func (s *Session) Generate(prompt []int, n int, sm *Sampler) ([]int, error) {
	out := make([]int, 0, n)
	if n == 0 {
		_, err := s.Prefill(prompt)
		return out, err
	}
	tok, err := s.b.PrefillNext(0, prompt, sm)
	if err != nil {
		return nil, err
	}
	next := []int{tok}
	for {
		out = append(out, next[0])
		if len(out) == n {
			return out, nil
		}
		if err := s.b.DecodeNext([]int{0}, next, next, sm); err != nil {
			return out, err
		}
	}
}

// vocabPar runs a sampler's vocabulary-wide passes from inside Pool.Do,
// split over the workers of g in one contiguous range of ids per worker
// (nil: on the calling goroutine alone). Below parMinElems ids a pass
// runs on the caller.
type vocabPar struct {
	ms   *pool.Master
	g    *pool.Group
	err  error // the first error of a Run (its pass's results are then invalid)
	best []int // per range: its argmax
	runs []int // the nucleus' per-range sorted ids
}

// chunks cuts [0, n) into the ranges of one pass.
func (vp *vocabPar) chunks(n int) [][2]int {
	k := 1
	if vp != nil && n >= parMinElems {
		k = vp.g.Size()
	}
	cs := make([][2]int, k)
	for i := range cs {
		cs[i] = [2]int{i * n / k, (i + 1) * n / k}
	}
	return cs
}

// each runs f on every range of [0, n), one per worker.
func (vp *vocabPar) each(n int, f func(i0, i1 int)) {
	cs := vp.chunks(n)
	if len(cs) == 1 {
		f(0, n)
		return
	}
	err := vp.ms.Run(vp.g, func(local, _ int) error {
		f(cs[local][0], cs[local][1])
		return nil
	})
	if err != nil && vp.err == nil {
		vp.err = err
	}
}

// scratchIdx is n ints of the nucleus' runs, kept across calls.
func (vp *vocabPar) scratchIdx(n int) []int {
	if cap(vp.runs) < n {
		vp.runs = make([]int, n)
	}
	return vp.runs[:n]
}

// argmax is Argmax(logits) with each worker taking the argmax of its
// range and the ranges' winners combined in order by Argmax's rule (a
// later one wins only if strictly larger, or if the current is NaN and it
// is not), which is the first index of the maximum over the non-NaN
// logits, as the serial scan finds it.
func (vp *vocabPar) argmax(logits []float32) int {
	cs := vp.chunks(len(logits))
	if len(cs) == 1 {
		return Argmax(logits)
	}
	if len(vp.best) < len(cs) {
		vp.best = make([]int, len(cs))
	}
	best := vp.best[:len(cs)]
	err := vp.ms.Run(vp.g, func(local, _ int) error {
		c := cs[local]
		if c[0] < c[1] {
			best[local] = c[0] + Argmax(logits[c[0]:c[1]])
		} else {
			best[local] = -1
		}
		return nil
	})
	if err != nil {
		if vp.err == nil {
			vp.err = err
		}
		return Argmax(logits)
	}
	b := best[0]
	for _, i := range best[1:] {
		if i < 0 {
			continue
		}
		if v := logits[i]; v > logits[b] || (logits[b] != logits[b] && v == v) {
			b = i
		}
	}
	return b
}
