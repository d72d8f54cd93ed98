package opbench

import (
	"math"
	"strings"
	"testing"

	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
)

// TestCanary: the reference loop times every worker of a group, keeps each
// worker's best, and a time is judged against its own worker's best.
func TestCanary(t *testing.T) {
	p, err := kpool.New(kpool.Options{CPUs: []int{0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	gs, err := p.Groups(2)
	if err != nil {
		t.Fatal(err)
	}
	var c Canary
	var times map[int]float64
	for range 2 {
		if err := p.Do(func(m *kpool.Master) error {
			var err error
			times, err = c.Check(m, gs[0])
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(times) != 2 || !(times[0] > 0) || !(times[1] > 0) {
		t.Fatalf("times %v", times)
	}
	if r := c.Ratio(times); !(r >= 1) {
		t.Errorf("ratio %v of the last times, want ≥ 1", r)
	}
	slow := map[int]float64{0: c.best[0], 1: 3 * c.best[1]}
	if r := c.Ratio(slow); math.Abs(r-3) > 1e-12 {
		t.Errorf("ratio %v of a worker at 3× its best, want 3", r)
	}
	if r := c.Ratio(nil); r != 0 {
		t.Errorf("ratio %v of no times", r)
	}
}

// TestJudgeCanary: a figure is noisy above results.NoiseMaxCanary, with
// the ratio recorded either way and a reason added to an existing one.
func TestJudgeCanary(t *testing.T) {
	var n results.Noise
	JudgeCanary(&n, 1.1)
	if n.Noisy || n.Canary != 1.1 {
		t.Errorf("1.1×: %+v", n)
	}
	JudgeCanary(&n, 2)
	if !n.Noisy || !strings.Contains(n.Why, "host slowdown") || n.Canary != 2 {
		t.Errorf("2×: %+v", n)
	}
	m := results.Noise{Noisy: true, Why: "cv 30% > 10%"}
	JudgeCanary(&m, 1.5)
	if !strings.HasPrefix(m.Why, "cv 30%") || !strings.Contains(m.Why, "1.50×") {
		t.Errorf("noisy already: %q", m.Why)
	}
	JudgeCanary(&m, 1.6)
	if strings.Count(m.Why, "host slowdown") != 1 || m.Canary != 1.6 {
		t.Errorf("judged again: %q, ratio %v", m.Why, m.Canary)
	}
	var z results.Noise
	JudgeCanary(&z, 0)
	if z.Noisy || z.Canary != 0 {
		t.Errorf("no ratio: %+v", z)
	}
}
