package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// The K-quants Q4_K and Q6_K (ggml-common.h block_q4_K, block_q6_K):
// super-blocks of 256 weights along K.
//
//	Q4_K: 8 sub-blocks of 32, w = d·sc·q − dmin·m, q 0..15, sc and m
//	      6-bit (packed in 12 bytes), d and dmin fp16: 144 bytes
//	Q6_K: 16 sub-blocks of 16, w = d·sc·(q − 32), q 0..63, sc int8, d
//	      fp16: 210 bytes
//
// Packed (Matrix): the quants of each 64 weights (a block pair) in lane
// order as every format, per pair and row Q4_K 32 bytes (q4_0's nibble
// layout, the value q itself) and Q6_K 48 bytes (the low 4 bits as q4_0
// in bytes 0..31, the high 2 bits as int2 in bytes 32..47: byte 32 + t,
// bits 2L+1:2L = position 16L + t); per super-block and row, in Matrix.d
// (panels × super-blocks × PanelRows × metaWords words), Q4_K 4 words
// (d, dmin and ggml's 12 scale bytes, as the file) and Q6_K 5 words (d,
// 2 bytes of padding, the 16 int8 scales). Resident: Q4_K 144 bytes per
// 256 weights (0.5625 B/w, as the file), Q6_K 212 (0.828125, the file's
// 210 and 2 bytes of alignment). Matrix.Repack for the avx512vnni and
// avx512bw backends converts both to column order (colk.go), at the same
// resident size.

// PrefillFormat reports whether Mul's prefill path (a backend with
// PrefillTileM > 0, from PrefillMinM rows) runs format f: every format,
// the K-quants on tiles of their own (prefill_k.go).
func PrefillFormat(f Format) bool { return pfFormat(f) || pfkSub(f) > 0 }

// SuperLen is the super-block length of the K-quants and the ternary
// formats (ggml's QK_K).
const SuperLen = 256

// superPairs is the number of block pairs per super-block.
const superPairs = SuperLen / pairLen

// metaWords is the number of uint32 words of a K-quant super-block's
// scales per row.
func (f Format) metaWords() int {
	switch f {
	case Q4_K:
		return 4
	case Q6_K:
		return 5
	}
	return 0
}

// meta returns the scale bytes of super-block s of row r (4·metaWords):
// in lane order w's own bytes, in column order (colk.go) a copy (the
// constructors write through it before any Repack).
func (w *Matrix) meta(r, s int) []byte {
	if w.col {
		if w.Format == Q6_K {
			mb := colK6Meta(w.colKChunk(r/ColRows, s), r%ColRows)
			return mb[:]
		}
		mb := colKMeta(w.colKChunk(r/ColRows, s), r%ColRows)
		return mb[:]
	}
	mw := w.Format.metaWords()
	i := ((r/PanelRows*(w.pairs/superPairs)+s)*PanelRows + r%PanelRows) * mw
	return unsafe.Slice((*byte)(unsafe.Pointer(&w.d[i])), 4*mw)
}

// kPos returns the packed pair (row r's pair index) and lane position of
// element e (0..255) of super-block s.
func kPos(s, e int) (pair, pos int) {
	blk := s*(SuperLen/BlockLen) + e/BlockLen
	return blk / 2, lanePos(blk%2, e%BlockLen)
}

func (w *Matrix) putK(r, s, e int, v uint8) {
	p, pos := kPos(s, e)
	pb := w.Format.pairBytes()
	w.Format.putU(w.q[w.idx(r, p)*pb:][:pb], pos, v)
}

func (w *Matrix) getK(r, s, e int) int32 {
	if w.col {
		if w.Format == Q6_K {
			return colK6Get(w.colKChunk(r/ColRows, s), r%ColRows, e)
		}
		return colKGetU(w.colKChunk(r/ColRows, s), r%ColRows, e)
	}
	p, pos := kPos(s, e)
	pb := w.Format.pairBytes()
	return w.Format.getU(w.q[w.idx(r, p)*pb:][:pb], pos)
}

// q4kScaleMin is ggml's get_scale_min_k4: the 6-bit scale and min of
// sub-block j (0..7) from the 12 packed bytes: j < 4 in the low 6 bits of
// bytes j and j+4, j ≥ 4 in the nibbles of byte j+4 with the top 2 bits
// from the high bits of bytes j−4 and j.
func q4kScaleMin(sc []byte, j int) (uint8, uint8) {
	if j < 4 {
		return sc[j] & 63, sc[j+4] & 63
	}
	return sc[j+4]&0x0f | sc[j-4]>>6<<4, sc[j+4]>>4 | sc[j]>>6<<4
}

// kScales returns the float32 sub-block scales D (d·sc, exact) and, for
// Q4_K, mins M (dmin·m, exact) of super-block s of row r: Q4_K 8 each,
// Q6_K 16 scales.
func (w *Matrix) kScales(r, s int) (D [16]float32, M [8]float32) {
	return kScalesOf(w.Format, w.meta(r, s))
}

// kScalesOf is kScales from a super-block's scale bytes mb (Matrix.meta).
func kScalesOf(f Format, mb []byte) (D [16]float32, M [8]float32) {
	d := FP16ToFloat32(binary.LittleEndian.Uint16(mb))
	if f == Q4_K {
		dmin := FP16ToFloat32(binary.LittleEndian.Uint16(mb[2:]))
		for j := range 8 {
			sc, m := q4kScaleMin(mb[4:], j)
			D[j], M[j] = d*float32(sc), dmin*float32(m)
		}
		return
	}
	for j := range 16 {
		D[j] = d * float32(int8(mb[4+j]))
	}
	return
}

// dequantizeK is Dequantize for Q4_K and Q6_K, in the order of ggml's
// dequantize_row_q4_K (y = (d·sc)·q − dmin·m; d·sc·q is exact, so a fused
// multiply-add gives the same float) and dequantize_row_q6_K (y =
// (d·sc)·(q − 32), rounded once).
func (w *Matrix) dequantizeK() []float32 {
	out := make([]float32, w.N*w.K)
	for r := range w.N {
		for s := 0; s*SuperLen < w.K; s++ {
			D, M := w.kScales(r, s)
			for e := range min(SuperLen, w.K-s*SuperLen) {
				q := w.getK(r, s, e)
				y := &out[r*w.K+s*SuperLen+e]
				if w.Format == Q4_K {
					*y = D[e/32]*float32(q) - M[e/32]
				} else {
					*y = D[e/16] * float32(q-32)
				}
			}
		}
	}
	return out
}

// rowTerms writes row r's weights (as Dequantize) into vals and the
// magnitudes whose float32 rounding the kernels' error bound scales with
// into mags: |w| for every format but Q4_K, d·sc·q + dmin·m for Q4_K
// (whose kernels sum the two terms separately).
func (w *Matrix) rowTerms(r int, vals []float32, mags []float64) {
	if !w.Format.kquant() {
		for blk := range w.K / BlockLen {
			d, q := w.block(r, blk)
			for e := range BlockLen {
				v := d * float32(q[e])
				vals[blk*BlockLen+e], mags[blk*BlockLen+e] = v, math.Abs(float64(v))
			}
		}
		return
	}
	for s := 0; s*SuperLen < w.K; s++ {
		D, M := w.kScales(r, s)
		for e := range min(SuperLen, w.K-s*SuperLen) {
			q := w.getK(r, s, e)
			i := s*SuperLen + e
			if w.Format == Q4_K {
				vals[i] = D[e/32]*float32(q) - M[e/32]
				mags[i] = math.Abs(float64(D[e/32])*float64(q)) + math.Abs(float64(M[e/32]))
			} else {
				vals[i] = D[e/16] * float32(q-32)
				mags[i] = math.Abs(float64(vals[i]))
			}
		}
	}
}

// fromGGUFK packs an N×K Q4_K or Q6_K tensor (N rows of K/256 blocks).
func fromGGUFK(f Format, data []byte, n, k int) (*Matrix, error) {
	if k%SuperLen != 0 {
		return nil, fmt.Errorf("quant: %s tensor %d×%d: K must be a multiple of the block length %d", f, n, k, SuperLen)
	}
	w, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	bb, nb := f.GGUFBlockBytes(), k/SuperLen
	if want := int64(n) * int64(nb) * int64(bb); int64(len(data)) != want {
		return nil, fmt.Errorf("quant: %s tensor %d×%d: %d bytes, want %d (%d blocks of %d bytes)", f, n, k, len(data), want, int64(n)*int64(nb), bb)
	}
	bad := func(r, s int, what string, h uint16) error {
		return fmt.Errorf("quant: %s tensor %d×%d: row %d block %d: %s is %v", f, n, k, r, s, what, FP16ToFloat32(h))
	}
	for r := range n {
		for s := range nb {
			src := data[(r*nb+s)*bb:][:bb]
			mb := w.meta(r, s)
			if f == Q4_K {
				// d, dmin, scales[12], qs[128]: element 64c + l is the low
				// nibble of qs[32c + l] (l < 32), the high nibble of
				// qs[32c + l − 32] (l ≥ 32).
				if h := binary.LittleEndian.Uint16(src); h&0x7c00 == 0x7c00 {
					return nil, bad(r, s, "scale", h)
				}
				if h := binary.LittleEndian.Uint16(src[2:]); h&0x7c00 == 0x7c00 {
					return nil, bad(r, s, "min scale", h)
				}
				copy(mb, src[:16])
				qs := src[16:]
				for e := range SuperLen {
					c, l := e/64, e%64
					v := qs[32*c+l%32]
					if l >= 32 {
						v >>= 4
					}
					w.putK(r, s, e, v&0x0f)
				}
				continue
			}
			// ql[128], qh[64], scales[16], d: element 128h + 32g + m has
			// low bits from ql[64h + 32(g%2) + m] (nibble g/2) and high
			// bits 2g+1:2g of qh[32h + m]; its scale is scales[e/16].
			if hd := binary.LittleEndian.Uint16(src[208:]); hd&0x7c00 == 0x7c00 {
				return nil, bad(r, s, "scale", hd)
			}
			mb[0], mb[1] = src[208], src[209]
			copy(mb[4:], src[192:208])
			for e := range SuperLen {
				h, g, m := e/128, (e%128)/32, e%32
				lo := src[64*h+32*(g%2)+m]
				if g >= 2 {
					lo >>= 4
				}
				hi := src[128+32*h+m] >> (2 * g) & 3
				w.putK(r, s, e, lo&0x0f|hi<<4)
			}
		}
	}
	return w, nil
}

// appendGGUFK writes w (Q4_K or Q6_K, K a multiple of 256) as GGUF blocks.
func (w *Matrix) appendGGUFK(dst []byte) []byte {
	f := w.Format
	if w.K%SuperLen != 0 {
		panic(fmt.Sprintf("quant: AppendGGUF of a %s matrix with K = %d, not a multiple of %d", f, w.K, SuperLen))
	}
	for r := range w.N {
		for s := range w.K / SuperLen {
			mb := w.meta(r, s)
			start := len(dst)
			dst = append(dst, make([]byte, f.GGUFBlockBytes())...)
			b := dst[start:]
			if f == Q4_K {
				copy(b, mb[:16])
				for e := range SuperLen {
					c, l := e/64, e%64
					b[16+32*c+l%32] |= byte(w.getK(r, s, e)) << (4 * (l / 32))
				}
				continue
			}
			b[208], b[209] = mb[0], mb[1]
			copy(b[192:208], mb[4:])
			for e := range SuperLen {
				h, g, m := e/128, (e%128)/32, e%32
				q := byte(w.getK(r, s, e))
				b[64*h+32*(g%2)+m] |= (q & 0x0f) << (4 * (g / 2))
				b[128+32*h+m] |= (q >> 4) << (2 * g)
			}
		}
	}
	return dst
}

// nearestInt is ggml's nearest_int: round to nearest, ties to even.
func nearestInt(v float32) int { return int(math.RoundToEven(float64(v))) }

// quantizeK quantizes float32 weights to Q4_K or Q6_K, a last partial
// super-block (K not a multiple of 256) padded with zero weights.
//
// Q4_K is ggml's quantize_row_q4_K_ref without make_qkx2_quants's
// weighted 20-step search: each sub-block's scale and min are its plain
// min/max fit (scale = (max − min)/15, min ≤ 0), then, as ggml, the 8
// scales and mins are quantized to 6 bits against d = max scale/63 and
// dmin = max min/63 (fp16), and q = nearest((w + dmin·m)/(d·sc)) in 0..15.
// Q6_K is ggml's quantize_row_q6_K_ref with make_qx_quants's rmse_type 0
// (no search): a sub-block's scale is its value of largest magnitude over
// −32, the 16 scales quantized to int8 against d = −(largest)/128, q =
// nearest(w/(d·sc)) + 32 in 0..63.
func quantizeK(f Format, x []float32, n, k int) (*Matrix, error) {
	w, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	var xs [SuperLen]float32
	for r := range n {
		for s := 0; s*SuperLen < k; s++ {
			clear(xs[:])
			copy(xs[:], x[r*k+s*SuperLen:r*k+min(k, (s+1)*SuperLen)])
			for _, v := range xs {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("quant: %s matrix %d×%d: row %d holds %v", f, n, k, r, v)
				}
			}
			if f == Q4_K {
				w.quantizeQ4K(r, s, &xs)
			} else {
				w.quantizeQ6K(r, s, &xs)
			}
		}
	}
	return w, nil
}

func (w *Matrix) quantizeQ4K(r, s int, x *[SuperLen]float32) {
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xb := x[32*j:][:32]
		lo, hi := xb[0], xb[0]
		for _, v := range xb {
			lo, hi = min(lo, v), max(hi, v)
		}
		lo = min(lo, 0)
		if hi != lo {
			scales[j] = 1 / (15 / (hi - lo))
		}
		mins[j] = -lo
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	var invS, invM float32
	if maxScale > 0 {
		invS = 63 / maxScale
	}
	if maxMin > 0 {
		invM = 63 / maxMin
	}
	mb := w.meta(r, s)
	sc := mb[4:16]
	var ls, lm [8]uint8
	for j := range 8 {
		ls[j] = uint8(min(63, nearestInt(invS*scales[j])))
		lm[j] = uint8(min(63, nearestInt(invM*mins[j])))
		if j < 4 {
			sc[j], sc[j+4] = ls[j], lm[j]
		} else {
			sc[j+4] = ls[j]&0x0f | lm[j]&0x0f<<4
			sc[j-4] |= ls[j] >> 4 << 6
			sc[j] |= lm[j] >> 4 << 6
		}
	}
	dh, mh := Float32ToFP16(maxScale/63), Float32ToFP16(maxMin/63)
	binary.LittleEndian.PutUint16(mb, dh)
	binary.LittleEndian.PutUint16(mb[2:], mh)
	d, dmin := FP16ToFloat32(dh), FP16ToFloat32(mh)
	for j := range 8 {
		scj, mj := q4kScaleMin(sc, j)
		dj := d * float32(scj)
		if dj == 0 {
			continue
		}
		dm := dmin * float32(mj)
		for e := range 32 {
			w.putK(r, s, 32*j+e, uint8(max(0, min(15, nearestInt((x[32*j+e]+dm)/dj)))))
		}
	}
}

func (w *Matrix) quantizeQ6K(r, s int, x *[SuperLen]float32) {
	var scales [16]float32
	var maxScale, maxAbs float32
	for j := range 16 {
		var amax, vmax float32
		for _, v := range x[16*j:][:16] {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, vmax = a, v
			}
		}
		if amax >= 1e-15 {
			scales[j] = 1 / (-32 / vmax)
		}
		if a := float32(math.Abs(float64(scales[j]))); a > maxAbs {
			maxAbs, maxScale = a, scales[j]
		}
	}
	if maxAbs < 1e-15 {
		return // d = 0, scales 0, q 0 (ggml zeroes the block)
	}
	mb := w.meta(r, s)
	iscale := -128 / maxScale
	dh := Float32ToFP16(1 / iscale)
	binary.LittleEndian.PutUint16(mb, dh)
	d := FP16ToFloat32(dh)
	for j := range 16 {
		sc := int8(min(127, nearestInt(iscale*scales[j])))
		mb[4+j] = byte(sc)
		dj := d * float32(sc)
		if dj == 0 {
			continue
		}
		for e := range 16 {
			w.putK(r, s, 16*j+e, uint8(max(-32, min(31, nearestInt(x[16*j+e]/dj)))+32))
		}
	}
}

// randomK fills a K-quant matrix from the xorshift stream next: quants
// uniform; Q4_K scale and min bytes uniform with d = 0.05/(63·15) and
// dmin = 0.05/63, Q6_K scales uniform int8 with d = 0.05/(128·32), so
// every weight lies in ±0.05; padding rows have scale 0.
func (w *Matrix) randomK(next func() uint64) {
	for i := 0; i+8 <= len(w.q); i += 8 {
		binary.LittleEndian.PutUint64(w.q[i:], next())
	}
	var d, dmin uint16
	if w.Format == Q4_K {
		d, dmin = Float32ToFP16(0.05/(63*15)), Float32ToFP16(0.05/63)
	} else {
		d = Float32ToFP16(0.05 / (128 * 32))
	}
	for r := range w.N {
		for s := range w.pairs / superPairs {
			mb := w.meta(r, s)
			for i := 4; i < len(mb); i += 8 {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], next())
				copy(mb[i:], b[:])
			}
			binary.LittleEndian.PutUint16(mb, d)
			binary.LittleEndian.PutUint16(mb[2:], dmin)
		}
	}
}

// quantizeK computes the activations' K-quant terms (a.kx): Q4_K, per
// super-block s and row r, the 8 float32 bits of d_x·Σq of its blocks at
// (s·M + r)·8 + b (the kernels' min term); Q6_K, per pair p and row r, 16
// int32 lane corrections −32·Σ q over the lane's 4 positions at
// (p·M + r)·16 + lane, so that a lane's Σ u·q plus it is Σ (u − 32)·q,
// and for the column-order kernels (a.kc) −32·Σ q per 16-weight
// sub-block, half t of block h at (p·M + r)·4 + 2h + t.
func (a *Activations) quantizeK() {
	switch a.Format {
	case Q4_K:
		a.kx = grow(a.kx, a.pairs/superPairs*a.M*8)
		for s := range a.pairs / superPairs {
			for r := range a.M {
				for b := range 8 {
					blk := 8*s + b
					i := (blk/2*a.M+r)*2 + blk%2
					a.kx[(s*a.M+r)*8+b] = math.Float32bits(a.d[i] * float32(a.sum[i]))
				}
			}
		}
	case Q6_K:
		a.kx = grow(a.kx, a.pairs*a.M*16)
		a.kc = grow(a.kc, a.pairs*a.M*4)
		for i := range a.pairs * a.M {
			for l := range 16 {
				var s int32
				for _, v := range a.q[i*pairLen+4*l:][:4] {
					s += int32(int8(v))
				}
				a.kx[i*16+l] = uint32(-32 * s)
				a.kc[i*4+2*(l%2)+l/8] += -32 * s // lane l: block l%2, elements 4·(l/2)..
			}
		}
	}
}

// kxAt returns the kernels' ac argument for row i0 of K-quant activations.
func (a *Activations) kxAt(i0 int) *int32 {
	n := 8
	if a.Format == Q6_K {
		n = 16
	}
	return (*int32)(unsafe.Pointer(&a.kx[i0*n]))
}

// kernGoK is kernGo for the K-quants (np a multiple of superPairs; a
// smaller remainder is ignored): b and a as kernGo; bs at super-block 0 of
// the panel's scale words (super-block s of row j at bs + (s·PanelRows +
// j)·metaWords); ac at the activations' K terms of row i0 (Q4_K: float32
// d_x·Σq, super-block s of row r at ac + s·sa/8 + r·8; Q6_K: int32 lane
// corrections, pair p of row r at ac + p·sa/4 + r·16). For r < mr, j < nr:
//
//	Q4_K: c = Σ_s ( Σ_{p,h} float32(S(r,j,p,h))·(D(j,b)·dx(r,p,h)) − Σ_b M(j,b)·ac(r,s,b) )
//	Q6_K: c = Σ_s Σ_{p,h,half} float32(S16(r,j,p,h,half))·(D(j,sub)·dx(r,p,h))
//
// with b = 2(p%4) + h the pair's block in the super-block, D and M the
// block's d·sc and dmin·m (Q6_K: sub = 2b + half, the 16-weight sub-block
// of positions 4·(8·half..8·half+7)+...: lanes 8·half..8·half+7 of block
// h), S the block's Σ u·Q and S16 the sub-block's Σ u·Q plus its lanes'
// corrections (= Σ (u − 32)·Q).
func kernGoK(f Format, mr, nr int, np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int) {
	nsb := np / superPairs
	C := unsafe.Slice(c, (mr-1)*ldc+nr)
	if nsb == 0 {
		for r := range mr {
			clear(C[r*ldc:][:nr])
		}
		return
	}
	pb, mw := f.pairBytes(), f.metaWords()
	sa4 := sa / 32
	A := unsafe.Slice(a, (np-1)*sa+mr*pairLen)
	AS := unsafe.Slice(as, (np-1)*sa4+mr*2)
	B := unsafe.Slice(b, np*PanelRows*pb)
	BS := unsafe.Slice((*byte)(unsafe.Pointer(bs)), nsb*PanelRows*mw*4)
	var AXf []float32
	var AXi []int32
	if f == Q4_K {
		AXf = unsafe.Slice((*float32)(unsafe.Pointer(ac)), (nsb-1)*sa/8+mr*8)
	} else {
		AXi = unsafe.Slice(ac, (np-1)*sa/4+mr*16)
	}
	for r := range mr {
		for j := range nr {
			var sum float32
			for s := range nsb {
				mb := BS[(s*PanelRows+j)*mw*4:][:mw*4]
				var D [16]float32
				var M [8]float32
				d := FP16ToFloat32(binary.LittleEndian.Uint16(mb))
				if f == Q4_K {
					dmin := FP16ToFloat32(binary.LittleEndian.Uint16(mb[2:]))
					for i := range 8 {
						sc, m := q4kScaleMin(mb[4:], i)
						D[i], M[i] = d*float32(sc), dmin*float32(m)
					}
				} else {
					for i := range 16 {
						D[i] = d * float32(int8(mb[4+i]))
					}
				}
				for pp := range superPairs {
					p := s*superPairs + pp
					wq := B[(p*PanelRows+j)*pb:][:pb]
					xq := A[p*sa+r*pairLen:][:pairLen]
					var S [4]int32 // index 2·half + h (Q4_K: h)
					for pos := range pairLen {
						lane := pos / 4
						v := f.getU(wq, pos) * int32(int8(xq[pos]))
						if f == Q4_K {
							S[lane%2] += v
						} else {
							S[2*(lane/8)+lane%2] += v
						}
					}
					for h := range 2 {
						dx := AS[p*sa4+r*2+h]
						blk := 2*pp + h
						if f == Q4_K {
							sum += float32(S[h]) * (D[blk] * dx)
							continue
						}
						for half := range 2 {
							for l := 8 * half; l < 8*half+8; l++ {
								if l%2 == h {
									S[2*half+h] += AXi[p*sa/4+r*16+l]
								}
							}
							sum += float32(S[2*half+h]) * (D[2*blk+half] * dx)
						}
					}
				}
				if f == Q4_K {
					for i := range 8 {
						sum -= M[i] * AXf[s*sa/8+r*8+i]
					}
				}
			}
			C[r*ldc+j] = sum
		}
	}
}
