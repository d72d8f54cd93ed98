package workloads

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func rulerFor(t *testing.T, which int) *rulerQA {
	t.Helper()
	r, err := squadQA.get(func() (*rulerQA, error) { return loadRulerQA(0) })
	if which == 1 {
		r, err = hotpotQA.get(func() (*rulerQA, error) { return loadRulerQA(1) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRulerSegmentsExact checks the cached per-document counts add up to
// the token count of the whole prompt.
func TestRulerSegmentsExact(t *testing.T) {
	tok := qwen(t)
	for which := range 2 {
		r := rulerFor(t, which)
		rng := rand.New(rand.NewPCG(7, 7))
		for _, c := range []struct{ index, docs int }{{0, 10}, {1, 25}, {5, 1}, {42, 55}} {
			docs := r.docs(c.index, c.docs, rng)
			p := r.prompt(c.index, docs)
			if got, want := r.count(c.index, docs), tok.Count(p); got != want {
				t.Errorf("%s q%d with %d docs: segmented count %d, whole prompt %d", r.pool.Dataset, c.index, c.docs, got, want)
			}
		}
	}
}

// TestRulerDocs checks the document list follows qa.py: gold docs present,
// SQuAD's same-article docs before random ones, no repeats.
func TestRulerDocs(t *testing.T) {
	r := rulerFor(t, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	q := r.pool.QAs[0]
	for _, n := range []int{5, 39, 60, 646, 1000} {
		docs := r.docs(0, n, rng)
		if want := min(n, len(r.pool.Docs)); len(docs) != want {
			t.Fatalf("%d docs: got %d", n, len(docs))
		}
		set := map[int]bool{}
		for _, d := range docs {
			if set[d] {
				t.Fatalf("%d docs: doc %d repeated", n, d)
			}
			set[d] = true
		}
		if !set[q.Context[0]] {
			t.Errorf("%d docs: gold doc missing", n)
		}
		if n >= 1+len(q.More) {
			for _, d := range q.More {
				if !set[d] {
					t.Errorf("%d docs: same-article doc %d missing", n, d)
				}
			}
		}
	}
}

// TestRulerBudget checks every sample fits its budget with
// tokens_to_generate to spare, and that the step-down keeps most samples
// near the budget (RULER's sizing).
func TestRulerBudget(t *testing.T) {
	for _, name := range []string{"ruler-4k", "ruler-8k"} {
		budget := map[string]int{"ruler-4k": 4096, "ruler-8k": 8192}[name]
		pools, err := strata(name)
		if err != nil {
			t.Fatal(err)
		}
		for j, p := range pools {
			if want := []int{500, 100}[j]; len(p) != want {
				t.Errorf("%s stratum %d: %d samples, want %d", name, j, len(p), want)
			}
			for _, s := range p {
				if s.prompt+32 > budget {
					t.Errorf("%s %s: %d prompt tokens + 32 > %d", name, s.source, s.prompt, budget)
				}
				if s.output < 1 || s.output > 64 {
					t.Errorf("%s %s: %d output tokens", name, s.source, s.output)
				}
			}
		}
	}
}

func TestRulerBudgetTooSmall(t *testing.T) {
	r := rulerFor(t, 1)
	_, err := r.samples(500, 3)
	if err == nil || !strings.Contains(err.Error(), "over the 500-token budget") {
		t.Errorf("err = %v", err)
	}
}
