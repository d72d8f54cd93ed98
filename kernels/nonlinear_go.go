package kernels

import "math"

// This file is the "go" implementation of the non-linear kernels: each
// scalar function below is the specification of one element of the
// corresponding assembly kernel, which runs the same operations, in the same
// order, on 8 (AVX2) or 16 (AVX-512) lanes. fma32 is a fused multiply-add
// (the assembly uses VFMADD); every other operation is one float32 rounding,
// and explicit float32(...) conversions keep the Go compiler from fusing
// a*b+c on architectures where it may (arm64), so the twin computes the same
// thing everywhere.

// fma32 returns a*b+c with one rounding to float64 and one to float32. The
// product is exact in float64, so this equals the fused float32 operation
// except in rare double-rounding cases (then the assembly and the twin may
// differ in the last bit).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// Constants of exp32 and fastExp32 (Cephes expf: Cody-Waite reduction by
// ln 2 in two parts, a degree-5 polynomial for (e^r-1-r)/r² on
// |r| <= ln2/2).
const (
	expLo    = -104.0 // exp(-104) < 2^-150: rounds to 0
	expHi    = 88.8   // > ln(MaxFloat32) = 88.7228: rounds to +Inf
	log2e    = float32(1.44269504088896341)
	expMagic = float32(12582912) // 1.5·2^23: t+magic rounds t to an integer in the low mantissa bits
	expC1    = float32(0.693359375)
	expC2    = float32(-2.12194440e-4)
	expP0    = float32(1.9875691500e-4)
	expP1    = float32(1.3981999507e-3)
	expP2    = float32(8.3334519073e-3)
	expP3    = float32(4.1665795894e-2)
	expP4    = float32(1.6666665459e-1)
	expP5    = float32(5.0000001201e-1)

	// fastExp32: e^r on |r| <= ln2/2 by a degree-4 polynomial: the
	// relative minimax (Remez) polynomial of 2^f on |f| <= 1/2, max relative
	// error 2.59e-6, with f = r·log2e folded into the coefficients.
	fexpLo = -88.0 // n = -127: the scale 2^n has exponent field 0, so the result is 0
	fexpHi = 88.8  // n = 128: the scale has exponent field 255 (+Inf)
	fexpQ0 = float32(0.999999261)
	fexpQ1 = float32(0.999963405)
	fexpQ2 = float32(0.500043586)
	fexpQ3 = float32(0.167909072)
	fexpQ4 = float32(0.0414586082)

	// GELU (tanh form) as x·σ(z), z = x·(geluA + geluB·x²):
	// 0.5·(1+tanh(u)) = σ(2u), u = √(2/π)·(x + 0.044715·x³).
	geluA = float32(1.5957691216057308)   // 2·√(2/π)
	geluB = float32(0.071354816272919400) // 2·√(2/π)·0.044715

	sigStep = float32(0x1p100) // z·2^100 clamped to [0,1] is 1 for z >= 2^-100
)

// exp32 is the accurate exponential, within 2 ULP of the correctly rounded
// e^x for every float32 x (subnormal results included); e^x > MaxFloat32
// gives +Inf, e^x < 2^-150 gives 0, NaN gives NaN.
func exp32(x float32) float32 {
	// Clamp; a NaN passes through.
	x = max32(x, expLo)
	x = min32(x, expHi)
	// n = round(x·log2e) (to nearest even) via the magic constant; its bits
	// minus the magic's bits are n.
	t := float32(x*log2e) + expMagic
	nf := t - expMagic
	k := int32(math.Float32bits(t) - math.Float32bits(expMagic))
	// r = x - n·ln2, in two parts (n·C1 is exact).
	r := fma32(nf, -expC1, x)
	r = fma32(nf, -expC2, r)
	// e^r = 1 + r + r²·P(r).
	p := fma32(expP0, r, expP1)
	p = fma32(p, r, expP2)
	p = fma32(p, r, expP3)
	p = fma32(p, r, expP4)
	p = fma32(p, r, expP5)
	r2 := float32(r * r)
	y := fma32(p, r2, r)
	y = y + 1
	// y·2^n as y·2^k1·2^k2, k1 = n>>1, k2 = n-k1: both scales are normal for
	// n in [-150, 128], the first product is exact and the second rounds
	// once (into the subnormals, or to +Inf).
	k1 := k >> 1
	k2 := k - k1
	s1 := math.Float32frombits(uint32(k1+127) << 23)
	s2 := math.Float32frombits(uint32(k2+127) << 23)
	return float32(y*s1) * s2
}

// fastExp32 is the fast exponential: n = round(x·log2e), r = x - n·ln2 (in
// two parts, as exp32), e^r by a degree-4 polynomial, times 2^n built in the
// exponent field (one scale, so no subnormal results). Its error is measured
// by FastExpMaxULP (the polynomial's 2.6e-6 relative, at most 44 ULP) on
// [FastExpDomainLo, FastExpDomainHi]. Outside the domain: x < -87.68 gives
// 0 (the true result is subnormal there), x in [-87.68, -87.33) a possibly
// inaccurate subnormal, x > 88.37 +Inf (early: the true overflow is at
// 88.72); NaN gives NaN.
func fastExp32(x float32) float32 {
	x = max32(x, fexpLo)
	x = min32(x, fexpHi)
	t := float32(x*log2e) + expMagic
	nf := t - expMagic
	k := int32(math.Float32bits(t) - math.Float32bits(expMagic))
	r := fma32(nf, -expC1, x)
	r = fma32(nf, -expC2, r)
	p := fma32(fexpQ4, r, fexpQ3)
	p = fma32(p, r, fexpQ2)
	p = fma32(p, r, fexpQ1)
	p = fma32(p, r, fexpQ0)
	s := math.Float32frombits(uint32(k+127) << 23)
	return p * s
}

// sigmoidMul32 returns x·σ(z) = x/(1+e^-z) without overflow: with
// e = exp(-|z|) in (0, 1], σ(z) = 1/(1+e) for z >= 0 and e/(1+e) for z < 0.
// The numerator (1 or e) is max(e, clamp(z·2^100, 0, 1)), so the kernel needs
// no compare or blend (the same code runs on AVX2 and AVX-512F).
func sigmoidMul32(x, z float32) float32 {
	nz := math.Float32frombits(math.Float32bits(z) | 1<<31) // -|z|
	e := exp32(nz)
	d := e + 1
	s := float32(z * sigStep)
	s = max32(s, 0)
	s = min32(s, 1)
	num := max32(e, s)
	y := float32(x * num)
	return y / d
}

// max32 and min32 are VMAXPS a, b and VMINPS a, b (Go operand order: a is
// the second source): b if b > a (b < a), else a. So a NaN in a is returned
// as is, a NaN in b is skipped, and of two zeros a is returned.
func max32(a, b float32) float32 {
	if b > a {
		return b
	}
	return a
}

func min32(a, b float32) float32 {
	if b < a {
		return b
	}
	return a
}

// silu32 is x·σ(x) = x/(1+e^-x).
func silu32(x float32) float32 { return sigmoidMul32(x, x) }

// gelu32 is the tanh-approximated GELU, 0.5·x·(1+tanh(√(2/π)·(x+0.044715·x³))),
// computed as x·σ(x·(geluA + geluB·x²)).
func gelu32(x float32) float32 {
	x2 := float32(x * x)
	q := fma32(geluB, x2, geluA)
	z := float32(x * q)
	return sigmoidMul32(x, z)
}

// expGo is the "go" Exp:
//
//	for i := range dst {
//		dst[i] = exp32(src[i])
//	}
func expGo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = exp32(src[i])
	}
}

// fastExpGo is the "go" FastExp:
//
//	for i := range dst {
//		dst[i] = fastExp32(src[i])
//	}
func fastExpGo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = fastExp32(src[i])
	}
}

// siluGo is the "go" SiLU:
//
//	for i := range dst {
//		dst[i] = silu32(x[i])
//	}
func siluGo(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = silu32(x[i])
	}
}

// siluMulGo is the "go" SiLUMul:
//
//	for i := range dst {
//		dst[i] = silu32(gate[i]) * up[i]
//	}
func siluMulGo(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	for i := range dst {
		dst[i] = silu32(gate[i]) * up[i]
	}
}

// geluGo is the "go" GELUTanh:
//
//	for i := range dst {
//		dst[i] = gelu32(x[i])
//	}
func geluGo(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = gelu32(x[i])
	}
}

// maxGo returns the largest element of x, -Inf if x is empty; NaNs are
// skipped (as VMAXPS does with the running maximum as second source):
//
//	m := float32(math.Inf(-1))
//	for _, v := range x {
//		if v > m {
//			m = v
//		}
//	}
func maxGo(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// expSubSumGo sets dst[i] = exp32(src[i]-m) and returns their sum (the
// assembly sums in a different order: per-lane accumulators, then a tree):
//
//	var sum float32
//	for i := range dst {
//		dst[i] = exp32(src[i] - m)
//		sum += dst[i]
//	}
//	return sum
func expSubSumGo(dst, src []float32, m float32) float32 {
	src = src[:len(dst)]
	var sum float32
	for i := range dst {
		dst[i] = exp32(src[i] - m)
		sum += dst[i]
	}
	return sum
}

// fastExpSubSumGo is expSubSumGo with fastExp32.
func fastExpSubSumGo(dst, src []float32, m float32) float32 {
	src = src[:len(dst)]
	var sum float32
	for i := range dst {
		dst[i] = fastExp32(src[i] - m)
		sum += dst[i]
	}
	return sum
}

// scaleGo multiplies in place:
//
//	for i := range x {
//		x[i] *= s
//	}
func scaleGo(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// sumSqGo returns the sum of squares (the assembly: per-lane FMA
// accumulators, then a tree):
//
//	var ss float32
//	for _, v := range x {
//		ss = fma32(v, v, ss)
//	}
//	return ss
func sumSqGo(x []float32) float32 {
	var ss float32
	for _, v := range x {
		ss = fma32(v, v, ss)
	}
	return ss
}

// mulScaleGo is the second pass of RMSNorm:
//
//	for i := range dst {
//		dst[i] = float32(x[i]*s) * w[i]
//	}
func mulScaleGo(dst, x, w []float32, s float32) {
	x, w = x[:len(dst)], w[:len(dst)]
	for i := range dst {
		dst[i] = float32(x[i]*s) * w[i]
	}
}

// softmaxWith is Softmax from its three passes: m = max(src),
// dst[i] = exp(src[i]-m) with sum, dst[i] *= 1/sum.
func softmaxWith(dst, src []float32, maxf func([]float32) float32, expSum func(dst, src []float32, m float32) float32, scale func([]float32, float32)) {
	if len(dst) == 0 {
		return
	}
	m := maxf(src)
	sum := expSum(dst, src, m)
	scale(dst, 1/sum)
}

// rmsNormWith is RMSNorm from its two passes:
// s = 1/sqrt(sumSq(x)/n + eps), dst[i] = x[i]·s·w[i].
func rmsNormWith(dst, x, w []float32, eps float32, sumSq func([]float32) float32, mulScale func(dst, x, w []float32, s float32)) {
	if len(dst) == 0 {
		return
	}
	ss := sumSq(x)
	mean := ss / float32(len(x))
	s := float32(1 / math.Sqrt(float64(mean+eps)))
	mulScale(dst, x, w, s)
}

// ropeGo rotates every head of x (len(x) a multiple of 2·len(cos)) by the
// angles whose cosines and sines are cos and sin, pairs chosen by layout:
//
//	half := len(cos)
//	for h := 0; h < len(x); h += 2 * half {
//		for i := 0; i < half; i++ {
//			a, b := pair(h, i)            // (2i, 2i+1) or (i, i+half)
//			x[a], x[b] = float32(x[a]*cos[i]) - float32(x[b]*sin[i]),
//				float32(x[a]*sin[i]) + float32(x[b]*cos[i])
//		}
//	}
func ropeGo(x, cos, sin []float32, layout RoPELayout) {
	half := len(cos)
	sin = sin[:half]
	for h := 0; h+2*half <= len(x); h += 2 * half {
		head := x[h : h+2*half]
		for i := 0; i < half; i++ {
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
