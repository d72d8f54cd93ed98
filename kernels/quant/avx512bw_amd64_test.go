//go:build !purego && amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// avx512bwBackend returns the avx512bw backend, skipping where this CPU
// lacks its features (a failed self-test fails instead).
func avx512bwBackend(t *testing.T) Backend {
	t.Helper()
	be, _ := BackendByName("avx512bw")
	be.Name = "avx512bw"
	im := byName()["avx512bw"]
	if u := im.lacks(); u != "" {
		if strings.Contains(u, "self-test failed") {
			t.Fatal(u)
		}
		t.Skip(u)
	}
	return im.backend()
}

// The avx512bw backend reads the column-order layout for q8_0, q4_0, int2,
// int1, q4_k and q6_k with its own tiles, runs avx2's assembly tiles for every lane-order
// format (no Go tiles), and is chosen where AVX512BW is present without
// AVX512_VNNI: avx512vnni, else avx512bw, else avx2.
func TestAVX512BWRegistered(t *testing.T) {
	be := avx512bwBackend(t)
	im := byName()["avx512bw"]
	if got := be.ColumnFormats(); !slices.Equal(got, []Format{Q8_0, Q4_0, Int2, Int1, Q4_K, Q6_K, TQ2_0, TQ1_0}) {
		t.Errorf("ColumnFormats %v, want [q8_0 q4_0 int2 int1 q4_k q6_k tq2_0 tq1_0]", got)
	}
	for f, ks := range bwColKerns {
		if len(im.kc[f]) != 4 {
			t.Fatalf("%s: %d column-order tiles", f, len(im.kc[f]))
		}
		for m := range ks {
			if reflect.ValueOf(im.kc[f][m]).Pointer() != reflect.ValueOf(ks[m]).Pointer() {
				t.Errorf("%s m=%d: not the BW tile", f, m+1)
			}
		}
	}
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, TQ2_0, TQ1_0} {
		want := avx2Kerns[f.layout()]
		for m, k := range im.k[f] {
			if reflect.ValueOf(k).Pointer() != reflect.ValueOf(want[m]).Pointer() {
				t.Errorf("%s m=%d: not avx2's tile", f, m+1)
			}
		}
	}
	if len(be.GoTiles) != 0 {
		t.Errorf("Go tiles %v, want none", be.GoTiles)
	}
	if be.PrefillTileM != 0 {
		t.Errorf("PrefillTileM %d, want 0 (no VPDPBUSD)", be.PrefillTileM)
	}
	w, _ := Quantize(Q4_0, randMat(rand.New(rand.NewPCG(1, 2)), 20*64, 0.02), 20, 64)
	w.Repack(be)
	if w.Layout() != ColumnOrder {
		t.Errorf("Repack for avx512bw: %s", w.Layout())
	}
	// Selection (availability is evaluated per call; cpu.Disable is this
	// process's view only).
	undo, _ := cpu.Disable("vnni")
	if got := Best().Name; got != "avx512bw" {
		t.Errorf("Best without AVX512_VNNI: %s, want avx512bw", got)
	}
	undo()
	if cpu.X86.HasAVX512VNNI {
		if got := Best().Name; got != "avx512vnni" {
			t.Errorf("Best with AVX512_VNNI: %s, want avx512vnni", got)
		}
	}
	undo, _ = cpu.Disable("avx512")
	defer undo()
	if got := Best().Name; got != "avx2" {
		t.Errorf("Best without AVX-512: %s, want avx2", got)
	}
}

// TestAVX512BWRequired fails unless every backend named in
// BENCH_QUANT_REQUIRE (comma-separated) is available and Best is the
// first of them: scripts/test-avx512-bochs.sh sets avx512bw for its
// Skylake-X guest (AVX512BW without AVX512_VNNI), so a run proves the
// avx512bw tiles were chosen and ran, not skipped.
func TestAVX512BWRequired(t *testing.T) {
	req := os.Getenv("BENCH_QUANT_REQUIRE")
	if req == "" {
		t.Skip("BENCH_QUANT_REQUIRE not set")
	}
	names := strings.Split(req, ",")
	for _, name := range names {
		if _, err := BackendByName(strings.TrimSpace(name)); err != nil {
			t.Error(err)
		}
	}
	if got, want := Best().Name, strings.TrimSpace(names[0]); got != want {
		t.Errorf("Best is %s, want %s", got, want)
	}
}

// colCase is one direct call of a column-order tile: np block pairs of a
// group, rows rows of activations (the tile reads the last m), the
// activations' corrZ. exact makes the scales powers of two (so that with
// np ≤ 5 every float sum is exact and the tile must equal kernColGo bit
// for bit); extreme sets every activation to ±127 and every weight to
// its format's largest magnitude (q8_0 bytes 0x00, 0x01, 0xff: q = −128,
// −127, 127; q4_0 nibbles 0 and 15), the bounds of genBW's no-saturation
// arguments; aligned makes every product the largest positive one (q8_0:
// q = −128 against −127, a VPMADDUBSW pair 32512; q4_0: 15 against 127,
// an int16 block sum 30480).
type colCase struct {
	a      []byte
	as, dx []float32
	ac     []int32
	b      []byte
	bs     []uint32
	sa     int
}

func newColCase(rng *rand.Rand, f Format, np, rows int, mode string) colCase {
	c := colCase{sa: rows * pairLen}
	c.a = make([]byte, np*rows*pairLen)
	c.b = make([]byte, 2*np*f.colBytes())
	c.as = make([]float32, np*rows*2)
	c.ac = make([]int32, np*rows*2)
	c.bs = make([]uint32, np*ColRows)
	for i := range c.a {
		q := int8(rng.IntN(255) - 127)
		switch mode {
		case "extreme":
			q = 127 - int8(254*rng.IntN(2))
		case "aligned":
			q = 127
			if f == Q8_0 {
				q = -127
			}
		}
		c.a[i] = byte(q)
	}
	for i := range c.b {
		c.b[i] = byte(rng.Uint32())
		switch mode {
		case "extreme":
			if f == Q8_0 {
				c.b[i] = []byte{0x00, 0x01, 0xff}[rng.IntN(3)]
			} else {
				c.b[i] = []byte{0x00, 0x0f, 0xf0, 0xff}[rng.IntN(4)]
			}
		case "aligned":
			c.b[i] = 0xff
			if f == Q8_0 {
				c.b[i] = 0x00
			}
		}
	}
	colCorrZ(f, c.a, c.ac, np, rows)
	exact := mode != "random"
	ex, ew := float32(math.Ldexp(1, -4-rng.IntN(4))), float32(math.Ldexp(1, -6-rng.IntN(4)))
	for i := range c.as {
		c.as[i] = float32(rng.Float64()*0.02 + 1e-4)
		if exact {
			c.as[i] = ex
		}
	}
	for i := range c.bs {
		var d [2]uint16
		for h := range d {
			v := float32(rng.Float64()*0.01 + 1e-5)
			if exact {
				v = ew
			}
			if rng.IntN(8) == 0 {
				v = -v
			}
			d[h] = Float32ToFP16(v)
		}
		c.bs[i] = uint32(d[0]) | uint32(d[1])<<16
	}
	return c
}

// Every avx512bw column-order tile against kernColGo, called directly:
// exact inputs bit for bit, random ones within float32 rounding, the
// saturation bounds (extreme, aligned) over many blocks (np 64 = 128
// blocks, whose aligned sums stay exact: multiples of 2^12 below 2^26);
// row strides above the tile, an output stride above 16, np = 0.
func TestAVX512BWKernels(t *testing.T) {
	avx512bwBackend(t)
	rng := rand.New(rand.NewPCG(31, 32))
	nps := []int{0, 1, 2, 5, 17, 64}
	if testing.Short() {
		nps = []int{0, 1, 5, 64}
	}
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, TQ2_0, TQ1_0} {
		for m, k := range bwColKerns[f] {
			m++
			for _, np := range nps {
				for _, mode := range []string{"exact", "random", "extreme", "aligned"} {
					if np > 5 && (mode == "exact" || mode == "extreme") {
						continue // beyond the exact range
					}
					name := fmt.Sprintf("%s/m=%d/np=%d/%s", f, m, np, mode)
					rows := m + 1
					c := newColCase(rng, f, max(np, 1), rows, mode)
					const ldc = ColRows + 5
					want, got := make([]float32, m*ldc), make([]float32, m*ldc)
					for i := range got {
						got[i], want[i] = -3, -3
					}
					i0 := rows - m
					if np > 0 {
						kernColGo(f, m, np, &c.a[i0*pairLen], &c.as[i0*2], &c.ac[i0*2], c.sa, &c.b[0], &c.bs[0], &want[0], ldc)
					} else {
						for r := range m {
							clear(want[r*ldc:][:ColRows])
						}
					}
					k(np, &c.a[i0*pairLen], &c.as[i0*2], &c.ac[i0*2], c.sa, &c.b[0], &c.bs[0], &got[0], ldc)
					for i := range want {
						g, w := got[i], want[i]
						if i%ldc >= ColRows {
							if g != -3 {
								t.Fatalf("%s: wrote c[%d]", name, i)
							}
							continue
						}
						if mode != "random" {
							if math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%s: c[%d] = %v, want %v bit for bit", name, i, g, w)
							}
						} else if math.Abs(float64(g-w)) > 1e-5*math.Abs(float64(w))+1e-6+float64(2*np)*0x1p-23*colAbs(f, c, i0+i/ldc, i%ldc, np) {
							t.Fatalf("%s: c[%d] = %v, want %v", name, i, g, w)
						}
					}
				}
			}
		}
	}
}

// colAbs is Σ|block terms| of output (row r, lane j) of c: the float sums
// of the tile and kernColGo (FMA or not) differ by rounding of that size.
func colAbs(f Format, c colCase, r, j, np int) float64 {
	var s float64
	cb, rows := f.colBytes(), c.sa/pairLen
	for p := range np {
		for h := range 2 {
			q := c.b[(2*p+h)*cb:][:cb]
			var dot int64
			for e := range BlockLen {
				x := int64(int8(c.a[(p*rows+r)*pairLen+lanePos(h, e)]))
				dot += (int64(colGetU(f, q, j, e)) - int64(f.offset())) * x
			}
			dw := FP16ToFloat32(uint16(c.bs[((2*p+h)*ColRows+j)/2] >> (16 * (j % 2))))
			s += math.Abs(float64(dot) * float64(dw) * float64(c.as[(p*rows+r)*2+h]))
		}
	}
	return s
}

// Through Mul on a column-order W, the avx512bw tiles agree with the
// float64 reference within the package doc's bound (CheckSample) where
// q8_0 saturation would show: weights and activations quantized to ±127
// (w, x = ±1) over 4096 weights (128 blocks), signs random and all
// aligned; and with the Go backend on the lane-order W (the twin).
func TestAVX512BWSaturation(t *testing.T) {
	be := avx512bwBackend(t)
	goBE, _ := BackendByName("go")
	rng := rand.New(rand.NewPCG(33, 34))
	const m, k = 3, 4096
	n := 40 // 2 whole groups and a partial one
	if testing.Short() {
		n = 16 // one group (the Bochs guest: the Go twin is the slow part)
	}
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, TQ2_0, TQ1_0} {
		for _, signs := range []string{"random", "aligned"} {
			w, x := make([]float32, n*k), make([]float32, m*k)
			for i := range w {
				w[i] = 1
				if signs == "random" && rng.IntN(2) == 0 {
					w[i] = -1
				}
			}
			for i := range x {
				x[i] = 1
				if signs == "random" && rng.IntN(2) == 0 {
					x[i] = -1
				}
			}
			wm, err := Quantize(f, w, n, k)
			if err != nil {
				t.Fatal(err)
			}
			var a Activations
			if err := a.Quantize(f, x, m, k); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, m*n)
			if err := Mul(goBE, wm, &a, want, n, 0, n); err != nil {
				t.Fatal(err)
			}
			wm.Repack(be)
			if wm.Layout() != ColumnOrder {
				t.Fatalf("%s: layout %s", f, wm.Layout())
			}
			y := make([]float32, m*n)
			if err := Mul(be, wm, &a, y, n, 0, n); err != nil {
				t.Fatal(err)
			}
			if _, err := CheckSample(wm, x, y, m, m*n); err != nil {
				t.Errorf("%s %s: %v", f, signs, err)
			}
			for i := range y {
				if d := math.Abs(float64(y[i] - want[i])); d > 1e-5*math.Abs(float64(want[i]))+1e-3 {
					t.Fatalf("%s %s: y[%d] = %v, go backend %v", f, signs, i, y[i], want[i])
				}
			}
			if signs == "aligned" && f == Q8_0 && math.Abs(float64(y[0])-k) > 1e-2*k {
				t.Errorf("%s aligned: y[0] = %v, want about %d", f, y[0], k)
			}
		}
	}
}
