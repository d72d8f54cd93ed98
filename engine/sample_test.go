package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func randomLogits(rng *rand.Rand, n int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * 3)
	}
	return l
}

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		l    []float32
		want int
	}{{[]float32{1}, 0}, {[]float32{1, 3, 3, 2}, 1}, {[]float32{-5, -1, -2}, 1}, {[]float32{nan, 1, 2}, 2}, {[]float32{nan, nan}, 0}} {
		if got := Argmax(c.l); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.l, got, c.want)
		}
	}
}

// TestSamplerGreedyLimits: temperature 0, and top-p near 0 at any
// temperature, choose the argmax.
func TestSamplerGreedyLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	zero, _ := NewSampler(0, 1, 1)
	tiny, _ := NewSampler(1.5, 1e-9, 1)
	for range 200 {
		l := randomLogits(rng, 512)
		want := Argmax(l)
		if got := zero.Sample(l); got != want {
			t.Fatalf("temperature 0: %d, argmax %d", got, want)
		}
		if got := tiny.Sample(l); got != want {
			t.Fatalf("top-p 1e-9: %d, argmax %d", got, want)
		}
	}
}

func TestSamplerDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([][]float32, 100)
	for i := range logits {
		logits[i] = randomLogits(rng, 64)
	}
	draw := func(seed uint64, topP float64) []int {
		s, err := NewSampler(1, topP, seed)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, l := range logits {
			out = append(out, s.Sample(l))
		}
		return out
	}
	for _, p := range []float64{1, 0.9} {
		a, b, c := draw(42, p), draw(42, p), draw(43, p)
		if !slices.Equal(a, b) {
			t.Errorf("top-p %v: same seed, different draws", p)
		}
		if slices.Equal(a, c) {
			t.Errorf("top-p %v: seeds 42 and 43 drew the same 100 ids", p)
		}
	}
}

// TestSamplerDistribution: the draws follow softmax(logits/T), and top-p
// never draws outside the nucleus.
func TestSamplerDistribution(t *testing.T) {
	// Probabilities 0.6, 0.3, 0.1 at temperature 1.
	l := []float32{float32(math.Log(0.6)), float32(math.Log(0.3)), float32(math.Log(0.1))}
	const n = 20000
	for _, c := range []struct {
		temp, topP float64
		want       [3]float64
	}{
		{1, 1, [3]float64{0.6, 0.3, 0.1}},
		{1, 0.8, [3]float64{2. / 3, 1. / 3, 0}},
		{1, 0.5, [3]float64{1, 0, 0}},
		{2, 1, [3]float64{math.Sqrt(0.6), math.Sqrt(0.3), math.Sqrt(0.1)}}, // normalized below
	} {
		s, err := NewSampler(c.temp, c.topP, 9)
		if err != nil {
			t.Fatal(err)
		}
		var count [3]float64
		for range n {
			count[s.Sample(l)]++
		}
		sum := c.want[0] + c.want[1] + c.want[2]
		for i := range count {
			p := c.want[i] / sum
			if got := count[i] / n; math.Abs(got-p) > 4*math.Sqrt(p*(1-p)/n)+1e-9 {
				t.Errorf("T=%v top-p=%v: id %d drawn %.4f of the time, want %.4f", c.temp, c.topP, i, got, p)
			}
		}
	}
}

func TestSamplerErrors(t *testing.T) {
	for _, c := range []struct {
		temp, topP float64
		want       string
	}{{-1, 1, "temperature -1"}, {math.NaN(), 1, "temperature NaN"}, {math.Inf(1), 1, "temperature +Inf"},
		{1, 0, "top-p 0"}, {1, 1.5, "top-p 1.5"}, {1, math.NaN(), "top-p NaN"}} {
		if _, err := NewSampler(c.temp, c.topP, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSampler(%v, %v) = %v, want an error containing %q", c.temp, c.topP, err, c.want)
		}
	}
}

// TestGenerate: greedy generation from BOS is the reference's argmax chain.
func TestGenerate(t *testing.T) {
	ref := loadReference(t)
	_, s := newStories(t, Options{})
	g, _ := NewSampler(0, 1, 0)
	out, err := s.Generate([]int{1}, 30, g)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, ref.argmax[:30]) {
		t.Errorf("greedy generation %v, llama2.c %v", out, ref.argmax[:30])
	}
	if s.Pos() != 30 {
		t.Errorf("after 30 generated tokens from a 1-token prompt: position %d, want 30", s.Pos())
	}
	s.Reset()
	hot, _ := NewSampler(1, 0.9, 7)
	a, _ := s.Generate([]int{1}, 30, hot)
	s.Reset()
	hot, _ = NewSampler(1, 0.9, 7)
	b, _ := s.Generate([]int{1}, 30, hot)
	if !slices.Equal(a, b) {
		t.Errorf("seeded generation not deterministic: %v vs %v", a, b)
	}
}
