package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/cpubench/bench/kernels"
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
func (s *Sampler) Sample(logits []float32) int {
	if s.Temperature == 0 {
		return Argmax(logits)
	}
	n := len(logits)
	if cap(s.probs) < n {
		s.probs = make([]float32, n)
		s.idx = make([]int, n)
	}
	p := s.probs[:n]
	inv := float32(1 / s.Temperature)
	for i, v := range logits {
		p[i] = v * inv
	}
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
		return Argmax(logits)
	}
	// Nucleus: most likely first (ties by lower id), keep the smallest prefix
	// whose mass reaches TopP, sample within it.
	idx := s.idx[:n]
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	var mass float64
	keep := n
	for i, id := range idx {
		mass += float64(p[id])
		if mass >= s.TopP {
			keep = i + 1
			break
		}
	}
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

// Generate feeds prompt (Prefill), then samples n tokens one by one,
// feeding each back (Decode), and returns the n sampled ids.
func (s *Session) Generate(prompt []int, n int, sm *Sampler) ([]int, error) {
	logits, err := s.Prefill(prompt)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, n)
	for len(out) < n {
		tok := sm.Sample(logits)
		out = append(out, tok)
		if len(out) == n {
			break
		}
		if logits, err = s.Decode(tok); err != nil {
			return out, err
		}
	}
	return out, nil
}
