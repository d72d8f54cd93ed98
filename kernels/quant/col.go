package quant

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// The column-order layout (see the package doc): q8_0, q4_0, int2 and int1
// weights (the ternary formats as int2; q4_k and q6_k: colk.go) in
// groups of ColRows = 16 rows of W, one 32-bit lane of a zmm per row, so
// that a GEMV kernel sums a whole block in a lane (VPDPBUSD with the
// activations' 4 bytes broadcast) and scales it once per block for 16 rows
// at once, as the prefill tiles do (prefill.go), where the lane-order
// panels need one float scaling per VPDPBUSD.
//
// Per group g (rows 16g .. 16g+15) and block b of the row (2·pairs blocks,
// the last one of an odd count padding of scale 0), a chunk of ColRows·32
// weights, chunks in the order (g, b):
//
//	q8_0: 512 bytes, byte k·64 + l·4 + i = u of element 4k+i of row 16g+l (k < 8)
//	q4_0: 256 bytes, byte k·64 + l·4 + i (k < 4): low nibble = u of element
//	      4k+i, high nibble = u of element 16+4k+i (ggml's qs[4k+i] of the row's block)
//	int2: 128 bytes, byte j·64 + l·4 + i (j < 2): bits 2s+1:2s = q (0..3) of
//	      element 16j+4s+i (s < 4)
//	int1: 64 bytes, bit k of byte l·4 + i (k < 8) = sign bit of element
//	      4k+i of row 16g+l: 8 bit planes, plane k one group of 4 elements
//
// so a 64-byte load is one group of 4 elements for 16 rows (q8_0), or
// two (q4_0: AND 0x0f, and AND 0xf0, which is 16·u: the kernel sums those
// apart and shifts the sum right by 4), or four (int2: shifts and masks,
// see kernels/_asm/quantcol's genLow), or eight (int1: plane k's bytes
// 16·s are one VGF2P8AFFINEQB, or without GFNI a VPTESTMB and a
// zero-masked move of 16s). The fp16 scales are 16 halfs per
// chunk (32 bytes, one VCVTPH2PS), in Matrix.d as 8 words per chunk:
// half (g·2·pairs + b)·16 + l. Rows past N are zero with scale 0.

// Layout names a Matrix's packed layout.
type Layout string

// The layouts.
const (
	// LaneOrder is the panels of PanelRows rows with block pairs in lane
	// order (the package doc), every format's and every backend's.
	LaneOrder Layout = "lane"
	// ColumnOrder is the groups of ColRows rows with one lane per row
	// (col.go), for q8_0, q4_0, int2 and int1 (tq2_0, tq1_0 as int2) on
	// the avx512vnni and avx512bw backends, and q4_k and q6_k (colk.go)
	// there too.
	ColumnOrder Layout = "column"
)

// ColRows is the number of W rows per column-order group (the zmm lanes).
const ColRows = 16

// RowTile is the number of W rows the kernels process together in w's
// layout: ColRows in column order, PanelRows in lane order. A split of W's
// rows among workers at multiples of it gives each worker whole groups
// (a cut inside a group makes both workers compute the group).
func (w *Matrix) RowTile() int {
	if w.col {
		return ColRows
	}
	return PanelRows
}

// colFormat reports whether format f has a column-order layout.
func (f Format) colFormat() bool {
	l := f.layout()
	return l == Q8_0 || l == Q4_0 || l == Int2 || l == Int1 || l.kquant()
}

// colBytes is the size of a column-order chunk (ColRows rows × 1 block).
func (f Format) colBytes() int {
	switch f.layout() {
	case Q4_0, Q4_K: // Q4_K: one sub-block's quants (colk.go)
		return 256
	case Int2:
		return 128
	case Int1:
		return 64
	}
	return 512
}

// Layout reports w's packed layout.
func (w *Matrix) Layout() Layout {
	if w.col {
		return ColumnOrder
	}
	return LaneOrder
}

// colChunk is the index of the chunk of row r's block blk.
func (w *Matrix) colChunk(r, blk int) int { return r/ColRows*2*w.pairs + blk }

// halfs returns w.d as fp16 words (the column-order scales).
func (w *Matrix) halfs() []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(w.d))), 2*len(w.d))
}

// colGetU returns the unsigned value of element e (0..31) of lane l in
// chunk q of format f.
func colGetU(f Format, q []byte, l, e int) int32 {
	switch f.layout() {
	case Int2:
		return 4 * int32(q[(e/16)*64+l*4+e%4]>>(2*(e%16/4))&3)
	case Int1: // bit plane e/4 of byte 4l + e%4
		return 16 * int32(q[l*4+e%4]>>(e/4)&1)
	}
	if f == Q4_0 {
		if e < 16 {
			return int32(q[(e/4)*64+l*4+e%4] & 0x0f)
		}
		return int32(q[((e-16)/4)*64+l*4+e%4] >> 4)
	}
	return int32(q[(e/4)*64+l*4+e%4])
}

// colPutField stores field v (an int2 field 0..3, an int1 bit) of element
// e of lane l in the zeroed-at-that-place chunk q of format f (int2 and
// int1 layouts: also tq2_0, tq1_0).
func colPutField(f Format, q []byte, l, e int, v uint8) {
	if f.layout() == Int2 {
		q[(e/16)*64+l*4+e%4] |= (v & 3) << (2 * (e % 16 / 4))
		return
	}
	q[l*4+e%4] |= (v & 1) << (e / 4)
}

// scaleBits returns the fp16 scale of row r's block blk as stored.
func (w *Matrix) scaleBits(r, blk int) uint16 {
	if w.col {
		return w.halfs()[w.colChunk(r, blk)*ColRows+r%ColRows]
	}
	return uint16(w.d[w.idx(r, blk/2)] >> (16 * (blk % 2)))
}

// ColumnFormats are the formats whose GEMV kernels on backend be read the
// column-order layout (Repack converts to it), none where be has no such
// kernels or is unavailable.
func (be Backend) ColumnFormats() []Format {
	im := byName()[be.Name]
	if im == nil || be.Unavailable != "" {
		return nil
	}
	var out []Format
	for _, f := range Formats() {
		if im.kc[f] != nil {
			out = append(out, f)
		}
	}
	return out
}

// ColumnUpconvert says which up-convert sequence be's column-order tiles
// of format f run on this CPU where the CPU decides it (int1 on
// avx512vnni: VGF2P8AFFINEQB where GFNI is present, else VPTESTMB and a
// masked move), else "".
func (be Backend) ColumnUpconvert(f Format) string {
	if im := byName()[be.Name]; im != nil && be.Unavailable == "" {
		return im.kcNote[f]
	}
	return ""
}

// Repack converts w in place to the layout be's GEMV kernels read for its
// format: ColumnOrder where be.ColumnFormats holds it (avx512vnni and
// avx512bw: q8_0, q4_0, int2, int1, q4_k, q6_k (colk.go), tq2_0,
// tq1_0), else LaneOrder; a no-op when w is in that layout already. The
// weights, Dequantize and AppendGGUF do not change; Mul reads either
// layout on every backend (a backend without kernels for w's layout runs
// the Go specification loops). It is meant for load time, once the backend
// is chosen: it must not run concurrently with any other use of w, and it
// holds both copies while it converts (the old one is then garbage).
func (w *Matrix) Repack(be Backend) {
	want := slices.Contains(be.ColumnFormats(), w.Format)
	switch {
	case want && !w.col:
		w.toColumn()
	case !want && w.col:
		w.toLane()
	}
}

// colFine reports whether f's column-order chunks hold fields finer than
// a lane-order 4-byte word (int2, int1: converted element by element).
func (f Format) colFine() bool { return f.layout() == Int2 || f.layout() == Int1 }

// colWords is the number of 4-byte words per row and block in a chunk.
func (f Format) colWords() int { return f.colBytes() / 64 }

// toColumn converts the lane-order w to column order. Lane order puts
// element 4k+i of block b of a pair at byte 8k+4b+i (q8_0; q4_0: the low
// nibble, element 16+4k+i the high nibble of the same byte), so each
// 4-byte word moves whole; int2 and int1 fields move one by one (colFine).
func (w *Matrix) toColumn() {
	switch w.Format {
	case Q4_K:
		w.toColumnK()
		return
	case Q6_K:
		w.toColumnK6()
		return
	}
	pb, cb, nw := w.Format.pairBytes(), w.Format.colBytes(), w.Format.colWords()
	groups, nb := (w.N+ColRows-1)/ColRows, 2*w.pairs
	q := makeBytes(groups * nb * cb)
	d := makeWords(groups * nb * ColRows / 2)
	h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(d))), 2*len(d))
	for r := range w.N {
		l := r % ColRows
		for p := range w.pairs {
			i := w.idx(r, p)
			src, dw := w.q[i*pb:][:pb], w.d[i]
			for b := range 2 {
				c := w.colChunk(r, 2*p+b)
				dst := q[c*cb:][:cb]
				if w.Format.colFine() {
					for e := range BlockLen {
						colPutField(w.Format, dst, l, e, uint8(w.Format.getU(src, lanePos(b, e))/w.Format.mult()))
					}
				} else {
					for k := range nw {
						copy(dst[k*64+l*4:][:4], src[8*k+4*b:][:4])
					}
				}
				h[c*ColRows+l] = uint16(dw >> (16 * b))
			}
		}
	}
	w.q, w.d, w.col = q, d, true
}

// toLane converts the column-order w back to lane order (toColumn's
// inverse).
func (w *Matrix) toLane() {
	switch w.Format {
	case Q4_K:
		w.toLaneK()
		return
	case Q6_K:
		w.toLaneK6()
		return
	}
	pb, cb, nw := w.Format.pairBytes(), w.Format.colBytes(), w.Format.colWords()
	rows := (w.N + PanelRows - 1) / PanelRows * PanelRows
	q := makeBytes(rows * w.pairs * pb)
	d := makeWords(rows * w.pairs)
	hs := w.halfs()
	for r := range w.N {
		l := r % ColRows
		for p := range w.pairs {
			i := w.idx(r, p)
			dst := q[i*pb:][:pb]
			for b := range 2 {
				c := w.colChunk(r, 2*p+b)
				src := w.q[c*cb:][:cb]
				if w.Format.colFine() {
					for e := range BlockLen {
						w.Format.putU(dst, lanePos(b, e), uint8(colGetU(w.Format, src, l, e)/w.Format.mult()))
					}
				} else {
					for k := range nw {
						copy(dst[8*k+4*b:][:4], src[k*64+l*4:][:4])
					}
				}
				d[i] |= uint32(hs[c*ColRows+l]) << (16 * b)
			}
		}
	}
	w.q, w.d, w.col = q, d, false
}

// colBlockGroups is the number of column-order groups whose quants are
// reused across all of X's row tiles before moving on (as blockPanels:
// 2 groups × 16 rows × 4096 q8_0 weights = 136 KiB).
const colBlockGroups = 2

// mulCol is mul for a column-order w: ks are the backend's column-order
// tiles (kc), or the Go specification's. The K-quants' tiles read the
// activations' K-quant terms (Q4_K kx, Q6_K kc) and the group's chunks
// (colk.go), not bs (given a pointer into the quants).
func mulCol(im *impl, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) {
	f, nb, cb := w.Format, 2*w.pairs, w.Format.colBytes()
	gq, gd := nb*cb, nb*ColRows/2 // a group's quant bytes and scale words
	if f.kquant() {
		gq, gd = w.pairs/superPairs*f.colChunkK(), 0
	}
	ks := im.kc[f]
	if ks == nil {
		ks = goColKerns(f, im.mr)
	}
	mr := len(ks)
	sa := a.M * pairLen
	var tmp []float32
	for gb := n0 / ColRows; gb*ColRows < n1; gb += colBlockGroups {
		ge := min(gb+colBlockGroups, (n1+ColRows-1)/ColRows)
		for i0 := 0; i0 < a.M; i0 += mr {
			mm := min(mr, a.M-i0)
			ap, as, ac := &a.q[i0*pairLen], &a.d[i0*2], &a.corrZ[i0*2]
			switch f {
			case Q4_K:
				ac = a.kxAt(i0)
			case Q6_K:
				ac = &a.kc[i0*4]
			}
			for g := gb; g < ge; g++ {
				j0 := g * ColRows
				bp := &w.q[g*gq]
				bs := (*uint32)(unsafe.Pointer(bp))
				if gd > 0 {
					bs = &w.d[g*gd]
				}
				if j0 >= n0 && j0+ColRows <= n1 {
					ks[mm-1](w.pairs, ap, as, ac, sa, bp, bs, &y[i0*ldy+j0], ldy)
					continue
				}
				if tmp == nil {
					tmp = make([]float32, mr*ColRows)
				}
				ks[mm-1](w.pairs, ap, as, ac, sa, bp, bs, &tmp[0], ColRows)
				for r := range mm {
					for j := max(j0, n0); j < min(j0+ColRows, n1); j++ {
						y[(i0+r)*ldy+j] = tmp[r*ColRows+j-j0]
					}
				}
			}
		}
	}
}

// goColKerns returns kernColGo's tiles of heights 1..mr for format f.
func goColKerns(f Format, mr int) []kern {
	var ks []kern
	for m := 1; m <= mr; m++ {
		ks = append(ks, func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int) {
			switch f {
			case Q4_K:
				kernColGoK(m, np, a, as, ac, sa, b, c, ldc)
				return
			case Q6_K:
				kernColGoK6(m, np, a, as, ac, sa, b, c, ldc)
				return
			}
			kernColGo(f, m, np, a, as, ac, sa, b, bs, c, ldc)
		})
	}
	return ks
}

// kernColGo is the specification of the column-order kernels: for r < mr,
// j < ColRows,
//
//	c[r*ldc+j] = Σ_{p<np} Σ_{h<2} float32(S(r,j,p,h)) · (dw(j,2p+h)·dx(r,p,h))
//	S(r,j,p,h) = Σ_{e<32} U(j,2p+h,e)·Q(r,p,h,e) + 8·ac[p*sa4+r*2+h]
//
// with U the unsigned value of element e of lane j of chunk 2p+h (at b +
// (2p+h)·colBytes; colGetU), dw its fp16 scale, half (2p+h)·16 + j of bs,
// and Q, dx, ac (corrZ, −o·Σq/8), sa4 as in kernGo. The float sum runs
// over p then h, as the assembly's. The avx512bw q8_0 tiles compute
// Σ_e (U − 128)·Q (signed weights, no offset) and do not read ac, so they
// equal this where ac is the activations' corrZ, −16·Σ_e Q (as Activations
// always holds; colCorrZ makes it for a test's bytes), not for any ac.
func kernColGo(f Format, mr int, np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int) {
	cb := f.colBytes()
	sa4 := sa / 32
	A := unsafe.Slice(a, (np-1)*sa+mr*pairLen)
	AS := unsafe.Slice(as, (np-1)*sa4+mr*2)
	AC := unsafe.Slice(ac, (np-1)*sa4+mr*2)
	B := unsafe.Slice(b, 2*np*cb)
	BS := unsafe.Slice((*uint16)(unsafe.Pointer(bs)), 2*np*ColRows)
	C := unsafe.Slice(c, (mr-1)*ldc+ColRows)
	for r := range mr {
		for j := range ColRows {
			var sum float32
			for p := range np {
				for h := range 2 {
					q := B[(2*p+h)*cb:][:cb]
					s := 8 * AC[p*sa4+r*2+h]
					for e := range BlockLen {
						s += colGetU(f, q, j, e) * int32(int8(A[p*sa+r*pairLen+lanePos(h, e)]))
					}
					dw := FP16ToFloat32(BS[(2*p+h)*ColRows+j])
					sum += float32(s) * (dw * AS[p*sa4+r*2+h])
				}
			}
			C[r*ldc+j] = sum
		}
	}
}

// pfColConvFn up-converts one column-order group into half a prefill
// tile (the assembly pfConvCol*: see kernels/_asm/quantcol): src and ds at
// the group's chunk 0 and its scales, dst and dd at pair 0 of the half.
type pfColConvFn func(np int, src *byte, ds *uint32, dst *byte, dd *uint16)

// pfConvertCol is pfConvert for a column-order w (j0 a multiple of
// ColRows), with conv where it is not nil: the tile's group k of a block
// is the chunk's 64 bytes k (q8_0), or for q4_0 the low nibbles of bytes
// k (k < 4) and the high nibbles (group 4+k): no transpose.
func pfConvertCol(w *Matrix, j0 int, q []byte, d []uint16, conv pfColConvFn) {
	f, nb, cb := w.Format, 2*w.pairs, w.Format.colBytes()
	hs := w.halfs()
	groups := (w.N + ColRows - 1) / ColRows
	for s := range 2 {
		g := j0/ColRows + s
		if conv != nil && g < groups {
			conv(w.pairs, &w.q[g*nb*cb], &w.d[g*nb*ColRows/2], &q[s*halfTile], &d[s*ColRows])
			continue
		}
		for p := range w.pairs {
			for h := range 2 {
				dst := q[((p*2+h)*2+s)*halfTile:][:halfTile]
				dd := d[p*pfPairScale+h*pfCols+s*ColRows:][:ColRows]
				if g >= groups {
					clear(dst)
					clear(dd)
					continue
				}
				c := g*nb + 2*p + h
				copy(dd, hs[c*ColRows:][:ColRows])
				src := w.q[c*cb:][:cb]
				if f == Q8_0 {
					copy(dst, src)
					continue
				}
				if f.colFine() {
					for l := range ColRows {
						for e := range BlockLen {
							dst[(e/4)*64+l*4+e%4] = byte(colGetU(f, src, l, e))
						}
					}
					continue
				}
				for i := 0; i < 256; i += 8 {
					v := binary.LittleEndian.Uint64(src[i:])
					binary.LittleEndian.PutUint64(dst[i:], v&0x0f0f0f0f0f0f0f0f)
					binary.LittleEndian.PutUint64(dst[256+i:], v>>4&0x0f0f0f0f0f0f0f0f)
				}
			}
		}
	}
}

// halfTile is the bytes of one block of 16 rows in a prefill tile.
const halfTile = 8 * 64

// colCorrZ sets ac to corrZ of format f (−o·Σq/8 per block) for the np
// pairs × mr rows of int8 activations a (pair stride mr·pairLen bytes, ac
// pair stride 2·mr), as Activations.Quantize makes it.
func colCorrZ(f Format, a []byte, ac []int32, np, mr int) {
	o := f.offset()
	for p := range np {
		for r := range mr {
			for h := range 2 {
				var s int32
				for e := range BlockLen {
					s += int32(int8(a[(p*mr+r)*pairLen+lanePos(h, e)]))
				}
				ac[(p*mr+r)*2+h] = -o * s / 8
			}
		}
	}
}
