package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The ternary formats TQ2_0 and TQ1_0 (ggml-common.h block_tq2_0,
// block_tq1_0): one fp16 scale d per 256 weights, each weight d·t with
// t ∈ {−1, 0, 1} (TQ2_0's 2-bit codes also allow t = 2). They are held in
// the int2 layout, exactly: int2's levels are −2..1 with a per-32 fp16
// scale stored as d/4, so a 32-weight block holds t with field t + 2 and
// scale d/4, or, when it has a t = 2 (which ggml's quantizer never
// writes), field 2 − t and scale −d/4. The int2 kernels compute them.

// tqBlockBytes is the size of a GGUF block of 256 weights: TQ2_0 64 bytes
// of 2-bit codes and d; TQ1_0 48 bytes of 5 trits each, 4 bytes of 4 trits
// each and d (d last in both).
func tqBlockBytes(f Format) int { return f.GGUFBlockBytes() }

// tqPow3 are the trit weights of TQ1_0's base-3 bytes (ggml's pow3).
var tqPow3 = [5]uint8{1, 3, 9, 27, 81}

// tqTrit returns trit n (0 the most significant) of a TQ1_0 byte v, as
// dequantize_row_tq1_0 extracts it: the byte holds ⌈t·256/243⌉ for the
// 5-trit number t, so multiplying by 3^n (mod 256) brings trit n to the
// top and (v·3) >> 8 reads it: 0, 1 or 2.
func tqTrit(v uint8, n int) int8 { return int8(uint16(v*tqPow3[n]) * 3 >> 8) }

// tqDecode writes the 256 ternary codes t+1 (0..3; 3 only for TQ2_0) of the
// GGUF block src in element order.
func tqDecode(f Format, src []byte, out *[SuperLen]int8) {
	if f == TQ2_0 {
		// Element 128c + 32l + m is bits 2l+1:2l of byte 32c + m.
		for e := range out {
			c, l, m := e/128, (e%128)/32, e%32
			out[e] = int8(src[32*c+m] >> (2 * l) & 3)
		}
		return
	}
	// TQ1_0: elements 0..159 are trit n of qs[m] at 32n + m (m < 32),
	// 160..239 trit n of qs[32+m] at 160 + 16n + m (m < 16), 240..255 trit
	// n of qh[j] at 240 + 4n + j (j < 4, trits 0..3).
	e := 0
	for n := range 5 {
		for m := range 32 {
			out[e] = tqTrit(src[m], n)
			e++
		}
	}
	for n := range 5 {
		for m := range 16 {
			out[e] = tqTrit(src[32+m], n)
			e++
		}
	}
	for n := range 4 {
		for j := range 4 {
			out[e] = tqTrit(src[48+j], n)
			e++
		}
	}
}

// tqEncode is tqDecode's inverse for codes 0..2 (TQ1_0) or 0..3 (TQ2_0),
// writing the quants (not d) of one GGUF block into dst (zeroed).
func tqEncode(f Format, codes *[SuperLen]int8, dst []byte) {
	if f == TQ2_0 {
		for e, v := range codes {
			c, l, m := e/128, (e%128)/32, e%32
			dst[32*c+m] |= byte(v&3) << (2 * l)
		}
		return
	}
	// A byte holds the base-3 number of its trits, most significant first,
	// stored as ⌈t·256/243⌉ (quantize_row_tq1_0_ref); qh's 4 trits are
	// shifted to the top (×3) first.
	pack := func(ts []int8) byte {
		t := 0
		for _, v := range ts {
			t = 3*t + int(v)
		}
		for range 5 - len(ts) {
			t *= 3
		}
		return byte((t*256 + 242) / 243)
	}
	var ts [5]int8
	for m := range 32 {
		for n := range 5 {
			ts[n] = codes[32*n+m]
		}
		dst[m] = pack(ts[:])
	}
	for m := range 16 {
		for n := range 5 {
			ts[n] = codes[160+16*n+m]
		}
		dst[32+m] = pack(ts[:])
	}
	for j := range 4 {
		for n := range 4 {
			ts[n] = codes[240+4*n+j]
		}
		dst[48+j] = pack(ts[:4])
	}
}

// tqSetBlocks stores the first nblk int2 blocks of super-block sb of row r
// from the codes (t+1) and the fp16 scale d. Errors: a NaN or infinite d,
// or d/4 not exact in fp16.
func (w *Matrix) tqSetBlocks(r, sb, nblk int, codes *[SuperLen]int8, d uint16) error {
	df := FP16ToFloat32(d)
	if d&0x7c00 == 0x7c00 {
		return fmt.Errorf("scale is %v", df)
	}
	q4 := Float32ToFP16(df / 4)
	if FP16ToFloat32(q4)*4 != df {
		return fmt.Errorf("scale %v: d/4 is not exact in fp16 (the int2 layout stores d/4)", df)
	}
	var u [BlockLen]uint8
	for b := range min(nblk, SuperLen/BlockLen) {
		c := codes[b*BlockLen:][:BlockLen]
		neg := false
		for _, v := range c {
			neg = neg || v == 3
		}
		h := q4
		for e, v := range c {
			t := int(v) - 1
			if neg {
				u[e] = uint8(2 - t)
			} else {
				u[e] = uint8(t + 2)
			}
		}
		if neg {
			h ^= 0x8000
		}
		w.setBlock(r, sb*(SuperLen/BlockLen)+b, h, &u)
	}
	return nil
}

// fromGGUFTQ packs an N×K TQ2_0 or TQ1_0 tensor into the int2 layout.
func fromGGUFTQ(f Format, data []byte, n, k int) (*Matrix, error) {
	if k%SuperLen != 0 {
		return nil, fmt.Errorf("quant: %s tensor %d×%d: K must be a multiple of the block length %d", f, n, k, SuperLen)
	}
	w, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	bb, nb := tqBlockBytes(f), k/SuperLen
	if want := int64(n) * int64(nb) * int64(bb); int64(len(data)) != want {
		return nil, fmt.Errorf("quant: %s tensor %d×%d: %d bytes, want %d (%d blocks of %d bytes)", f, n, k, len(data), want, int64(n)*int64(nb), bb)
	}
	var codes [SuperLen]int8
	for r := range n {
		for sb := range nb {
			src := data[(r*nb+sb)*bb:][:bb]
			tqDecode(f, src, &codes)
			if err := w.tqSetBlocks(r, sb, SuperLen/BlockLen, &codes, binary.LittleEndian.Uint16(src[bb-2:])); err != nil {
				return nil, fmt.Errorf("quant: %s tensor %d×%d: row %d block %d: %w", f, n, k, r, sb, err)
			}
		}
	}
	return w, nil
}

// quantizeTQ is ggml's quantize_row_tq2_0_ref / _tq1_0_ref: per 256
// weights d = max|w| (rounded to fp16), t = round(w/d) (ties away from
// zero) ∈ {−1, 0, 1}; a last partial super-block (K not a multiple of 256)
// takes d over its own weights.
func quantizeTQ(f Format, x []float32, n, k int) (*Matrix, error) {
	m, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	var codes [SuperLen]int8
	for r := range n {
		for sb := 0; sb*SuperLen < k; sb++ {
			xs := x[r*k+sb*SuperLen : r*k+min(k, (sb+1)*SuperLen)]
			var amax float32
			for _, v := range xs {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("quant: %s matrix %d×%d: row %d holds %v", f, n, k, r, v)
				}
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			id := float32(0)
			if amax != 0 {
				id = 1 / amax
			}
			for e, v := range xs {
				codes[e] = int8(roundHalfAway(v*id)) + 1
			}
			if err := m.tqSetBlocks(r, sb, len(xs)/BlockLen, &codes, Float32ToFP16(amax)); err != nil {
				return nil, fmt.Errorf("quant: %s matrix %d×%d: row %d block %d: %w", f, n, k, r, sb, err)
			}
		}
	}
	return m, nil
}

// appendGGUFTQ writes w (format TQ2_0 or TQ1_0, K a multiple of 256) as
// GGUF blocks. A super-block's 8 int2 blocks hold ±d/4; the written d is
// the one for which every code is in range.
func (w *Matrix) appendGGUFTQ(dst []byte) []byte {
	f := w.Format
	if w.K%SuperLen != 0 {
		panic(fmt.Sprintf("quant: AppendGGUF of a %s matrix with K = %d, not a multiple of %d", f, w.K, SuperLen))
	}
	const nblk = SuperLen / BlockLen
	var codes [SuperLen]int8
	for r := range w.N {
		for sb := range w.K / SuperLen {
			var d uint16
			var t [SuperLen]int
			for b := range nblk {
				blk := sb*nblk + b
				h := w.scaleBits(r, blk)
				if b == 0 {
					d = h
				}
				_, q := w.block(r, blk)
				sign := 1
				if h != d {
					sign = -1 // h = d ^ sign bit
				}
				for e, v := range q {
					t[b*BlockLen+e] = sign * int(v) / 4
				}
			}
			top := 2
			if f == TQ1_0 {
				top = 1
			}
			flip := false
			for _, v := range t {
				flip = flip || v < -1
			}
			if flip {
				d ^= 0x8000
			}
			for e, v := range t {
				if flip {
					v = -v
				}
				if v < -1 || v > top {
					panic(fmt.Sprintf("quant: AppendGGUF: %s row %d block %d holds %d·d, not representable", f, r, sb, v))
				}
				codes[e] = int8(v + 1)
			}
			d4 := FP16ToFloat32(d) * 4
			start := len(dst)
			dst = append(dst, make([]byte, tqBlockBytes(f))...)
			tqEncode(f, &codes, dst[start:])
			binary.LittleEndian.PutUint16(dst[len(dst)-2:], Float32ToFP16(d4))
		}
	}
	return dst
}

// tqTernary turns every int2 field 0 (level −2) of a random packed matrix
// into 2 (level 0), so that Random's ternary matrices hold t ∈ {−1, 0, 1}.
func tqTernary(q []byte) {
	for i, b := range q {
		zero := ^b >> 1 & ^b & 0x55 // low bit of every 00 field
		q[i] = b | zero<<1
	}
}
