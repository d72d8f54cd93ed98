package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// Every test loops over dotImpls() and skips the unavailable ones (AVX2
// needs AVX2 and FMA). Each implementation is compared
// with the specification loop of the doc comment (in float32) and with a
// float64 reference, within the bounds documented in dot.go; outputs are
// surrounded by sentinel guards.

const dotU = 0x1p-24

func dotLengths() []int {
	var ns []int
	for n := 1; n <= 130; n++ {
		ns = append(ns, n)
	}
	return append(ns, 256)
}

var dotRowCounts = []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 128, 133}

func dotFill(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func TestDotRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, im := range dotImpls() {
		if im.unavailable != "" {
			t.Logf("%s: %s", im.isa, im.unavailable)
			continue
		}
		for _, hd := range dotLengths() {
			for _, n := range dotRowCounts {
				for _, extra := range []int{0, 3, 64} {
					ldk := hd + extra
					q := dotFill(rng, hd)
					k := dotFill(rng, max(0, (n-1)*ldk+hd))
					out, check := nlGuarded(n, int(rng.Uint32()%4))
					what := fmt.Sprintf("%s: DotRows len(q)=%d n=%d ldk=%d", im.isa, hd, n, ldk)
					if n > 0 {
						im.dotRows(out, q, k, ldk)
					}
					check(t, what)
					for j := range n {
						kj := k[j*ldk : j*ldk+hd]
						var spec float32
						var ref, mag float64
						for i := range q {
							spec += q[i] * kj[i]
							ref += float64(q[i]) * float64(kj[i])
							mag += math.Abs(float64(q[i]) * float64(kj[i]))
						}
						tol := float64(hd+2) * dotU * mag
						if e := math.Abs(float64(out[j]) - ref); !(e <= tol) {
							t.Fatalf("%s: out[%d] = %g, float64 reference %g: error %g > %g", what, j, out[j], ref, e, tol)
						}
						if e := math.Abs(float64(out[j]) - float64(spec)); !(e <= 2*tol) {
							t.Fatalf("%s: out[%d] = %g, Go loop %g: difference %g > %g", what, j, out[j], spec, e, 2*tol)
						}
					}
				}
			}
		}
	}
}

func TestAxpyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, im := range dotImpls() {
		if im.unavailable != "" {
			t.Logf("%s: %s", im.isa, im.unavailable)
			continue
		}
		for _, hd := range dotLengths() {
			for _, n := range dotRowCounts {
				for _, extra := range []int{0, 3, 64} {
					ldv := hd + extra
					p := dotFill(rng, n)
					v := dotFill(rng, max(0, (n-1)*ldv+hd))
					acc0 := dotFill(rng, hd)
					acc, check := nlGuarded(hd, int(rng.Uint32()%4))
					copy(acc, acc0)
					what := fmt.Sprintf("%s: AxpyRows len(acc)=%d len(p)=%d ldv=%d", im.isa, hd, n, ldv)
					if n > 0 {
						im.axpyRows(acc, p, v, ldv)
					}
					check(t, what)
					for i := range acc {
						spec := acc0[i]
						ref, mag := float64(acc0[i]), math.Abs(float64(acc0[i]))
						for j := range p {
							x := v[j*ldv+i]
							spec += p[j] * x
							ref += float64(p[j]) * float64(x)
							mag += math.Abs(float64(p[j]) * float64(x))
						}
						tol := float64(n+2) * dotU * mag
						if e := math.Abs(float64(acc[i]) - ref); !(e <= tol) {
							t.Fatalf("%s: acc[%d] = %g, float64 reference %g: error %g > %g", what, i, acc[i], ref, e, tol)
						}
						if e := math.Abs(float64(acc[i]) - float64(spec)); !(e <= 2*tol) {
							t.Fatalf("%s: acc[%d] = %g, Go loop %g: difference %g > %g", what, i, acc[i], spec, e, 2*tol)
						}
					}
				}
			}
		}
	}
}

// TestDotDispatch checks that DotRows and AxpyRows take the best available
// implementation (avx512 where AVX512F and FMA are present, else avx2),
// avx2 with AVX-512 disabled and the Go one under purego or with AVX2
// disabled (as BENCH_CPU_DISABLE=avx2 does), and that they give that
// implementation's results and write nothing past n.
func TestDotDispatch(t *testing.T) {
	want := "go"
	if !purego && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		want = "avx2"
		if cpu.X86.HasAVX512F {
			want = "avx512"
		}
	}
	if got := bestDot().isa; got != want {
		t.Errorf("bestDot() = %s, want %s", got, want)
	}
	if want == "avx512" {
		undo := cpu.DisableAVX512()
		if got := bestDot().isa; got != "avx2" {
			t.Errorf("with AVX-512 disabled, bestDot() = %s, want avx2", got)
		}
		undo()
	}
	undo := cpu.DisableAVX2()
	if got := bestDot().isa; got != "go" {
		t.Errorf("with AVX2 disabled, bestDot() = %s, want go", got)
	}
	undo()

	rng := rand.New(rand.NewPCG(7, 8))
	const hd, n, ld = 72, 21, 80
	q, k := dotFill(rng, hd), dotFill(rng, (n-1)*ld+hd)
	out, check := nlGuarded(n+5, 0)
	for i := range out {
		out[i] = -1
	}
	DotRows(out, q, k, ld, n)
	check(t, "DotRows")
	wantOut := make([]float32, n)
	bestDot().dotRows(wantOut, q, k, ld)
	for j := range n {
		if out[j] != wantOut[j] {
			t.Fatalf("DotRows: out[%d] = %g, %s gives %g", j, out[j], bestDot().isa, wantOut[j])
		}
	}
	for j := n; j < len(out); j++ {
		if out[j] != -1 {
			t.Fatalf("DotRows wrote out[%d] past n = %d", j, n)
		}
	}
	DotRows(out, q, nil, ld, 0) // n = 0: nothing to read or write

	acc := dotFill(rng, hd)
	acc2 := append([]float32(nil), acc...)
	p := dotFill(rng, n)
	AxpyRows(acc, p, k, ld)
	bestDot().axpyRows(acc2, p, k, ld)
	for i := range acc {
		if acc[i] != acc2[i] {
			t.Fatalf("AxpyRows: acc[%d] = %g, %s gives %g", i, acc[i], bestDot().isa, acc2[i])
		}
	}
	AxpyRows(acc, nil, nil, ld)
}

// TestTransposeRows8: every implementation stores exactly the
// specification's elements, at widths around the assembly's blocks of
// eight and with the strides of a K panel (NR 32, 16) and a K row of
// several heads, and writes nothing else.
func TestTransposeRows8(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, im := range dotImpls() {
		if im.unavailable != "" {
			t.Logf("%s: %s", im.isa, im.unavailable)
			continue
		}
		f := im.transposeRows8
		if f == nil {
			f = transposeRows8Go
		}
		for _, n := range []int{1, 7, 8, 9, 16, 23, 64, 128, 136} {
			for _, ld := range [][2]int{{8, n}, {32, 8 * 128}, {16, n + 3}} {
				ldd, lds := ld[0], max(ld[1], n)
				src := make([]float32, 7*lds+n)
				for i := range src {
					src[i] = float32(rng.NormFloat64())
				}
				dst := make([]float32, (n-1)*ldd+8+5)
				sentinel := float32(math.Inf(1))
				for i := range dst {
					dst[i] = sentinel
				}
				f(dst[:(n-1)*ldd+8], ldd, src, lds, n)
				for i, x := range dst {
					d, j := i/ldd, i%ldd
					want := sentinel
					if d < n && j < 8 {
						want = src[j*lds+d]
					}
					if math.Float32bits(x) != math.Float32bits(want) {
						t.Fatalf("%s: n %d, ldd %d, lds %d: dst[%d] = %v, want %v", im.isa, n, ldd, lds, i, x, want)
					}
				}
			}
		}
	}
}

func TestDotPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"DotRows short k", func() { DotRows(make([]float32, 2), make([]float32, 8), make([]float32, 15), 8, 2) }},
		{"DotRows short out", func() { DotRows(make([]float32, 1), make([]float32, 8), make([]float32, 16), 8, 2) }},
		{"DotRows negative n", func() { DotRows(nil, nil, nil, 0, -1) }},
		{"AxpyRows short v", func() { AxpyRows(make([]float32, 8), make([]float32, 2), make([]float32, 15), 8) }},
		{"AxpyRows negative ldv", func() { AxpyRows(make([]float32, 8), make([]float32, 1), make([]float32, 8), -1) }},
		{"TransposeRows8 short src", func() { TransposeRows8(make([]float32, 64), 8, make([]float32, 7*8+7), 8, 8) }},
		{"TransposeRows8 short dst", func() { TransposeRows8(make([]float32, 7*8+7), 8, make([]float32, 64), 8, 8) }},
		{"TransposeRows8 negative ldd", func() { TransposeRows8(make([]float32, 64), -1, make([]float32, 64), 8, 8) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

// BenchmarkDotRows and BenchmarkAxpyRows run each implementation on one
// attention tile of decode: 128 keys or values of head dim 64 and 128,
// row stride 2·headDim (two KV heads).
func BenchmarkDotRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, hd := range []int{64, 128} {
		const n = 128
		q, k, out := dotFill(rng, hd), dotFill(rng, n*2*hd), make([]float32, n)
		for _, im := range dotImpls() {
			b.Run(fmt.Sprintf("hd=%d/impl=%s", hd, im.isa), func(b *testing.B) {
				if im.unavailable != "" {
					b.Skip(im.unavailable)
				}
				for b.Loop() {
					im.dotRows(out, q, k, 2*hd)
				}
				b.ReportMetric(2*float64(n*hd)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func BenchmarkAxpyRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, hd := range []int{64, 128} {
		const n = 128
		p, v, acc := dotFill(rng, n), dotFill(rng, n*2*hd), make([]float32, hd)
		for _, im := range dotImpls() {
			b.Run(fmt.Sprintf("hd=%d/impl=%s", hd, im.isa), func(b *testing.B) {
				if im.unavailable != "" {
					b.Skip(im.unavailable)
				}
				for b.Loop() {
					im.axpyRows(acc, p, v, 2*hd)
				}
				b.ReportMetric(2*float64(n*hd)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestAxpyPanels checks AxpyPanels on every implementation (the
// AVX-512 one's nr = 32 kernels for 1 to 9 rows: groups of four and the
// last of one to three) against the float64 reference within AxpyRows'
// bound, and that it writes only the panels' columns of its rows.
func TestAxpyPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, im := range dotImpls() {
		if im.unavailable != "" {
			continue
		}
		f := func(acc []float32, lda int, x []float32, ldx, rows, n int, v []float32, nr, vstride, panels int) {
			axpyPanelsOn(&im, acc, lda, x, ldx, rows, n, v, nr, vstride, panels)
		}
		for _, nr := range []int{32, 16, 8} {
			for _, rows := range []int{1, 2, 3, 4, 5, 9} {
				for _, n := range []int{1, 3, 7, 64, 128, 257} {
					panels := 1 + rng.IntN(4)
					lda, ldx, vstride := panels*nr+5, n+3, n*nr+2*nr
					x := dotFill(rng, (rows-1)*ldx+n)
					v := dotFill(rng, (panels-1)*vstride+n*nr)
					acc0 := dotFill(rng, rows*lda)
					acc := append([]float32(nil), acc0...)
					f(acc, lda, x, ldx, rows, n, v, nr, vstride, panels)
					what := fmt.Sprintf("%s: AxpyPanels nr %d rows %d n %d panels %d", im.isa, nr, rows, n, panels)
					for r := range rows {
						for c := range lda {
							i := r*lda + c
							if c >= panels*nr {
								if acc[i] != acc0[i] {
									t.Fatalf("%s: wrote acc[%d] (row %d column %d) past the panels", what, i, r, c)
								}
								continue
							}
							pi, cc := c/nr, c%nr
							ref, mag := float64(acc0[i]), math.Abs(float64(acc0[i]))
							for j := range n {
								prod := float64(x[r*ldx+j]) * float64(v[pi*vstride+j*nr+cc])
								ref += prod
								mag += math.Abs(prod)
							}
							if tol := float64(n+2) * dotU * mag; !(math.Abs(float64(acc[i])-ref) <= tol) {
								t.Fatalf("%s: acc[%d] = %g, float64 reference %g: error > %g", what, i, acc[i], ref, tol)
							}
						}
					}
				}
			}
		}
	}
	f := AxpyPanels
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"negative rows", func() { f(make([]float32, 64), 32, make([]float32, 4), 4, -1, 4, make([]float32, 128), 32, 128, 1) }},
		{"short acc", func() { f(make([]float32, 31), 32, make([]float32, 4), 4, 1, 4, make([]float32, 128), 32, 128, 1) }},
		{"short v", func() { f(make([]float32, 64), 32, make([]float32, 4), 4, 1, 4, make([]float32, 127), 32, 128, 1) }},
		{"short x", func() { f(make([]float32, 64), 32, make([]float32, 4), 4, 2, 4, make([]float32, 128), 32, 128, 1) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AxpyPanels %s: no panic", tc.name)
				}
			}()
			tc.call()
		}()
	}
}

// TestAxpyPanelsBF16 checks AxpyPanelsBF16 on every implementation
// against the float64 reference of the widened values within AxpyRows'
// bound, and that it writes only the panels' columns of its rows.
func TestAxpyPanelsBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, im := range dotImpls() {
		if im.unavailable != "" {
			continue
		}
		for _, nr := range []int{32, 8} {
			for _, rows := range []int{1, 2, 3, 4, 6} {
				for _, n := range []int{1, 5, 128, 131} {
					panels := 1 + rng.IntN(3)
					lda, ldx, vstride := panels*nr+3, n+1, n*nr+nr
					x := dotFill(rng, (rows-1)*ldx+n)
					v := make([]uint16, (panels-1)*vstride+n*nr)
					for i := range v {
						v[i] = uint16(math.Float32bits(rng.Float32()*2-1) >> 16)
					}
					acc0 := dotFill(rng, rows*lda)
					acc := append([]float32(nil), acc0...)
					axpyPanelsBF16On(&im, acc, lda, x, ldx, rows, n, v, nr, vstride, panels)
					checkPanelsBF16(t, fmt.Sprintf("%s: AxpyPanelsBF16 nr %d rows %d n %d panels %d", im.isa, nr, rows, n, panels),
						acc, acc0, lda, x, ldx, rows, n, v, nr, panels, func(pi, j, c int) int { return pi*vstride + j*nr + c })
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("AxpyPanelsBF16 with a short v: no panic")
		}
	}()
	AxpyPanelsBF16(make([]float32, 32), 32, make([]float32, 4), 4, 1, 4, make([]uint16, 127), 32, 128, 1)
}

// checkPanelsBF16 holds acc (from acc0) to the float64 reference of
// AxpyPanels on bf16 panels, element k index j of column c of panel pi at
// v[at(pi, j, c)], within AxpyRows' bound, and to nothing written past
// the panels' columns of its rows.
func checkPanelsBF16(t *testing.T, what string, acc, acc0 []float32, lda int, x []float32, ldx, rows, n int, v []uint16, nr, panels int, at func(pi, j, c int) int) {
	t.Helper()
	for r := range rows {
		for c := range lda {
			i := r*lda + c
			if c >= panels*nr {
				if acc[i] != acc0[i] {
					t.Fatalf("%s: wrote acc[%d] past the panels", what, i)
				}
				continue
			}
			ref, mag := float64(acc0[i]), math.Abs(float64(acc0[i]))
			for j := range n {
				prod := float64(x[r*ldx+j]) * float64(math.Float32frombits(uint32(v[at(c/nr, j, c%nr)])<<16))
				ref += prod
				mag += math.Abs(prod)
			}
			if tol := float64(n+2) * dotU * mag; !(math.Abs(float64(acc[i])-ref) <= tol) {
				t.Fatalf("%s: acc[%d] = %g, float64 reference %g: error > %g", what, i, acc[i], ref, tol)
			}
		}
	}
}

// TestAxpyPanelsBF16Pairs checks AxpyPanelsBF16Pairs on every
// implementation against the float64 reference of the widened values at
// their pair-interleaved places within AxpyRows' bound, odd n included
// (the last pair row's odd half NaN: never used), and that it writes
// only the panels' columns of its rows.
func TestAxpyPanelsBF16Pairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	nan := uint16(math.Float32bits(float32(math.NaN())) >> 16)
	for _, im := range dotImpls() {
		if im.unavailable != "" {
			continue
		}
		for _, rows := range []int{1, 2, 3, 4, 6} {
			for _, n := range []int{1, 2, 5, 16, 128, 131} {
				panels := 1 + rng.IntN(3)
				pr := (n + 1) / 2 // pair rows
				lda, ldx, vstride := panels*32+3, n+1, pr*64+64
				x := dotFill(rng, (rows-1)*ldx+n)
				v := make([]uint16, (panels-1)*vstride+pr*64)
				for i := range v {
					v[i] = uint16(math.Float32bits(rng.Float32()*2-1) >> 16)
					if i%vstride/64 == pr-1 && n%2 == 1 && i%2 == 1 {
						v[i] = nan // k = n, past the last
					}
				}
				acc0 := dotFill(rng, rows*lda)
				acc := append([]float32(nil), acc0...)
				axpyPanelsBF16PairsOn(&im, acc, lda, x, ldx, rows, n, v, vstride, panels)
				checkPanelsBF16(t, fmt.Sprintf("%s: AxpyPanelsBF16Pairs rows %d n %d panels %d", im.isa, rows, n, panels),
					acc, acc0, lda, x, ldx, rows, n, v, 32, panels, func(pi, j, c int) int { return pi*vstride + j/2*64 + 2*c + j%2 })
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("AxpyPanelsBF16Pairs with a short v: no panic")
		}
	}()
	AxpyPanelsBF16Pairs(make([]float32, 32), 32, make([]float32, 5), 5, 1, 5, make([]uint16, 191), 192, 1)
}
