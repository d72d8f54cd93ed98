package quant

import (
	"encoding/binary"
	"unsafe"
)

// The column-order layout of Q4_K (Matrix.Layout ColumnOrder on the
// avx512vnni and avx512bw backends): groups of ColRows = 16 rows of W as
// col.go's, one 32-bit zmm lane per row, and per group g and super-block s (of the
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
// super-block), so the quants' loads are q4_0's and the scale work adds
// 7 instructions per sub-block (per 4 loads of quants); float32 D and M
// precomputed at Repack would cost 64 bytes per row and super-block
// (0.75 B/weight, a third more to stream).

// colKBytes is the size of a Q4_K column-order chunk (ColRows rows × one
// super-block): 256 bytes of scales and 8 sub-block chunks of 256.
const colKBytes = 256 + 8*256

// colK6Bytes is the size of a Q6_K column-order chunk: 320 bytes of
// scales and 16 sub-block chunks of 192.
const colK6Bytes = 320 + 16*192

// colChunkK is the column-order chunk size of K-quant f.
func (f Format) colChunkK() int {
	if f == Q6_K {
		return colK6Bytes
	}
	return colKBytes
}

// colKChunk returns the chunk of group g and super-block s of the
// column-order K-quant w.
func (w *Matrix) colKChunk(g, s int) []byte {
	nsb, cb := w.pairs/superPairs, w.Format.colChunkK()
	return w.q[(g*nsb+s)*cb:][:cb]
}

// colKMeta returns lane l's 16 scale bytes of chunk c as the lane order's
// Matrix.meta holds them (d, dmin, ggml's 12 scale bytes).
func colKMeta(c []byte, l int) (mb [16]byte) {
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
			mb := colKMeta(c, l)
			copy(lw.meta(r, s), mb[:])
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
				mb := colKMeta(ch, l)
				D, M := kScalesOf(Q4_K, mb[:])
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

// pfkColConvFn up-converts one column-order K-quant group into half a
// prefill tile, quants and scale words (the assembly pfConvColQ4K,
// pfConvColQ6K: kernels/_asm/quantcol's genConvK): src at the group's
// first chunk, dst and dd at pair 0 of the half.
type pfkColConvFn func(np int, src *byte, dst *byte, dd *float32)

// pfkConvertCol is pfkConvert for a column-order Q4_K w (j0 a multiple of
// ColRows): the quants of each sub-block chunk are a q4_0 column-order
// chunk, split into the tile's low and high nibble groups, the scale
// words made from the chunk's scale bytes: by conv for a whole group
// (nil: Go, the quants 8 bytes at a time).
func pfkConvertCol(w *Matrix, j0 int, q []byte, d []float32, conv pfkColConvFn) {
	nsb, groups := w.pairs/superPairs, (w.N+ColRows-1)/ColRows
	sw := 2 * pfkSub(Q4_K) * pfCols
	for s := range 2 {
		g := j0/ColRows + s
		if conv != nil && g < groups {
			conv(w.pairs, &w.colKChunk(g, 0)[0], &q[s*halfTile], &d[s*ColRows])
			continue
		}
		for sbk := range nsb {
			var c []byte
			if g < groups {
				c = w.colKChunk(g, sbk)
			}
			for pp := range superPairs {
				p := sbk*superPairs + pp
				for h := range 2 {
					dst := q[((p*2+h)*2+s)*halfTile:][:halfTile]
					if c == nil {
						clear(dst)
					} else {
						src := c[256+(2*pp+h)*256:][:256]
						for i := 0; i < 256; i += 8 {
							v := binary.LittleEndian.Uint64(src[i:])
							binary.LittleEndian.PutUint64(dst[i:], v&0x0f0f0f0f0f0f0f0f)
							binary.LittleEndian.PutUint64(dst[256+i:], v>>4&0x0f0f0f0f0f0f0f0f)
						}
					}
				}
			}
			for l := range ColRows {
				var D [16]float32
				var M [8]float32
				if c != nil {
					mb := colKMeta(c, l)
					D, M = kScalesOf(Q4_K, mb[:])
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

// The column-order layout of Q6_K (avx512vnni, avx512bw): per group g of ColRows
// rows and super-block s one chunk of colK6Bytes = 3392 bytes, chunks in
// the order (g, s), all in Matrix.q:
//
//	bytes   0..31:   the 16 rows' d (fp16)
//	bytes  32..63:   zero (the lane order's 2 bytes of alignment per row)
//	bytes 64 + 16j + l: the int8 scale of sub-block j (j < 16) of row l
//	bytes 320 + 192j ..: sub-block j (elements 16j..16j+15): three
//	                 64-byte words A, B, C, lane l at bytes 4l..4l+3,
//	                 byte i of the lane for elements 4g+i of the sub-block
//	                 (g < 4) with q = lo4 + 16·hi2:
//	                   A = lo4(g0) | hi2(g0)<<4 | hi2(g2)<<6
//	                   B = lo4(g1) | hi2(g1)<<4 | hi2(g3)<<6
//	                   C = lo4(g2) | lo4(g3)<<4
//
// 212 bytes per row and super-block as the lane order (0.828125 B/weight,
// BytesPerWeight; the file's 210 and 2 of padding), one sequential stream
// per group. The kernel (kernColGoK6; kernels/_asm/quantcol's genK6) gets
// the 4 groups' q of 16 rows from the 3 words with 9 instructions: A AND
// 0x3f, B AND 0x3f, (C AND 0x0f) OR ((A >> 2) AND 0x30), ((C >> 4) AND
// 0x0f) OR ((B >> 2) AND 0x30) (each OR with its AND 0x0f one VPTERNLOGD),
// and the 16 rows' scales of a sub-block with one VPMOVSXBD.

// colK6Get returns q (0..63) of element e (0..255) of lane l in chunk c.
func colK6Get(c []byte, l, e int) int32 {
	w := c[320+(e/16)*192:]
	g, o := (e%16)/4, 4*l+e%4
	A, B, C := w[o], w[64+o], w[128+o]
	switch g {
	case 0:
		return int32(A & 0x3f)
	case 1:
		return int32(B & 0x3f)
	case 2:
		return int32(C&0x0f | A>>6<<4)
	}
	return int32(C>>4 | B>>6<<4)
}

// colK6Put stores q (0..63) of element e of lane l in the zeroed-at-that-
// place chunk c.
func colK6Put(c []byte, l, e int, q uint8) {
	w := c[320+(e/16)*192:]
	g, o := (e%16)/4, 4*l+e%4
	lo, hi := q&0x0f, q>>4&3
	switch g {
	case 0:
		w[o] |= lo | hi<<4
	case 1:
		w[64+o] |= lo | hi<<4
	case 2:
		w[128+o] |= lo
		w[o] |= hi << 6
	default:
		w[128+o] |= lo << 4
		w[64+o] |= hi << 6
	}
}

// colK6Meta returns lane l's 20 scale bytes of Q6_K chunk c as the lane
// order's Matrix.meta holds them (d, 2 zero bytes, the 16 int8 scales).
func colK6Meta(c []byte, l int) (mb [20]byte) {
	copy(mb[0:2], c[2*l:])
	for j := range 16 {
		mb[4+j] = c[64+16*j+l]
	}
	return mb
}

// toColumnK6 converts the lane-order Q6_K w to column order, 4 elements
// (a 32-bit word) at a time: group k (elements 4k..4k+3) of block b of a
// lane-order pair has its low 4 bits in the low (k < 4) or high nibbles
// of bytes 8(k%4)+4b.., its high 2 bits in field k/2 of bytes
// 32+8(k%2)+4b.. (Format.getU).
func (w *Matrix) toColumnK6() {
	groups, nsb := (w.N+ColRows-1)/ColRows, w.pairs/superPairs
	q := makeBytes(groups * nsb * colK6Bytes)
	le := binary.LittleEndian
	for r := range w.N {
		l := r % ColRows
		for s := range nsb {
			c := q[((r/ColRows)*nsb+s)*colK6Bytes:][:colK6Bytes]
			mb := w.meta(r, s)
			copy(c[2*l:][:2], mb[0:2])
			for j := range 16 {
				c[64+16*j+l] = mb[4+j]
			}
			for pp := range superPairs {
				src := w.q[w.idx(r, s*superPairs+pp)*48:][:48]
				for b := range 2 {
					var lo, hi [8]uint32
					for k := range 8 {
						lo[k] = le.Uint32(src[8*(k%4)+4*b:]) >> (4 * (k / 4)) & 0x0f0f0f0f
						hi[k] = le.Uint32(src[32+8*(k%2)+4*b:]) >> (2 * (k / 2)) & 0x03030303
					}
					for t := range 2 {
						g := lo[4*t:][:4]
						h := hi[4*t:][:4]
						dst := c[320+192*(4*pp+2*b+t)+4*l:]
						le.PutUint32(dst, g[0]|h[0]<<4|h[2]<<6)
						le.PutUint32(dst[64:], g[1]|h[1]<<4|h[3]<<6)
						le.PutUint32(dst[128:], g[2]|g[3]<<4)
					}
				}
			}
		}
	}
	w.q, w.d, w.col = q, nil, true
}

// toLaneK6 converts the column-order Q6_K w back to lane order.
func (w *Matrix) toLaneK6() {
	lw, err := newMatrix(w.Format, w.N, w.K)
	if err != nil {
		panic("quant: " + err.Error()) // w was made with this shape
	}
	for r := range w.N {
		l := r % ColRows
		for s := range w.pairs / superPairs {
			c := w.colKChunk(r/ColRows, s)
			mb := colK6Meta(c, l)
			copy(lw.meta(r, s), mb[:])
			for e := range SuperLen {
				lw.putK(r, s, e, uint8(colK6Get(c, l, e)))
			}
		}
	}
	w.q, w.d, w.col = lw.q, lw.d, false
}

// kernColGoK6 is the specification of the column-order Q6_K kernels (np
// a multiple of superPairs; a smaller remainder is ignored): b at the
// group's first chunk (colK6Bytes per super-block); a, as as kernColGo;
// ac at the activations' column-order Q6_K corrections of row i0
// (Activations.kc: −32·Σq per 16-weight sub-block, pair p of row r, block
// h, half t at ac + p·sa/16 + r·4 + 2h + t). For r < mr, l < ColRows,
//
//	c[r*ldc+l] = Σ_s Σ_{j<16} float32(S(r,l,s,j))·(D(l,s,j)·dx(r,p,h))
//	S(r,l,s,j) = ac(r,p,h,t) + Σ_{e<16} q(l,s,16j+e)·Q(r,p,h,16t+e)
//
// with p = 4s + j/4, h = (j/2)%2, t = j%2 (sub-block j is half t of
// block h of pair p), q 0..63, D = d·sc (exact in float32); the float
// sum runs over s then j, as the assembly's (which fuses the multiply-add).
func kernColGoK6(mr int, np int, a *byte, as *float32, ac *int32, sa int, b *byte, c *float32, ldc int) {
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
	AC := unsafe.Slice(ac, (np-1)*sa/16+mr*4)
	B := unsafe.Slice(b, nsb*colK6Bytes)
	for r := range mr {
		for l := range ColRows {
			var sum float32
			for s := range nsb {
				ch := B[s*colK6Bytes:][:colK6Bytes]
				mb := colK6Meta(ch, l)
				D, _ := kScalesOf(Q6_K, mb[:])
				for j := range 16 {
					p, h, t := s*superPairs+j/4, (j/2)%2, j%2
					S := AC[p*sa/16+r*4+2*h+t]
					for e := range 16 {
						S += colK6Get(ch, l, 16*j+e) * int32(int8(A[p*sa+r*pairLen+lanePos(h, 16*t+e)]))
					}
					sum += float32(S) * (D[j] * AS[p*sa4+r*2+h])
				}
			}
			C[r*ldc+l] = sum
		}
	}
}

// pfkConvertColK6 is pfkConvertCol for a column-order Q6_K w: the quants
// of a sub-block chunk's three words become the tile's 4 groups of the
// sub-block with colK6Get's arithmetic, the scale words D = d·sc and Mn
// = 32·D made from the chunk's bytes: by conv for a whole group (nil: Go,
// the quants 8 bytes at a time).
func pfkConvertColK6(w *Matrix, j0 int, q []byte, d []float32, conv pfkColConvFn) {
	nsb, groups := w.pairs/superPairs, (w.N+ColRows-1)/ColRows
	sw := 2 * pfkSub(Q6_K) * pfCols
	const m3f, m0f, m30 = 0x3f3f3f3f3f3f3f3f, 0x0f0f0f0f0f0f0f0f, 0x3030303030303030
	for s := range 2 {
		g := j0/ColRows + s
		if conv != nil && g < groups {
			conv(w.pairs, &w.colKChunk(g, 0)[0], &q[s*halfTile], &d[s*ColRows])
			continue
		}
		for sbk := range nsb {
			var c []byte
			if g < groups {
				c = w.colKChunk(g, sbk)
			}
			for j := range 16 {
				p, h, t := sbk*superPairs+j/4, (j/2)%2, j%2
				dst := q[((p*2+h)*2+s)*halfTile+4*t*64:][:4*64]
				if c == nil {
					clear(dst)
					continue
				}
				src := c[320+192*j:][:192]
				for i := 0; i < 64; i += 8 {
					A := binary.LittleEndian.Uint64(src[i:])
					B := binary.LittleEndian.Uint64(src[64+i:])
					C := binary.LittleEndian.Uint64(src[128+i:])
					binary.LittleEndian.PutUint64(dst[i:], A&m3f)
					binary.LittleEndian.PutUint64(dst[64+i:], B&m3f)
					binary.LittleEndian.PutUint64(dst[128+i:], C&m0f|A>>2&m30)
					binary.LittleEndian.PutUint64(dst[192+i:], C>>4&m0f|B>>2&m30)
				}
			}
			for l := range ColRows {
				var D [16]float32
				if c != nil {
					mb := colK6Meta(c, l)
					D, _ = kScalesOf(Q6_K, mb[:])
				}
				for pp := range superPairs {
					ds := d[(sbk*superPairs+pp)*sw:][:sw]
					for b := range 4 {
						ds[b*pfCols+s*ColRows+l] = D[4*pp+b]
						ds[(4+b)*pfCols+s*ColRows+l] = 32 * D[4*pp+b]
					}
				}
			}
		}
	}
}
