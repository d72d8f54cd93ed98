package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxPasses checks the exported passes against the Go
// specification: max exactly (NaN ignored, -Inf for an empty row), and
// e^(x-m) within Exp's 2 ULP with a sum within n·2^-23 relative, on rows
// of every length up to 70 (the vector bodies and their tails), with -Inf
// (masked) entries giving 0 where the row's max is finite.
func TestSoftmaxPasses(t *testing.T) {
	maxf, expSubSum := SoftmaxPasses()
	rng := rand.New(rand.NewPCG(7, 8))
	if m := maxf(nil); !math.IsInf(float64(m), -1) {
		t.Errorf("max of an empty row: %v, want -Inf", m)
	}
	for n := 1; n <= 70; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 4)
		}
		if n > 1 {
			x[rng.IntN(n-1)] = float32(math.Inf(-1)) // masked; the last stays finite
		}
		if m, want := maxf(x), maxGo(x); m != want {
			t.Fatalf("n %d: max %v, want %v", n, m, want)
		}
		if n > 1 {
			y := append([]float32(nil), x...)
			y[rng.IntN(n)] = float32(math.NaN())
			if m := maxf(y); math.IsNaN(float64(m)) || m > maxGo(x) {
				t.Fatalf("n %d: max with a NaN %v, want the others' max (≤ %v)", n, m, maxGo(x))
			}
		}
		m := maxGo(x)
		dst := make([]float32, n)
		sum := expSubSum(dst, x, m)
		var ref float64
		for i, v := range x {
			want := math.Exp(float64(v) - float64(m))
			ref += float64(dst[i])
			if math.IsInf(float64(v), -1) {
				if dst[i] != 0 {
					t.Fatalf("n %d: e^(-Inf) = %v, want 0", n, dst[i])
				}
				continue
			}
			if u := ULPError32(dst[i], math.Exp(float64(float32(v-m)))); u > 2 {
				t.Fatalf("n %d [%d]: %v, want %v: %.2f ULP", n, i, dst[i], want, u)
			}
		}
		if d := math.Abs(float64(sum) - ref); d > float64(n)*0x1p-23*ref {
			t.Fatalf("n %d: sum %v, want %v", n, sum, ref)
		}
	}
}
