package gemm

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/cpubench/bench/kernels/pool"
)

// Intel AMX (Sapphire Rapids and later Xeons): the backends amx-bf16
// (TDPBF16PS) and amx-int8 (TDPBSSD) run a 32×32 output tile per call on
// the tile unit, as four 16×16 C tiles (tmm0..3) fed by two A tiles (rows
// 0..15 and 16..31 of X: tmm4, tmm5) and two B tiles (columns 0..15 and
// 16..31 of the panel: tmm6, tmm7), accumulating over the whole K inside
// the tiles. Every tile is 16 rows × 64 bytes (palette 1).
//
// Weights are packed once into the B tile layout ("VNNI" order): panel p
// holds columns p·32..p·32+31 of Y (rows of W), K is zero-padded to a
// multiple of amxKStep (32 bf16, 64 int8), and row q of the panel (128
// bytes: 64 per B tile) holds the g = 2 (bf16) or 4 (int8) consecutive k
// of each column:
//
//	bf16: panel[q][j][e] = W[p·32+j][q·2+e]    (uint16, e < 2)
//	int8: panel[q][j][e] = W[p·32+j][q·4+e]    (int8,   e < 4)
//
// so a B tile is 16 panel rows at a stride of 128 bytes, and the panel is
// read front to back, one 2 KiB block of 16 rows per K step.
//
// Activations are converted per call into A slivers: 32 rows of X, laid
// out per K step and part as the two A tiles read them, contiguous (lda =
// 64 bytes, so each TILELOADD reads 1 KiB front to back):
//
//	sliver[kb][pt][r][e]   r < 32 (rows 0..15: tile A0, 16..31: A1), e < 64 bytes
//
// K is zero-padded to the padded K; rows past M in the last sliver keep
// stale bytes (a row of C depends only on its row of A, and such rows of
// C are discarded).
//
//	bf16: X is split into three bf16 terms by truncation, x = hi + mid +
//	      lo EXACTLY for every finite |x| ≥ 2^-103: hi is x's top 16 bits,
//	      mid the top 16 bits of r = x - hi (exact), lo = r - mid (exact,
//	      at most 8 significant bits, so itself a bf16 value); below
//	      2^-103 bits under 2^-126 may be lost, as TDPBF16PS would lose
//	      them. This keeps this package's bf16 contract (fp32
//	      activations, exact bf16 weights, fp32 accumulation) instead of
//	      rounding X to bf16. Per K step the
//	      A tiles of hi, mid and lo are three parts (parts = 3): three
//	      TDPBF16PS per C tile and K step against one B tile. The products
//	      of bf16 terms are exact in fp32, so Y is a sum of 3·K exact
//	      products in fp32: |y - ref| ≤ 3·K·2^-24·Σ_k|x_k·w_k|, plus the
//	      terms TDPBF16PS reads as zero (bf16 denormals: magnitude below
//	      2^-126), against 2·K for the cores' bf16 backends.
//	int8: X is quantized per row as every int8 backend does (QuantizeRows,
//	      signed, in [-127, 127]), one byte per k (parts = 1). TDPBSSD
//	      multiplies signed by signed bytes, the AMX-INT8 form this
//	      package's signed activations need (TDPBUSD, which the probe's
//	      amx_int8 ceiling runs, would need the +128 offset of unsigned
//	      activations and a per-column correction; the unit and the rate
//	      are the same). The int32 sums are exact (|q·w| ≤ 127·128, so
//	      up to K = 132104 without wrapping); the scales are applied as
//	      the other int8 backends do: float32(s)·ws[j]·xs[r].
//
// Run converts X once per call, in parallel over slivers, into the first
// scratch (amxAll), then cuts the output among the workers; Block (one
// worker's block, e.g. under RunSplit) converts the rows of its block.
const (
	amxMR, amxNR = 32, 32 // output tile: 2×2 C tiles of 16×16
	amxRow       = 128    // bytes per panel row (two B tiles of 64 bytes)
	amxBlock     = 2048   // bytes of one K step of a panel: 16 rows
	amxCfgBytes  = 64     // LDTILECFG operand
	amxPart      = 2048   // bytes of one K step and part of an A sliver: tiles A0, A1
	amxLDA       = 64     // bytes between the rows of an A tile in a sliver
)

// amxTileFn multiplies one 32-row A sliver by np panels of B over nkb K
// steps, carrying each panel's 32×32 output tile C (fp32 for bf16, int32
// for int8; row stride 128 bytes, 4 KiB a panel, consecutive at c) in
// memory between calls, as the assembly does:
//
//	for i < np:                              // panels
//		C = load ≠ 0 ? c[i] : 0
//		for kb < nkb:                        // K steps (16 panel rows each)
//			B0, B1 = panel rows kb·16.. at b + i·bstride + kb·2048, + 64 (stride 128)
//			for pt < parts:
//				A0 = 16 rows at a + (kb·parts+pt)·2048, stride 64; A1 = 1024 further
//				C00 += A0·B0; C01 += A0·B1; C10 += A1·B0; C11 += A1·B1   (TDP*)
//		c[i] = C
//
// a and b point at the chunk's first K step (the sliver and the first
// panel advanced by kb0 steps), so a call over K steps [kb0, kb0+nkb)
// with load set continues the sums of the calls before it.
//
// cfg is the 64-byte tile configuration (amxConfig).
type amxTileFn func(cfg *byte, a *byte, b *byte, bstride, np, nkb, parts int, c *byte, load int)

// amxSchedule is how computeAMXFrom walks a block: per chunk of MS
// slivers and group of NP panels, K steps KC at a time, one tile call per
// sliver covering the NP panels. A call reads its sliver's KC·parts·2 KiB
// of A for every panel (from L1 after the first where it fits), and each
// panel's KC·2 KiB of B once; C (4 KiB a panel) goes to memory and back
// between K chunks. KC ≥ the K steps gives one call per sliver and panel
// group over the whole K, with C kept in the tiles.
type amxSchedule struct {
	KC int // K steps per tile call
	NP int // panels per tile call
	MS int // slivers (32 rows each) per chunk of rows
}

// amxDefaultSchedule is the schedule of ops whose sched is zero, for
// both precisions (measured: see computeAMX).
var amxDefaultSchedule = amxSchedule{KC: 16, NP: 16, MS: 4}

// amxOp is what an AMX impl computes with.
type amxOp struct {
	bf16  bool        // TDPBF16PS on bf16 pairs, else TDPBSSD on int8 quads
	round bool        // bf16: X rounded to one bf16 term, not split into three (AMXTiles.Rounded)
	tile  amxTileFn   // the assembly, or amxTileSpec in tests
	sched amxSchedule // zero: amxDefaultSchedule (benchmarks set it)
}

// schedule is op's schedule, each zero field taken from the default.
func (op *amxOp) schedule() amxSchedule {
	s, d := op.sched, amxDefaultSchedule
	if s.KC <= 0 {
		s.KC = d.KC
	}
	if s.NP <= 0 {
		s.NP = d.NP
	}
	if s.MS <= 0 {
		s.MS = d.MS
	}
	return s
}

// group is the k values per 4-byte element of a tile row: 2 (bf16) or 4.
func (op *amxOp) group() int {
	if op.bf16 {
		return 2
	}
	return 4
}

// parts is the A terms per K step: 3 (bf16: hi, mid, lo) or 1 (int8,
// and bf16 rounded).
func (op *amxOp) parts() int {
	if op.bf16 && !op.round {
		return 3
	}
	return 1
}

// kPad is K padded to whole K steps: a multiple of 16·group.
func (op *amxOp) kPad(k int) int {
	s := 16 * op.group()
	return (k + s - 1) / s * s
}

// panelBytes is the size of one packed panel.
func (op *amxOp) panelBytes(k int) int { return op.kPad(k) / op.group() * amxRow }

// nkb is the K steps of the padded K.
func (op *amxOp) nkb(k int) int { return op.kPad(k) / (16 * op.group()) }

// sliverBytes is the size of one A sliver (32 rows of X converted).
func (op *amxOp) sliverBytes(k int) int { return op.nkb(k) * op.parts() * amxPart }

// amxConfig returns the LDTILECFG operand: palette 1, start row 0, and
// the eight tiles tmm0..7 each 16 rows of 64 bytes (colsb at bytes 16+2i,
// rows at byte 48+i); the other bytes are zero as the SDM requires.
func amxConfig() [amxCfgBytes]byte {
	var c [amxCfgBytes]byte
	c[0] = 1
	for t := 0; t < 8; t++ {
		binary.LittleEndian.PutUint16(c[16+2*t:], 64)
		c[48+t] = 16
	}
	return c
}

// packAMXU16 packs panels [p0, p1) of the N×K bf16 weights w into the B
// tile layout (see above), zero-padded in N and K.
func packAMXU16(op *amxOp, dst, w []uint16, n, k, p0, p1 int) []uint16 {
	per := op.panelBytes(k) / 2
	dst = grow(dst, (p1-p0)*per)
	clear(dst)
	for p := p0; p < p1; p++ {
		pan := dst[(p-p0)*per : (p-p0+1)*per]
		for j := 0; j < amxNR && p*amxNR+j < n; j++ {
			src := w[(p*amxNR+j)*k : (p*amxNR+j+1)*k]
			for kk, v := range src {
				pan[((kk>>1)*amxNR+j)*2+kk&1] = v
			}
		}
	}
	return dst
}

// packAMXI8 packs panels [p0, p1) of the N×K int8 weights into the B tile
// layout and their scales (zero past N) into dsc.
func packAMXI8(op *amxOp, dst []int8, dsc []float32, w []int8, scales []float32, n, k, p0, p1 int) ([]int8, []float32) {
	per := op.panelBytes(k)
	dst = grow(dst, (p1-p0)*per)
	dsc = grow(dsc, (p1-p0)*amxNR)
	clear(dst)
	clear(dsc)
	for p := p0; p < p1; p++ {
		pan := dst[(p-p0)*per : (p-p0+1)*per]
		for j := 0; j < amxNR && p*amxNR+j < n; j++ {
			row := p*amxNR + j
			dsc[(p-p0)*amxNR+j] = scales[row]
			for kk, v := range w[row*k : row*k+k] {
				pan[((kk>>2)*amxNR+j)*4+kk&3] = v
			}
		}
	}
	return dst, dsc
}

// splitBF16 writes x = hi + mid + lo as three bf16 terms by truncation,
// exactly for |x| ≥ 2^-103 (see above); a non-finite x gives hi = x's top
// 16 bits (a NaN kept quiet, so it stays a NaN) and mid = lo = 0.
func splitBF16(x float32) (hi, mid, lo uint16) {
	b := math.Float32bits(x)
	if b&0x7f800000 == 0x7f800000 {
		if b&0x007fffff != 0 {
			return uint16(b>>16) | 0x0040, 0, 0
		}
		return uint16(b >> 16), 0, 0
	}
	r := x - math.Float32frombits(b&0xffff0000) // exact: same sign, x's low bits
	rb := math.Float32bits(r)
	l := r - math.Float32frombits(rb&0xffff0000) // exact, ≤ 8 significant bits
	return uint16(b >> 16), uint16(rb >> 16), uint16(math.Float32bits(l) >> 16)
}

// convert converts rows [r0, r1) of X (row r at x[r·ldx:], K long)
// into consecutive A slivers at a (sliver s holds rows r0+32s..), and for
// int8 their scales into xs[r-r0]. Rows past r1 in the last sliver are
// left as they are; q is scratch of kPad(k) bytes (int8).
func (op *amxOp) convert(a []byte, xs []float32, x []float32, ldx, k, r0, r1 int, q []int8) {
	sb, kp := op.sliverBytes(k), op.kPad(k)
	for r := r0; r < r1; r++ {
		i := r - r0
		sl := a[i/amxMR*sb : (i/amxMR+1)*sb]
		row := i % amxMR
		xr := x[r*ldx : r*ldx+k]
		if op.bf16 && op.round {
			u := unsafe.Slice((*uint16)(unsafe.Pointer(&sl[0])), sb/2)
			full := k / 32
			roundBF16Steps(u[row*32:], xr, full)
			for kb := full; kb*32 < kp; kb++ {
				t := u[kb*amxPart/2+row*32:][:32]
				e := 0
				for _, v := range xr[kb*32 : min(kb*32+32, k)] {
					t[e] = Float32ToBF16(v)
					e++
				}
				clear(t[e:])
			}
			continue
		}
		if op.bf16 {
			u := unsafe.Slice((*uint16)(unsafe.Pointer(&sl[0])), sb/2)
			full := k / 32 // whole K steps; then the partial one and the padding
			splitBF16Steps(u[row*32:], xr, full)
			for kb := full; kb*32 < kp; kb++ {
				// hi, mid, lo of k = kb·32+e at (kb·3+pt)·1024 + row·32 + e (uint16s)
				base := kb*3*amxPart/2 + row*32
				t0, t1, t2 := u[base:base+32], u[base+amxPart/2:base+amxPart/2+32], u[base+amxPart:base+amxPart+32]
				lo, hi := kb*32, min(kb*32+32, k)
				e := 0
				for _, v := range xr[lo:hi] {
					t0[e], t1[e], t2[e] = splitBF16(v)
					e++
				}
				for ; e < 32; e++ {
					t0[e], t1[e], t2[e] = 0, 0, 0
				}
			}
			continue
		}
		q = q[:kp]
		xs[i] = quantizeRow(q[:k], xr)
		clear(q[k:])
		for kb := 0; kb*64 < kp; kb++ {
			copy(sl[kb*amxPart+row*64:kb*amxPart+row*64+64], unsafe.Slice((*byte)(unsafe.Pointer(&q[kb*64])), 64))
		}
	}
}

// Measured on a 16-core Emerald Rapids VM (2026-11-26, `bench gemm`, M
// 2048, N = K = 3072): amx-bf16 263 GFLOP/s on 1 thread and 1785 on 16,
// amx-int8 474 and 2698 GOP/s, against avx512-bf16 112 and 771 and
// avx512-fp32 134 and 826 in the same run, with one tile call per sliver
// and panel over the whole K (amxSchedule{KC: all, NP: 1, MS: 1}).
//
// Schedules, measured on the same kind of VM (2026-11-27,
// BenchmarkAMXSchedule: 8 candidates interleaved, 5 rounds of at least
// 100 ms each, medians; the probe's amx_bf16 ceiling there was 917
// GFLOP/s on 1 thread, 34% of one TDPBF16PS per 16 cycles): the schedule
// matters little. KC 16, NP 16, MS 4 against the whole K per call: bf16
// 1974 vs 1792 GFLOP/s on 16 threads (M 2048), 248 vs 226 on 1 (M 2048),
// 244 vs 240 (M 512); int8 3968 vs 3709, 274 vs 258, 248 vs 255; every
// other candidate (KC 4-16 and all, NP 8-16) fell within the rounds'
// spread. A CPU profile of Run (BenchmarkAMXRun) put 75% of bf16's time
// on 1 thread in the tile kernel and 21% in converting X (splitBF16);
// int8 spent 44% quantizing X (quantizeRow), 15% scaling the int32 tiles
// into Y and only 36% in the tile kernel. With those three on AVX-512
// kernels (convert_amd64.go), the tile kernel takes 89% (bf16) and 83%
// (int8) on 1 thread; BenchmarkAMXConvert (same VM, the Go
// specifications against the kernels interleaved, 5 rounds, medians):
// amx-int8 313 → 758 GOP/s at M 512 on 1 thread, 307 → 709 at M 2048,
// 3955 → 8055 on 16 threads; amx-bf16 130 → 159 GFLOP/s, 146 → 164 and
// 1719 → 2097. `bench gemm` there (M 2048, N = K = 3072) gave amx-int8
// 8595 GOP/s on 16 threads and 688 on 1, amx-bf16 2173 and 177 GFLOP/s,
// against avx512vnni-int8 1141 and 249, avx512-bf16 768 and 87,
// avx512-fp32 768 and 76. On 16 threads the conversion pass that writes
// the shared slivers is still slow (bf16: 15% of the time, int8: 18% in
// its 64-byte copies), and workers wait 12-24% at the pool's barriers.
//
// computeAMX is Block's AMX loop nest: MS slivers (32 rows each) of X at
// a time are converted (amxOp.convert), then computeAMXFrom multiplies
// them.
func (w *Weights) computeAMX(y []float32, ldy int, x []float32, ldx int, m0, m1, n0, n1 int, s *Scratch) {
	op := w.im.amx
	sb := op.sliverBytes(w.K)
	mc := min(op.schedule().MS*amxMR, (m1-m0+amxMR-1)/amxMR*amxMR)
	s.amxA = grow(s.amxA, mc/amxMR*sb)
	s.xs = grow(s.xs, mc)
	s.q = grow(s.q, op.kPad(w.K))
	for ic := m0; ic < m1; ic += mc {
		mb := min(mc, m1-ic)
		op.convert(s.amxA, s.xs, x, ldx, w.K, ic, ic+mb, s.q)
		w.computeAMXFrom(y, ldy, s.amxA, s.xs, ic, ic, ic+mb, n0, n1, s)
	}
}

// computeAMXFrom computes Y[m0:m1, n0:n1] from the slivers at a, which
// hold rows a0.. of X converted (a0 ≤ m0, m0 - a0 a multiple of 32; xs[r-a0]
// the int8 scale of row r), on w's panels (amxOp.product).
func (w *Weights) computeAMXFrom(y []float32, ldy int, a []byte, xs []float32, a0, m0, m1, n0, n1 int, s *Scratch) {
	op := w.im.amx
	var base unsafe.Pointer
	if op.bf16 {
		base = unsafe.Pointer(unsafe.SliceData(w.u16))
	} else {
		base = unsafe.Pointer(unsafe.SliceData(w.i8))
	}
	op.product(y, ldy, a, xs, a0, m0, m1, n0, n1, w.K, amxB{base: base, p0: w.p0, per: op.panelBytes(w.K), scales: w.scales}, false, s)
}

// amxB is a B operand in the tile layout: panel p (columns p·32..p·32+31
// of Y) at base + (p-p0)·per bytes, K steps of amxBlock bytes from each
// panel's start; int8: scales[(p-p0)·32+j] is column p·32+j's scale.
type amxB struct {
	base   unsafe.Pointer
	p0     int
	per    int
	scales []float32
}

// product computes Y[m0:m1, n0:n1] (= or, with add, +=; add only for
// bf16) from the slivers at a, which hold rows a0.. of X converted (a0 ≤
// m0, m0 - a0 a multiple of 32; xs[r-a0] the int8 scale of row r), over
// k (padded to whole K steps) on the panels b, as op's schedule says
// (amxSchedule): per chunk of MS slivers and group of NP panels, for each
// KC K steps, one tile call per sliver; the group's tiles (in s.tile) are
// then copied or added (bf16) or scaled (int8) into Y.
func (op *amxOp) product(y []float32, ldy int, a []byte, xs []float32, a0, m0, m1, n0, n1, k int, b amxB, add bool, s *Scratch) {
	nkb, parts, sb := op.nkb(k), op.parts(), op.sliverBytes(k)
	sc := op.schedule()
	kc, mc := min(sc.KC, nkb), sc.MS*amxMR
	cfg := amxConfig()
	const tileF = amxMR * amxNR // float32s (or int32s) of one output tile
	p0, p1 := n0/amxNR, (n1+amxNR-1)/amxNR
	for ic := m0; ic < m1; ic += mc {
		mb := min(mc, m1-ic)
		ns := (mb + amxMR - 1) / amxMR
		as := a[(ic-a0)/amxMR*sb:]
		for pg := p0; pg < p1; pg += sc.NP {
			np := min(sc.NP, p1-pg)
			s.tile = grow(s.tile, ns*np*tileF)
			bp := unsafe.Add(b.base, (pg-b.p0)*b.per)
			for kb := 0; kb < nkb; kb += kc {
				load := min(kb, 1)
				for si := 0; si < ns; si++ {
					op.tile(&cfg[0], &as[si*sb+kb*parts*amxPart], (*byte)(unsafe.Add(bp, kb*amxBlock)), b.per,
						np, min(kc, nkb-kb), parts, (*byte)(unsafe.Pointer(&s.tile[si*np*tileF])), load)
				}
			}
			ci := unsafe.Slice((*int32)(unsafe.Pointer(&s.tile[0])), ns*np*tileF)
			for si := 0; si < ns; si++ {
				row0, rows := ic+si*amxMR, min(amxMR, mb-si*amxMR)
				for p := pg; p < pg+np; p++ {
					lo, hi := max(n0, p*amxNR), min(n1, p*amxNR+amxNR)
					off := (si*np+p-pg)*tileF + lo - p*amxNR // row 0, column lo of the tile
					if !op.bf16 {
						scaleTile(y[row0*ldy+lo:], ldy, ci[off:], b.scales[(p-b.p0)*amxNR+lo-p*amxNR:], xs[row0-a0:], rows, hi-lo)
						continue
					}
					for r := 0; r < rows; r++ {
						dst, src := y[(row0+r)*ldy+lo:(row0+r)*ldy+hi], s.tile[off+r*amxNR:]
						if !add {
							copy(dst, src)
							continue
						}
						src = src[:len(dst)]
						for i := range dst {
							dst[i] += src[i]
						}
					}
				}
			}
		}
	}
}

// runAMX is Run for the AMX backends (M > 32, scratches given): X is
// converted once, in parallel over slivers, into scratches[0] (amxAll,
// amxXs), then the output is cut among the workers as Run cuts it and
// every block is computed from the shared slivers, so no worker converts
// rows another one also needs (an N-cut Block would convert all of X on
// every worker).
//
// Tried and measured slower: one pass converting on demand, each worker
// claiming the not yet converted slivers of a chunk before reading it (a
// compare-and-swap per sliver) and waiting for the others. The workers
// sharing a band of rows reach each chunk together, so a few convert
// while the rest wait: on the lent Emerald Rapids VM (2026-11-27, 16
// threads, M 2048, N = K = 3072, 5 interleaved rounds, medians) amx-bf16
// 1842 against 2100 GFLOP/s with the two passes, amx-int8 5256 against
// 10407 GOP/s; equal within noise on 1 thread.
func (w *Weights) runAMX(m *pool.Master, g *pool.Group, y, x []float32, M int, scratches []*Scratch) error {
	op, K := w.im.amx, w.K
	sb := op.sliverBytes(K)
	sh := scratches[0]
	nsl := (M + amxMR - 1) / amxMR
	sh.amxAll = grow(sh.amxAll, nsl*sb)
	sh.amxXs = grow(sh.amxXs, nsl*amxMR)
	all, xs := sh.amxAll, sh.amxXs
	scratch := func(worker int) *Scratch {
		if s := scratchAt(scratches, worker); s != nil {
			return s
		}
		return NewScratch(w, Blocking{})
	}
	conv := func(worker, m0, m1, _, _ int) error {
		s := scratch(worker)
		s.q = grow(s.q, op.kPad(K))
		op.convert(all[m0/amxMR*sb:], xs[m0:], x, K, K, m0, m1, s.q)
		return nil
	}
	if err := runBlocks(m, g, pool.Region{M1: M, N1: 1}, pool.Tile{M: amxMR, N: 1}, conv); err != nil {
		return err
	}
	comp := func(worker, m0, m1, n0, n1 int) error {
		w.computeAMXFrom(y, w.N, all, xs, 0, m0, m1, n0, n1, scratch(worker))
		return nil
	}
	return runBlocks(m, g, pool.Region{M1: M, N1: w.N}, w.Backend.Tile(), comp)
}

// amxTile is one tile register of palette 1 as this package configures
// every tile: 16 rows of 64 bytes.
type amxTile [16][64]byte

// load fills t from 16 rows of 64 bytes at p, stride bytes apart
// (TILELOADD).
func (t *amxTile) load(p unsafe.Pointer, stride int) {
	for r := range t {
		copy(t[r][:], unsafe.Slice((*byte)(unsafe.Add(p, r*stride)), 64))
	}
}

// store writes t to 16 rows at p, stride bytes apart (TILESTORED).
func (t *amxTile) store(p unsafe.Pointer, stride int) {
	for r := range t {
		copy(unsafe.Slice((*byte)(unsafe.Add(p, r*stride)), 64), t[r][:])
	}
}

func (t *amxTile) f32(r, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(t[r][4*i:]))
}

func (t *amxTile) setF32(r, i int, v float32) {
	binary.LittleEndian.PutUint32(t[r][4*i:], math.Float32bits(v))
}

func (t *amxTile) bf16(r, i int) uint16 { return binary.LittleEndian.Uint16(t[r][2*i:]) }

// bf16DAZ widens bf16 bits to float32 with denormals treated as zero (the
// sign kept), as TDPBF16PS reads its inputs.
func bf16DAZ(h uint16) float32 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return BF16ToFloat32(h)
}

// ftz flushes a float32 denormal result to zero, keeping its sign.
func ftz(f float32) float32 {
	if b := math.Float32bits(f); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return f
}

// tdpbf16ps is TDPBF16PS c, a, b on 16×16 tiles, per the Intel SDM's
// pseudocode: for each row m of c and column n, over k < 16 (the dwords of
// a row of a, the rows of b), two updates, each one fp32 rounding to
// nearest even of c + a·b (the product of two bf16 values is exact), with
// bf16 inputs and the accumulator read denormals-as-zero and each result
// flushed to zero when denormal; MXCSR plays no part:
//
//	c[m][n] = ftz(c[m][n] + a.bf16[m][2k]·b.bf16[k][2n])
//	c[m][n] = ftz(c[m][n] + a.bf16[m][2k+1]·b.bf16[k][2n+1])
//
// Hardware (an Emerald Rapids VM, 2026-11-27) matched this exactly on the
// self-test's small integers, but on random data most outputs differed
// (TestAMXTilesProduct: 70-93% of them, by up to 16385 ULP where the sum
// cancels to near 0, all within 3·K·2^-24·Σ|x·w|): its internal order or
// precision of the updates is not the pseudocode's, so tests hold the
// hardware to error bounds, and to this specification bit for bit only
// on inputs whose sums are exact in any order.
//
// The sum is formed in float64 and rounded once to float32: float64 holds
// the product exactly, and rounding a sum of float32-precision values to
// float64 first and then to float32 gives the float32 rounding (53 ≥
// 2·24+2).
func tdpbf16ps(c, a, b *amxTile) {
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			acc := ftz(c.f32(m, n))
			for k := 0; k < 16; k++ {
				for e := 0; e < 2; e++ {
					p := float64(bf16DAZ(a.bf16(m, 2*k+e))) * float64(bf16DAZ(b.bf16(k, 2*n+e)))
					acc = ftz(float32(float64(acc) + p))
				}
			}
			c.setF32(m, n, acc)
		}
	}
}

// tdpbssd is TDPBSSD c, a, b on 16×16 tiles (SDM pseudocode): for each
// row m and column n, c[m][n] += Σ_{k<16} Σ_{e<4} int8(a[m][4k+e]) ·
// int8(b[k][4n+e]) in int32, wrapping on overflow.
func tdpbssd(c, a, b *amxTile) {
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			acc := int32(binary.LittleEndian.Uint32(c[m][4*n:]))
			for k := 0; k < 16; k++ {
				for e := 0; e < 4; e++ {
					acc += int32(int8(a[m][4*k+e])) * int32(int8(b[k][4*n+e]))
				}
			}
			binary.LittleEndian.PutUint32(c[m][4*n:], uint32(acc))
		}
	}
}

// amxTileSpec returns the Go specification of the tile kernel (amxTileFn)
// for bf16 (TDPBF16PS) or int8 (TDPBSSD): the assembly's sequence of tile
// loads, products and stores on tdpbf16ps / tdpbssd. The AMX backends run
// it nowhere in production (where AMX is missing they are unavailable); it
// is the reference of the first-use self-test and of the tests, which run
// the whole AMX loop nest with it on any machine.
func amxTileSpec(bf16 bool) amxTileFn {
	return func(_ *byte, a *byte, b *byte, bstride, np, nkb, parts int, c *byte, load int) {
		var a0, a1, b0, b1 amxTile
		dp := tdpbssd
		if bf16 {
			dp = tdpbf16ps
		}
		for i := 0; i < np; i++ {
			var cs [4]amxTile
			cp := unsafe.Add(unsafe.Pointer(c), i*amxMR*amxRow)
			if load != 0 {
				cs[0].load(cp, amxRow)
				cs[1].load(unsafe.Add(cp, 64), amxRow)
				cs[2].load(unsafe.Add(cp, 16*amxRow), amxRow)
				cs[3].load(unsafe.Add(cp, 16*amxRow+64), amxRow)
			}
			for kb := 0; kb < nkb; kb++ {
				bp := unsafe.Add(unsafe.Pointer(b), i*bstride+kb*amxBlock)
				b0.load(bp, amxRow)
				b1.load(unsafe.Add(bp, 64), amxRow)
				for pt := 0; pt < parts; pt++ {
					ap := unsafe.Add(unsafe.Pointer(a), (kb*parts+pt)*amxPart)
					a0.load(ap, amxLDA)
					a1.load(unsafe.Add(ap, 16*amxLDA), amxLDA)
					dp(&cs[0], &a0, &b0)
					dp(&cs[1], &a0, &b1)
					dp(&cs[2], &a1, &b0)
					dp(&cs[3], &a1, &b1)
				}
			}
			cs[0].store(cp, amxRow)
			cs[1].store(unsafe.Add(cp, 64), amxRow)
			cs[2].store(unsafe.Add(cp, 16*amxRow), amxRow)
			cs[3].store(unsafe.Add(cp, 16*amxRow+64), amxRow)
		}
	}
}

// amxSelfTest runs the tile kernel tile on fixed inputs (two panels, two
// K steps, op.parts() terms each, every byte of A and B used), in two
// calls of one K step each, the second loading the first's C, and
// compares its two 32×32 outputs bit for bit with one call of
// amxTileSpec over both K steps: "" on a match, else "unavailable:
// <mnemonic> self-test failed (...)". The bf16 inputs are small integers,
// so every product and partial sum is exact in fp32 and the expected
// output does not depend on the order or rounding of the accumulation
// (which the SDM's pseudocode fixes but no hardware here has confirmed);
// the int8 ones are pseudo-random over the whole int8 range (int32 sums
// are exact in any order).
func amxSelfTest(op *amxOp, tile amxTileFn, mnemonic string) string {
	const nkb, np = 2, 2
	parts := op.parts()
	a := make([]byte, nkb*parts*amxPart)
	b := make([]byte, np*nkb*amxBlock)
	seed := uint32(2024)
	next := func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 16 }
	fill := func(buf []byte) {
		if !op.bf16 {
			for i := range buf {
				buf[i] = byte(next())
			}
			return
		}
		for i := 0; i < len(buf); i += 2 {
			binary.LittleEndian.PutUint16(buf[i:], Float32ToBF16(float32(int32(next()%17)-8)))
		}
	}
	fill(a)
	fill(b)
	cfg := amxConfig()
	got, want := make([]byte, np*amxMR*amxRow), make([]byte, np*amxMR*amxRow)
	const bstride = nkb * amxBlock
	tile(&cfg[0], &a[0], &b[0], bstride, np, 1, parts, &got[0], 0)
	tile(&cfg[0], &a[parts*amxPart], &b[amxBlock], bstride, np, 1, parts, &got[0], 1)
	amxTileSpec(op.bf16)(&cfg[0], &a[0], &b[0], bstride, np, nkb, parts, &want[0], 0)
	for i := 0; i < len(got); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		if g == w {
			continue
		}
		pn, r, j := i/(amxMR*amxRow), i%(amxMR*amxRow)/amxRow, i%amxRow/4
		if op.bf16 {
			return fmt.Sprintf("unavailable: %s self-test failed (panel %d, row %d, column %d: %v, want %v)", mnemonic, pn, r, j, math.Float32frombits(g), math.Float32frombits(w))
		}
		return fmt.Sprintf("unavailable: %s self-test failed (panel %d, row %d, column %d: %d, want %d)", mnemonic, pn, r, j, int32(g), int32(w))
	}
	return ""
}
