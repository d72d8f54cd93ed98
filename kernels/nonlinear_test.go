package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/cpubench/bench/internal/cpu"
)

// Every test loops over NonlinearImpls() and skips the unavailable ones
// (AVX-512 runs only on a machine with AVX512F; see mem_test.go). Each
// implementation is compared with the "go" twin (the specification) and with
// a float64 reference, with the tolerances documented in nonlinear.go.

// nlSentinel is the float32 NaN bit pattern of guard elements; kernels must
// never write it.
const nlSentinel = 0x7fc0_dead

// nlGuarded returns a slice of n float32s starting off elements after a
// 64-byte boundary, with guard elements holding nlSentinel before and after;
// check fails the test if a guard changed.
func nlGuarded(n, off int) (x []float32, check func(t *testing.T, what string)) {
	buf := make([]float32, 2*guard+n+32)
	for i := range buf {
		buf[i] = math.Float32frombits(nlSentinel)
	}
	lead := guard
	for uintptr(unsafe.Pointer(&buf[lead]))%64 != 0 {
		lead++
	}
	lead += off
	x = buf[lead : lead+n : lead+n]
	check = func(t *testing.T, what string) {
		t.Helper()
		for i, v := range buf {
			if i >= lead && i < lead+n {
				continue
			}
			if math.Float32bits(v) != nlSentinel {
				t.Fatalf("%s: guard element %d (output is [%d:%d]) = %#x, want sentinel %#x", what, i, lead, lead+n, math.Float32bits(v), nlSentinel)
			}
		}
	}
	return x, check
}

func nlLengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4099, 1<<15+7)
}

func forNL(t *testing.T, f func(t *testing.T, m NonlinearImpl)) {
	for _, m := range NonlinearImpls() {
		t.Run(m.ISA, func(t *testing.T) {
			if m.Unavailable != "" {
				t.Skip(m.Unavailable)
			}
			f(t, m)
		})
	}
}

// bitsApart is the number of float32 values between a and b (0 if equal,
// both NaN, or +0/-0).
func bitsApart(a, b float32) int64 {
	if a != a && b != b {
		return 0
	}
	if a != a || b != b {
		return math.MaxInt64
	}
	d := ordered32(a) - ordered32(b)
	if d < 0 {
		d = -d
	}
	return d
}

// nlInputs returns n values mixing magnitudes 2^-30..2^7 of both signs,
// within [-lim, lim].
func nlInputs(r *rand.Rand, n int, lim float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		v := r.NormFloat64() * math.Exp2(float64(r.IntN(38)-30))
		if r.IntN(4) == 0 {
			v = (r.Float64()*2 - 1) * lim
		}
		x[i] = float32(math.Max(-lim, math.Min(lim, v)))
	}
	return x
}

var expSpecials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 1e-30, -1e-30, 0x1p-149, -0x1p-149,
	88.72283, 88.722839, 88.72284, 88.8, 89, 100, 1e30, float32(math.Inf(1)),
	-87.33654, -87.336548, -88, -100, -103.2789, -103.972, -103.9721, -104, -105, -1e30, float32(math.Inf(-1)),
	float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 0.34657359, -0.34657359,
}

// elementwise checks an elementwise kernel against its twin (at most
// twinULP apart) and against ref with check, over lengths 0..300 and large,
// alignments 0..7, guarded, plus the special values.
func elementwise(t *testing.T, name string, kernel, twin func(dst, src []float32), inputs func(r *rand.Rand, n int) []float32,
	check func(x, got float32) error, twinULP int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	run := func(what string, in []float32, off int) {
		dst, chk := nlGuarded(len(in), off)
		kernel(dst, in)
		chk(t, what)
		want := make([]float32, len(in))
		twin(want, in)
		for i, x := range in {
			if d := bitsApart(dst[i], want[i]); d > twinULP {
				t.Fatalf("%s: %s(%v) = %v, twin %v: %d ULP apart > %d", what, name, x, dst[i], want[i], d, twinULP)
			}
			if err := check(x, dst[i]); err != nil {
				t.Fatalf("%s: %s(%v) = %v: %v", what, name, x, dst[i], err)
			}
		}
		// In place.
		cp := append([]float32(nil), in...)
		kernel(cp, cp)
		for i := range cp {
			if bitsApart(cp[i], dst[i]) != 0 {
				t.Fatalf("%s in place: element %d = %v, out of place %v", what, i, cp[i], dst[i])
			}
		}
	}
	for _, n := range nlLengths() {
		for _, off := range offsets(n) {
			run(fmt.Sprintf("n=%d off=%d", n, off), inputs(r, n), off)
		}
	}
	run("specials", expSpecials, 1)
}

func ulpCheck(ref func(float64) float64, tol func(x float64) float64) func(x, got float32) error {
	return func(x, got float32) error {
		want := ref(float64(x))
		if u := ULPError32(got, want); u > tol(float64(x)) {
			return fmt.Errorf("want %v (%.9g): %.2f ULP > %.2f", float32(want), want, u, tol(float64(x)))
		}
		return nil
	}
}

func TestExp(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		elementwise(t, "Exp", m.Exp, expGo, func(r *rand.Rand, n int) []float32 { return nlInputs(r, n, 110) },
			ulpCheck(math.Exp, func(float64) float64 { return 2 }), 1)
	})
}

// TestExpAllFloat32 checks Exp within 2 ULP on every 101st float32 (all of
// them with BENCH_EXHAUSTIVE=1: about a minute per implementation).
func TestExpAllFloat32(t *testing.T) {
	stride := uint64(101)
	if os.Getenv("BENCH_EXHAUSTIVE") != "" {
		stride = 1
	} else if testing.Short() || raceEnabled {
		stride = 1009
	}
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		const chunk = 1 << 14
		xs := make([]float32, 0, chunk)
		ys := make([]float32, chunk)
		worst, worstX := 0.0, float32(0)
		flush := func() {
			m.Exp(ys[:len(xs)], xs)
			for i, x := range xs {
				if x != x {
					if ys[i] == ys[i] {
						t.Fatalf("Exp(NaN %#x) = %v", math.Float32bits(x), ys[i])
					}
					continue
				}
				if u := ULPError32(ys[i], math.Exp(float64(x))); u > worst {
					worst, worstX = u, x
				}
			}
			xs = xs[:0]
		}
		for b := uint64(0); b < 1<<32; b += stride {
			xs = append(xs, math.Float32frombits(uint32(b)))
			if len(xs) == chunk {
				flush()
			}
		}
		flush()
		t.Logf("%s: max error %.3f ULP at x = %v (every %d-th float32)", m.ISA, worst, worstX, stride)
		if worst > 2 {
			t.Fatalf("%s: Exp error %.3f ULP at x = %v > 2", m.ISA, worst, worstX)
		}
	})
}

func TestFastExp(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		in := func(r *rand.Rand, n int) []float32 {
			x := nlInputs(r, n, 87)
			return x
		}
		elementwise(t, "FastExp", m.FastExp, fastExpGo, in, func(x, got float32) error {
			switch {
			case x != x:
				if got == got {
					return fmt.Errorf("want NaN")
				}
			case x > FastExpDomainHi+0.01:
				if !math.IsInf(float64(got), 1) {
					return fmt.Errorf("want +Inf above the domain")
				}
			case x < -87.7:
				if got != 0 {
					return fmt.Errorf("want 0 below -87.68")
				}
			case x >= FastExpDomainLo && x <= FastExpDomainHi:
				if u := ULPError32(got, math.Exp(float64(x))); u > FastExpMaxULPBound {
					return fmt.Errorf("%.1f ULP > %d", u, FastExpMaxULPBound)
				}
			}
			return nil
		}, 1)
		if testing.Short() || raceEnabled {
			return
		}
		u := FastExpMaxULP(m.FastExp, FastExpDomainLo, FastExpDomainHi)
		t.Logf("%s: FastExp max error %.2f ULP over [%v, %v] (%s)", m.ISA, u, FastExpDomainLo, FastExpDomainHi, FastExpSampling)
		if u > FastExpMaxULPBound || u < 1 {
			t.Fatalf("%s: FastExpMaxULP = %v, documented bound %d", m.ISA, u, FastExpMaxULPBound)
		}
	})
}

// sigmoidCheck is the bound documented for the SiLU-like kernels x·σ(z):
// ulps(x) ULP, plus |x|·2^-146 + 2^-148 absolute where z < -87.33 (e^z is
// subnormal).
func sigmoidCheck(ref, zOf func(x float64) float64, ulps func(x float64) float64) func(x, got float32) error {
	return func(x, got float32) error {
		want := ref(float64(x))
		if want != want || math.IsInf(want, 0) {
			if float32(want) == got || (want != want && got != got) {
				return nil
			}
			return fmt.Errorf("want %v", want)
		}
		if zOf(float64(x)) < -87.33 {
			if math.Abs(float64(got)-want) <= ulps(float64(x))*0x1p-23*math.Abs(want)+math.Abs(float64(x))*0x1p-146+0x1p-148 {
				return nil
			}
			return fmt.Errorf("want %v (%.9g)", float32(want), want)
		}
		if u := ULPError32(got, want); u > ulps(float64(x)) {
			return fmt.Errorf("want %v (%.9g): %.2f ULP > %.2f", float32(want), want, u, ulps(float64(x)))
		}
		return nil
	}
}

func geluZ(x float64) float64 { return 2 * math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x) }

func siluRef(x float64) float64 {
	if x < -700 {
		return x * math.Exp(x)
	}
	return x / (1 + math.Exp(-x))
}

// geluRef is 0.5x(1+tanh(u)) written as x/(1+e^-2u), which does not cancel
// for negative u.
func geluRef(x float64) float64 {
	return x / (1 + math.Exp(-geluZ(x)))
}

func TestSiLU(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		elementwise(t, "SiLU", m.SiLU, siluGo, func(r *rand.Rand, n int) []float32 { return nlInputs(r, n, 120) },
			sigmoidCheck(siluRef, func(x float64) float64 { return x }, func(float64) float64 { return 5 }), 1)
	})
}

func TestGELUTanh(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		elementwise(t, "GELUTanh", m.GELUTanh, geluGo, func(r *rand.Rand, n int) []float32 { return nlInputs(r, n, 30) },
			sigmoidCheck(geluRef, geluZ, func(x float64) float64 { return 6 + 3*math.Abs(geluZ(x)) }), 1)
	})
}

func TestSiLUMul(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range nlLengths() {
			for _, off := range offsets(n) {
				g, u := nlInputs(r, n, 100), nlInputs(r, n, 100)
				dst, chk := nlGuarded(n, off)
				m.SiLUMul(dst, g, u)
				chk(t, fmt.Sprintf("n=%d off=%d SiLUMul", n, off))
				want := make([]float32, n)
				siluMulGo(want, g, u)
				for i := range dst {
					if d := bitsApart(dst[i], want[i]); d > 1 {
						t.Fatalf("n=%d: SiLUMul(%v, %v) = %v, twin %v", n, g[i], u[i], dst[i], want[i])
					}
					sr := siluRef(float64(g[i]))
					ref := sr * float64(u[i])
					var err error
					if g[i] < -87.33 {
						if math.Abs(float64(dst[i])-ref) > 6*0x1p-23*math.Abs(ref)+math.Abs(float64(g[i])*float64(u[i]))*0x1p-146+0x1p-148 {
							err = fmt.Errorf("want %v", ref)
						}
					} else if e := ULPError32(dst[i], ref); e > 6 {
						err = fmt.Errorf("want %v: %.2f ULP > 6", ref, e)
					}
					if err != nil {
						t.Fatalf("n=%d: SiLUMul(%v, %v) = %v: %v", n, g[i], u[i], dst[i], err)
					}
				}
			}
		}
	})
}

func softmaxRef(src []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range src {
		m = math.Max(m, float64(v))
	}
	out := make([]float64, len(src))
	var sum float64
	for i, v := range src {
		out[i] = math.Exp(float64(v) - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

func TestSoftmax(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, fast := range []bool{false, true} {
			f, name := m.Softmax, "Softmax"
			extra := 0.0
			if fast {
				f, name, extra = m.SoftmaxFast, "SoftmaxFast", 2*FastExpMaxULPBound
			}
			for _, n := range nlLengths() {
				for _, off := range offsets(n) {
					src := make([]float32, n)
					scale := math.Exp2(float64(r.IntN(6)))
					for i := range src {
						src[i] = float32(r.NormFloat64() * scale)
						if r.IntN(10) == 0 {
							src[i] = float32(math.Inf(-1)) // masked
						}
					}
					if n > 0 {
						src[r.IntN(n)] = 3 // at least one finite
					}
					dst, chk := nlGuarded(n, off)
					f(dst, src)
					chk(t, fmt.Sprintf("%s n=%d off=%d", name, n, off))
					want := softmaxRef(src)
					mx := maxGo(src)
					for i := range dst {
						// The rounding of src[i]-max, amplified by exp, the
						// sum of n terms and the exponential's own error.
						tol := (6+float64(n)+math.Abs(float64(src[i]-mx)))*0x1p-24 + extra*0x1p-23
						if math.IsInf(float64(src[i]), -1) {
							tol = 0
						}
						abs := 0x1p-140
						if fast {
							abs = 0x1p-125 // terms below e^-87.33 may flush to 0
						}
						if math.Abs(float64(dst[i])-want[i]) > tol*want[i]+abs {
							t.Fatalf("%s n=%d off=%d: [%d] = %v, want %v (rel err %.3g > %.3g)", name, n, off, i, dst[i], want[i], math.Abs(float64(dst[i])-want[i])/want[i], tol)
						}
					}
				}
			}
			// Special rows.
			nan := float32(math.NaN())
			inf := float32(math.Inf(1))
			for _, row := range [][]float32{{1, nan, 2}, {1, inf, 2}, {-inf, -inf}, make([]float32, 37)} {
				dst := make([]float32, len(row))
				f(dst, row)
				allNaN := true
				for _, v := range dst {
					allNaN = allNaN && v != v
				}
				switch {
				case row[0] == 0: // all zeros: uniform
					for _, v := range dst {
						if v != 1/float32(len(row)) && math.Abs(float64(v)-1/float64(len(row))) > 2e-7 {
							t.Fatalf("%s(zeros) = %v", name, dst)
						}
					}
				case !allNaN:
					t.Fatalf("%s(%v) = %v, want all NaN", name, row, dst)
				}
			}
		}
	})
}

func TestRMSNorm(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, n := range nlLengths() {
			for _, off := range offsets(n) {
				x, w := make([]float32, n), make([]float32, n)
				scale := math.Exp2(float64(r.IntN(20) - 10))
				for i := range x {
					x[i] = float32(r.NormFloat64() * scale)
					w[i] = float32(1 + 0.1*r.NormFloat64())
				}
				eps := float32(1e-5)
				dst, chk := nlGuarded(n, off)
				m.RMSNorm(dst, x, w, eps)
				chk(t, fmt.Sprintf("RMSNorm n=%d off=%d", n, off))
				var ss float64
				for _, v := range x {
					ss += float64(v) * float64(v)
				}
				s := 1 / math.Sqrt(ss/float64(n)+float64(eps))
				tol := (8 + float64(n)/2) * 0x1p-24
				for i := range dst {
					want := float64(x[i]) * s * float64(w[i])
					if math.Abs(float64(dst[i])-want) > tol*math.Abs(want)+0x1p-140 {
						t.Fatalf("RMSNorm n=%d off=%d: [%d] = %v, want %v", n, off, i, dst[i], want)
					}
				}
				// In place.
				m.RMSNorm(x, x, w, eps)
				for i := range x {
					if x[i] != dst[i] {
						t.Fatalf("RMSNorm n=%d in place: [%d] = %v, out of place %v", n, i, x[i], dst[i])
					}
				}
			}
		}
	})
}

func ropeRef(x []float32, pos int, inv []float64, layout RoPELayout) []float64 {
	hd := 2 * len(inv)
	out := make([]float64, len(x))
	for h := 0; h < len(x); h += hd {
		for i, f := range inv {
			a, b := h+2*i, h+2*i+1
			if layout == RoPEHalf {
				a, b = h+i, h+i+len(inv)
			}
			s, c := math.Sincos(float64(pos) * f)
			out[a] = float64(x[a])*c - float64(x[b])*s
			out[b] = float64(x[a])*s + float64(x[b])*c
		}
	}
	return out
}

func TestRoPE(t *testing.T) {
	llama3 := &RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, hd := range []int{2, 4, 8, 16, 64, 128, 256} {
			for _, sc := range []*RoPEScaling{nil, llama3} {
				tab, err := NewRoPETable(hd, 500000, 4096, sc)
				if err != nil {
					t.Fatal(err)
				}
				for _, layout := range []RoPELayout{RoPEAdjacent, RoPEHalf} {
					for _, heads := range []int{1, 3, 32} {
						for _, pos := range []int{0, 1, 17, 4095} {
							x := make([]float32, heads*hd)
							for i := range x {
								x[i] = float32(r.NormFloat64())
							}
							want := ropeRef(x, pos, tab.InvFreq, layout)
							buf, chk := nlGuarded(len(x), r.IntN(8))
							copy(buf, x)
							c, s := tab.At(pos)
							m.RoPE(buf, c, s, layout)
							chk(t, "RoPE")
							for h := 0; h < len(x); h += hd {
								for i := 0; i < hd/2; i++ {
									a, b := h+2*i, h+2*i+1
									if layout == RoPEHalf {
										a, b = h+i, h+i+hd/2
									}
									tol := 4 * 0x1p-24 * (math.Abs(float64(x[a])) + math.Abs(float64(x[b])))
									for _, j := range []int{a, b} {
										if math.Abs(float64(buf[j])-want[j]) > tol {
											t.Fatalf("RoPE hd=%d %v pos=%d scaled=%v: [%d] = %v, want %v", hd, layout, pos, sc != nil, j, buf[j], want[j])
										}
									}
								}
							}
						}
					}
				}
			}
		}
	})
	// The package-level RoPE equals the table's Apply.
	x := make([]float32, 4*128)
	for i := range x {
		x[i] = float32(i%13) - 6
	}
	y := append([]float32(nil), x...)
	RoPE(x, 77, 128, 10000, RoPEHalf)
	tab, _ := NewRoPETable(128, 10000, 100, nil)
	tab.Apply(y, 77, RoPEHalf)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("RoPE and RoPETable.Apply differ at %d: %v vs %v", i, x[i], y[i])
		}
	}
}

// Llama 3.1 scaling (factor 8, 1, 4, 8192) keeps wavelengths below 2048,
// divides those above 8192 by 8 and interpolates between.
func TestRoPEInvFreqLlama3(t *testing.T) {
	s := &RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	plain := RoPEInvFreq(128, 500000, nil)
	scaled := RoPEInvFreq(128, 500000, s)
	for i := range plain {
		wave := 2 * math.Pi / plain[i]
		ratio := scaled[i] / plain[i]
		switch {
		case wave < 2048:
			if ratio != 1 {
				t.Fatalf("dim %d wavelength %.0f: ratio %v, want 1", i, wave, ratio)
			}
		case wave > 8192:
			if math.Abs(ratio-1.0/8) > 1e-15 {
				t.Fatalf("dim %d wavelength %.0f: ratio %v, want 1/8", i, wave, ratio)
			}
		default:
			if ratio < 1.0/8 || ratio > 1 {
				t.Fatalf("dim %d wavelength %.0f: ratio %v outside [1/8, 1]", i, wave, ratio)
			}
		}
	}
	if plain[1] != math.Pow(500000, -2.0/128) {
		t.Fatalf("inv freq[1] = %v", plain[1])
	}
	for _, bad := range []struct {
		hd, maxPos int
		theta      float64
		s          *RoPEScaling
		want       string
	}{
		{3, 10, 1e4, nil, "head dim 3"}, {0, 10, 1e4, nil, "head dim 0"}, {8, 0, 1e4, nil, "max position 0"},
		{8, 10, 1, nil, "theta 1"}, {8, 10, 1e4, &RoPEScaling{Factor: 8, LowFreqFactor: 4, HighFreqFactor: 1, OriginalMaxPositionEmbeddings: 8192}, "scaling"},
	} {
		if _, err := NewRoPETable(bad.hd, bad.theta, bad.maxPos, bad.s); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewRoPETable(%d, %v, %d): err = %v, want %q", bad.hd, bad.theta, bad.maxPos, err, bad.want)
		}
	}
}

func TestNonlinearLengthMismatchPanics(t *testing.T) {
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		for name, f := range map[string]func(){
			"Exp":     func() { m.Exp(make([]float32, 3), make([]float32, 4)) },
			"Softmax": func() { m.Softmax(make([]float32, 3), make([]float32, 2)) },
			"RMSNorm": func() { m.RMSNorm(make([]float32, 3), make([]float32, 3), make([]float32, 2), 1e-5) },
			"SiLUMul": func() { m.SiLUMul(make([]float32, 3), make([]float32, 3), make([]float32, 4)) },
			"RoPE":    func() { m.RoPE(make([]float32, 6), make([]float32, 2), make([]float32, 2), RoPEHalf) },
			"pkgExp":  func() { Exp(make([]float32, 3), make([]float32, 4)) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s with mismatched lengths did not panic", name)
					}
				}()
				f()
			}()
		}
	})
}

// Disabled ISAs are never selected, by the registry or by the package-level
// dispatch; BENCH_REQUIRE_ISA (see mem_test.go) checks the expected best.
func TestNonlinearDispatch(t *testing.T) {
	check := func(want string) {
		t.Helper()
		if got := BestNonlinear().ISA; got != want {
			t.Fatalf("BestNonlinear = %s, want %s (ISAs %v)", got, want, cpu.ISAs())
		}
		var k *nlKernels
		switch want {
		case "go":
			k = &goNLKernels
		default:
			k = bestNL()
		}
		if bestNL() != k {
			t.Fatalf("bestNL is not the %s kernels", want)
		}
		if _, err := NonlinearImplByISA(want); err != nil {
			t.Fatal(err)
		}
	}
	best := BestNonlinear().ISA
	if req := os.Getenv("BENCH_REQUIRE_ISA"); req != "" && req != best {
		t.Fatalf("BENCH_REQUIRE_ISA=%s but the best non-linear backend is %s", req, best)
	}
	check(best)
	func() {
		defer cpu.DisableAVX512()()
		if runtime.GOARCH == "amd64" && !purego && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
			check("avx2")
		}
		if _, err := NonlinearImplByISA("avx512"); runtime.GOARCH == "amd64" && !purego && (err == nil || !strings.Contains(err.Error(), "AVX512F")) {
			t.Fatalf("avx512 after DisableAVX512: err = %v", err)
		}
	}()
	func() {
		defer cpu.DisableSIMD()()
		check("go")
		for _, m := range NonlinearImpls() {
			if m.ISA != "go" && m.Unavailable == "" {
				t.Fatalf("%s available after DisableSIMD", m.ISA)
			}
		}
		// The package-level functions still work, on the "go" kernels.
		d := make([]float32, 9)
		Exp(d, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8})
		if d[1] != float32(math.E) {
			t.Fatalf("Exp(1) = %v", d[1])
		}
	}()
	if _, err := NonlinearImplByISA("sparc"); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("unknown backend: err = %v", err)
	}
}

func TestULPError32(t *testing.T) {
	one := float32(1)
	for _, c := range []struct {
		got  float32
		want float64
		ulp  float64
	}{
		{1, 1, 0}, {math.Nextafter32(one, 2), 1, 1}, {math.Nextafter32(one, 0), 1, 0.5},
		{0x1p-149, 0, 1}, {float32(math.Inf(1)), 3.4028234663852886e38, 1}, {2, 1.5, 0x1p22},
	} {
		if u := ULPError32(c.got, c.want); u != c.ulp {
			t.Errorf("ULPError32(%v, %v) = %v, want %v", c.got, c.want, u, c.ulp)
		}
	}
}

var nlSink float32

// BenchmarkNonlinear/kernel=exp/backend=avx2/n=4096 etc.: elements per
// second in Gelem/s, buffers in L1/L2.
func BenchmarkNonlinear(b *testing.B) {
	type bk struct {
		name string
		ns   []int
		run  func(m NonlinearImpl, dst, x, y []float32)
	}
	tab, _ := NewRoPETable(128, 500000, 64, nil)
	c, s := tab.At(63)
	kernels := []bk{
		{"exp", []int{4096}, func(m NonlinearImpl, d, x, _ []float32) { m.Exp(d, x) }},
		{"fastexp", []int{4096}, func(m NonlinearImpl, d, x, _ []float32) { m.FastExp(d, x) }},
		{"softmax", []int{128, 1024, 4096, 32768}, func(m NonlinearImpl, d, x, _ []float32) { m.Softmax(d, x) }},
		{"softmax_fast", []int{4096}, func(m NonlinearImpl, d, x, _ []float32) { m.SoftmaxFast(d, x) }},
		{"rmsnorm", []int{4096}, func(m NonlinearImpl, d, x, y []float32) { m.RMSNorm(d, x, y, 1e-5) }},
		{"silu", []int{4096}, func(m NonlinearImpl, d, x, _ []float32) { m.SiLU(d, x) }},
		{"silu_mul", []int{4096}, func(m NonlinearImpl, d, x, y []float32) { m.SiLUMul(d, x, y) }},
		{"gelu_tanh", []int{4096}, func(m NonlinearImpl, d, x, _ []float32) { m.GELUTanh(d, x) }},
		{"rope", []int{4096}, func(m NonlinearImpl, d, _, _ []float32) { m.RoPE(d, c, s, RoPEHalf) }},
	}
	for _, k := range kernels {
		for _, m := range NonlinearImpls() {
			for _, n := range k.ns {
				b.Run(fmt.Sprintf("kernel=%s/backend=%s/n=%d", k.name, m.ISA, n), func(b *testing.B) {
					if m.Unavailable != "" {
						b.Skip(m.Unavailable)
					}
					r := rand.New(rand.NewPCG(1, 1))
					x, y, d := nlInputs(r, n, 10), nlInputs(r, n, 10), make([]float32, n)
					copy(d, x)
					for b.Loop() {
						k.run(m, d, x, y)
					}
					nlSink += d[n/2]
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				})
			}
		}
	}
}

// Scale and ScaleKernel multiply in place, bit for bit as the Go
// specification (one rounding per element), at every length around the
// vector widths, and leave an empty slice alone.
func TestScale(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%13)*0.37 - 2.1
		}
		want := append([]float32(nil), x...)
		scaleGo(want, 0.0883883)
		got := append([]float32(nil), x...)
		Scale(got, 0.0883883)
		got2 := append([]float32(nil), x...)
		ScaleKernel()(got2, 0.0883883)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(got2[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d [%d]: Scale %v, ScaleKernel %v, want %v", n, i, got[i], got2[i], want[i])
			}
			// One rounding: within half a float32 ulp of the exact product.
			exact := float64(x[i]) * float64(float32(0.0883883))
			if d := math.Abs(float64(want[i]) - exact); d > 0x1p-24*math.Abs(exact) {
				t.Fatalf("n=%d [%d]: %v against the float64 product %v", n, i, want[i], exact)
			}
		}
	}
}

// RMSNormRows and RoPETable.ApplyRows equal their per-row calls bit for bit
// (in place and out of place), and panic on lengths that do not match.
func TestRowsEqualPerRow(t *testing.T) {
	const width, rows = 256, 5
	x := make([]float32, width*rows)
	w := make([]float32, width)
	for i := range x {
		x[i] = float32(i%29)*0.37 - 5
	}
	for i := range w {
		w[i] = 0.5 + float32(i%7)*0.1
	}
	want := make([]float32, len(x))
	for r := 0; r < rows; r++ {
		RMSNorm(want[r*width:(r+1)*width], x[r*width:(r+1)*width], w, 1e-6)
	}
	got := make([]float32, len(x))
	RMSNormRows(got, x, w, width, 1e-6)
	in := append([]float32(nil), x...)
	RMSNormRows(in, in, w, width, 1e-6)
	for i := range want {
		if got[i] != want[i] || in[i] != want[i] {
			t.Fatalf("RMSNormRows [%d] = %v (in place %v), per row %v", i, got[i], in[i], want[i])
		}
	}
	tab, err := NewRoPETable(128, 1e6, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	pos := []int{3, 0, 63, 17, 17}
	for _, layout := range []RoPELayout{RoPEHalf, RoPEAdjacent} {
		a := append([]float32(nil), x...)
		b := append([]float32(nil), x...)
		for r, p := range pos {
			tab.Apply(a[r*width:(r+1)*width], p, layout)
		}
		tab.ApplyRows(b, width, pos, layout)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("ApplyRows %v [%d] = %v, per row %v", layout, i, b[i], a[i])
			}
		}
	}
	for name, f := range map[string]func(){
		"RMSNormRows width":  func() { RMSNormRows(got, x, w, 300, 1e-6) },
		"RMSNormRows weight": func() { RMSNormRows(got, x, w[:10], width, 1e-6) },
		"RMSNormRows dst":    func() { RMSNormRows(got[:width], x, w, width, 1e-6) },
		"ApplyRows rows":     func() { tab.ApplyRows(x, width, pos[:2], RoPEHalf) },
		"ApplyRows head":     func() { tab.ApplyRows(x[:100*rows], 100, pos, RoPEHalf) },
		"ApplyRows position": func() { tab.ApplyRows(x, width, []int{0, 1, 2, 3, 64}, RoPEHalf) },
		"ApplyRows layout":   func() { tab.ApplyRows(x, width, pos, RoPELayout(9)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
