package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// pfWord and pfkWord are getU a word at a time.
func TestPFWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, f := range Formats() {
		if !PrefillFormat(f) {
			continue
		}
		q := make([]byte, f.pairBytes())
		for range 50 {
			for i := range q {
				q[i] = byte(rng.Uint32())
			}
			for wi := range 16 {
				var v uint32
				if pfkSub(f) > 0 {
					v = pfkWord(f, q, wi)
				} else {
					v = f.pfWord(q, wi)
				}
				for i := range 4 {
					if got, want := int32(v>>(8*i)&0xff), f.getU(q, 4*wi+i); got != want {
						t.Fatalf("%s word %d byte %d: %d, getU %d", f, wi, i, got, want)
					}
				}
			}
		}
	}
}

// goPF is the prefill path on the Go specification kernel.
func goPF(mr int) []pfKern {
	var ks []pfKern
	for m := 1; m <= mr; m++ {
		ks = append(ks, func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint16, c *float32, ldc int) {
			kernPFGo(m, np, a, as, ac, sa, b, bs, c, ldc)
		})
	}
	return ks
}

// goPFK is the K-quant prefill path on the Go specification kernel.
func goPFK(nsub, mr int) []pfkKern {
	var ks []pfkKern
	for m := 1; m <= mr; m++ {
		ks = append(ks, func(np int, a *byte, as *float32, ax *float32, sa int, b *byte, bs *float32, c *float32, ldc int) {
			kernPFKGo(nsub, m, np, a, as, ax, sa, b, bs, c, ldc)
		})
	}
	return ks
}

// The prefill path (the Go specification kernel, then every backend's
// assembly) equals the GEMV tiles of the go backend up to float32
// summation order, on column ranges that cut tiles and panels, with rows
// past N in the last tile and odd block counts.
func TestPrefillTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	goBE, _ := BackendByName("go")
	type path struct {
		name string
		run  func(w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) error
	}
	paths := []path{{"spec", func(w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) error {
		if nsub := pfkSub(w.Format); nsub > 0 {
			mulPFK(goPFK(nsub, 3), nil, nil, w, a, y, ldy, n0, n1)
			return nil
		}
		mulPF(&pfImpl{k: goPF(3)}, w, a, y, ldy, n0, n1)
		return nil
	}}}
	for _, be := range Backends() {
		if be.Unavailable != "" {
			continue
		}
		if pf := pfImpls[be.Name]; pf != nil {
			if u := pf.unavailable(); u != "" {
				t.Errorf("%s: %s", be.Name, u)
				continue
			}
		}
		if be.PrefillTileM == 0 {
			continue
		}
		paths = append(paths, path{be.Name, func(w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) error {
			return Mul(be, w, a, y, ldy, n0, n1)
		}})
	}
	for _, p := range paths {
		for _, f := range Formats() {
			if !PrefillFormat(f) {
				continue
			}
			for _, sh := range [][5]int{{16, 32, 64, 0, 32}, {17, 70, 96, 0, 70}, {20, 70, 160, 5, 61}, {40, 33, 2048, 1, 33}, {16, 100, 32, 36, 100}, {19, 40, 512, 0, 40}, {16, 36, 288, 4, 36}} {
				m, n, k, n0, n1 := sh[0], sh[1], sh[2], sh[3], sh[4]
				t.Run(fmt.Sprintf("%s/%s/%v", p.name, f, sh), func(t *testing.T) {
					wm, _ := Quantize(f, randMat(rng, n*k, 0.02), n, k)
					var a Activations
					if err := a.Quantize(f, randMat(rng, m*k, 1), m, k); err != nil {
						t.Fatal(err)
					}
					ldy := n + 2
					want, got := make([]float32, m*ldy), make([]float32, m*ldy)
					for i := range got {
						got[i] = -7
					}
					if err := Mul(goBE, wm, &a, want, ldy, n0, n1); err != nil {
						t.Fatal(err)
					}
					if err := p.run(wm, &a, got, ldy, n0, n1); err != nil {
						t.Fatal(err)
					}
					for r := range m {
						for j := range ldy {
							g, w := got[r*ldy+j], want[r*ldy+j]
							if j < n0 || j >= n1 {
								if g != -7 {
									t.Fatalf("Y[%d][%d] written outside [%d, %d)", r, j, n0, n1)
								}
								continue
							}
							if d := math.Abs(float64(g - w)); d > 1e-5*math.Abs(float64(w))+1e-6 {
								t.Fatalf("Y[%d][%d] = %v, GEMV tiles %v", r, j, g, w)
							}
						}
					}
				})
			}
		}
	}
}

// The self-test of the prefill kernels passes where they are available (a
// failure there would silently fall back to the GEMV tiles).
func TestPrefillSelfTest(t *testing.T) {
	for name, pf := range pfImpls {
		be, err := BackendByName(name)
		if err != nil || be.Unavailable != "" {
			t.Logf("%s: %v %s", name, err, be.Unavailable)
			continue
		}
		if u := pf.unavailable(); u != "" || be.PrefillTileM != len(pf.k) {
			t.Errorf("%s: prefill tile %d, %q", name, be.PrefillTileM, u)
		}
		if strings.Contains(be.Unavailable, "self-test failed") {
			t.Error(be.Unavailable)
		}
	}
}

// BenchmarkPrefill compares the prefill path with the GEMV tiles on one
// thread at prefill shapes (Qwen3-0.6B's FFN up projection, N 3072 × K
// 1024), on both layouts where the backend has column-order kernels:
//
//	go test -run '^$' -bench Prefill ./kernels/quant
func BenchmarkPrefill(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k = 3072, 1024
	for _, be := range Backends() {
		if be.Unavailable != "" || be.PrefillTileM == 0 {
			continue
		}
		for _, f := range Formats() {
			if !PrefillFormat(f) {
				continue
			}
			w, _ := Random(f, n, k, 1)
			for _, lay := range []Layout{LaneOrder, ColumnOrder} {
				if lay == ColumnOrder {
					if w.Repack(be); w.Layout() != ColumnOrder {
						continue
					}
				}
				for _, m := range []int{8, 16, 32, 64, 128, 512} {
					var a Activations
					_ = a.Quantize(f, randMat(rng, m*k, 1), m, k)
					y := make([]float32, m*n)
					for _, noPF := range []bool{false, true} {
						be := be
						be.NoPrefill = noPF
						name := map[bool]string{false: "prefill", true: "gemv"}[noPF]
						b.Run(fmt.Sprintf("%s/%s/%s/M=%d/%s", be.Name, f, lay, m, name), func(b *testing.B) {
							for b.Loop() {
								_ = Mul(be, w, &a, y, n, 0, n)
							}
							b.ReportMetric(2*float64(m)*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						})
					}
				}
			}
		}
	}
}
