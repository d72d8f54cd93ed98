package quant

import (
	"fmt"
	"math"
)

// CheckSample spot-checks a computed Y = X·Wᵀ (y M×N with row stride N, x
// M×K fp32, both row-major) at n elements spread over Y by two co-prime
// strides (its first and last element included): each is recomputed in
// float64 from the dequantized weights and the unquantized activations and
// must lie within the package doc's bound, Σ_blocks (d_x/2)·Σ|w| +
// 2^-20·Σ|w·x| + 2^-126 with d_x = max|x_block|/127 (for q4_k
// 2^-20·Σ(|d·sc·q| + |dmin·m|)·|x|: its kernels sum the two terms apart). It returns the sum of
// the sampled elements (a measurement's checksum) and an error naming the
// first element out of bounds.
func CheckSample(w *Matrix, x, y []float32, M, n int) (float64, error) {
	N, K := w.N, w.K
	if M <= 0 || len(x) < M*K || len(y) < M*N {
		return 0, fmt.Errorf("quant: check: %d rows of x (%d) and y (%d) for a %d×%d matrix", M, len(x), len(y), N, K)
	}
	total := M * N
	n = min(max(n, 1), total)
	var sum float64
	vals, mags := make([]float32, K), make([]float64, K)
	for s := range n {
		idx := 0
		if n > 1 {
			idx = int(int64(s) * int64(total-1) / int64(n-1))
		}
		i, j := idx/N, idx%N
		var ref, mag, bound float64
		w.rowTerms(j, vals, mags)
		for blk := range K / BlockLen {
			xb := x[i*K+blk*BlockLen:][:BlockLen]
			var amax, wabs float64
			for e, v := range xb {
				wv := float64(vals[blk*BlockLen+e])
				ref += wv * float64(v)
				mag += mags[blk*BlockLen+e] * math.Abs(float64(v))
				wabs += math.Abs(wv)
				amax = max(amax, math.Abs(float64(v)))
			}
			bound += amax / 127 / 2 * wabs
		}
		bound += mag*math.Ldexp(1, -20) + math.Ldexp(1, -126)
		got := float64(y[i*N+j])
		if !(math.Abs(got-ref) <= bound) {
			return 0, fmt.Errorf("quant: %s Y[%d][%d] = %g, float64 reference %g: |error| %.3g above the bound %.3g", w.Format, i, j, got, ref, math.Abs(got-ref), bound)
		}
		sum += got
	}
	return sum, nil
}
