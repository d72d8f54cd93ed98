package kernels

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/kernels/registry"
)

// The attention vector kernels: DotRows (a query against a run of keys, the
// scores of decode) and AxpyRows (probabilities times a run of values, the
// weighted sum of decode), and TransposeRows8 (eight positions of K into a
// panel of the producer-packed KV cache, prefill's kv_write). dot.go holds the API and the pure-Go
// implementation; dot_amd64.go/.s the AVX2 kernels and AxpyRows' AVX-512 one, generated
// by the avo program in _asm/dot:
//
//go:generate sh -c "cd _asm && GOWORK=off go run ./dot -out ../dot_amd64.s"
//
// The implementation is the best of dotRegistry (kernels/registry's ISA
// order: AVX-512F+FMA, AVX2+FMA, else Go), chosen once per CPU feature set, so
// cpu.Disable... and BENCH_CPU_DISABLE take effect; -tags=purego and
// GOARCH other than amd64 use Go.
//
// Accuracy: the implementations differ only in the order of their fp32
// sums (the assembly keeps one partial sum per vector lane and per row, and
// uses FMA). Per element, with u = 2^-24 (tested in dot_test.go):
//
//	DotRows   |out[j] - q·k_j| ≤ (len(q)+2)·u·Σ_i |q[i]·k_j[i]|
//	AxpyRows  |acc'[i] - exact| ≤ (len(p)+2)·u·(|acc[i]| + Σ_j |p[j]·v_j[i]|)

// DotRows sets out[j] to the dot product of q with row j of k, for the n
// rows k_j = k[j·ldk : j·ldk+len(q)]:
//
//	for j := range n {
//		var s float32
//		for i := range q {
//			s += q[i] * k[j*ldk+i]
//		}
//		out[j] = s
//	}
//
// It writes out[:n] and nothing else. It panics if n or ldk is negative,
// len(out) < n, or k is shorter than (n-1)·ldk + len(q) (n > 0).
func DotRows(out, q, k []float32, ldk, n int) {
	if n < 0 || ldk < 0 || len(out) < n || (n > 0 && len(k) < (n-1)*ldk+len(q)) {
		panic(fmt.Sprintf("kernels: DotRows: n %d, ldk %d, len(out) %d, len(q) %d, len(k) %d: want n, ldk ≥ 0, len(out) ≥ n, len(k) ≥ (n-1)·ldk+len(q)", n, ldk, len(out), len(q), len(k)))
	}
	if n == 0 {
		return
	}
	bestDot().dotRows(out[:n], q, k, ldk)
}

// AxpyRows adds to acc the rows of v weighted by p, for the len(p) rows
// v_j = v[j·ldv : j·ldv+len(acc)]:
//
//	for j := range p {
//		for i := range acc {
//			acc[i] += p[j] * v[j*ldv+i]
//		}
//	}
//
// It panics if ldv is negative or v is shorter than (len(p)-1)·ldv +
// len(acc) (len(p) > 0).
func AxpyRows(acc, p, v []float32, ldv int) {
	if ldv < 0 || (len(p) > 0 && len(v) < (len(p)-1)*ldv+len(acc)) {
		panic(fmt.Sprintf("kernels: AxpyRows: ldv %d, len(acc) %d, len(p) %d, len(v) %d: want ldv ≥ 0, len(v) ≥ (len(p)-1)·ldv+len(acc)", ldv, len(acc), len(p), len(v)))
	}
	if len(p) == 0 || len(acc) == 0 {
		return
	}
	bestDot().axpyRows(acc, p, v, ldv)
}

// TransposeRows8 stores the first n elements of eight rows of src (row j
// at j·lds) as n runs of eight in dst (run d at d·ldd): the producer's
// write of eight positions of K into a K panel of the attention's KV
// cache (engine/kvcache.go: element d of position j at d·NR + j):
//
//	for d := range n {
//		for j := range 8 {
//			dst[d*ldd+j] = src[j*lds+d]
//		}
//	}
//
// It writes those elements of dst and nothing else, exactly (moves only).
// It panics if n, ldd or lds is negative, or src is shorter than 7·lds +
// n or dst than (n−1)·ldd + 8 (n > 0).
func TransposeRows8(dst []float32, ldd int, src []float32, lds, n int) {
	if n < 0 || ldd < 0 || lds < 0 || (n > 0 && (len(src) < 7*lds+n || len(dst) < (n-1)*ldd+8)) {
		panic(fmt.Sprintf("kernels: TransposeRows8: n %d, ldd %d, lds %d, len(dst) %d, len(src) %d: want n, ldd, lds ≥ 0, len(src) ≥ 7·lds+n, len(dst) ≥ (n-1)·ldd+8", n, ldd, lds, len(dst), len(src)))
	}
	if n == 0 {
		return
	}
	if f := bestDot().transposeRows8; f != nil {
		f(dst, ldd, src, lds, n)
		return
	}
	transposeRows8Go(dst, ldd, src, lds, n)
}

// transposeRows8Go is TransposeRows8's specification, on checked
// arguments.
func transposeRows8Go(dst []float32, ldd int, src []float32, lds, n int) {
	r0 := src[:n]
	r1, r2, r3 := src[lds:][:n], src[2*lds:][:n], src[3*lds:][:n]
	r4, r5, r6, r7 := src[4*lds:][:n], src[5*lds:][:n], src[6*lds:][:n], src[7*lds:][:n]
	for d := range r0 {
		o := dst[d*ldd:][:8]
		o[0], o[1], o[2], o[3] = r0[d], r1[d], r2[d], r3[d]
		o[4], o[5], o[6], o[7] = r4[d], r5[d], r6[d], r7[d]
	}
}

// AxpyPanels adds to rows r < rows of acc (row r at r·lda) the product of the rows
// of x (row r at r·ldx, n elements) with panels of v: panel pi at
// pi·vstride holds n rows of nr elements (row j at pi·vstride + j·nr),
// and its product goes to the columns pi·nr .. pi·nr+nr-1 of acc:
//
//	for pi := range panels {
//		for r := range rows {
//			AxpyRows(acc[r*lda+pi*nr : r*lda+pi*nr+nr], x[r*ldx:r*ldx+n], v[pi*vstride:], nr)
//		}
//	}
//
// It is decode attention's product on the producer-packed KV cache
// (engine/attention.go): QKᵀ with x the query rows of a KV head and v the
// K panels (n = head dim, vstride = head dim·nr), P·V with x the
// probabilities and v the V panels' runs of a tile (n = tile positions,
// vstride = the cache's panel stride). On AVX-512 with nr = 32 it runs in
// one call, up to four rows of x sharing each panel row's loads (the
// accuracy bound of AxpyRows per element, n terms); elsewhere as the loop
// above. It panics, naming the values, if a count or stride is negative
// or a slice is too short for what it reads or writes.
func AxpyPanels(acc []float32, lda int, x []float32, ldx, rows, n int, v []float32, nr, vstride, panels int) {
	axpyPanelsOn(bestDot(), acc, lda, x, ldx, rows, n, v, nr, vstride, panels)
}

// checkAxpyPanels panics on AxpyPanels' (or AxpyPanelsBF16's, as name)
// bad arguments and says whether there is any work.
func checkAxpyPanels(name string, lenAcc, lda, lenX, ldx, rows, n, lenV, nr, vstride, panels int) bool {
	if rows < 0 || n < 0 || panels < 0 || lda < 0 || ldx < 0 || nr < 0 || vstride < 0 {
		panic(fmt.Sprintf("kernels: %s: rows %d, n %d, panels %d, lda %d, ldx %d, nr %d, vstride %d: want all ≥ 0", name, rows, n, panels, lda, ldx, nr, vstride))
	}
	if rows == 0 || n == 0 || panels == 0 || nr == 0 {
		return false
	}
	if lenAcc < (rows-1)*lda+panels*nr || lenX < (rows-1)*ldx+n || lenV < (panels-1)*vstride+n*nr {
		panic(fmt.Sprintf("kernels: %s: len(acc) %d, len(x) %d, len(v) %d: want ≥ %d, %d, %d (rows %d, n %d, panels %d, lda %d, ldx %d, nr %d, vstride %d)",
			name, lenAcc, lenX, lenV, (rows-1)*lda+panels*nr, (rows-1)*ldx+n, (panels-1)*vstride+n*nr, rows, n, panels, lda, ldx, nr, vstride))
	}
	return true
}

// axpyPanelsOn is AxpyPanels on implementation im.
func axpyPanelsOn(im *dotImpl, acc []float32, lda int, x []float32, ldx, rows, n int, v []float32, nr, vstride, panels int) {
	if !checkAxpyPanels("AxpyPanels", len(acc), lda, len(x), ldx, rows, n, len(v), nr, vstride, panels) {
		return
	}
	if im.axpyPanels32 != nil && nr == 32 {
		im.axpyPanels32(acc, lda, x, ldx, rows, n, v, vstride, panels)
		return
	}
	for pi := range panels {
		vp := v[pi*vstride:]
		for r := range rows {
			im.axpyRows(acc[r*lda+pi*nr:r*lda+pi*nr+nr], x[r*ldx:r*ldx+n], vp, nr)
		}
	}
}

// AxpyPanelsBF16 is AxpyPanels on panels of bfloat16 elements (v: the
// upper 16 bits of each fp32 value; vstride in elements), each widened to
// fp32 exactly:
//
//	for pi := range panels {
//		for r := range rows {
//			for j := range n {
//				for c := range nr {
//					acc[r*lda+pi*nr+c] += x[r*ldx+j] * math.Float32frombits(uint32(v[pi*vstride+j*nr+c])<<16)
//				}
//			}
//		}
//	}
//
// (a bf16 KV cache's decode attention: half the bytes of fp32 read).
// Accuracy as AxpyPanels'. It runs an assembly kernel where
// AxpyPanelsBF16Direct(nr) (AVX-512, nr = 32), else the Go loop above
// (slower than widening the panels into an fp32 buffer and calling
// AxpyPanels). Panics as AxpyPanels.
func AxpyPanelsBF16(acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, nr, vstride, panels int) {
	axpyPanelsBF16On(bestDot(), acc, lda, x, ldx, rows, n, v, nr, vstride, panels)
}

// AxpyPanelsBF16Direct reports whether AxpyPanelsBF16 runs an assembly
// kernel for panels of width nr on this CPU now.
func AxpyPanelsBF16Direct(nr int) bool { return nr == 32 && bestDot().axpyPanels32BF16 != nil }

// axpyPanelsBF16On is AxpyPanelsBF16 on implementation im.
func axpyPanelsBF16On(im *dotImpl, acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, nr, vstride, panels int) {
	if !checkAxpyPanels("AxpyPanelsBF16", len(acc), lda, len(x), ldx, rows, n, len(v), nr, vstride, panels) {
		return
	}
	if im.axpyPanels32BF16 != nil && nr == 32 {
		im.axpyPanels32BF16(acc, lda, x, ldx, rows, n, v, vstride, panels)
		return
	}
	for pi := range panels {
		vp := v[pi*vstride : pi*vstride+n*nr]
		for r := range rows {
			a := acc[r*lda+pi*nr : r*lda+pi*nr+nr]
			for j, xj := range x[r*ldx : r*ldx+n] {
				for c, h := range vp[j*nr : j*nr+nr] {
					a[c] += xj * math.Float32frombits(uint32(h)<<16)
				}
			}
		}
	}
}

// AxpyPanelsBF16Pairs is AxpyPanelsBF16 for nr = 32 on bfloat16 panels
// whose consecutive k come in pairs per column (the AMX B tile layout,
// "VNNI" order, gemm.AMXPanelIndex: a pair row of 64 elements holds k =
// 2q and 2q+1 of the 32 columns), each widened to fp32 exactly:
//
//	for pi := range panels {
//		for r := range rows {
//			for j := range n {
//				for c := range 32 {
//					acc[r*lda+pi*32+c] += x[r*ldx+j] * math.Float32frombits(uint32(v[pi*vstride+(j/2)*64+2*c+j%2])<<16)
//				}
//			}
//		}
//	}
//
// It is decode attention's product on a KV cache in the AMX tile layout
// (engine/kvcache.go): QKᵀ with v the K panels (n = head dim), P·V with v
// a tile's run of the V panels (n = positions). Each panel's ceil(n/2)
// pair rows are read whole (an odd n's last pair row too). Accuracy as
// AxpyPanels'. It runs an assembly kernel where AxpyPanelsBF16PairsDirect
// (AVX-512), else the Go loop above. Panics as AxpyPanels.
//
// Measured (bench attention, qwen3-0.6b, decode at context 1024, 16
// threads on a lent 16-core Emerald Rapids VM, 2026-11-27, two rounds):
// 0.025-0.031 ms a step at batch 1, 0.130-0.153 at 8 and 0.610-0.657 at
// 32, against 0.031-0.034, 0.211-0.225 and 0.718-1.049 for
// AxpyPanelsBF16 on the same cache in its 32-wide panel layout (both
// prefetching 2 KiB ahead then; on the 2-vCPU Zen 5 VM, 1 thread, L2- to
// L3-sized panels: 6-7% faster than AxpyPanelsBF16).
func AxpyPanelsBF16Pairs(acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, vstride, panels int) {
	axpyPanelsBF16PairsOn(bestDot(), acc, lda, x, ldx, rows, n, v, vstride, panels)
}

// AxpyPanelsBF16PairsDirect reports whether AxpyPanelsBF16Pairs runs an
// assembly kernel on this CPU now.
func AxpyPanelsBF16PairsDirect() bool { return bestDot().axpyPanels32Pairs != nil }

// axpyPanelsBF16PairsOn is AxpyPanelsBF16Pairs on implementation im.
func axpyPanelsBF16PairsOn(im *dotImpl, acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, vstride, panels int) {
	// The check of AxpyPanels on whole pair rows: n rounded up to even.
	if !checkAxpyPanels("AxpyPanelsBF16Pairs", len(acc), lda, len(x)+n%2, ldx, rows, n+n%2, len(v), 32, vstride, panels) {
		return
	}
	if im.axpyPanels32Pairs != nil {
		im.axpyPanels32Pairs(acc, lda, x, ldx, rows, n, v, vstride, panels)
		return
	}
	for pi := range panels {
		vp := v[pi*vstride : pi*vstride+(n+1)/2*64]
		for r := range rows {
			a := acc[r*lda+pi*32 : r*lda+pi*32+32]
			for j, xj := range x[r*ldx : r*ldx+n] {
				row := vp[j/2*64+j%2:]
				for c := range a {
					a[c] += xj * math.Float32frombits(uint32(row[2*c])<<16)
				}
			}
		}
	}
}

// dotImpl is one implementation of DotRows and AxpyRows, on checked
// arguments: dotRows writes all of out (n = len(out) ≥ 1), axpyRows gets
// len(p), len(acc) ≥ 1; axpyPanels32 (nil: none) is AxpyPanels for nr =
// 32 on checked arguments, every count ≥ 1.
type dotImpl struct {
	isa         string
	unavailable string // "" if usable now (set by dotImpls)
	// transposeRows8 (nil: transposeRows8Go) is TransposeRows8 on checked
	// arguments, n ≥ 1.
	transposeRows8 func(dst []float32, ldd int, src []float32, lds, n int)
	dotRows        func(out, q, k []float32, ldk int)
	axpyRows       func(acc, p, v []float32, ldv int)
	axpyPanels32   func(acc []float32, lda int, x []float32, ldx, rows, n int, v []float32, vstride, panels int)
	// axpyPanels32BF16 (nil: none) is AxpyPanelsBF16 for nr = 32 on
	// checked arguments, every count ≥ 1.
	axpyPanels32BF16 func(acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, vstride, panels int)
	// axpyPanels32Pairs (nil: none) is AxpyPanelsBF16Pairs on checked
	// arguments, every count ≥ 1.
	axpyPanels32Pairs func(acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, vstride, panels int)
}

var goDot = dotImpl{isa: "go", dotRows: dotRowsGo, axpyRows: axpyRowsGo}

// dotRegistry holds the DotRows/AxpyRows implementations: "go", then the
// architecture's.
var dotRegistry = func() *registry.Registry[*dotImpl] {
	r := registry.New[*dotImpl]("kernels: dot isa")
	r.Register(registry.Entry[*dotImpl]{Name: "go", ISA: "go", Value: &goDot})
	for _, e := range archDotImpls() {
		r.Register(e)
	}
	return r
}()

// dotImpls returns every implementation, best last, with availability
// evaluated now (the tests' list).
func dotImpls() []dotImpl {
	var out []dotImpl
	for _, e := range dotRegistry.All() {
		im := *e.Value
		im.unavailable = e.Unavailable()
		out = append(out, im)
	}
	return out
}

// bestDot is the best implementation available now: the registry's cached
// choice, without allocating (the engine calls it per tile row).
func bestDot() *dotImpl { return dotRegistry.BestValue("go") }

// dotRowsGo is DotRows in Go, eight rows at a time (dot8: eight independent
// sums per pass over q, each row summed in order as the specification).
func dotRowsGo(out, q, k []float32, ldk int) {
	n, hd := len(out), len(q)
	j := 0
	for ; j+8 <= n; j += 8 {
		r := out[j : j+8 : j+8]
		r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7] = dot8(q, k[j*ldk:], ldk)
	}
	for ; j < n; j++ {
		kj := k[j*ldk : j*ldk+hd][:len(q)]
		var s float32
		for i, x := range q {
			s += x * kj[i]
		}
		out[j] = s
	}
}

// axpyRowsGo is AxpyRows in Go, four rows of v per pass over acc (axpy4).
func axpyRowsGo(acc, p, v []float32, ldv int) {
	n := len(acc)
	j := 0
	for ; j+4 <= len(p); j += 4 {
		pp := p[j : j+4 : j+4]
		axpy4(acc, v[j*ldv:], ldv, pp[0], pp[1], pp[2], pp[3])
	}
	for ; j < len(p); j++ {
		pj := p[j]
		vj := v[j*ldv : j*ldv+n][:len(acc)]
		for i := range acc {
			acc[i] += pj * vj[i]
		}
	}
}

// dot8 and axpy4 are kept out of line (go:noinline): inlined into the loops
// over rows, the Go compiler (1.26, amd64) spills the loop counter and
// reloads it on every iteration, a store-to-load chain that bounds the
// loop; as leaf functions everything stays in registers and the loop is
// bound by the FP ports (eight or four independent chains): 1.3-1.8x
// faster, measured in the engine's attention decode.

// dot8 returns q·k_r for the eight rows k_r = k[r·ld : r·ld+len(q)].
//
//go:noinline
func dot8(q, k []float32, ld int) (s0, s1, s2, s3, s4, s5, s6, s7 float32) {
	n := len(q)
	k0 := k[:n]
	k1 := k[ld : ld+n]
	k2 := k[2*ld : 2*ld+n]
	k3 := k[3*ld : 3*ld+n]
	k4 := k[4*ld : 4*ld+n]
	k5 := k[5*ld : 5*ld+n]
	k6 := k[6*ld : 6*ld+n]
	k7 := k[7*ld : 7*ld+n]
	for d, x := range q {
		s0 += x * k0[d]
		s1 += x * k1[d]
		s2 += x * k2[d]
		s3 += x * k3[d]
		s4 += x * k4[d]
		s5 += x * k5[d]
		s6 += x * k6[d]
		s7 += x * k7[d]
	}
	return
}

// axpy4 adds Σ_r p_r·v_r to o for the four rows v_r = v[r·ld : r·ld+len(o)].
//
//go:noinline
func axpy4(o, v []float32, ld int, p0, p1, p2, p3 float32) {
	n := len(o)
	v0 := v[:n]
	v1 := v[ld : ld+n]
	v2 := v[2*ld : 2*ld+n]
	v3 := v[3*ld : 3*ld+n]
	for d := range o {
		o[d] += (p0*v0[d] + p1*v1[d]) + (p2*v2[d] + p3*v3[d])
	}
}
