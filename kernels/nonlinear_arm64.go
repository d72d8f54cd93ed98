//go:build !purego

package kernels

import (
	"math"

	"github.com/cpubench/bench/kernels/registry"
)

// archNonlinearImpls returns the arm64 NEON implementation (and the
// measured-only "sve" and "sme").
func archNonlinearImpls() []registry.Entry[*nlKernels] {
	return []registry.Entry[*nlKernels]{
		newSVENonlinearImpl(false), newSVENonlinearImpl(true), // "sve", "sme": measured, never best (nonlinear_sve_arm64.go)
		nlEntry("neon", lacksASIMD, &neonNLKernels),
	}
}

var neonNLKernels = nlKernels{
	exp:           expNEONAll,
	fastExp:       fastExpNEONAll,
	silu:          siluNEONAll,
	gelu:          geluNEONAll,
	siluMul:       siluMulNEONAll,
	max:           maxNEONAll,
	expSubSum:     func(d, s []float32, m float32) float32 { return expSubSumNEONAll(d, s, m, false) },
	fastExpSubSum: func(d, s []float32, m float32) float32 { return expSubSumNEONAll(d, s, m, true) },
	scale:         scaleNEONAll,
	sumSq:         sumSqNEONAll,
	mulScale:      mulScaleNEONAll,
	rope:          ropeNEONAll,
}

// The wrappers below run the assembly over the whole 4-lane vectors and the
// last partial vector through a zero-padded stack buffer, so every element
// goes through the same instructions (as the amd64 wrappers do).

// unaryNEON runs k over whole vectors of src, then over the padded tail.
func unaryNEON(dst, src []float32, k func(dst, src []float32)) {
	n := len(dst) &^ 3
	if n > 0 {
		k(dst[:n], src[:n])
	}
	if n < len(dst) {
		var b [4]float32
		copy(b[:], src[n:len(dst)])
		k(b[:], b[:])
		copy(dst[n:], b[:])
	}
}

func expNEONAll(dst, src []float32)     { unaryNEON(dst, src, expNEON) }
func fastExpNEONAll(dst, src []float32) { unaryNEON(dst, src, fastExpNEON) }
func siluNEONAll(dst, src []float32)    { unaryNEON(dst, src, siluNEON) }
func geluNEONAll(dst, src []float32)    { unaryNEON(dst, src, geluTanhNEON) }

func siluMulNEONAll(dst, gate, up []float32) {
	n := len(dst) &^ 3
	if n > 0 {
		siluMulNEON(dst[:n], gate[:n], up[:n])
	}
	if n < len(dst) {
		var g, u [4]float32
		copy(g[:], gate[n:len(dst)])
		copy(u[:], up[n:len(dst)])
		siluMulNEON(g[:], g[:], u[:])
		copy(dst[n:], g[:])
	}
}

func maxNEONAll(x []float32) float32 {
	n := len(x) &^ 3
	m := float32(math.Inf(-1))
	if n > 0 {
		m = maxNEON(x[:n])
	}
	if t := maxGo(x[n:]); t > m {
		m = t
	}
	return m
}

func expSubSumNEONAll(dst, src []float32, m float32, fast bool) float32 {
	n := len(dst) &^ 3
	var sum float32
	if n > 0 {
		if fast {
			sum = fastExpSubSumNEON(dst[:n], src[:n], m)
		} else {
			sum = expSubSumNEON(dst[:n], src[:n], m)
		}
	}
	if n < len(dst) {
		// Padding with -Inf adds exp(-Inf) = 0 to the sum.
		b := [4]float32{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))}
		copy(b[:], src[n:len(dst)])
		if fast {
			sum += fastExpSubSumNEON(b[:], b[:], m)
		} else {
			sum += expSubSumNEON(b[:], b[:], m)
		}
		copy(dst[n:], b[:])
	}
	return sum
}

func scaleNEONAll(x []float32, s float32) {
	n := len(x) &^ 3
	if n > 0 {
		scaleNEON(x[:n], s)
	}
	scaleGo(x[n:], s)
}

func sumSqNEONAll(x []float32) float32 {
	n := len(x) &^ 3
	var ss float32
	if n > 0 {
		ss = sumSqNEON(x[:n])
	}
	for _, v := range x[n:] {
		ss = fma32(v, v, ss)
	}
	return ss
}

func mulScaleNEONAll(dst, x, w []float32, s float32) {
	n := len(dst) &^ 3
	if n > 0 {
		mulScaleNEON(dst[:n], x[:n], w[:n], s)
	}
	mulScaleGo(dst[n:], x[n:], w[n:], s)
}

// ropeNEONAll runs the assembly over the first len(cos)&^3 pairs of each
// head (4 per vector in both layouts) and ropeTail over the others. Rotation
// is exact products and one add or subtract, with no FMA, so both give the
// twin's bits.
func ropeNEONAll(x, cos, sin []float32, layout RoPELayout) {
	done := len(cos) &^ 3
	if done > 0 {
		if layout == RoPEHalf {
			ropeHalfNEON(x, cos, sin)
		} else {
			ropeAdjacentNEON(x, cos, sin)
		}
	}
	ropeTail(x, cos, sin, layout, done)
}

// ropeTail is ropeGo for the pairs i >= from of every head.
func ropeTail(x, cos, sin []float32, layout RoPELayout, from int) {
	half := len(cos)
	sin = sin[:half]
	for h := 0; h+2*half <= len(x) && from < half; h += 2 * half {
		head := x[h : h+2*half]
		for i := from; i < half; i++ {
			ia, ib := 2*i, 2*i+1
			if layout == RoPEHalf {
				ia, ib = i, i+half
			}
			a, b := head[ia], head[ib]
			c, s := cos[i], sin[i]
			head[ia] = float32(a*c) - float32(b*s)
			head[ib] = float32(a*s) + float32(b*c)
		}
	}
}

// The kernels below are hand-written in nonlinear_arm64.s. They process
// len(dst)/4 whole vectors (len(x)/4 for the reductions) and ignore the
// rest; the other slices must be at least as long. Each lane computes
// exactly the scalar function of the "go" implementation (fma32 is
// FMLA/FMLS; see nonlinear_go.go), so results equal the twin's except for
// rare double-rounding cases of fma32; the reductions sum in a different
// order (one 4-lane accumulator, then pairwise).

// expNEON:
//
//	for i := range dst {
//		dst[i] = exp32(src[i])
//	}
//
//go:noescape
func expNEON(dst, src []float32)

// fastExpNEON:
//
//	for i := range dst {
//		dst[i] = fastExp32(src[i])
//	}
//
//go:noescape
func fastExpNEON(dst, src []float32)

// siluNEON:
//
//	for i := range dst {
//		dst[i] = silu32(x[i])
//	}
//
//go:noescape
func siluNEON(dst, x []float32)

// siluMulNEON:
//
//	for i := range dst {
//		dst[i] = silu32(gate[i]) * up[i]
//	}
//
//go:noescape
func siluMulNEON(dst, gate, up []float32)

// geluTanhNEON:
//
//	for i := range dst {
//		dst[i] = gelu32(x[i])
//	}
//
//go:noescape
func geluTanhNEON(dst, x []float32)

// maxNEON is maxGo over whole vectors (-Inf for none), with the same
// compare (v > m) per lane, so NaNs are skipped:
//
//	m := float32(math.Inf(-1))
//	for _, v := range x {
//		if v > m {
//			m = v
//		}
//	}
//	return m
//
//go:noescape
func maxNEON(x []float32) float32

// expSubSumNEON (one 4-lane accumulator, then pairwise):
//
//	for i := range dst {
//		dst[i] = exp32(src[i] - m)
//		sum += dst[i]
//	}
//	return sum
//
//go:noescape
func expSubSumNEON(dst, src []float32, m float32) float32

// fastExpSubSumNEON is expSubSumNEON with fastExp32.
//
//go:noescape
func fastExpSubSumNEON(dst, src []float32, m float32) float32

// scaleNEON:
//
//	for i := range x {
//		x[i] *= s
//	}
//
//go:noescape
func scaleNEON(x []float32, s float32)

// sumSqNEON (one 4-lane FMA accumulator, then pairwise):
//
//	for _, v := range x {
//		ss = fma32(v, v, ss)
//	}
//	return ss
//
//go:noescape
func sumSqNEON(x []float32) float32

// mulScaleNEON:
//
//	for i := range dst {
//		dst[i] = float32(x[i]*s) * w[i]
//	}
//
//go:noescape
func mulScaleNEON(dst, x, w []float32, s float32)

// ropeHalfNEON is ropeGo with RoPEHalf for i below len(cos)&^3 (len(x) a
// multiple of 2·len(cos), len(sin) >= len(cos)):
//
//	half := len(cos)
//	for h := 0; h < len(x); h += 2 * half {
//		for i := 0; i < half&^3; i++ {
//			a, b := x[h+i], x[h+i+half]
//			x[h+i] = float32(a*cos[i]) - float32(b*sin[i])
//			x[h+i+half] = float32(a*sin[i]) + float32(b*cos[i])
//		}
//	}
//
//go:noescape
func ropeHalfNEON(x, cos, sin []float32)

// ropeAdjacentNEON is ropeGo with RoPEAdjacent for i below len(cos)&^3:
//
//	half := len(cos)
//	for h := 0; h < len(x); h += 2 * half {
//		for i := 0; i < half&^3; i++ {
//			a, b := x[h+2*i], x[h+2*i+1]
//			x[h+2*i] = float32(a*cos[i]) - float32(b*sin[i])
//			x[h+2*i+1] = float32(a*sin[i]) + float32(b*cos[i])
//		}
//	}
//
//go:noescape
func ropeAdjacentNEON(x, cos, sin []float32)
