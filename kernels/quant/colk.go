package quant

import (
	"encoding/binary"
	"unsafe"
)

// The column-order layout of Q4_K (Matrix.Layout ColumnOrder on the
// avx512vnni backend): groups of ColRows = 16 rows of W as col.go's, one
// 32-bit zmm lane per row, and per group g and super-block s (of the
// row's pairs/4) one chunk of colKBytes = 2304 bytes, chunks in the order
// (g, s), all in Matrix.q (Matrix.d is empty):
//
//	bytes    0..31:   the 16 rows' d (fp16, half l = row 16g+l)
//	bytes   32..63:   the 16 rows' dmin (fp16)
//	bytes 64·i+64 .. 64·i+127 (i < 3): ggml's packed scale bytes 4i..4i+3
//	                  of row l at lane l (bytes 4l..4l+3)
//	bytes 256 + 256·j .. (j < 8): sub-block j (elements 32j..32j+31) in
//	                  q4_0's column layout: byte k·64 + l·4 + i (k < 4),
//	                  low nibble q of element 4k+i, high nibble q of
//	                  element 16+4k+i
//
// 16 bytes of scales per row and super-block, as the file: 2304 bytes per
// 16 rows × 256 weights, 0.5625 B/weight resident (BytesPerWeight), one
// sequential stream per group with the scales ahead of the quants they
// scale. The kernel (kernColGoK; kernels/_asm/quantcol's genK) makes the
// float32 D = d·sc and M = dmin·m of a sub-block for 16 rows with 6
// vector instructions from these bytes (the 6-bit scales unpacked once per
// super-block), so the quants' loads are q4_0's and the scale work is
// 7 instructions per 64-byte word pair more; float32 D and M precomputed
// at Repack would cost 64 bytes per row and super-block (0.75 B/weight).

// colKBytes is the size of a Q4_K column-order chunk (ColRows rows × one
// super-block): 256 bytes of scales and 8 sub-block chunks of 256.
const colKBytes = 256 + 8*256

// colKChunk returns the chunk of group g and super-block s of the
// column-order Q4_K w.
func (w *Matrix) colKChunk(g, s int) []byte {
	nsb := w.pairs / superPairs
	return w.q[(g*nsb+s)*colKBytes:][:colKBytes]
}

// colKMeta returns lane l's 16 scale bytes of chunk c as the lane order's
// Matrix.meta holds them (d, dmin, ggml's 12 scale bytes).
func colKMeta(c []byte, l int) []byte {
	mb := make([]byte, 16)
	copy(mb[0:2], c[2*l:])
	copy(mb[2:4], c[32+2*l:])
	for i := range 3 {
		copy(mb[4+4*i:][:4], c[64+64*i+4*l:])
	}
	return mb
}

// colKPutMeta stores lane l's 16 scale bytes mb (colKMeta's) in chunk c.
func colKPutMeta(c []byte, l int, mb []byte) {
	copy(c[2*l:][:2], mb[0:2])
	copy(c[32+2*l:][:2], mb[2:4])
	for i := range 3 {
		copy(c[64+64*i+4*l:][:4], mb[4+4*i:][:4])
	}
}

// colKGetU returns q (0..15) of element e (0..255) of lane l in chunk c.
func colKGetU(c []byte, l, e int) int32 {
	return colGetU(Q4_0, c[256+(e/BlockLen)*256:], l, e%BlockLen)
}

// toColumnK converts the lane-order Q4_K w to column order: each 4-byte
// word of a lane-order pair (block b's elements 4k..4k+3 in the low
// nibbles, 16+4k.. in the high ones, bytes 8k+4b..) moves whole, as
// q4_0's.
func (w *Matrix) toColumnK() {
	groups, nsb := (w.N+ColRows-1)/ColRows, w.pairs/superPairs
	q := makeBytes(groups * nsb * colKBytes)
	for r := range w.N {
		l := r % ColRows
		for s := range nsb {
			c := q[((r/ColRows)*nsb+s)*colKBytes:][:colKBytes]
			colKPutMeta(c, l, w.meta(r, s))
			for pp := range superPairs {
				src := w.q[w.idx(r, s*superPairs+pp)*32:][:32]
				for b := range 2 {
					dst := c[256+(2*pp+b)*256:]
					for k := range 4 {
						copy(dst[k*64+l*4:][:4], src[8*k+4*b:][:4])
					}
				}
			}
		}
	}
	w.q, w.d, w.col = q, nil, true
}

// toLaneK converts the column-order Q4_K w back to lane order
// (toColumnK's inverse).
func (w *Matrix) toLaneK() {
	lw, err := newMatrix(w.Format, w.N, w.K)
	if err != nil {
		panic("quant: " + err.Error()) // w was made with this shape
	}
	for r := range w.N {
		l := r % ColRows
		for s := range w.pairs / superPairs {
			c := w.colKChunk(r/ColRows, s)
			copy(lw.meta(r, s), colKMeta(c, l))
			for pp := range superPairs {
				dst := lw.q[lw.idx(r, s*superPairs+pp)*32:][:32]
				for b := range 2 {
					src := c[256+(2*pp+b)*256:]
					for k := range 4 {
						copy(dst[8*k+4*b:][:4], src[k*64+l*4:][:4])
					}
				}
			}
		}
	}
	w.q, w.d, w.col = lw.q, lw.d, false
}

// kernColGoK is the specification of the column-order Q4_K kernels (np a
// multiple of superPairs; a smaller remainder is ignored): b at the
// group's first chunk (colKBytes per super-block); a, as as kernColGo; ac
// at the activations' K-quant terms of row i0 (Activations.kx: float32
// d_x·Σq, super-block s of row r, sub-block j at ac + s·sa/8 + r·8 + j).
// For r < mr, j < ColRows,
//
//	c[r*ldc+l] = Σ_s Σ_{j<8} ( float32(S(r,l,s,j))·(D(l,s,j)·dx(r,p,h)) − M(l,s,j)·X(r,s,j) )
//
// with p = 4s + j/2, h = j%2 (sub-block j is block h of pair p), S the
// sub-block's Σ q·Q (q 0..15, no offset), D = d·sc and M = dmin·m of
// row l's sub-block (exact in float32), X the kx term; the float sum runs
// over s, then j, the scaled sum added then the min term subtracted, as
// the assembly's (which fuses each into one multiply-add).
func kernColGoK(mr int, np int, a *byte, as *float32, ac *int32, sa int, b *byte, c *float32, ldc int) {
	nsb := np / superPairs
	C := unsafe.Slice(c, (mr-1)*ldc+ColRows)
	if nsb == 0 {
		for r := range mr {
			clear(C[r*ldc:][:ColRows])
		}
		return
	}
	sa4 := sa / 32
	A := unsafe.Slice(a, (np-1)*sa+mr*pairLen)
	AS := unsafe.Slice(as, (np-1)*sa4+mr*2)
	AX := unsafe.Slice((*float32)(unsafe.Pointer(ac)), (nsb-1)*sa/8+mr*8)
	B := unsafe.Slice(b, nsb*colKBytes)
	for r := range mr {
		for l := range ColRows {
			var sum float32
			for s := range nsb {
				ch := B[s*colKBytes:][:colKBytes]
				D, M := kScalesOf(Q4_K, colKMeta(ch, l))
				for j := range 8 {
					p, h := s*superPairs+j/2, j%2
					var S int32
					for e := range BlockLen {
						S += colKGetU(ch, l, j*BlockLen+e) * int32(int8(A[p*sa+r*pairLen+lanePos(h, e)]))
					}
					sum += float32(S) * (D[j] * AS[p*sa4+r*2+h])
					sum -= M[j] * AX[s*sa/8+r*8+j]
				}
			}
			C[r*ldc+l] = sum
		}
	}
}

// pfkConvertCol is pfkConvert for a column-order Q4_K w (j0 a multiple of
// ColRows): the quants of each sub-block chunk are a q4_0 column-order
// chunk, up-converted by conv (pfConvColQ4, one super-block of 4 pairs
// per call; nil: the Go loop), the scale words made from the chunk's
// scale bytes in Go.
func pfkConvertCol(w *Matrix, j0 int, q []byte, d []float32, conv pfColConvFn) {
	nsb, groups := w.pairs/superPairs, (w.N+ColRows-1)/ColRows
	sw := 2 * pfkSub(Q4_K) * pfCols
	var dd [superPairs * 2 * pfCols]uint16 // conv's fp16 scale copy (pfPairScale per pair), not used
	for s := range 2 {
		g := j0/ColRows + s
		for sbk := range nsb {
			var c []byte
			if g < groups {
				c = w.colKChunk(g, sbk)
			}
			for pp := range superPairs {
				p := sbk*superPairs + pp
				for h := range 2 {
					dst := q[((p*2+h)*2+s)*halfTile:][:halfTile]
					switch {
					case c == nil:
						clear(dst)
					case conv == nil:
						src := c[256+(2*pp+h)*256:][:256]
						for i := 0; i < 256; i += 8 {
							v := binary.LittleEndian.Uint64(src[i:])
							binary.LittleEndian.PutUint64(dst[i:], v&0x0f0f0f0f0f0f0f0f)
							binary.LittleEndian.PutUint64(dst[256+i:], v>>4&0x0f0f0f0f0f0f0f0f)
						}
					}
				}
			}
			if c != nil && conv != nil {
				// The chunk's first 256 bytes stand in for the fp16 scales
				// conv copies (4 pairs × 2 × 32 bytes).
				conv(superPairs, &c[256], (*uint32)(unsafe.Pointer(&c[0])), &q[(sbk*superPairs*2*2+s)*halfTile], &dd[0])
			}
			for l := range ColRows {
				var D [16]float32
				var M [8]float32
				if c != nil {
					D, M = kScalesOf(Q4_K, colKMeta(c, l))
				}
				for pp := range superPairs {
					ds := d[(sbk*superPairs+pp)*sw:][:sw]
					for b := range 2 {
						ds[b*pfCols+s*ColRows+l] = D[2*pp+b]
						ds[(2+b)*pfCols+s*ColRows+l] = M[2*pp+b]
					}
				}
			}
		}
	}
}
