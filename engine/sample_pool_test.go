package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cpubench/bench/kernels/pool"
)

// inPool runs f with a vocabPar over a pool of n workers (CPU 0 repeated:
// the split, not the speed, is under test).
func inPool(t *testing.T, n int, f func(vp *vocabPar)) {
	t.Helper()
	p, err := pool.New(pool.Options{CPUs: make([]int, n), Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Do(func(ms *pool.Master) error {
		vp := &vocabPar{ms: ms, g: p.All()}
		f(vp)
		return vp.err
	}); err != nil {
		t.Fatal(err)
	}
}

// tiedLogits are n logits rounded to few values, so that the maximum and
// many others repeat; with nan, some are NaN (the first one too).
func tiedLogits(rng *rand.Rand, n int, nan bool) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(math.Round(rng.NormFloat64() * 2))
		if nan && (i == 0 || rng.IntN(50) == 0) {
			l[i] = float32(math.NaN())
		}
	}
	return l
}

// TestVocabParArgmax: the argmax split over workers is Argmax's index,
// with ties (the first) and NaNs (skipped; all NaN: 0), for vocabularies
// above and below the split threshold and any worker count.
func TestVocabParArgmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nan := float32(math.NaN())
	cases := [][]float32{make([]float32, parMinElems), slices.Repeat([]float32{nan}, parMinElems+3)}
	for _, n := range []int{100, parMinElems, 151936} {
		for range 5 {
			cases = append(cases, randomLogits(rng, n), tiedLogits(rng, n, false), tiedLogits(rng, n, true))
		}
	}
	// The maximum only in the last range, and only NaNs before it.
	last := slices.Repeat([]float32{nan}, 3*parMinElems)
	last[len(last)-1] = -1
	cases = append(cases, last)
	for _, workers := range []int{1, 2, 3, 7} {
		inPool(t, workers, func(vp *vocabPar) {
			for i, l := range cases {
				if got, want := vp.argmax(l), Argmax(l); got != want {
					t.Errorf("%d workers, case %d (%d logits): argmax %d, serial %d", workers, i, len(l), got, want)
				}
			}
		})
	}
}

// TestVocabParSampler: a sampler whose passes are split over the workers
// draws the ids the serial Sample draws, seed for seed, at temperature 0,
// with top-p 1 and with a nucleus, on tied logits too; NaN logits too.
func TestVocabParSampler(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cases [][]float32
	reps := 4
	if raceEnabled {
		reps = 1 // the purego pass draws all four
	}
	for _, n := range []int{512, 40000, 151936} {
		for range reps {
			cases = append(cases, randomLogits(rng, n), tiedLogits(rng, n, false))
		}
	}
	cases = append(cases, tiedLogits(rng, 40000, true))
	for _, c := range []struct{ temp, topP float64 }{{0, 1}, {1, 1}, {0.7, 0.9}, {1.3, 0.5}, {1, 0.999999}} {
		for _, workers := range []int{2, 3} {
			serial, _ := NewSampler(c.temp, c.topP, 9)
			split, _ := NewSampler(c.temp, c.topP, 9)
			inPool(t, workers, func(vp *vocabPar) {
				for i, l := range cases {
					want := serial.Sample(l)
					if got := split.sample(vp, l); got != want {
						t.Errorf("temperature %v, top-p %v, %d workers, case %d (%d logits): drew %d, serial %d", c.temp, c.topP, workers, i, len(l), got, want)
					}
				}
			})
		}
	}
}

// TestDecodeNext: DecodeNext and PrefillNext draw what Decode and Prefill
// followed by Sample draw, over a vocabulary large enough to split, for
// one and two workers, greedy and with a nucleus sampler; the logits stay
// readable through Logits.
func TestDecodeNext(t *testing.T) {
	c := Config{Name: "tiny-vocab", Dim: 64, Intermediate: 128, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 32, Vocab: 3 * parMinElems, MaxSeq: 32,
		RoPETheta: 10000, RMSEps: 1e-5}
	w, err := Synthetic(c, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		m, err := New(w, Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		for _, temp := range []float64{0, 1} {
			newS := func() *Sampler {
				if temp == 0 {
					return nil
				}
				s, _ := NewSampler(temp, 0.9, 5)
				return s
			}
			draw := func(s *Sampler, l []float32) int {
				if s == nil {
					return Argmax(l)
				}
				return s.Sample(l)
			}
			ref, got := newS(), newS()
			a, _ := m.NewBatch(2, 0)
			b, _ := m.NewBatch(2, 0)
			prompt := []int{5, 17, 40000, 3}
			want := make([]int, 2)
			next := make([]int, 2)
			for s := range 2 {
				l, err := a.Prefill(s, prompt[s:])
				if err != nil {
					t.Fatal(err)
				}
				want[s] = draw(ref, l)
				if next[s], err = b.PrefillNext(s, prompt[s:], got); err != nil {
					t.Fatal(err)
				}
			}
			for step := range 6 {
				if !slices.Equal(next, want) {
					t.Fatalf("%d threads, temperature %v, step %d: drew %v, serial %v", threads, temp, step, next, want)
				}
				l, err := a.Decode([]int{0, 1}, want)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.DecodeNext([]int{0, 1}, next, next, got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(b.Logits(), l) {
					t.Fatalf("%d threads, step %d: Logits differ from Decode's", threads, step)
				}
				for s := range 2 {
					want[s] = draw(ref, l[s*c.Vocab:(s+1)*c.Vocab])
				}
			}
			if err := b.DecodeNext([]int{0}, []int{1}, make([]int, 2), nil); err == nil {
				t.Error("DecodeNext with 2 next ids for 1 slot: no error")
			}
		}
		m.Close()
	}
}

// TestHold: forward calls inside Hold run on the held pool and give the
// same tokens as outside it; a nested Hold fails; after Hold the model
// runs as before.
func TestHold(t *testing.T) {
	m, s := newStories(t, Options{Threads: 1})
	defer m.Close()
	want, err := s.Generate([]int{1}, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Reset()
	var got []int
	err = m.Hold(func() error {
		if err := m.Hold(func() error { return nil }); err == nil {
			t.Error("nested Hold: no error")
		}
		var err error
		got, err = s.Generate([]int{1}, 12, nil)
		return err
	})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("inside Hold: %v, %v; outside %v", got, err, want)
	}
	s.Reset()
	if again, err := s.Generate([]int{1}, 12, nil); err != nil || !slices.Equal(again, want) {
		t.Fatalf("after Hold: %v, %v; want %v", again, err, want)
	}
}
