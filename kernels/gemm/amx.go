package gemm

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
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
// Activations are converted per call into A rows of bytes, zero-padded to
// the padded K (a sliver of fewer than 32 rows computes its other rows of
// C from stale bytes and discards them):
//
//	bf16: X is split into three bf16 terms, x ≈ hi + mid + lo (hi = bf16(x),
//	      mid = bf16(x - hi), lo = bf16(x - hi - mid), each rounded to
//	      nearest even), so |x - hi - mid - lo| ≤ 2^-27·|x|: below fp32's
//	      own rounding, which keeps this package's bf16 contract (fp32
//	      activations, exact bf16 weights, fp32 accumulation) instead of
//	      rounding X to bf16. The row holds, per K step of 32, the 32 hi,
//	      then the 32 mid, then the 32 lo terms (parts = 3): three
//	      TDPBF16PS per C tile and K step against one B tile. The products
//	      of bf16 terms are exact in fp32, so Y is a sum of 3·K exact
//	      products in fp32: |y - ref| ≤ 3·K·2^-24·Σ_k|x_k·w_k| (plus
//	      2^-126 per term from DAZ/FTZ below the fp32 normal range), against
//	      2·K for the cores' bf16 backends.
//	int8: X is quantized per row as every int8 backend does (QuantizeRows,
//	      signed, in [-127, 127]), one byte per k (parts = 1). TDPBSSD
//	      multiplies signed by signed bytes, the AMX-INT8 form this
//	      package's signed activations need (TDPBUSD, which the probe's
//	      amx_int8 ceiling runs, would need the +128 offset of unsigned
//	      activations and a per-column correction; the unit and the rate
//	      are the same). The int32 sums are exact (|q·w| ≤ 127·128, so
//	      up to K = 132104 without wrapping); the scales are applied as
//	      the other int8 backends do: float32(s)·ws[j]·xs[r].
const (
	amxMR, amxNR = 32, 32 // output tile: 2×2 C tiles of 16×16
	amxRow       = 128    // bytes per panel row (two B tiles of 64 bytes)
	amxBlock     = 2048   // bytes of one K step of a panel: 16 rows
	amxCfgBytes  = 64     // LDTILECFG operand
)

// amxTileFn computes one 32×32 output tile C (fp32 for bf16, int32 for
// int8; row stride 128 bytes) from scratch, as the assembly does:
//
//	C = 0
//	for kb < nkb:                        // K steps (16 panel rows each)
//		B0, B1 = panel rows kb·16.. at b + kb·2048, + 64 (stride 128)
//		for pt < parts:
//			A0 = 16 rows at a + (kb·parts+pt)·64, stride lda; A1 = 16·lda further
//			C00 += A0·B0; C01 += A0·B1; C10 += A1·B0; C11 += A1·B1   (TDP*)
//
// cfg is the 64-byte tile configuration (amxConfig).
type amxTileFn func(cfg *byte, a *byte, lda int, b *byte, nkb, parts int, c *byte)

// amxOp is what an AMX impl computes with.
type amxOp struct {
	bf16 bool      // TDPBF16PS on bf16 pairs, else TDPBSSD on int8 quads
	tile amxTileFn // the assembly, or amxTileSpec in tests
}

// group is the k values per 4-byte element of a tile row: 2 (bf16) or 4.
func (op *amxOp) group() int {
	if op.bf16 {
		return 2
	}
	return 4
}

// parts is the A terms per K step: 3 (bf16: hi, mid, lo) or 1.
func (op *amxOp) parts() int {
	if op.bf16 {
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

// splitBF16 writes x ≈ hi + mid + lo as three bf16 terms (see above). A
// non-finite x gives hi = bf16(x), mid = lo = 0; an x that rounds to ±Inf
// in bf16 is truncated instead, so every finite x splits into finite terms.
func splitBF16(x float32) (hi, mid, lo uint16) {
	if math.IsInf(float64(x), 0) || x != x {
		return Float32ToBF16(x), 0, 0
	}
	hi = Float32ToBF16(x)
	if math.IsInf(float64(BF16ToFloat32(hi)), 0) {
		hi = uint16(math.Float32bits(x) >> 16)
	}
	r := x - BF16ToFloat32(hi) // exact
	mid = Float32ToBF16(r)
	lo = Float32ToBF16(r - BF16ToFloat32(mid)) // r - mid exact
	return hi, mid, lo
}

// amxRowBF16 converts one row of X (len K) into an A row of kPad(K)·3
// uint16: per K step of 32, the hi, mid and lo terms.
func amxRowBF16(dst []uint16, x []float32) {
	clear(dst)
	for kk, v := range x {
		hi, mid, lo := splitBF16(v)
		base := kk / 32 * 96
		e := kk % 32
		dst[base+e], dst[base+32+e], dst[base+64+e] = hi, mid, lo
	}
}

// computeAMX is the loop nest of the AMX backends: MC rows of X at a time
// are converted into A rows (over the whole K), then each panel of the
// block is multiplied by each 32-row sliver in one tile call, whose 32×32
// result is copied (bf16) or scaled (int8) into Y.
func (w *Weights) computeAMX(y []float32, ldy int, x []float32, ldx int, m0, m1, n0, n1 int, s *Scratch) {
	op, K := w.im.amx, w.K
	kp, parts := op.kPad(K), op.parts()
	nkb := kp / (16 * op.group())
	lda := kp / op.group() * 4 * parts // bytes per A row
	// MC rows of A fill at most what Blocking gave MC×KC floats (L2).
	mc := max(s.bl.MC*s.bl.KC*4/(amxMR*lda), 1) * amxMR
	mc = min(mc, (m1-m0+amxMR-1)/amxMR*amxMR)
	s.amxA = grow(s.amxA, mc*lda)
	s.tile = grow(s.tile, amxMR*amxNR)
	s.xs = grow(s.xs, mc)
	cfg := amxConfig()
	var base unsafe.Pointer
	if op.bf16 {
		base = unsafe.Pointer(unsafe.SliceData(w.u16))
	} else {
		base = unsafe.Pointer(unsafe.SliceData(w.i8))
	}
	per := op.panelBytes(K)
	c := (*byte)(unsafe.Pointer(&s.tile[0]))
	ci := unsafe.Slice((*int32)(unsafe.Pointer(&s.tile[0])), amxMR*amxNR)
	p0, p1 := n0/amxNR, (n1+amxNR-1)/amxNR
	for ic := m0; ic < m1; ic += mc {
		mb := min(mc, m1-ic)
		// Rows past mb (up to the sliver's 32) keep whatever they hold: a
		// row of C depends only on its own row of A, and those rows of C
		// are never copied out.
		a := s.amxA[:(mb+amxMR-1)/amxMR*amxMR*lda]
		for r := 0; r < mb; r++ {
			row := a[r*lda : (r+1)*lda]
			switch {
			case op.bf16:
				amxRowBF16(unsafe.Slice((*uint16)(unsafe.Pointer(&row[0])), lda/2), x[(ic+r)*ldx:(ic+r)*ldx+K])
			default:
				q := unsafe.Slice((*int8)(unsafe.Pointer(&row[0])), lda)
				s.xs[r] = quantizeRow(q[:K], x[(ic+r)*ldx:(ic+r)*ldx+K])
				clear(q[K:])
			}
		}
		for p := p0; p < p1; p++ {
			bp := (*byte)(unsafe.Add(base, (p-w.p0)*per))
			lo, hi := max(n0, p*amxNR), min(n1, p*amxNR+amxNR)
			for ir := 0; ir < mb; ir += amxMR {
				op.tile(&cfg[0], &a[ir*lda], lda, bp, nkb, parts, c)
				for r := 0; r < min(amxMR, mb-ir); r++ {
					yr := y[(ic+ir+r)*ldy+lo : (ic+ir+r)*ldy+hi]
					if op.bf16 {
						copy(yr, s.tile[r*amxNR+lo-p*amxNR:])
						continue
					}
					xs := s.xs[ir+r]
					for j := range yr {
						col := lo - p*amxNR + j
						yr[j] = float32(ci[r*amxNR+col]) * w.scales[(p-w.p0)*amxNR+col] * xs
					}
				}
			}
		}
	}
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
	return func(_ *byte, a *byte, lda int, b *byte, nkb, parts int, c *byte) {
		var cs [4]amxTile
		var a0, a1, b0, b1 amxTile
		dp := tdpbssd
		if bf16 {
			dp = tdpbf16ps
		}
		ap := unsafe.Pointer(a)
		for kb := 0; kb < nkb; kb++ {
			bp := unsafe.Add(unsafe.Pointer(b), kb*amxBlock)
			b0.load(bp, amxRow)
			b1.load(unsafe.Add(bp, 64), amxRow)
			for pt := 0; pt < parts; pt++ {
				a0.load(ap, lda)
				a1.load(unsafe.Add(ap, 16*lda), lda)
				dp(&cs[0], &a0, &b0)
				dp(&cs[1], &a0, &b1)
				dp(&cs[2], &a1, &b0)
				dp(&cs[3], &a1, &b1)
				ap = unsafe.Add(ap, 64)
			}
		}
		cp := unsafe.Pointer(c)
		cs[0].store(cp, amxRow)
		cs[1].store(unsafe.Add(cp, 64), amxRow)
		cs[2].store(unsafe.Add(cp, 16*amxRow), amxRow)
		cs[3].store(unsafe.Add(cp, 16*amxRow+64), amxRow)
	}
}

// amxSelfTest runs the tile kernel tile once on fixed inputs (two K steps,
// op.parts() terms each, every byte of A and B used) and compares its
// 32×32 output bit for bit with amxTileSpec: "" on a match, else
// "unavailable: <mnemonic> self-test failed (...)". The bf16 inputs are
// small integers, so every product and partial sum is exact in fp32 and
// the expected output does not depend on the order or rounding of the
// accumulation (which the SDM's pseudocode fixes but no hardware here has
// confirmed); the int8 ones are pseudo-random over the whole int8 range
// (int32 sums are exact in any order).
func amxSelfTest(op *amxOp, tile amxTileFn, mnemonic string) string {
	const nkb = 2
	parts := op.parts()
	lda := nkb * parts * 64
	a := make([]byte, amxMR*lda)
	b := make([]byte, nkb*amxBlock)
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
	got, want := make([]byte, amxMR*amxRow), make([]byte, amxMR*amxRow)
	tile(&cfg[0], &a[0], lda, &b[0], nkb, parts, &got[0])
	amxTileSpec(op.bf16)(&cfg[0], &a[0], lda, &b[0], nkb, parts, &want[0])
	for i := 0; i < len(got); i += 4 {
		g, w := binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:])
		if g == w {
			continue
		}
		r, j := i/amxRow, i%amxRow/4
		if op.bf16 {
			return fmt.Sprintf("unavailable: %s self-test failed (row %d, column %d: %v, want %v)", mnemonic, r, j, math.Float32frombits(g), math.Float32frombits(w))
		}
		return fmt.Sprintf("unavailable: %s self-test failed (row %d, column %d: %d, want %d)", mnemonic, r, j, int32(g), int32(w))
	}
	return ""
}
