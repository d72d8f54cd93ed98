//go:build !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// The "sve" and "sme" backends are registered on arm64 (so every forNL test
// covers them), available exactly when the CPU has SVE (SME), and never the
// best backend.
func TestSVERegistered(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range NonlinearImpls() {
		var have bool
		switch m.ISA {
		case "sve":
			have = cpu.ARM64.HasSVE && cpu.ARM64.HasASIMD
		case "sme":
			have = cpu.ARM64.HasSME && cpu.ARM64.HasASIMD
		default:
			continue
		}
		seen[m.ISA] = true
		if (m.Unavailable == "") != have {
			t.Fatalf("%s: unavailable %q with SVE %v, SME %v", m.ISA, m.Unavailable, cpu.ARM64.HasSVE, cpu.ARM64.HasSME)
		}
	}
	if !seen["sve"] || !seen["sme"] {
		t.Fatalf("NonlinearImpls has sve %v, sme %v; want both", seen["sve"], seen["sme"])
	}
	if b := BestNonlinear().ISA; b == "sve" || b == "sme" {
		t.Fatalf("best backend %s: streaming/SVE backends are for measurement only", b)
	}
	if bestNL() == &sveNLKernels || bestNL() == &smeNLKernels {
		t.Fatal("bestNL picked the sve or sme kernels")
	}
	if cpu.ARM64.HasSVE {
		t.Logf("SVE vector length %d bits", 8*sveVL())
	}
	if cpu.ARM64.HasSME {
		t.Logf("SME streaming vector length %d bits", 8*smeSVL())
	}
}

// sveBackends returns the available backends among "sve" and "sme" with
// their kernels.
func sveBackends(t *testing.T) map[string]*nlKernels {
	out := map[string]*nlKernels{}
	if cpu.ARM64.HasSVE {
		out["sve"] = &sveNLKernels
	}
	if cpu.ARM64.HasSME {
		out["sme"] = &smeNLKernels
	}
	if len(out) == 0 {
		t.Skip("no SVE or SME")
	}
	return out
}

// Each lane runs the twin's operations in the same order: the elementwise
// kernels (exp, fastexp, SiLU, GELU, SiLU·up) and the exp passes agree with
// the "go" ones bit for bit on ordinary inputs (rare fma32 double roundings
// aside, which would show as 1 ULP); max, scale and RMSNorm's multiply-scale
// agree exactly, the sums (exp-sub-sum, sum of squares) within the rounding
// of a different order. Lengths cover every tail of the vector length (up to
// 2048 bits, 64 lanes) and the chunking, shrunk to an odd number of elements.
func TestSVEMatchesTwinBits(t *testing.T) {
	for name, k := range sveBackends(t) {
		for _, chunk := range []int{nlStreamChunk, 37} {
			t.Run(fmt.Sprintf("%s/chunk=%d", name, chunk), func(t *testing.T) {
				defer func(c int) { nlStreamChunk = c }(nlStreamChunk)
				nlStreamChunk = chunk
				r := rand.New(rand.NewPCG(5, 6))
				var ns []int
				for n := 0; n <= 130; n++ {
					ns = append(ns, n)
				}
				for _, n := range append(ns, 4099, 1<<16+3) {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(r.NormFloat64() * 20)
					}
					if n > 3 {
						x[0], x[1], x[2] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
					}
					sveCompareTwin(t, n, x, k)
				}
			})
		}
	}
}

func sveCompareTwin(t *testing.T, n int, x []float32, k *nlKernels) {
	t.Helper()
	const m = 3.25
	up := make([]float32, n) // SiLUMul's up, RMSNorm's weight
	for i := range up {
		up[i] = float32(i%7) - 2.5
	}
	for _, c := range []struct {
		name      string
		sve, twin func(dst, src []float32)
	}{
		{"exp", k.exp, expGo}, {"fastexp", k.fastExp, fastExpGo},
		{"expsubsum", func(d, s []float32) { k.expSubSum(d, s, m) }, func(d, s []float32) { expSubSumGo(d, s, m) }},
		{"fastexpsubsum", func(d, s []float32) { k.fastExpSubSum(d, s, m) }, func(d, s []float32) { fastExpSubSumGo(d, s, m) }},
		{"scale", func(d, s []float32) { copy(d, s); k.scale(d, 0.7) }, func(d, s []float32) { copy(d, s); scaleGo(d, 0.7) }},
		{"silu", k.silu, siluGo}, {"gelu", k.gelu, geluGo},
		{"silumul", func(d, s []float32) { k.siluMul(d, s, up[:len(s)]) }, func(d, s []float32) { siluMulGo(d, s, up[:len(s)]) }},
		{"mulscale", func(d, s []float32) { k.mulScale(d, s, up[:len(s)], 0.3) }, func(d, s []float32) { mulScaleGo(d, s, up[:len(s)], 0.3) }},
	} {
		got, chk := nlGuarded(n, n%4)
		want := make([]float32, n)
		c.sve(got, x)
		chk(t, fmt.Sprintf("%s n=%d", c.name, n))
		c.twin(want, x)
		diff := 0
		for i := range x {
			if d := bitsApart(got[i], want[i]); d > 1 || (d == 1 && (c.name == "scale" || c.name == "mulscale")) {
				t.Fatalf("%s n=%d: [%d] f(%v) = %v, twin %v", c.name, n, i, x[i], got[i], want[i])
			} else if d == 1 {
				diff++
			}
		}
		if diff > n/100 {
			t.Errorf("%s n=%d: %d of %d results 1 ULP from the twin", c.name, n, diff, n)
		}
	}
	// The sums: a different order, so within the rounding of n terms.
	d := make([]float32, n)
	got, want := k.expSubSum(d, x[:n:n], m), expSubSumGo(d, x, m)
	if n > 3 {
		if got == got {
			t.Fatalf("expSubSum n=%d with a NaN input = %v, want NaN", n, got)
		}
		x = x[3:] // without the NaN and +Inf
		d = d[3:]
		got, want = k.expSubSum(d, x, m), expSubSumGo(d, x, m)
	}
	if math.Abs(float64(got)-float64(want)) > float64(len(x)+2)*0x1p-24*math.Abs(float64(want)) {
		t.Fatalf("expSubSum n=%d = %v, twin %v", len(x), got, want)
	}
	gf, wf := k.fastExpSubSum(d, x, m), fastExpSubSumGo(d, x, m)
	if math.Abs(float64(gf)-float64(wf)) > float64(len(x)+2)*0x1p-24*math.Abs(float64(wf)) {
		t.Fatalf("fastExpSubSum n=%d = %v, twin %v", len(x), gf, wf)
	}
	// The sum of squares: a different order.
	if g, w := k.sumSq(x), sumSqGo(x); math.Abs(float64(g)-float64(w)) > float64(len(x)+2)*0x1p-24*float64(w) {
		t.Fatalf("sumSq n=%d = %v, twin %v", len(x), g, w)
	}
	// max over the original slice (NaN skipped), every prefix of a vector.
	for _, xs := range [][]float32{x, x[:min(len(x), 7)]} {
		if g, w := k.max(xs), maxGo(xs); math.Float32bits(g) != math.Float32bits(w) && !(g == 0 && w == 0) {
			t.Fatalf("max n=%d = %v, twin %v", len(xs), g, w)
		}
	}
}

// RoPE on SVE and SME gives the twin's bits (exact products, one subtract
// or add, as ropeGo): both layouts, head dims from 2 to past 64 lanes (every
// split of a head into whole vectors and a predicated tail up to 2048 bits),
// several positions and head counts, whole heads per call with the chunk
// above, at, and below a head (37: one head per call), unaligned, guarded.
func TestSVERoPEMatchesTwinBits(t *testing.T) {
	for name, k := range sveBackends(t) {
		for _, chunk := range []int{nlStreamChunk, 300, 37} {
			t.Run(fmt.Sprintf("%s/chunk=%d", name, chunk), func(t *testing.T) {
				defer func(c int) { nlStreamChunk = c }(nlStreamChunk)
				nlStreamChunk = chunk
				r := rand.New(rand.NewPCG(31, 32))
				for _, hd := range []int{2, 4, 6, 8, 10, 14, 16, 18, 30, 32, 34, 62, 64, 66, 126, 128, 130, 258} {
					tab, err := NewRoPETable(hd, 10000, 4096, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, pos := range []int{0, 1, 17, 4095} {
						c, s := tab.At(pos)
						for _, layout := range []RoPELayout{RoPEAdjacent, RoPEHalf} {
							for _, heads := range []int{1, 2, 7} {
								x := make([]float32, heads*hd)
								for i := range x {
									x[i] = float32(r.NormFloat64() * 8)
								}
								if len(x) > 4 {
									x[r.IntN(len(x))] = float32(math.Inf(-1))
									x[r.IntN(len(x))] = float32(math.NaN())
								}
								want := append([]float32(nil), x...)
								ropeGo(want, c, s, layout)
								got, chk := nlGuarded(len(x), r.IntN(4))
								copy(got, x)
								k.rope(got, c, s, layout)
								what := fmt.Sprintf("rope hd=%d pos=%d %v heads=%d", hd, pos, layout, heads)
								chk(t, what)
								for i := range x {
									if bitsApart(got[i], want[i]) != 0 {
										t.Fatalf("%s: [%d] = %v, twin %v", what, i, got[i], want[i])
									}
								}
							}
						}
					}
				}
			})
		}
	}
}

// The largest element may sit in any lane and any chunk; a NaN is skipped
// wherever it is; only -Inf and NaN give -Inf.
func TestSVEMax(t *testing.T) {
	for name, k := range sveBackends(t) {
		defer func(c int) { nlStreamChunk = c }(nlStreamChunk)
		nlStreamChunk = 19
		for n := 1; n <= 150; n++ {
			for _, at := range []int{0, n / 2, n - 1} {
				x := make([]float32, n)
				for i := range x {
					x[i] = -float32(i + 1)
				}
				x[at] = 5
				x[(at+1)%n] = float32(math.NaN())
				if at != (at+1)%n {
					if g := k.max(x); g != 5 {
						t.Fatalf("%s: max n=%d, 5 at %d, NaN at %d = %v", name, n, at, (at+1)%n, g)
					}
				}
				for i := range x {
					x[i] = float32(math.Inf(-1))
				}
				x[at] = float32(math.NaN())
				if g := k.max(x); !math.IsInf(float64(g), -1) {
					t.Fatalf("%s: max of -Inf and NaN (n=%d) = %v, want -Inf", name, n, g)
				}
			}
		}
		if g := k.max(nil); !math.IsInf(float64(g), -1) {
			t.Fatalf("%s: max of nothing = %v, want -Inf", name, g)
		}
	}
}

// Softmax through the registry, with rows longer than a chunk: the chunked
// passes give the result of one pass within the sum's rounding.
func TestSVESoftmaxChunked(t *testing.T) {
	backends := sveBackends(t)
	for _, m := range NonlinearImpls() {
		if backends[m.ISA] == nil {
			continue
		}
		r := rand.New(rand.NewPCG(9, 9))
		src := make([]float32, 1000)
		for i := range src {
			src[i] = float32(r.NormFloat64() * 4)
		}
		whole, parts := make([]float32, len(src)), make([]float32, len(src))
		m.Softmax(whole, src)
		func() {
			defer func(c int) { nlStreamChunk = c }(nlStreamChunk)
			nlStreamChunk = 61
			m.Softmax(parts, src)
		}()
		for i := range src {
			if math.Abs(float64(whole[i]-parts[i])) > 1e-5*float64(whole[i]) {
				t.Fatalf("%s: softmax [%d] = %v in chunks of 61, %v in one", m.ISA, i, parts[i], whole[i])
			}
		}
	}
}

func BenchmarkSVEStreamingOverhead(b *testing.B) {
	if !cpu.ARM64.HasSME {
		b.Skip("no SME")
	}
	x, d := make([]float32, 16), make([]float32, 16)
	for b.Loop() {
		fastExpSVE(d, x, true)
	}
}
