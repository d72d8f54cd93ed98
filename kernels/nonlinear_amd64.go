//go:build !purego

package kernels

import (
	"math"

	"github.com/cpubench/bench/kernels/registry"
)

// archNonlinearImpls returns the amd64 assembly implementations, best last.
func archNonlinearImpls() []registry.Entry[*nlKernels] {
	return []registry.Entry[*nlKernels]{
		nlEntry("avx2", lacksAVX2FMA, &avx2NLKernels),
		nlEntry("avx512", lacksAVX512FMA, &avx512NLKernels),
	}
}

var avx2NLKernels = nlKernels{
	exp:           func(d, s []float32) { expAsm(d, s, false) },
	fastExp:       func(d, s []float32) { fastExpAsm(d, s, false) },
	silu:          func(d, s []float32) { siluAsm(d, s, false) },
	gelu:          func(d, s []float32) { geluAsm(d, s, false) },
	siluMul:       func(d, g, u []float32) { siluMulAsm(d, g, u, false) },
	max:           func(x []float32) float32 { return maxAsm(x, false) },
	expSubSum:     func(d, s []float32, m float32) float32 { return expSubSumAsm(d, s, m, false, false) },
	fastExpSubSum: func(d, s []float32, m float32) float32 { return expSubSumAsm(d, s, m, true, false) },
	scale:         func(x []float32, s float32) { scaleAsm(x, s, false) },
	sumSq:         func(x []float32) float32 { return sumSqAsm(x, false) },
	mulScale:      func(d, x, w []float32, s float32) { mulScaleAsm(d, x, w, s, false) },
	rope:          func(x, c, s []float32, l RoPELayout) { ropeAsm(x, c, s, l, false) },
}

var avx512NLKernels = nlKernels{
	exp:           func(d, s []float32) { expAsm(d, s, true) },
	fastExp:       func(d, s []float32) { fastExpAsm(d, s, true) },
	silu:          func(d, s []float32) { siluAsm(d, s, true) },
	gelu:          func(d, s []float32) { geluAsm(d, s, true) },
	siluMul:       func(d, g, u []float32) { siluMulAsm(d, g, u, true) },
	max:           func(x []float32) float32 { return maxAsm(x, true) },
	expSubSum:     func(d, s []float32, m float32) float32 { return expSubSumAsm(d, s, m, false, true) },
	fastExpSubSum: func(d, s []float32, m float32) float32 { return expSubSumAsm(d, s, m, true, true) },
	scale:         func(x []float32, s float32) { scaleAsm(x, s, true) },
	sumSq:         func(x []float32) float32 { return sumSqAsm(x, true) },
	mulScale:      func(d, x, w []float32, s float32) { mulScaleAsm(d, x, w, s, true) },
	rope:          func(x, c, s []float32, l RoPELayout) { ropeAsm(x, c, s, l, true) },
}

// The wrappers below run the assembly over the whole vectors (8 lanes for
// AVX2, 16 for AVX-512; wide selects) and the last partial vector through a
// zero-padded stack buffer, so every element goes through the same
// instructions. The assembly kernels read len(dst)/lanes whole vectors and
// trust the other lengths.

func lanes(wide bool) int {
	if wide {
		return 16
	}
	return 8
}

func expAsm(dst, src []float32, wide bool) {
	n := len(dst) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			expAVX512(dst[:n], src[:n])
		} else {
			expAVX2(dst[:n], src[:n])
		}
	}
	if n < len(dst) {
		var b [16]float32
		copy(b[:], src[n:])
		if wide {
			expAVX512(b[:], b[:])
		} else {
			expAVX2(b[:8], b[:8])
		}
		copy(dst[n:], b[:])
	}
}

func fastExpAsm(dst, src []float32, wide bool) {
	n := len(dst) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			fastExpAVX512(dst[:n], src[:n])
		} else {
			fastExpAVX2(dst[:n], src[:n])
		}
	}
	if n < len(dst) {
		var b [16]float32
		copy(b[:], src[n:])
		if wide {
			fastExpAVX512(b[:], b[:])
		} else {
			fastExpAVX2(b[:8], b[:8])
		}
		copy(dst[n:], b[:])
	}
}

func siluAsm(dst, src []float32, wide bool) {
	n := len(dst) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			siluAVX512(dst[:n], src[:n])
		} else {
			siluAVX2(dst[:n], src[:n])
		}
	}
	if n < len(dst) {
		var b [16]float32
		copy(b[:], src[n:])
		if wide {
			siluAVX512(b[:], b[:])
		} else {
			siluAVX2(b[:8], b[:8])
		}
		copy(dst[n:], b[:])
	}
}

func geluAsm(dst, src []float32, wide bool) {
	n := len(dst) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			geluTanhAVX512(dst[:n], src[:n])
		} else {
			geluTanhAVX2(dst[:n], src[:n])
		}
	}
	if n < len(dst) {
		var b [16]float32
		copy(b[:], src[n:])
		if wide {
			geluTanhAVX512(b[:], b[:])
		} else {
			geluTanhAVX2(b[:8], b[:8])
		}
		copy(dst[n:], b[:])
	}
}

func siluMulAsm(dst, gate, up []float32, wide bool) {
	n := len(dst) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			siluMulAVX512(dst[:n], gate[:n], up[:n])
		} else {
			siluMulAVX2(dst[:n], gate[:n], up[:n])
		}
	}
	if n < len(dst) {
		var g, u [16]float32
		copy(g[:], gate[n:])
		copy(u[:], up[n:])
		if wide {
			siluMulAVX512(g[:], g[:], u[:])
		} else {
			siluMulAVX2(g[:8], g[:8], u[:8])
		}
		copy(dst[n:], g[:])
	}
}

func maxAsm(x []float32, wide bool) float32 {
	n := len(x) &^ (lanes(wide) - 1)
	m := float32(math.Inf(-1))
	if n > 0 {
		if wide {
			m = maxAVX512(x[:n])
		} else {
			m = maxAVX2(x[:n])
		}
	}
	if t := maxGo(x[n:]); t > m {
		m = t
	}
	return m
}

func expSubSumAsm(dst, src []float32, m float32, fast, wide bool) float32 {
	n := len(dst) &^ (lanes(wide) - 1)
	var sum float32
	if n > 0 {
		switch {
		case wide && fast:
			sum = fastExpSubSumAVX512(dst[:n], src[:n], m)
		case wide:
			sum = expSubSumAVX512(dst[:n], src[:n], m)
		case fast:
			sum = fastExpSubSumAVX2(dst[:n], src[:n], m)
		default:
			sum = expSubSumAVX2(dst[:n], src[:n], m)
		}
	}
	if n < len(dst) {
		// Padding with -Inf adds exp(-Inf) = 0 to the sum.
		var b [16]float32
		for i := range b {
			b[i] = float32(math.Inf(-1))
		}
		copy(b[:], src[n:])
		var t float32
		switch {
		case wide && fast:
			t = fastExpSubSumAVX512(b[:], b[:], m)
		case wide:
			t = expSubSumAVX512(b[:], b[:], m)
		case fast:
			t = fastExpSubSumAVX2(b[:8], b[:8], m)
		default:
			t = expSubSumAVX2(b[:8], b[:8], m)
		}
		sum += t
		copy(dst[n:], b[:])
	}
	return sum
}

func scaleAsm(x []float32, s float32, wide bool) {
	n := len(x) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			scaleAVX512(x[:n], s)
		} else {
			scaleAVX2(x[:n], s)
		}
	}
	scaleGo(x[n:], s)
}

func sumSqAsm(x []float32, wide bool) float32 {
	n := len(x) &^ (lanes(wide) - 1)
	var ss float32
	if n > 0 {
		if wide {
			ss = sumSqAVX512(x[:n])
		} else {
			ss = sumSqAVX2(x[:n])
		}
	}
	for _, v := range x[n:] {
		ss = fma32(v, v, ss)
	}
	return ss
}

func mulScaleAsm(dst, x, w []float32, s float32, wide bool) {
	n := len(dst) &^ (lanes(wide) - 1)
	if n > 0 {
		if wide {
			mulScaleAVX512(dst[:n], x[:n], w[:n], s)
		} else {
			mulScaleAVX2(dst[:n], x[:n], w[:n], s)
		}
	}
	mulScaleGo(dst[n:], x[n:], w[n:], s)
}

// ropeAsm runs the assembly over the pairs of whole vectors of each head
// (RoPEHalf: i below len(cos) rounded down to lanes; RoPEAdjacent: to
// lanes/2 pairs) and ropeTail over the others. Rotation is exact products
// and one add or subtract, with no FMA, so both give the twin's bits.
func ropeAsm(x, cos, sin []float32, layout RoPELayout, wide bool) {
	half := len(cos)
	sin = sin[:half]
	var done int
	switch {
	case layout == RoPEHalf:
		done = half &^ (lanes(wide) - 1)
		if done > 0 && wide {
			ropeHalfAVX512(x, cos, sin)
		} else if done > 0 {
			ropeHalfAVX2(x, cos, sin)
		}
	default:
		done = half &^ (lanes(wide)/2 - 1)
		if done > 0 && wide {
			ropeAdjacentAVX512(x, cos, sin)
		} else if done > 0 {
			ropeAdjacentAVX2(x, cos, sin)
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

// The kernels below are generated by _asm/nonlinear (avo) into
// nonlinear_amd64.s. Each exists for AVX2 (ymm, 8 lanes) and AVX-512F (zmm,
// 16 lanes) from one generator, with the same instructions. They process
// len(dst)/lanes whole vectors (len(x)/lanes for the reductions) and ignore
// the rest; the other slices must be at least as long. Each lane computes
// exactly the scalar function of the "go" implementation (fma32 is VFMADD;
// see nonlinear_go.go), so results equal the twin's except for rare
// double-rounding cases of fma32; the reductions sum in a different order.

// expAVX2:
//
//	for i := range dst {
//		dst[i] = exp32(src[i])
//	}
//
//go:noescape
func expAVX2(dst, src []float32)

// fastExpAVX2:
//
//	for i := range dst {
//		dst[i] = fastExp32(src[i])
//	}
//
//go:noescape
func fastExpAVX2(dst, src []float32)

// siluAVX2:
//
//	for i := range dst {
//		dst[i] = silu32(x[i])
//	}
//
//go:noescape
func siluAVX2(dst, x []float32)

// siluMulAVX2:
//
//	for i := range dst {
//		dst[i] = silu32(gate[i]) * up[i]
//	}
//
//go:noescape
func siluMulAVX2(dst, gate, up []float32)

// geluTanhAVX2:
//
//	for i := range dst {
//		dst[i] = gelu32(x[i])
//	}
//
//go:noescape
func geluTanhAVX2(dst, x []float32)

// maxAVX2 is maxGo over whole vectors (-Inf for none):
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
func maxAVX2(x []float32) float32

// expSubSumAVX2 (4 vector accumulators, then a tree):
//
//	for i := range dst {
//		dst[i] = exp32(src[i] - m)
//		sum += dst[i]
//	}
//	return sum
//
//go:noescape
func expSubSumAVX2(dst, src []float32, m float32) float32

// fastExpSubSumAVX2 is expSubSumAVX2 with fastExp32.
//
//go:noescape
func fastExpSubSumAVX2(dst, src []float32, m float32) float32

// scaleAVX2:
//
//	for i := range x {
//		x[i] *= s
//	}
//
//go:noescape
func scaleAVX2(x []float32, s float32)

// sumSqAVX2 (4 vector FMA accumulators, then a tree):
//
//	for _, v := range x {
//		ss = fma32(v, v, ss)
//	}
//	return ss
//
//go:noescape
func sumSqAVX2(x []float32) float32

// mulScaleAVX2:
//
//	for i := range dst {
//		dst[i] = float32(x[i]*s) * w[i]
//	}
//
//go:noescape
func mulScaleAVX2(dst, x, w []float32, s float32)

// ropeHalfAVX2 is ropeGo with RoPEHalf for i below len(cos) rounded down
// to 8 (len(x) a multiple of 2·len(cos), len(sin) >= len(cos)):
//
//	half := len(cos)
//	for h := 0; h < len(x); h += 2 * half {
//		for i := 0; i < half&^7; i++ {
//			a, b := x[h+i], x[h+i+half]
//			x[h+i] = float32(a*cos[i]) - float32(b*sin[i])
//			x[h+i+half] = float32(a*sin[i]) + float32(b*cos[i])
//		}
//	}
//
//go:noescape
func ropeHalfAVX2(x, cos, sin []float32)

// ropeAdjacentAVX2 is ropeGo with RoPEAdjacent for i below len(cos)
// rounded down to 4 (one vector of x holds 4 pairs):
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
func ropeAdjacentAVX2(x, cos, sin []float32)

// expAVX512 is expAVX2 with zmm registers.
//
//go:noescape
func expAVX512(dst, src []float32)

// fastExpAVX512 is fastExpAVX2 with zmm registers.
//
//go:noescape
func fastExpAVX512(dst, src []float32)

// siluAVX512 is siluAVX2 with zmm registers.
//
//go:noescape
func siluAVX512(dst, x []float32)

// siluMulAVX512 is siluMulAVX2 with zmm registers.
//
//go:noescape
func siluMulAVX512(dst, gate, up []float32)

// geluTanhAVX512 is geluTanhAVX2 with zmm registers.
//
//go:noescape
func geluTanhAVX512(dst, x []float32)

// maxAVX512 is maxAVX2 with zmm registers.
//
//go:noescape
func maxAVX512(x []float32) float32

// expSubSumAVX512 is expSubSumAVX2 with zmm registers.
//
//go:noescape
func expSubSumAVX512(dst, src []float32, m float32) float32

// fastExpSubSumAVX512 is fastExpSubSumAVX2 with zmm registers.
//
//go:noescape
func fastExpSubSumAVX512(dst, src []float32, m float32) float32

// scaleAVX512 is scaleAVX2 with zmm registers.
//
//go:noescape
func scaleAVX512(x []float32, s float32)

// sumSqAVX512 is sumSqAVX2 with zmm registers.
//
//go:noescape
func sumSqAVX512(x []float32) float32

// mulScaleAVX512 is mulScaleAVX2 with zmm registers.
//
//go:noescape
func mulScaleAVX512(dst, x, w []float32, s float32)

// ropeHalfAVX512 is ropeHalfAVX2 with zmm registers (i below len(cos)
// rounded down to 16).
//
//go:noescape
func ropeHalfAVX512(x, cos, sin []float32)

// ropeAdjacentAVX512 is ropeAdjacentAVX2 with zmm registers (i below
// len(cos) rounded down to 8).
//
//go:noescape
func ropeAdjacentAVX512(x, cos, sin []float32)
