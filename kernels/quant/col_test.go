package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// colBackend returns the backend with column-order kernels, if any runs
// here.
func colBackend() (Backend, bool) {
	for _, be := range Backends() {
		if be.Unavailable == "" && len(be.ColumnFormats()) > 0 {
			return be, true
		}
	}
	return Backend{}, false
}

// Repack to column order and back keeps every weight, scale and GGUF byte.
func TestColumnRepack(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, TQ2_0, TQ1_0, Q4_K, Q6_K} {
		for _, sh := range [][2]int{{1, 32}, {13, 96}, {16, 64}, {33, 160}, {40, 1024}, {17, 512}} {
			n, k := sh[0], sh[1]
			w, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
			deq := w.Dequantize()
			var gg []byte
			gguf := f.GGUF() && (f.GGUFBlockLen() == BlockLen || k%SuperLen == 0)
			if gguf {
				gg = w.AppendGGUF(nil)
			}
			lq, ld := slices.Clone(w.q), slices.Clone(w.d)
			w.toColumn()
			if w.Layout() != ColumnOrder {
				t.Fatalf("%s %v: layout %s", f, sh, w.Layout())
			}
			if !slices.Equal(w.Dequantize(), deq) {
				t.Fatalf("%s %v: column-order Dequantize differs", f, sh)
			}
			if gguf && !bytes.Equal(w.AppendGGUF(nil), gg) {
				t.Fatalf("%s %v: column-order AppendGGUF differs", f, sh)
			}
			if f.kquant() {
				if want := float64((n+ColRows-1)/ColRows*ColRows*w.pairs*pairLen) * f.BytesPerWeight(); float64(w.Bytes()) != want {
					t.Fatalf("%s %v: column order %d bytes, want %v (%v B/weight)", f, sh, w.Bytes(), want, f.BytesPerWeight())
				}
			}
			w.toLane()
			if !bytes.Equal(w.q, lq) || !slices.Equal(w.d, ld) {
				t.Fatalf("%s %v: lane → column → lane differs", f, sh)
			}
		}
	}
	// Repack picks the backend's layout; formats without one stay lane order.
	goBE, _ := BackendByName("go")
	w, _ := Quantize(Q4_0, randMat(rng, 5*64, 0.02), 5, 64)
	w.Repack(goBE)
	if w.Layout() != LaneOrder {
		t.Fatalf("go backend: %s", w.Layout())
	}
	if be, ok := colBackend(); ok {
		w.Repack(be)
		if w.Layout() != ColumnOrder {
			t.Fatalf("%s: %s", be.Name, w.Layout())
		}
		w.Repack(goBE)
		if w.Layout() != LaneOrder {
			t.Fatalf("back to go: %s", w.Layout())
		}
		kq, _ := Quantize(Q6_K, randMat(rng, 5*256, 0.02), 5, 256)
		kq.Repack(be)
		if want := map[bool]Layout{true: ColumnOrder, false: LaneOrder}[slices.Contains(be.ColumnFormats(), Q6_K)]; kq.Layout() != want {
			t.Fatalf("q6_k on %s: %s, want %s", be.Name, kq.Layout(), want)
		}
	}
}

// A column-order W gives, on every backend (its kernels or kernColGo),
// what the lane-order W gives on the Go backend up to float32 summation
// order, and lies within the documented bound of the float64 reference;
// odd N (padding), odd block counts, column ranges cutting a group, and M
// on the prefill path included.
func TestColumnMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	goBE, _ := BackendByName("go")
	for _, be := range Backends() {
		if be.Unavailable != "" {
			continue
		}
		for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, TQ2_0, TQ1_0, Q4_K, Q6_K} {
			for _, sh := range [][3]int{{1, 1, 32}, {1, 13, 96}, {2, 17, 64}, {3, 33, 160}, {4, 40, 1024}, {5, 16, 96}, {16, 40, 224}, {1, 64, 4096}, {33, 40, 512}} {
				m, n, k := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%s/%s/%dx%dx%d", be.Name, f, m, n, k), func(t *testing.T) {
					x := randMat(rng, m*k, 1)
					w, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
					var a Activations
					if err := a.Quantize(f, x, m, k); err != nil {
						t.Fatal(err)
					}
					want := make([]float32, m*n)
					if err := Mul(goBE, w, &a, want, n, 0, n); err != nil {
						t.Fatal(err)
					}
					w.toColumn()
					ldy := n + 3
					got := make([]float32, m*ldy)
					for i := range got {
						got[i] = -7
					}
					// Two calls on column ranges that cut a group.
					cut := min(n, 5)
					if err := Mul(be, w, &a, got, ldy, 0, cut); err != nil {
						t.Fatal(err)
					}
					if err := Mul(be, w, &a, got, ldy, cut, n); err != nil {
						t.Fatal(err)
					}
					for r := range m {
						for j := range n {
							g, wv := got[r*ldy+j], want[r*n+j]
							if d := math.Abs(float64(g - wv)); d > 1e-5*math.Abs(float64(wv))+1e-6 {
								t.Fatalf("y[%d][%d] = %v, lane order on go %v", r, j, g, wv)
							}
						}
						for j := n; j < ldy; j++ {
							if got[r*ldy+j] != -7 {
								t.Fatalf("y[%d][%d] written outside [0,%d)", r, j, n)
							}
						}
					}
					y := make([]float32, m*n)
					for r := range m {
						copy(y[r*n:], got[r*ldy:r*ldy+n])
					}
					if _, err := CheckSample(w, x, y, m, m*n); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// The column-order kernels pass their self-test where they run, and equal
// kernColGo bit for bit on exact inputs (the self-test's check).
func TestColumnSelfTest(t *testing.T) {
	be, ok := colBackend()
	if !ok {
		t.Skip("no backend with column-order kernels here")
	}
	if v := colSelfTestFn(be.Name); v != "" {
		t.Fatal(v)
	}
}

// The assembly up-converts of the column-order layouts write the prefill
// tile pfConvertCol's Go loop writes (odd N: a group past N and a
// partial one).
func TestColumnPrefillConvert(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for name, pf := range pfImpls {
		if be, err := BackendByName(name); err != nil || be.Unavailable != "" {
			continue // the CPU may lack the instructions
		}
		for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, TQ2_0, TQ1_0} {
			conv := pf.colConv[f]
			if conv == nil {
				continue
			}
			const n, k = 21, 160
			w, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
			w.toColumn()
			want, got := make([]byte, w.pairs*pfPairBytes), make([]byte, w.pairs*pfPairBytes)
			wd, gd := make([]uint16, w.pairs*pfPairScale), make([]uint16, w.pairs*pfPairScale)
			for j0 := 0; j0 < n; j0 += pfCols {
				pfConvertCol(w, j0, want, wd, nil)
				pfConvertCol(w, j0, got, gd, conv)
				if !bytes.Equal(got, want) || !slices.Equal(gd, wd) {
					t.Fatalf("%s %s: tile at row %d differs from the Go loop", name, f, j0)
				}
			}
		}
		for _, f := range []Format{Q4_K, Q6_K} {
			conv := pf.kcolConv[f]
			if conv == nil {
				continue
			}
			const n, k = 37, 512
			w, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
			w.toColumn()
			sw := w.pairs * 2 * pfkSub(f) * pfCols
			want, got := make([]byte, w.pairs*pfPairBytes), make([]byte, w.pairs*pfPairBytes)
			wd, gd := make([]float32, sw), make([]float32, sw)
			for j0 := 0; j0 < n; j0 += pfCols {
				for i := range got {
					got[i] = 0xee // every byte must be written
				}
				for i := range gd {
					gd[i] = -1 // and every scale word
				}
				if f == Q4_K {
					pfkConvertCol(w, j0, want, wd, nil)
					pfkConvertCol(w, j0, got, gd, conv)
				} else {
					pfkConvertColK6(w, j0, want, wd, nil)
					pfkConvertColK6(w, j0, got, gd, conv)
				}
				if !bytes.Equal(got, want) || !slices.Equal(gd, wd) {
					t.Fatalf("%s %s: tile at row %d differs from the Go loop", name, f, j0)
				}
			}
		}
	}
}

// A decode GEMV call (M = 1, whole groups) allocates nothing on either
// layout, so a 2-worker measurement has no garbage collection running on
// a worker's CPU that a 1-worker one (the other CPU idle) would not feel.
func TestColumnMulNoAlloc(t *testing.T) {
	be, ok := colBackend()
	if !ok {
		t.Skip("no backend with column-order kernels here")
	}
	rng := rand.New(rand.NewPCG(27, 28))
	const n, k = 64, 512
	for _, f := range be.ColumnFormats() {
		w, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
		var a Activations
		if err := a.Quantize(f, randMat(rng, k, 1), 1, k); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, n)
		for _, layout := range []Layout{LaneOrder, ColumnOrder} {
			if layout == ColumnOrder {
				w.Repack(be)
			}
			if allocs := testing.AllocsPerRun(20, func() { _ = Mul(be, w, &a, y, n, 0, n/2); _ = Mul(be, w, &a, y, n, n/2, n) }); allocs != 0 {
				t.Errorf("%s %s: %v allocations per 2 calls", f, layout, allocs)
			}
		}
	}
}

// The K-quant prefill path on a column-order Q4_K or Q6_K (pfkConvertCol,
// its Go up-convert and the backends' pfConvColQ4; pfkConvertColK6) equals the go backend's GEMV
// tiles on the lane-order W, on column ranges that cut groups.
func TestColumnPrefillK(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	goBE, _ := BackendByName("go")
	for i, sh := range [][5]int{{32, 40, 512, 0, 40}, {33, 70, 256, 5, 61}, {40, 16, 768, 0, 16}, {32, 40, 512, 0, 40}, {33, 70, 256, 5, 61}, {40, 16, 768, 0, 16}} {
		m, n, k, n0, n1 := sh[0], sh[1], sh[2], sh[3], sh[4]
		f := []Format{Q4_K, Q6_K}[i/3]
		w, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
		var a Activations
		if err := a.Quantize(f, randMat(rng, m*k, 1), m, k); err != nil {
			t.Fatal(err)
		}
		ldy := n + 2
		want := make([]float32, m*ldy)
		if err := Mul(goBE, w, &a, want, ldy, n0, n1); err != nil {
			t.Fatal(err)
		}
		w.toColumn()
		runs := map[string]func(y []float32){"spec": func(y []float32) {
			mulPFK(goPFK(pfkSub(f), 3), nil, nil, w, &a, y, ldy, n0, n1)
		}}
		for _, be := range Backends() {
			if be.Unavailable == "" && be.PrefillTileM > 0 {
				runs[be.Name] = func(y []float32) {
					if err := Mul(be, w, &a, y, ldy, n0, n1); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for name, run := range runs {
			got := make([]float32, m*ldy)
			for i := range got {
				got[i] = -7
			}
			run(got)
			for r := range m {
				for j := range ldy {
					g, wv := got[r*ldy+j], want[r*ldy+j]
					if j < n0 || j >= n1 {
						if g != -7 {
							t.Fatalf("%s %v: Y[%d][%d] written outside [%d, %d)", name, sh, r, j, n0, n1)
						}
						continue
					}
					if d := math.Abs(float64(g - wv)); d > 1e-5*math.Abs(float64(wv))+1e-6 {
						t.Fatalf("%s %v: Y[%d][%d] = %v, lane-order GEMV tiles %v", name, sh, r, j, g, wv)
					}
				}
			}
		}
	}
}
