package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func randMat(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// toGGUF serializes m as GGUF blocks, the inverse of FromGGUF.
func toGGUF(m *Matrix) []byte { return m.AppendGGUF(nil) }

// errBound is the package doc's bound for one output (wmag: the weights'
// rounding magnitudes, rowTerms).
func errBound(a *Activations, r int, wrow []float32, wmag []float64, x []float32) float64 {
	var b, mag float64
	for blk := range len(wrow) / BlockLen {
		p, h := blk/2, blk%2
		dx := float64(a.d[(p*a.M+r)*2+h])
		for e := range BlockLen {
			i := blk*BlockLen + e
			b += dx / 2 * math.Abs(float64(wrow[i]))
			mag += wmag[i] * math.Abs(float64(x[i]))
		}
	}
	return b + mag*math.Ldexp(1, -20) + math.Ldexp(1, -126)
}

// rowMags returns every row's rounding magnitudes (rowTerms), N×K.
func rowMags(w *Matrix) []float64 {
	vals, mags := make([]float32, w.K), make([]float64, w.N*w.K)
	for r := range w.N {
		w.rowTerms(r, vals, mags[r*w.K:(r+1)*w.K])
	}
	return mags
}

// laneMags returns the magnitudes the kernels' float32 rounding scales
// with, per weight, N×K: the int32 lanes hold the unsigned values u = q + o
// and the corrections −o·Σq before they are scaled and summed in float32,
// so a weight d·q counts |d|·(|q| + 2o) (Q4_K: rowTerms' |D·q| + |M|; Q6_K,
// whose corrections are per lane, |D|·(|q| + 64)). Ternary weights, many
// of them 0 = d·(u − o) with u = o, are the case where this matters.
func laneMags(w *Matrix) []float64 {
	mags := rowMags(w)
	if w.Format == Q4_K {
		return mags
	}
	for r := range w.N {
		if w.Format == Q6_K {
			for s := 0; s*SuperLen < w.K; s++ {
				D, _ := w.kScales(r, s)
				for e := range min(SuperLen, w.K-s*SuperLen) {
					mags[r*w.K+s*SuperLen+e] += 64 * math.Abs(float64(D[e/16]))
				}
			}
			continue
		}
		for blk := range w.K / BlockLen {
			d, _ := w.block(r, blk)
			for e := range BlockLen {
				mags[r*w.K+blk*BlockLen+e] += 2 * float64(w.Format.offset()) * math.Abs(float64(d))
			}
		}
	}
	return mags
}

// blockFormats are the formats of 32-weight blocks with one fp16 scale.
var blockFormats = []Format{Q8_0, Q4_0, Int2, Int1}

func TestFP16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := FP16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if got := Float32ToFP16(f); got != uint16(h) {
			t.Fatalf("half %#04x → %v → %#04x", h, f, got)
		}
	}
	// Rounding: halfway between 1 and 1+2^-10 goes to even (1).
	if got := Float32ToFP16(1 + 1.0/2048); got != 0x3c00 {
		t.Errorf("1+2^-11 → %#04x, want 0x3c00", got)
	}
	if got := Float32ToFP16(70000); got != 0x7c00 {
		t.Errorf("70000 → %#04x, want +inf", got)
	}
}

func TestQuantizeMatchesGGML(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := randMat(rng, 3*96, 0.05)
	for _, f := range blockFormats {
		m, err := Quantize(f, w, 3, 96)
		if err != nil {
			t.Fatal(err)
		}
		deq := m.Dequantize()
		for blk := range 3 * 96 / BlockLen {
			x := w[blk*BlockLen:][:BlockLen]
			var amax, vmax float32
			for _, v := range x {
				if a := float32(math.Abs(float64(v))); a > amax {
					amax, vmax = a, v
				}
			}
			for e, v := range x {
				var want float32
				switch f {
				case Q8_0:
					d := amax / 127
					want = FP16ToFloat32(Float32ToFP16(d)) * float32(math.Round(float64(v/d)))
				case Q4_0:
					d := vmax / -8
					q := min(15, int(v/d+8.5))
					want = FP16ToFloat32(Float32ToFP16(d)) * float32(q-8)
				case Int2:
					d := vmax / -2
					q := min(3, max(0, int(v/d+2.5)))
					want = FP16ToFloat32(Float32ToFP16(d/4)) * float32(4*(q-2))
				case Int1:
					var sum float64
					for _, u := range x {
						sum += math.Abs(float64(u))
					}
					want = 8 * FP16ToFloat32(Float32ToFP16(float32(sum/BlockLen)/8))
					if v < 0 {
						want = -want
					}
				}
				if got := deq[blk*BlockLen+e]; math.Abs(float64(got-want)) > 1e-6*math.Abs(float64(want))+1e-12 {
					t.Fatalf("%s block %d elem %d: %v, want %v", f, blk, e, got, want)
				}
			}
		}
		if !f.GGUF() {
			if _, err := FromGGUF(f, nil, 3, 96); err == nil {
				t.Errorf("FromGGUF(%s) accepted", f)
			}
			continue
		}
		// GGUF bytes round-trip through FromGGUF.
		g, err := FromGGUF(f, toGGUF(m), 3, 96)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range g.Dequantize() {
			if v != deq[i] {
				t.Fatalf("%s: FromGGUF(toGGUF) differs at %d", f, i)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	good, _ := Quantize(Q8_0, make([]float32, 64), 1, 64)
	raw := toGGUF(good)
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"k not multiple", func() error { _, e := Quantize(Q8_0, make([]float32, 40), 1, 40); return e }, "multiple of the block length"},
		{"short tensor", func() error { _, e := FromGGUF(Q8_0, raw[:len(raw)-1], 1, 64); return e }, "bytes, want"},
		{"nan scale", func() error {
			b := append([]byte(nil), raw...)
			binary.LittleEndian.PutUint16(b[34:], 0x7e00)
			_, e := FromGGUF(Q8_0, b, 1, 64)
			return e
		}, "row 0 block 1: scale is NaN"},
		{"inf weight", func() error {
			w := make([]float32, 32)
			w[3] = float32(math.Inf(1))
			_, e := Quantize(Q4_0, w, 1, 32)
			return e
		}, "holds +Inf"},
		{"format", func() error { _, e := ParseFormat("q3_k"); return e }, `"q3_k"`},
		{"activations K", func() error { var a Activations; return a.Quantize(Q8_0, make([]float32, 10), 1, 10) }, "multiple of 32"},
	} {
		if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// dequantX returns the activations as the kernels see them, d·q, row-major.
func dequantX(a *Activations) []float64 {
	out := make([]float64, a.M*a.K)
	for r := range a.M {
		for blk := range a.K / BlockLen {
			p, h := blk/2, blk%2
			d := float64(a.d[(p*a.M+r)*2+h])
			for e := range BlockLen {
				out[r*a.K+blk*BlockLen+e] = d * float64(int8(a.q[(p*a.M+r)*pairLen+lanePos(h, e)]))
			}
		}
	}
	return out
}

// Every backend, every format, shapes with edge tiles and odd block counts,
// against the float64 product of the dequantized weights and the
// unquantized activations, within the documented bound.
func TestMulReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, be := range Backends() {
		if be.Unavailable != "" {
			// A missing CPU feature skips; a kernel that runs and is wrong fails.
			if strings.Contains(be.Unavailable, "self-test failed") {
				t.Errorf("%s: %s", be.Name, be.Unavailable)
			}
			t.Logf("%s: %s", be.Name, be.Unavailable)
			continue
		}
		for _, f := range Formats() {
			for _, sh := range [][3]int{{1, 1, 32}, {1, 13, 96}, {3, 9, 64}, {5, 33, 160}, {9, 7, 256}, {16, 40, 1024}, {1, 64, 4096}} {
				m, n, k := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%s/%s/%dx%dx%d", be.Name, f, m, n, k), func(t *testing.T) {
					w := randMat(rng, n*k, 0.02)
					x := randMat(rng, m*k, 1)
					x[0] = 0 // a zero block stays exact
					wm, err := Quantize(f, w, n, k)
					if err != nil {
						t.Fatal(err)
					}
					deq := wm.Dequantize()
					wmag, lmag := rowMags(wm), laneMags(wm)
					var a Activations
					if err := a.Quantize(f, x, m, k); err != nil {
						t.Fatal(err)
					}
					y := make([]float32, m*(n+3))
					for i := range y {
						y[i] = -7
					}
					ldy := n + 3
					wm.Repack(be) // the backend's layout, as the engine does (column order on avx512vnni and avx512bw)
					if err := Mul(be, wm, &a, y, ldy, 0, n); err != nil {
						t.Fatal(err)
					}
					xq := dequantX(&a)
					for r := range m {
						for j := range n {
							var ref, refq, mag float64
							for i := range k {
								ref += float64(deq[j*k+i]) * float64(x[r*k+i])
								refq += float64(deq[j*k+i]) * xq[r*k+i]
								mag += lmag[j*k+i] * math.Abs(xq[r*k+i])
							}
							got := float64(y[r*ldy+j])
							// Against the quantized activations only float32
							// rounding remains: a block term is rounded about
							// three times, then the K/32 terms are summed.
							if b := mag*float64(k/BlockLen+4)*math.Ldexp(1, -24) + math.Ldexp(1, -126); math.Abs(got-refq) > b {
								t.Fatalf("y[%d][%d] = %v, ref on quantized x %v, |err| %.3g > %.3g", r, j, got, refq, math.Abs(got-refq), b)
							}
							if b := errBound(&a, r, deq[j*k:(j+1)*k], wmag[j*k:(j+1)*k], x[r*k:(r+1)*k]); math.Abs(got-ref) > b {
								t.Fatalf("y[%d][%d] = %v, ref %v, |err| %.3g > bound %.3g", r, j, got, ref, math.Abs(got-ref), b)
							}
						}
						for j := n; j < ldy; j++ {
							if y[r*ldy+j] != -7 {
								t.Fatalf("y[%d][%d] written outside [0,%d)", r, j, n)
							}
						}
					}
				})
			}
		}
	}
}

// The assembly backends equal the Go specification up to float32 summation
// order (the integer block sums are exact in both).
func TestMulTwin(t *testing.T) {
	goBE, _ := BackendByName("go")
	for _, be := range Backends() {
		if be.Name == "go" || be.Unavailable != "" {
			continue
		}
		// Each backend its own draws, the same ones: a backend added to
		// the list does not change the others' cases.
		rng := rand.New(rand.NewPCG(5, 6))
		for _, f := range Formats() {
			for _, sh := range [][3]int{{1, 5, 32}, {2, 9, 96}, {4, 8, 512}, {7, 17, 2048}, {16, 4, 64}} {
				m, n, k := sh[0], sh[1], sh[2]
				wm, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
				x := randMat(rng, m*k, 1)
				var a Activations
				if err := a.Quantize(f, x, m, k); err != nil {
					t.Fatal(err)
				}
				want, got := make([]float32, m*n), make([]float32, m*n)
				if err := Mul(goBE, wm, &a, want, n, 0, n); err != nil {
					t.Fatal(err)
				}
				if err := Mul(be, wm, &a, got, n, 0, n); err != nil {
					t.Fatal(err)
				}
				deq := wm.Dequantize()
				for i := range want {
					// The two sum the same k/32 block terms in another
					// order: at most about (k/32)·2^-24·Σ|terms| apart,
					// Σ|terms| ≈ Σ_k |w·x| (cancellation makes a
					// relative bound alone fail).
					var abs float64
					for e := range k {
						abs += math.Abs(float64(deq[(i%n)*k+e]) * float64(x[(i/n)*k+e]))
					}
					tol := 1e-5*math.Abs(float64(want[i])) + 1e-6 + float64(k/32)*0x1p-23*abs
					if d := math.Abs(float64(got[i] - want[i])); d > tol {
						t.Fatalf("%s %s %v: [%d] %v, twin %v", be.Name, f, sh, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestCheckSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const m, n, k = 3, 10, 128
	w, _ := Quantize(Q4_0, randMat(rng, n*k, 0.02), n, k)
	x := randMat(rng, m*k, 1)
	var a Activations
	if err := a.Quantize(Q4_0, x, m, k); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, m*n)
	if err := Mul(Best(), w, &a, y, n, 0, n); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckSample(w, x, y, m, 64); err != nil {
		t.Fatal(err)
	}
	y[m*n-1] += 0.5
	if _, err := CheckSample(w, x, y, m, 7); err == nil || !strings.Contains(err.Error(), "Y[2][9]") {
		t.Fatalf("corrupted last element: err %v", err)
	}
}

// Random matrices are valid for every kernel: the backends agree on them
// and the weights lie within ±0.05.
func TestRandom(t *testing.T) {
	for _, f := range Formats() {
		w, err := Random(f, 9, 96, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range w.Dequantize() {
			if math.Abs(float64(v)) > 0.0501 {
				t.Fatalf("%s: weight %v outside ±0.05", f, v)
			}
		}
		x := randMat(rand.New(rand.NewPCG(1, 2)), 2*96, 1)
		var a Activations
		if err := a.Quantize(f, x, 2, 96); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, 2*9)
		if err := Mul(Best(), w, &a, y, 9, 0, 9); err != nil {
			t.Fatal(err)
		}
		if _, err := CheckSample(w, x, y, 2, 18); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
