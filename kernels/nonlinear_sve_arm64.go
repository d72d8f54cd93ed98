//go:build !purego

package kernels

import (
	"math"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// The "sve" and "sme" non-linear backends run the same SVE kernels
// (nonlinear_sve_arm64.s): "sve" in normal mode at the SVE vector length,
// "sme" in streaming SVE mode (SMSTART SM ... SMSTOP SM inside each call) at
// the streaming vector length. They exist to be measured, not to be used:
// SMEPilot (§3.2, Fig. 4) finds fastexp 3-4x slower in streaming mode than
// on the cores, so they are registered MeasureOnly (kernels/registry):
// BestNonlinear and the package-level functions never pick them, although
// "sve" and "sme" rank above "neon" in the ISA capability order.
//
// Every kernel has an SVE version: Exp, FastExp, Softmax and SoftmaxFast
// (max, exp-sub-sum and scale passes), RMSNorm (sum-of-squares and
// multiply-scale passes), SiLU, SiLUMul, GELUTanh and RoPE (both layouts),
// so a probe measures each of them under these backends' names.

// nlStreamChunk bounds the elements per assembly call (a variable so tests
// can shrink it): 32 Ki elements take tens of microseconds even at several
// ns per element, so a streaming-mode call (not async-preemptible) stays far
// below a millisecond, and the SMSTART/SMSTOP pair is amortized over them.
var nlStreamChunk = 1 << 15

// newSVENonlinearImpl returns the "sve" entry, or "sme" if streaming; both
// MeasureOnly, so never chosen.
func newSVENonlinearImpl(streaming bool) registry.Entry[*nlKernels] {
	if streaming {
		e := nlEntry("sme", func() string { return lacks("SME", cpu.ARM64.HasSME, "ASIMD", cpu.ARM64.HasASIMD) }, &smeNLKernels)
		e.MeasureOnly = true
		return e
	}
	e := nlEntry("sve", func() string { return lacks("SVE", cpu.ARM64.HasSVE, "ASIMD", cpu.ARM64.HasASIMD) }, &sveNLKernels)
	e.MeasureOnly = true
	return e
}

var (
	sveNLKernels = sveKernels(false)
	smeNLKernels = sveKernels(true)
)

// sveKernels are the SVE kernels, in streaming mode if sm.
func sveKernels(sm bool) nlKernels {
	var k nlKernels
	k.exp = func(d, s []float32) { unarySVE(d, s, sm, expSVE) }
	k.fastExp = func(d, s []float32) { unarySVE(d, s, sm, fastExpSVE) }
	k.silu = func(d, s []float32) { unarySVE(d, s, sm, siluSVE) }
	k.gelu = func(d, s []float32) { unarySVE(d, s, sm, geluTanhSVE) }
	k.siluMul = func(d, g, u []float32) { siluMulSVEAll(d, g, u, sm) }
	k.sumSq = func(x []float32) float32 { return sumSqSVEAll(x, sm) }
	k.mulScale = func(d, x, w []float32, s float32) { mulScaleSVEAll(d, x, w, s, sm) }
	k.max = func(x []float32) float32 { return maxSVEAll(x, sm) }
	k.expSubSum = func(d, s []float32, m float32) float32 { return expSubSumSVEAll(d, s, m, sm, false) }
	k.fastExpSubSum = func(d, s []float32, m float32) float32 { return expSubSumSVEAll(d, s, m, sm, true) }
	k.scale = func(x []float32, s float32) { scaleSVEAll(x, s, sm) }
	k.rope = func(x, c, s []float32, layout RoPELayout) { ropeSVEAll(x, c, s, layout, sm) }
	return k
}

// The wrappers below split the slices into calls of at most nlStreamChunk
// elements; the kernels handle any length (the last partial vector by
// predicate), so there is no padded tail.

func unarySVE(dst, src []float32, sm bool, k func(dst, src []float32, sm bool)) {
	src = src[:len(dst)]
	for len(dst) > 0 {
		n := min(len(dst), nlStreamChunk)
		k(dst[:n], src[:n], sm)
		dst, src = dst[n:], src[n:]
	}
}

func maxSVEAll(x []float32, sm bool) float32 {
	m := float32(math.Inf(-1))
	for len(x) > 0 {
		n := min(len(x), nlStreamChunk)
		if v := maxSVE(x[:n], sm); v > m {
			m = v
		}
		x = x[n:]
	}
	return m
}

func expSubSumSVEAll(dst, src []float32, m float32, sm, fast bool) float32 {
	src = src[:len(dst)]
	var sum float32
	for len(dst) > 0 {
		n := min(len(dst), nlStreamChunk)
		if fast {
			sum += fastExpSubSumSVE(dst[:n], src[:n], m, sm)
		} else {
			sum += expSubSumSVE(dst[:n], src[:n], m, sm)
		}
		dst, src = dst[n:], src[n:]
	}
	return sum
}

func scaleSVEAll(x []float32, s float32, sm bool) {
	for len(x) > 0 {
		n := min(len(x), nlStreamChunk)
		scaleSVE(x[:n], s, sm)
		x = x[n:]
	}
}

func siluMulSVEAll(dst, gate, up []float32, sm bool) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	for len(dst) > 0 {
		n := min(len(dst), nlStreamChunk)
		siluMulSVE(dst[:n], gate[:n], up[:n], sm)
		dst, gate, up = dst[n:], gate[n:], up[n:]
	}
}

func sumSqSVEAll(x []float32, sm bool) float32 {
	var ss float32
	for len(x) > 0 {
		n := min(len(x), nlStreamChunk)
		ss += sumSqSVE(x[:n], sm)
		x = x[n:]
	}
	return ss
}

func mulScaleSVEAll(dst, x, w []float32, s float32, sm bool) {
	x, w = x[:len(dst)], w[:len(dst)]
	for len(dst) > 0 {
		n := min(len(dst), nlStreamChunk)
		mulScaleSVE(dst[:n], x[:n], w[:n], s, sm)
		dst, x, w = dst[n:], x[n:], w[n:]
	}
}

// ropeSVEAll rotates x in calls of whole heads, as many as fit in
// nlStreamChunk elements (at least one); a partial head at the end of x
// (which the callers rule out) is left alone, as ropeGo does.
func ropeSVEAll(x, cos, sin []float32, layout RoPELayout, sm bool) {
	hd := 2 * len(cos)
	if hd == 0 {
		return
	}
	sin = sin[:len(cos)]
	x = x[:len(x)/hd*hd]
	step := max(1, nlStreamChunk/hd) * hd
	for len(x) > 0 {
		n := min(len(x), step)
		if layout == RoPEHalf {
			ropeHalfSVE(x[:n], cos, sin, sm)
		} else {
			ropeAdjacentSVE(x[:n], cos, sin, sm)
		}
		x = x[n:]
	}
}

// The kernels below are hand-written in nonlinear_sve_arm64.s. Each
// processes all len(dst) elements (len(x) for max and scale), the other
// slices must be at least as long; with sm set it runs in streaming mode
// (the CPU must have SME), else in normal mode (the CPU must have SVE).
// Each lane computes exactly the scalar function of the "go" implementation
// (fma32 is FMLS/FMAD/FMLA), so results equal the twin's except for rare
// double-rounding cases of fma32; the reductions run one vector-wide
// accumulator, then FADDV/FMAXV.

// sveVL returns the SVE vector length in bytes (needs SVE).
func sveVL() int

// smeSVL returns the streaming vector length in bytes (needs SME).
func smeSVL() int

// expSVE:
//
//	for i := range dst {
//		dst[i] = exp32(src[i])
//	}
//
//go:noescape
func expSVE(dst, src []float32, sm bool)

// fastExpSVE:
//
//	for i := range dst {
//		dst[i] = fastExp32(src[i])
//	}
//
//go:noescape
func fastExpSVE(dst, src []float32, sm bool)

// expSubSumSVE (one vector-wide accumulator, then FADDV):
//
//	for i := range dst {
//		dst[i] = exp32(src[i] - m)
//		sum += dst[i]
//	}
//	return sum
//
//go:noescape
func expSubSumSVE(dst, src []float32, m float32, sm bool) float32

// fastExpSubSumSVE is expSubSumSVE with fastExp32.
//
//go:noescape
func fastExpSubSumSVE(dst, src []float32, m float32, sm bool) float32

// maxSVE is maxGo (-Inf for none), with the same compare (v > m) per lane,
// so NaNs are skipped; the lanes are then reduced with FMAXV:
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
func maxSVE(x []float32, sm bool) float32

// scaleSVE:
//
//	for i := range x {
//		x[i] *= s
//	}
//
//go:noescape
func scaleSVE(x []float32, s float32, sm bool)

// siluSVE:
//
//	for i := range dst {
//		dst[i] = silu32(x[i])
//	}
//
//go:noescape
func siluSVE(dst, x []float32, sm bool)

// geluTanhSVE:
//
//	for i := range dst {
//		dst[i] = gelu32(x[i])
//	}
//
//go:noescape
func geluTanhSVE(dst, x []float32, sm bool)

// siluMulSVE:
//
//	for i := range dst {
//		dst[i] = silu32(gate[i]) * up[i]
//	}
//
//go:noescape
func siluMulSVE(dst, gate, up []float32, sm bool)

// sumSqSVE (one vector-wide FMA accumulator, then FADDV):
//
//	for _, v := range x {
//		ss = fma32(v, v, ss)
//	}
//	return ss
//
//go:noescape
func sumSqSVE(x []float32, sm bool) float32

// mulScaleSVE:
//
//	for i := range dst {
//		dst[i] = float32(x[i]*s) * w[i]
//	}
//
//go:noescape
func mulScaleSVE(dst, x, w []float32, s float32, sm bool)

// ropeHalfSVE is ropeGo with RoPEHalf (len(x) a multiple of 2·len(cos),
// len(sin) >= len(cos)); the pairs of a head run VL/32 (SVL/32) per vector,
// the last partial vector under the WHILELO predicate:
//
//	half := len(cos)
//	for h := 0; h < len(x); h += 2 * half {
//		for i := 0; i < half; i++ {
//			a, b := x[h+i], x[h+i+half]
//			x[h+i] = float32(a*cos[i]) - float32(b*sin[i])
//			x[h+i+half] = float32(a*sin[i]) + float32(b*cos[i])
//		}
//	}
//
//go:noescape
func ropeHalfSVE(x, cos, sin []float32, sm bool)

// ropeAdjacentSVE is ropeGo with RoPEAdjacent (LD2W/ST2W split and
// interleave the pairs):
//
//	half := len(cos)
//	for h := 0; h < len(x); h += 2 * half {
//		for i := 0; i < half; i++ {
//			a, b := x[h+2*i], x[h+2*i+1]
//			x[h+2*i] = float32(a*cos[i]) - float32(b*sin[i])
//			x[h+2*i+1] = float32(a*sin[i]) + float32(b*cos[i])
//		}
//	}
//
//go:noescape
func ropeAdjacentSVE(x, cos, sin []float32, sm bool)
