package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestInterrupted: calls of one operator that took ≥ InterruptedFactor ×
// the median of their neighbours are counted, with their time above that
// median; a call's own spread, a steady growth (decode attention over a
// growing context), calls of other token counts and too few calls are not.
func TestInterrupted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	jitter := func(n int, base float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = base * (0.8 + 0.6*rng.Float64()) // 0.8–1.4× base
		}
		return s
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9+0.25*math.Abs(b) }

	s := jitter(32, 2e-6)
	if n, e := Interrupted(s, nil); n != 0 || e != 0 {
		t.Errorf("jitter alone: %d calls, %v s; want none", n, e)
	}
	// Two interruptions, one at each end: 60 µs and 100 µs calls.
	s[0], s[31] = 60e-6, 100e-6
	if n, e := Interrupted(s, nil); n != 2 || !near(e, 156e-6) {
		t.Errorf("two interrupted calls: %d calls, %v s; want 2, about 156 µs", n, e)
	}
	// A call's time growing 3× over 64 steps is no interruption.
	g := make([]float64, 64)
	for i := range g {
		g[i] = 10e-6 * (1 + 2*float64(i)/63)
	}
	if n, _ := Interrupted(g, nil); n != 0 {
		t.Errorf("steady growth: %d interrupted calls; want none", n)
	}
	// Calls of 8 tokens (8× the time) among calls of 1 are compared only
	// with calls of 8 tokens, of which there are too few here.
	m := jitter(20, 2e-6)
	toks := make([]int, 20)
	for i := range toks {
		toks[i] = 1
	}
	m[5], toks[5] = 16e-6, 8
	m[12], toks[12] = 17e-6, 8
	if n, _ := Interrupted(m, toks); n != 0 {
		t.Errorf("calls of 8 tokens among calls of 1: %d interrupted; want none", n)
	}
	if n, _ := Interrupted(m, nil); n != 2 {
		t.Errorf("the same calls, tokens unknown: %d interrupted; want 2", n)
	}
	// Fewer than InterruptedWindow+1 calls: never judged.
	if n, _ := Interrupted([]float64{1e-6, 1e-6, 1e-6, 100e-6}, nil); n != 0 {
		t.Errorf("4 calls: %d interrupted; want none", n)
	}
}

// TestTimingsInterrupted: a Batch's timings carry each operator's
// interrupted calls, which Totals sums, and Uninterrupted leaves their
// excess out.
func TestTimingsInterrupted(t *testing.T) {
	tm := newTimers(2)
	c := &tm.layer[1][0][iAttnNorm]
	c.secs = []float64{2e-6, 2e-6, 2e-6, 2e-6, 82e-6, 2e-6, 2e-6, 2e-6}
	c.toks = make([]int, len(c.secs))
	c.calls, c.ns = len(c.secs), 100_000
	d := &tm.layer[1][1][iAttnNorm]
	d.secs, d.toks, d.calls, d.ns = []float64{3e-6}, []int{0}, 1, 3000
	var got []Timing
	for _, x := range tm.list() {
		if x.Op == OpAttnNorm {
			got = append(got, x)
		}
	}
	if len(got) != 2 || got[0].InterruptedCalls != 1 || math.Abs(got[0].InterruptedSeconds-80e-6) > 1e-12 ||
		math.Abs(got[0].Uninterrupted()-20e-6) > 1e-12 || got[1].InterruptedCalls != 0 {
		t.Fatalf("timings %+v; want layer 0 with 1 interrupted call of 80 µs over its median, 20 µs uninterrupted, layer 1 none", got)
	}
	tot := Totals(got)
	if len(tot) != 1 || tot[0].InterruptedCalls != 1 || math.Abs(tot[0].Uninterrupted()-23e-6) > 1e-12 {
		t.Errorf("totals %+v; want 1 interrupted call, 23 µs uninterrupted", tot)
	}
}
