package quant

import (
	"fmt"
	"math"
)

// Activations are M rows of K fp32 activations quantized per 32-element
// block to int8 (llama.cpp's quantize_row_q8_0, with the scale kept in
// float32), in the packed lane order of a Matrix, for one weight format
// (the offset correction differs). Reuse one value across calls: Quantize
// grows its buffers only when needed.
type Activations struct {
	Format Format
	M, K   int
	pairs  int
	// Pair-major: pair p of row r is at index p·M + r, so a microkernel
	// finds the rows of a tile at fixed offsets from one pointer.
	q     []byte    // pairs × M × 64, int8 bits in lane order (padding 0)
	d     []float32 // pairs × M × 2: block scales
	sum   []int32   // pairs × M × 2: Σq per block
	corrZ []int32   // pairs × M × 2: −o·Σq/8, the zmm kernels' accumulator start
	corrY []int32   // pairs × M × 2: −o·Σq/4, the ymm kernels'
	kx    []uint32  // the K-quants' terms (kquant.go quantizeK)
	kc    []int32   // Q6_K's column-order corrections (kquant.go quantizeK)
	kpf   []float32 // the K-quants' prefill terms (prefill_k.go prefillK), made on the prefill path
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Quantize quantizes x (row-major M×K fp32) for weights of format f. Errors:
// a shape that does not match len(x), K not a multiple of 32, or an unknown
// format. A NaN or infinite activation gives a NaN or infinite scale, so it
// propagates to the output as it would in float arithmetic.
func (a *Activations) Quantize(f Format, x []float32, m, k int) error {
	if _, err := ParseFormat(string(f)); err != nil {
		return err
	}
	if m <= 0 || k <= 0 || k%BlockLen != 0 || int64(len(x)) < int64(m)*int64(k) {
		return fmt.Errorf("quant: activations %d×%d (%d values): want K a positive multiple of %d and M·K values", m, k, len(x), BlockLen)
	}
	a.Format, a.M, a.K = f, m, k
	a.pairs = f.pairsFor(k)
	np := m * a.pairs
	a.q = grow(a.q, np*pairLen)
	a.d = grow(a.d, np*2)
	a.sum = grow(a.sum, np*2)
	a.corrZ = grow(a.corrZ, np*2)
	a.corrY = grow(a.corrY, np*2)
	o := f.offset()
	for r := range m {
		for blk := range k / BlockLen {
			xb := x[r*k+blk*BlockLen:][:BlockLen]
			var amax float32
			for _, v := range xb {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			if math.IsNaN(float64(amax)) || math.IsInf(float64(amax), 0) {
				// Propagate: a NaN scale makes every product NaN.
				amax = float32(math.NaN())
			}
			d := amax / 127
			id := float32(0)
			if d != 0 {
				id = 1 / d
			}
			p, b := blk/2, blk%2
			q := a.q[(p*m+r)*pairLen:][:pairLen]
			var s int32
			for e, v := range xb {
				qv := int32(0)
				if id != 0 && !math.IsNaN(float64(id)) {
					qv = int32(roundHalfAway(v * id))
				}
				q[lanePos(b, e)] = byte(int8(qv))
				s += qv
			}
			i := (p*m+r)*2 + b
			a.d[i], a.sum[i] = d, s
			a.corrZ[i], a.corrY[i] = -o*s/8, -o*s/4
		}
	}
	a.quantizeK()
	if m >= PrefillMinM && pfkSub(f) > 0 {
		a.prefillK() // here, not in Mul: concurrent Muls share a
	}
	return nil
}
