package engine

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// balanceModel is a one-layer synthetic model, big enough (gate: 768×256)
// that the Eq. 1 split of its GEMMs gives both groups at least a tile.
func balanceModel(t *testing.T, o Options) *Model {
	t.Helper()
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	c := Config{Name: "tiny-balance", Dim: 256, Intermediate: 768, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 300, MaxSeq: 64,
		RoPETheta: 1e4, RoPELayout: 1, RMSEps: 1e-5}
	w, err := Synthetic(c, 0, 11)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(w, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestMixedSplitFeedback: repeated mixed calls of one linear re-plan its
// split from the co-running rates of their M bucket only, and every call's
// output matches the float64 reference on its side of the split: fp32
// weights in region A (cores group), bf16-rounded ones in B (matrix
// group), packed and pack-per-call alike.
func TestMixedSplitFeedback(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"packed", Options{Placement: PlaceMixed, Threads: 2}},
		{"packpercall", Options{Placement: PlaceMixed, Threads: 2, PackPerCall: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := balanceModel(t, c.o)
			if m.Matrix.DType != gemm.BF16 {
				t.Skipf("matrix backend %s computes %s, want bf16", m.Matrix.Name, m.Matrix.DType)
			}
			l := m.layers[0].gate
			if l.split == nil {
				t.Fatal("mixed model without split state")
			}
			per := 2 * float64(l.k)
			a0, b0 := l.rateCores/per, l.rateMat/per
			for i, b := range l.split.bal {
				if b.RateA != a0 || b.RateB != b0 {
					t.Fatalf("bucket %d starts at rates %g/%g, want the alone rates %g/%g", i, b.RateA, b.RateB, a0, b0)
				}
			}
			if m.layers[0].up.split != l.split {
				t.Error("gate and up (same shape) do not share their split state")
			}
			bf := make([]float32, len(l.raw))
			for i, v := range l.raw {
				bf[i] = gemm.BF16ToFloat32(gemm.Float32ToBF16(v))
			}
			for _, M := range []int{1, 64} {
				x := make([]float32, M*l.k)
				for i := range x {
					x[i] = float32(i%17-8) * 0.1
				}
				y := make([]float32, M*l.n)
				bal := &l.split.bal[splitBucket(M)]
				observed := 0
				for call := range 6 {
					s, err := bal.Plan(M, l.n) // what runLinear will plan
					if err != nil {
						t.Fatal(err)
					}
					if call == 0 && (s.A.Empty() || s.B.Empty()) {
						t.Fatalf("M = %d: the alone rates' split %v | %v drops a group (%s): nothing to observe", M, s.A, s.B, s.Note)
					}
					if !s.A.Empty() && !s.B.Empty() {
						observed++
					}
					clear(y)
					if err := m.pool.Do(func(ms *pool.Master) error { return m.runLinear(ms, l, y, x, M, PlaceMixed, nil) }); err != nil {
						t.Fatal(err)
					}
					checkSplitOutput(t, M, call, s, y, x, l.raw, bf, l.n, l.k)
				}
				t.Logf("M = %d (bucket %d): rates per output element alone %.3g/%.3g, co-running now %.3g/%.3g (%d calls with both groups)",
					M, splitBucket(M), a0, b0, bal.RateA, bal.RateB, observed)
				if bal.RateA == a0 && bal.RateB == b0 {
					t.Errorf("M = %d: rates still the alone rates after %d split calls", M, observed)
				}
			}
			if b := l.split.bal[splitBucket(8)]; b.RateA != a0 || b.RateB != b0 {
				t.Errorf("bucket of M = 8 moved to %g/%g without a call of that M", b.RateA, b.RateB)
			}
		})
	}
}

// checkSplitOutput compares y (M×n) with the float64 product of x and w
// (fp32) in s.A and of x and bf (w rounded to bf16) in s.B, within fp32
// summation error: 1e-4 of Σ|x·w|.
func checkSplitOutput(t *testing.T, M, call int, s pool.Split, y, x, w, bf []float32, n, k int) {
	t.Helper()
	for i := range M {
		for j := range n {
			ref := w
			if i >= s.B.M0 && i < s.B.M1 && j >= s.B.N0 && j < s.B.N1 {
				ref = bf
			}
			var sum, abs float64
			for p := range k {
				v := float64(x[i*k+p]) * float64(ref[j*k+p])
				sum += v
				abs += math.Abs(v)
			}
			if d := math.Abs(float64(y[i*n+j]) - sum); d > 1e-4*abs+1e-6 {
				t.Fatalf("M = %d call %d (split %v | %v): y[%d][%d] = %g, want %g (Σ|x·w| %g)", M, call, s.A, s.B, i, j, y[i*n+j], sum, abs)
			}
		}
	}
}

// TestMixedSplitConcurrent: runLinear's split state has no lock because a
// Model's pool runs one Do at a time; concurrent callers (TimeLinear from
// several goroutines) either run in turn or fail as busy, and the race
// detector sees no unordered access to the Balancers.
func TestMixedSplitConcurrent(t *testing.T) {
	m := balanceModel(t, Options{Placement: PlaceMixed, Threads: 2})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			for range 5 {
				if _, err := m.TimeLinear(0, OpGateProj, 1+g*20, 2); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil && !strings.Contains(err.Error(), "busy") {
			t.Errorf("goroutine %d: %v, want nil or a busy error", g, err)
		}
	}
}
