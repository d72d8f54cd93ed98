// Command dot generates kernels/dot_amd64.s, the AVX2 kernels of DotRows
// and AxpyRows and the AVX-512 kernel of AxpyRows (package kernels,
// dot.go), with avo:
//
//	cd kernels/_asm && go run ./dot -out ../dot_amd64.s
//
// (or `go generate ./kernels/`). Each kernel is written generic over the
// vector width. DotRows has only the AVX2 (ymm) variant: it runs only
// under the kv-packing ablation (the row-major cache). AxpyRows, decode
// attention's kernel on the producer-packed cache for both QKᵀ and P·V
// (engine/attention.go), has both: on zmm it issues half the FMAs.
//
// Both kernels keep eight independent FMA chains in flight (eight rows of
// k for dotRows8, eight accumulator vectors for axpyRows), enough to cover
// the 4-cycle FMA latency at two FMAs per cycle; each FMA reads its second
// operand from memory.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type isa struct {
	Name  string
	Vec   []VecPhysical
	Bytes int
}

func (v isa) shift() uint64 { // log2(lanes)
	if v.Bytes == 64 {
		return 4
	}
	return 3
}

var (
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}

	avx2   = isa{Name: "AVX2", Vec: ymm, Bytes: 32}
	avx512 = isa{Name: "AVX512", Vec: zmm, Bytes: 64}
)

func main() {
	ConstraintExpr("!purego")
	genDotRows8(avx2)
	genTransposeRows8()
	genAxpyRows(avx2)
	genAxpyRows(avx512)
	for _, bf16 := range []bool{false, true} {
		for r := 1; r <= 4; r++ {
			genAxpyPanels(r, bf16)
		}
	}
	for r := 1; r <= 4; r++ {
		genAxpyPanelsPairs(r)
	}
	Generate()
}

func at(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

// genTransposeRows8 emits
//
//	func transposeRows8AVX2(dst []float32, ldd int, src []float32, lds, n int)
//
// for d < n and j < 8:
//
//	dst[d·ldd+j] = src[j·lds+d]
//
// n a nonzero multiple of 8 and the lengths trusted. Per block of eight
// columns: the eight rows' vectors loaded, transposed in registers (the
// classic 8×8: VUNPCKLPS/VUNPCKHPS interleave pairs of rows, VSHUFPS
// gathers four rows' elements, VPERM2F128 joins the 128-bit halves) and
// stored as eight vectors of eight, one per column. Only moves: exact.
func genTransposeRows8() {
	fn := "transposeRows8AVX2"
	TEXT(fn, NOSPLIT, "func(dst []float32, ldd int, src []float32, lds, n int)")
	d0 := Load(Param("dst").Base(), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd) // bytes
	s0 := Load(Param("src").Base(), GP64())
	lds := Load(Param("lds"), GP64())
	SHLQ(U8(2), lds)
	cnt := Load(Param("n"), GP64())
	SHRQ(U8(3), cnt) // blocks of eight columns
	lds3, ldd3, d4, s4, ldd8 := GP64(), GP64(), GP64(), GP64(), GP64()
	LEAQ(Mem{Base: lds, Index: lds, Scale: 2}, lds3)
	LEAQ(Mem{Base: ldd, Index: ldd, Scale: 2}, ldd3)
	LEAQ(Mem{Base: s0, Index: lds, Scale: 4}, s4)
	LEAQ(Mem{Base: d0, Index: ldd, Scale: 4}, d4)
	MOVQ(ldd, ldd8)
	SHLQ(U8(3), ldd8)
	rows := func(base, ld, ld3 Register) []Mem {
		return []Mem{{Base: base}, {Base: base, Index: ld, Scale: 1}, {Base: base, Index: ld, Scale: 2}, {Base: base, Index: ld3, Scale: 1}}
	}
	src := append(rows(s0, lds, lds3), rows(s4, lds, lds3)...)
	dst := append(rows(d0, ldd, ldd3), rows(d4, ldd, ldd3)...)
	r, t := ymm[0:8], ymm[8:16]

	Label(fn + "_block")
	for j, m := range src {
		VMOVUPS(m, r[j]) // row j: a_j0 .. a_j7 (columns of this block)
	}
	// t: pairs of rows interleaved, per 128-bit half.
	for k := 0; k < 4; k++ {
		VUNPCKLPS(r[2*k+1], r[2*k], t[2*k])   // r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]
		VUNPCKHPS(r[2*k+1], r[2*k], t[2*k+1]) // r0[2] r1[2] r0[3] r1[3] | r0[6] r1[6] r0[7] r1[7]
	}
	// r: four rows' elements of one column per 128-bit half.
	for h := 0; h < 2; h++ {
		a, b := t[4*h:4*h+2], t[4*h+2:4*h+4]    // rows 4h, 4h+1 and 4h+2, 4h+3
		VSHUFPS(U8(0x44), b[0], a[0], r[4*h+0]) // column 0 | 4 of rows 4h..4h+3
		VSHUFPS(U8(0xEE), b[0], a[0], r[4*h+1]) // column 1 | 5
		VSHUFPS(U8(0x44), b[1], a[1], r[4*h+2]) // column 2 | 6
		VSHUFPS(U8(0xEE), b[1], a[1], r[4*h+3]) // column 3 | 7
	}
	// t: whole columns, rows 0-3 from r[0:4]'s halves and 4-7 from r[4:8]'s.
	for c := 0; c < 4; c++ {
		VPERM2F128(U8(0x20), r[4+c], r[c], t[c])   // column c: low halves
		VPERM2F128(U8(0x31), r[4+c], r[c], t[4+c]) // column c+4: high halves
	}
	for c, m := range dst {
		VMOVUPS(t[c], m)
	}
	ADDQ(U8(32), s0)
	ADDQ(U8(32), s4)
	ADDQ(ldd8, d0)
	ADDQ(ldd8, d4)
	DECQ(cnt)
	JNZ(LabelRef(fn + "_block"))
	VZEROUPPER()
	RET()
}

// genDotRows8 emits
//
//	func dotRows8<ISA>(out, q, k []float32, ldk int)
//
// for groups of eight rows g < len(out)/8 and r < 8:
//
//	out[8g+r] = Σ_i q[i]·k[(8g+r)·ldk+i]     i < len(q)
//
// len(q) a nonzero multiple of the lanes and len(out) a nonzero multiple of
// 8, both trusted. Row r of a group accumulates in its own vector (lane l
// sums the i ≡ l (mod lanes)), then the eight vectors are reduced to the
// eight sums with a tree of pairwise additions.
func genDotRows8(v isa) {
	fn := "dotRows8" + v.Name
	TEXT(fn, NOSPLIT, "func(out, q, k []float32, ldk int)")
	outp := Load(Param("out").Base(), GP64())
	groups := Load(Param("out").Len(), GP64())
	SHRQ(U8(3), groups)
	qbase := Load(Param("q").Base(), GP64())
	nv := Load(Param("q").Len(), GP64())
	SHRQ(U8(v.shift()), nv)
	kbase := Load(Param("k").Base(), GP64())
	ld := Load(Param("ldk"), GP64())
	SHLQ(U8(2), ld) // bytes
	ld3 := GP64()
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)

	acc := v.Vec[0:8]
	qv := v.Vec[8]
	qp, k0, k4, cnt := GP64(), GP64(), GP64(), GP64()

	Label(fn + "_group")
	for _, a := range acc {
		// VEX VXORPS on the ymm half zeroes the whole register (also a
		// zmm), with AVX only (the EVEX VXORPS on zmm needs AVX512DQ).
		VXORPS(a.AsY(), a.AsY(), a.AsY())
	}
	MOVQ(qbase, qp)
	MOVQ(kbase, k0)
	LEAQ(Mem{Base: kbase, Index: ld, Scale: 4}, k4)
	MOVQ(nv, cnt)

	// acc[r] = fma(q[i:i+lanes], k_r[i:i+lanes], acc[r]) for the rows
	// k_r at k0 + r·ld (r < 4) and k4 + (r-4)·ld.
	Label(fn + "_vec")
	VMOVUPS(at(qp, 0), qv)
	for h, base := range []Register{k0, k4} {
		rows := []Mem{
			{Base: base},
			{Base: base, Index: ld, Scale: 1},
			{Base: base, Index: ld, Scale: 2},
			{Base: base, Index: ld3, Scale: 1},
		}
		for r, m := range rows {
			VFMADD231PS(m, qv, acc[4*h+r])
		}
	}
	ADDQ(U32(v.Bytes), qp)
	ADDQ(U32(v.Bytes), k0)
	ADDQ(U32(v.Bytes), k4)
	DECQ(cnt)
	JNZ(LabelRef(fn + "_vec"))

	// The eight row sums into one ymm: [Σacc0, ..., Σacc7].
	y := make([]VecPhysical, 8)
	for r, a := range acc {
		y[r] = a.AsY().(VecPhysical)
		if v.Bytes == 64 {
			VEXTRACTF64X4(U8(1), a, qv.AsY())
			VADDPS(qv.AsY(), y[r], y[r])
		}
	}
	// VHADDPS b, a, d: d = [a0+a1, a2+a3, b0+b1, b2+b3] in each 128-bit half.
	VHADDPS(y[1], y[0], y[0])
	VHADDPS(y[3], y[2], y[2])
	VHADDPS(y[5], y[4], y[4])
	VHADDPS(y[7], y[6], y[6])
	VHADDPS(y[2], y[0], y[0])              // rows 0-3: low half from lanes 0-3, high half from lanes 4-7
	VHADDPS(y[6], y[4], y[4])              // rows 4-7
	VPERM2F128(U8(0x20), y[4], y[0], y[1]) // [rows 0-3 low, rows 4-7 low]
	VPERM2F128(U8(0x31), y[4], y[0], y[2]) // [rows 0-3 high, rows 4-7 high]
	VADDPS(y[2], y[1], y[1])
	VMOVUPS(y[1], at(outp, 0))

	ADDQ(U32(32), outp)
	LEAQ(Mem{Base: kbase, Index: ld, Scale: 8}, kbase)
	DECQ(groups)
	JNZ(LabelRef(fn + "_group"))
	VZEROUPPER()
	RET()
}

// genAxpyRows emits
//
//	func axpyRows<ISA>(acc, p, v []float32, ldv int)
//
// computing, for i < len(acc):
//
//	acc[i] += Σ_j p[j]·v[j·ldv+i]     j < len(p)
//
// len(acc) a nonzero multiple of the lanes and len(p) nonzero, both
// trusted. The columns go in chunks of eight vectors, then four, two,
// one, each chunk's accumulators held in registers over all j. Every
// chunk keeps eight FMA chains in flight (the 4-cycle FMA latency at two
// FMAs per cycle): a chunk of w vectors has 8/w sets of accumulators,
// set s summing the rows j ≡ s (mod 8/w) with one FMA per element and
// row, in order of j; the sets are added to the first (s = 0 holding the
// prior acc) at the end of the chunk, in order of s. A chunk of four
// vectors is one 128-byte row of a 32-wide K or V panel (decode
// attention on the producer-packed cache, engine/attention.go): with one
// set it ran at half the FMA rate, bound by the latency of four chains.
//
// The AVX-512 variant is the same code on zmm registers (two FMAs per
// 32-wide panel row instead of four: decode's FMAs at half the
// instructions, on CPUs with full-width 512-bit FMA units such as Zen 5).
//
// Each row's lines of the chunk are prefetched axpyPrefetchRows rows
// ahead (PREFETCHT0 at v + (j+axpyPrefetchRows)·ldv): decode reads each
// panel once, from memory, and the hardware prefetchers alone leave the
// stream idle while the row's FMAs run (a prefetch past the end of v
// does not fault).
func genAxpyRows(v isa) {
	fn := "axpyRows" + v.Name
	TEXT(fn, NOSPLIT, "func(acc, p, v []float32, ldv int)")
	ap := Load(Param("acc").Base(), GP64())
	nv := Load(Param("acc").Len(), GP64())
	SHRQ(U8(v.shift()), nv)
	pbase := Load(Param("p").Base(), GP64())
	np := Load(Param("p").Len(), GP64())
	vbase := Load(Param("v").Base(), GP64())
	ld := Load(Param("ldv"), GP64())
	SHLQ(U8(2), ld) // bytes
	pp, vp, cnt, pf := GP64(), GP64(), GP64(), GP64()
	pfd := GP64() // axpyPrefetchRows·ldv bytes
	MOVQ(ld, pfd)
	SHLQ(U8(axpyPrefetchShift), pfd)

	for _, w := range []int{8, 4, 2, 1} {
		sets := 8 / w
		acc := make([][]VecPhysical, sets)
		for s := range acc {
			acc[s] = v.Vec[s*w : (s+1)*w]
		}
		pb := v.Vec[8 : 8+sets]
		lines := max(1, w*v.Bytes/64) // cache lines of one row of the chunk
		name := fmt.Sprintf("%s_w%d", fn, w)
		// while nv >= w
		SUBQ(U32(w), nv)
		JL(LabelRef(name + "_done"))
		Label(name + "_chunk")
		for c, a := range acc[0] {
			VMOVUPS(at(ap, c*v.Bytes), a)
		}
		for _, set := range acc[1:] {
			for _, a := range set {
				VXORPS(a.AsY(), a.AsY(), a.AsY())
			}
		}
		MOVQ(pbase, pp)
		MOVQ(vbase, vp)
		MOVQ(np, cnt)
		// row runs one row j into set s: broadcast p[j], prefetch its
		// lines axpyPrefetchRows rows ahead, one FMA per vector.
		row := func(s int) {
			VBROADCASTSS(at(pp, 4*s), pb[s])
			LEAQ(Mem{Base: vp, Index: pfd, Scale: 1}, pf)
			for l := range lines {
				PREFETCHT0(at(pf, 64*l))
			}
			for c, a := range acc[s] {
				VFMADD231PS(at(vp, c*v.Bytes), pb[s], a)
			}
			ADDQ(ld, vp)
		}
		if sets > 1 {
			// while cnt >= sets: one row into each set
			SUBQ(U32(sets), cnt)
			JL(LabelRef(name + "_tail"))
			Label(name + "_rows")
			for s := range sets {
				row(s)
			}
			ADDQ(U32(4*sets), pp)
			SUBQ(U32(sets), cnt)
			JGE(LabelRef(name + "_rows"))
			Label(name + "_tail")
			ADDQ(U32(sets), cnt)
			JZ(LabelRef(name + "_sum"))
		}
		// the last rows (fewer than sets) into set 0
		Label(name + "_row")
		row(0)
		ADDQ(U32(4), pp)
		DECQ(cnt)
		JNZ(LabelRef(name + "_row"))
		if sets > 1 {
			Label(name + "_sum")
			for _, set := range acc[1:] {
				for c, a := range set {
					VADDPS(a, acc[0][c], acc[0][c])
				}
			}
		}
		for c, a := range acc[0] {
			VMOVUPS(a, at(ap, c*v.Bytes))
		}
		ADDQ(U32(w*v.Bytes), ap)
		ADDQ(U32(w*v.Bytes), vbase)
		SUBQ(U32(w), nv)
		JGE(LabelRef(name + "_chunk"))
		Label(name + "_done")
		ADDQ(U32(w), nv)
	}
	VZEROUPPER()
	RET()
}

// axpyPrefetchRows = 1<<axpyPrefetchShift is how many rows ahead
// axpyRows prefetches: 16 rows of a 32-wide panel are 2 KiB.
const axpyPrefetchShift = 4

// axpyPanelsPFDist is how many bytes ahead of the panel row being read
// the panel kernels (genAxpyPanels, genAxpyPanelsPairs) prefetch. Decode
// attention's KV at a cache level's edge needs more in flight than 2 KiB:
// measured with `bench attention --batches 1,2,4,8,16 --widths 1
// --placement cores` on the 2-vCPU Zen 5 VM (fraction of the read kernel
// over the same bytes measured beside each figure, 3 alternated rounds,
// 2 threads): at 2 KiB batch 4 (33.6 MB) 59-69% and batch 8 50-55%, at 6
// KiB 72-76% and 56-63%, at 8 KiB 69-74% and 60-65%; batches 1, 2 and 16
// within noise of each other (78-85%, 70-76%); the bf16 cache at 6 KiB
// 67-69% (batches 2, 4) and 57% (8) against 60-66% and 47-50% at 2 KiB.
const axpyPanelsPFDist = 6144

// genAxpyPanels emits, for R = rows (1 to 4), on AVX-512:
//
//	func axpyPanels32AVX512R<R>(acc []float32, lda int, x []float32, ldx int, v []float32, vstride, n, panels int)
//
// computing, for panels pi < panels, rows r < R and columns c < 32:
//
//	acc[r·lda + 32·pi + c] += Σ_j x[r·ldx + j]·v[pi·vstride + 32·j + c]     j < n
//
// the few-row product of decode attention on 32-wide panels (QKᵀ: x the
// queries, v the K panels; P·V: x the probabilities, v the V panels),
// every panel row (128 bytes, two zmm) loaded once for all R rows.
// Lengths trusted (n, panels ≥ 1). The FMA chains: 2·R per set of
// accumulators, 8/(2R) sets (R = 1, 2; one for 3 and 4) summing the
// rows j ≡ s (mod sets), the last n%sets rows into set 0, the sets added
// to set 0 (holding the prior acc) at the end of each panel. Each panel
// row's two lines are prefetched axpyPanelsPFDist bytes ahead.
//
// With bf16 set it emits axpyPanels32BF16AVX512R<R>, the same product on
// panels of bfloat16 elements (v []uint16; vstride in elements): each
// panel row (64 bytes, one line) widened to two zmm of fp32 (VPMOVZXWD,
// VPSLLD 16: exact) before its FMAs, prefetched axpyPanelsPFDist bytes
// ahead.
//
// Both run at about one panel row per 0.55 ns on one thread with the
// panels in L1 or L2 (go test -bench AxpyPanels ./kernels, R = 2, Zen 5
// VM at 4.53 GHz, 2026-11-27: 2.5 cycles a row against the 2 of its 4
// FMAs), so the bf16 kernel streams half fp32's bytes a second: 115-120
// GB/s against 223-227 at 512 KiB. Tried there and left out: four sets
// of accumulators instead of two (no change), and FMAs with an embedded
// broadcast of x in place of VBROADCASTSS (slower: fp32 156 GB/s); a
// timing probe without the broadcasts (wrong sums) ran fp32 6% faster and
// bf16 no faster, so bf16's two VPMOVZXWD a row share the bound with its
// FMAs. Tried and not kept (2026-11-27): a VDPBF16PS kernel on
// bf16-rounded queries and probabilities (two panel rows interleaved by
// VPUNPCKLWD/VPUNPCKHWD, two products an instruction; llama.cpp's CPU
// flash attention also rounds Q to bf16 for a bf16 K cache), with an
// AVX-512 pair packer: 1.7× this kernel in L1/L2 (164-184 against 98-108
// GB/s), but bench attention's bf16 decode on 2 threads moved only 3-7%
// (context 1024, batch 1: 0.025 against 0.026 ms; 4096: 0.099-0.105
// against 0.107-0.109, 69-73% of the read kernel against 67-69%) while
// its output error against the cache's own K and V rose from 4e-8 to
// 1.7e-4: the per-job costs and the L3 stream, not the FMAs, bound it
// there. A bf16
// cache's decode attention is therefore bound by its FMAs where the KV
// sits in L3 (bench attention --kv-dtype bf16, 2 threads: 52-71% of the
// read kernel over the same bytes at context 1024, 84-102% at 4096 where
// the KV streams from DRAM).
func genAxpyPanels(R int, bf16 bool) {
	fn := fmt.Sprintf("axpyPanels32AVX512R%d", R)
	sig := "func(acc []float32, lda int, x []float32, ldx int, v []float32, vstride, n, panels int)"
	rowBytes := 128
	if bf16 {
		fn = fmt.Sprintf("axpyPanels32BF16AVX512R%d", R)
		sig = "func(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)"
		rowBytes = 64
	}
	k := newPanelKernel(fn, sig, R, uint8(rowBytes/64)) // vstride elements to bytes: ·4 (fp32), ·2 (bf16)
	vv := []VecPhysical{Z12, Z13}
	bc := Z14

	k.begin()
	Load(Param("n"), k.cnt)
	row := func(s int) {
		PREFETCHT0(Mem{Base: k.vp, Disp: axpyPanelsPFDist})
		if bf16 {
			for h, z := range vv {
				VPMOVZXWD(Mem{Base: k.vp, Disp: 32 * h}, z)
				VPSLLD(U8(16), z, z)
			}
		} else {
			PREFETCHT0(Mem{Base: k.vp, Disp: axpyPanelsPFDist + 64})
			VMOVUPS(Mem{Base: k.vp}, vv[0])
			VMOVUPS(Mem{Base: k.vp, Disp: 64}, vv[1])
		}
		for r := range R {
			VBROADCASTSS(k.x(r, 4*s), bc)
			VFMADD231PS(vv[0], bc, k.acc[s][2*r])
			VFMADD231PS(vv[1], bc, k.acc[s][2*r+1])
		}
		ADDQ(U32(rowBytes), k.vp)
	}
	k.rows(row, 4, fn+"_sum")
	k.end(k.sets > 1)
}

// panelKernel is the scaffolding of the panel kernels (genAxpyPanels,
// genAxpyPanelsPairs): the arguments in registers (lda, ldx and vstride
// in bytes), the R rows' accumulators in sets (acc[s][2r+h], h the
// panel's two 16-lane halves), and the loops over panels and their rows.
type panelKernel struct {
	fn                                string
	R, sets                           int
	ap, lda, lda3, xbase, ldx, ldx3   Register
	vbase, vstride, npan, xp, vp, cnt Register
	acc                               [][]VecPhysical
}

// newPanelKernel starts function fn of signature sig for R rows (1 to 4)
// and loads its arguments, vstride shifted left by vShift (elements to
// bytes); 8/(2R) sets of accumulators (one for R = 3, 4) in Z0...
func newPanelKernel(fn, sig string, R int, vShift uint8) *panelKernel {
	TEXT(fn, NOSPLIT, sig)
	k := &panelKernel{fn: fn, R: R, sets: max(1, 8/(2*R))}
	k.ap = Load(Param("acc").Base(), GP64())
	k.lda = Load(Param("lda"), GP64())
	SHLQ(U8(2), k.lda)
	k.xbase = Load(Param("x").Base(), GP64())
	k.ldx = Load(Param("ldx"), GP64())
	SHLQ(U8(2), k.ldx)
	k.vbase = Load(Param("v").Base(), GP64())
	k.vstride = Load(Param("vstride"), GP64())
	SHLQ(U8(vShift), k.vstride)
	k.npan = Load(Param("panels"), GP64())
	if R == 4 {
		k.lda3, k.ldx3 = GP64(), GP64()
		LEAQ(Mem{Base: k.lda, Index: k.lda, Scale: 2}, k.lda3)
		LEAQ(Mem{Base: k.ldx, Index: k.ldx, Scale: 2}, k.ldx3)
	}
	k.xp, k.vp, k.cnt = GP64(), GP64(), GP64()
	k.acc = make([][]VecPhysical, k.sets)
	for s := range k.acc {
		k.acc[s] = zmm[s*2*R : (s+1)*2*R]
	}
	return k
}

// rowAt is row r of a matrix at base with row stride ld (ld3 = 3·ld), disp bytes in.
func rowAt(base, ld, ld3 Register, r, disp int) Mem {
	switch r {
	case 0:
		return Mem{Base: base, Disp: disp}
	case 1:
		return Mem{Base: base, Index: ld, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: base, Index: ld, Scale: 2, Disp: disp}
	}
	return Mem{Base: base, Index: ld3, Scale: 1, Disp: disp}
}

// x is row r of x at the current step, disp bytes in.
func (k *panelKernel) x(r, disp int) Mem { return rowAt(k.xp, k.ldx, k.ldx3, r, disp) }

// begin opens a panel: set 0 of the accumulators loaded from acc, the
// others zeroed, x and v at their starts.
func (k *panelKernel) begin() {
	Label(k.fn + "_panel")
	for r := range k.R {
		for h := range 2 {
			VMOVUPS(rowAt(k.ap, k.lda, k.lda3, r, 64*h), k.acc[0][2*r+h])
		}
	}
	for _, set := range k.acc[1:] {
		for _, a := range set {
			VXORPS(a.AsY(), a.AsY(), a.AsY())
		}
	}
	MOVQ(k.xbase, k.xp)
	MOVQ(k.vbase, k.vp)
}

// rows emits the loop over cnt (≥ 1) steps: groups of sets steps,
// row(s) into set s, x advancing xStep bytes a step; then the last cnt %
// sets steps into set 0; with more than one set, a count that runs out
// at the groups' end jumps to exit.
func (k *panelKernel) rows(row func(s int), xStep int, exit string) {
	fn := k.fn
	if k.sets > 1 {
		SUBQ(U32(k.sets), k.cnt)
		JL(LabelRef(fn + "_tail"))
		Label(fn + "_rows")
		for s := range k.sets {
			row(s)
		}
		ADDQ(U32(xStep*k.sets), k.xp)
		SUBQ(U32(k.sets), k.cnt)
		JGE(LabelRef(fn + "_rows"))
		Label(fn + "_tail")
		ADDQ(U32(k.sets), k.cnt)
		JZ(LabelRef(exit))
	}
	Label(fn + "_row")
	row(0)
	ADDQ(U32(xStep), k.xp)
	DECQ(k.cnt)
	JNZ(LabelRef(fn + "_row"))
}

// end closes a panel (at label _sum where sumLabel): the sets added to
// set 0, stored to acc, the next panel; then the function's end.
func (k *panelKernel) end(sumLabel bool) {
	if sumLabel {
		Label(k.fn + "_sum")
	}
	for _, set := range k.acc[1:] {
		for c, a := range set {
			VADDPS(a, k.acc[0][c], k.acc[0][c])
		}
	}
	for r := range k.R {
		for h := range 2 {
			VMOVUPS(k.acc[0][2*r+h], rowAt(k.ap, k.lda, k.lda3, r, 64*h))
		}
	}
	ADDQ(U32(128), k.ap)
	ADDQ(k.vstride, k.vbase)
	DECQ(k.npan)
	JNZ(LabelRef(k.fn + "_panel"))
	VZEROUPPER()
	RET()
}

// genAxpyPanelsPairs emits, for R = rows (1 to 4), on AVX-512:
//
//	func axpyPanels32PairsAVX512R<R>(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)
//
// computing, for panels pi < panels, rows r < R and columns c < 32:
//
//	acc[r·lda + 32·pi + c] += Σ_j x[r·ldx + j]·bf16(v[pi·vstride + 64·(j/2) + 2c + j%2])     j < n
//
// AxpyPanels on bfloat16 panels whose consecutive k come in pairs per
// column (the AMX B tile layout, "VNNI" order: gemm.AMXPanelIndex), so a
// pair row (128 bytes, two lines) holds k = 2q and 2q+1 of all 32
// columns. Each 64-byte half is one zmm of 16 dwords, a column's pair
// each: VPSLLD 16 gives the even k as fp32 and VPANDD with 0xFFFF0000 the
// odd k (both exact), each FMA'd with its own broadcast of x. The sums
// run as genAxpyPanels' over pair rows (8/(2R) sets of accumulators for R
// = 1, 2, one for 3 and 4; pair row q into set q mod sets, the last
// (n/2)%sets into set 0, even k before odd), then an odd n's last k
// (the even half of one more pair row, which is read whole) into set 0.
// Each pair row's two lines are prefetched axpyPanelsPFDist bytes ahead.
func genAxpyPanelsPairs(R int) {
	fn := fmt.Sprintf("axpyPanels32PairsAVX512R%d", R)
	k := newPanelKernel(fn, "func(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)", R, 1)
	mask := Z10
	tmp := GP32()
	MOVL(U32(0xffff0000), tmp)
	VPBROADCASTD(tmp, mask)
	even := []VecPhysical{Z8, Z9}
	odd := []VecPhysical{Z12, Z13}
	bce, bco := Z14, Z15

	k.begin()
	Load(Param("n"), k.cnt)
	SHRQ(U8(1), k.cnt) // whole pair rows
	// pair emits one pair row into set s (x at xp + 8s), both k with
	// withOdd, else the even k only.
	pair := func(s int, withOdd bool) {
		PREFETCHT0(Mem{Base: k.vp, Disp: axpyPanelsPFDist})
		PREFETCHT0(Mem{Base: k.vp, Disp: axpyPanelsPFDist + 64})
		for h := range 2 {
			VMOVDQU32(Mem{Base: k.vp, Disp: 64 * h}, odd[h])
			VPSLLD(U8(16), odd[h], even[h])
			if withOdd {
				VPANDD(mask, odd[h], odd[h])
			}
		}
		for r := range R {
			VBROADCASTSS(k.x(r, 8*s), bce)
			VFMADD231PS(even[0], bce, k.acc[s][2*r])
			VFMADD231PS(even[1], bce, k.acc[s][2*r+1])
			if withOdd {
				VBROADCASTSS(k.x(r, 8*s+4), bco)
				VFMADD231PS(odd[0], bco, k.acc[s][2*r])
				VFMADD231PS(odd[1], bco, k.acc[s][2*r+1])
			}
		}
		ADDQ(U32(128), k.vp)
	}
	TESTQ(k.cnt, k.cnt)
	JZ(LabelRef(fn + "_odd"))
	k.rows(func(s int) { pair(s, true) }, 8, fn+"_odd")
	Label(fn + "_odd")
	Load(Param("n"), k.cnt)
	TESTQ(U32(1), k.cnt)
	JZ(LabelRef(fn + "_sum"))
	pair(0, false)
	k.end(true)
}
