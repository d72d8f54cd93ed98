package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Format is a block-quantized weight format: "q8_0", "q4_0", "int2",
// "int1", "q4_k", "q6_k", "tq2_0" or "tq1_0" (see the package doc).
type Format string

// The weight formats.
const (
	Q8_0 Format = "q8_0"
	Q4_0 Format = "q4_0"
	// Int2 and Int1 are the low-bit GEMV paper's formats (§III-B, §III-D)
	// with a per-32 fp16 scale (not GGUF formats).
	Int2 Format = "int2"
	Int1 Format = "int1"
	// Q4_K and Q6_K are GGUF's 256-weight super-block formats (ggml-common.h
	// block_q4_K, block_q6_K), packed in their own layouts (kquant.go).
	Q4_K Format = "q4_k"
	Q6_K Format = "q6_k"
	// TQ2_0 and TQ1_0 are GGUF's ternary formats (block_tq2_0,
	// block_tq1_0), repacked exactly into the int2 layout (tq.go).
	TQ2_0 Format = "tq2_0"
	TQ1_0 Format = "tq1_0"
)

// Formats lists the formats in a stable order.
func Formats() []Format { return []Format{Q8_0, Q4_0, Int2, Int1, Q4_K, Q6_K, TQ2_0, TQ1_0} }

// KernelFormats lists the formats with kernels of their own: Formats
// without tq2_0 and tq1_0, which run int2's (what a measurement of every
// kernel needs, e.g. the probe's matrix section).
func KernelFormats() []Format {
	var out []Format
	for _, f := range Formats() {
		if f.layout() == f {
			out = append(out, f)
		}
	}
	return out
}

// GGUF reports whether f is a GGUF tensor type (Q8_0, Q4_0, Q4_K, Q6_K,
// TQ2_0, TQ1_0).
func (f Format) GGUF() bool {
	switch f {
	case Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0, TQ1_0:
		return true
	}
	return false
}

// layout is the format whose packed layout and kernels f uses: int2 for
// the ternary formats, f itself otherwise.
func (f Format) layout() Format {
	if f == TQ2_0 || f == TQ1_0 {
		return Int2
	}
	return f
}

// kquant reports whether f is a super-block K-quant (Q4_K, Q6_K).
func (f Format) kquant() bool { return f == Q4_K || f == Q6_K }

// ParseFormat checks s ("q8_0", "Q8_0", "q4_0", ...).
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Formats(), f) {
		return f, nil
	}
	return "", fmt.Errorf("quant: format %q: want q8_0, q4_0, int2, int1, q4_k, q6_k, tq2_0 or tq1_0", s)
}

// BlockLen is the number of weights per block (ggml's QK8_0 = QK4_0 = 32).
const BlockLen = 32

// pairLen is the number of weights per block pair, the packed unit.
const pairLen = 2 * BlockLen

// offset is o of the package doc: the kernels' unsigned value is q + o.
func (f Format) offset() int32 {
	switch f.layout() {
	case Q8_0:
		return 128
	case Q4_K:
		return 0
	case Q6_K:
		return 32
	}
	return 8
}

// mult is what the kernels' unpack multiplies a stored field by (the
// field, shifted into place): int2 fields 0..3 become 0, 4, 8, 12 and int1
// bits 0, 1 become 0, 16, so that the offset is 8 for both (a multiple of
// the 8 lanes a block spans in a zmm, which the corrections need) and the
// scale is stored divided by mult.
func (f Format) mult() int32 {
	switch f.layout() {
	case Int2:
		return 4
	case Int1:
		return 16
	}
	return 1
}

// pairBytes is the packed size of one block pair's quants.
func (f Format) pairBytes() int {
	switch f.layout() {
	case Q4_0, Q4_K:
		return 32
	case Q6_K:
		return 48
	case Int2:
		return 16
	case Int1:
		return 8
	}
	return 64
}

// getU returns the kernels' unsigned value at lane position pos of a packed
// pair q (the stored field times mult).
func (f Format) getU(q []byte, pos int) int32 {
	switch f.layout() {
	case Q6_K: // low nibble as q4_0 in bytes 0..31, high 2 bits as int2 in bytes 32..47
		return Q4_0.getU(q, pos) | int32(q[32+pos%16]>>(2*(pos/16))&3)<<4
	case Q4_0, Q4_K:
		if pos < 32 {
			return int32(q[pos] & 0x0f)
		}
		return int32(q[pos-32] >> 4)
	case Int2: // byte pos%16, field pos/16 (VPSRLVQ by 2·lane)
		return 4 * int32(q[pos%16]>>(2*(pos/16))&3)
	case Int1: // bit pos%8 of byte pos/8
		return 16 * int32(q[pos/8]>>(pos%8)&1)
	}
	return int32(q[pos])
}

// putU stores field v (a q8_0 byte, a q4_0 nibble, an int2 field, an int1
// bit) at lane position pos of a zeroed packed pair q.
func (f Format) putU(q []byte, pos int, v uint8) {
	switch f.layout() {
	case Q6_K:
		Q4_0.putU(q, pos, v&0x0f)
		q[32+pos%16] |= (v >> 4 & 3) << (2 * (pos / 16))
	case Q4_0, Q4_K:
		if pos < 32 {
			q[pos] |= v & 0x0f
		} else {
			q[pos-32] |= (v & 0x0f) << 4
		}
	case Int2:
		q[pos%16] |= (v & 3) << (2 * (pos / 16))
	case Int1:
		q[pos/8] |= (v & 1) << (pos % 8)
	default:
		q[pos] = v
	}
}

// GGUFBlockBytes is the size in bytes of one block as GGUF stores it
// (GGUFBlockLen weights): the fp16 scale and the quants (34 for q8_0, 18
// for q4_0); for int2 and int1, which GGUF lacks, the same count for the
// fp16 scale and the packed fields (10 and 6); 144 (q4_k), 210 (q6_k), 66
// (tq2_0) and 54 (tq1_0) per 256-weight super-block.
func (f Format) GGUFBlockBytes() int {
	switch f {
	case Q4_K:
		return 144
	case Q6_K:
		return 210
	case TQ2_0:
		return 66
	case TQ1_0:
		return 54
	}
	return 2 + f.pairBytes()/2
}

// GGUFBlockLen is the number of weights per GGUF block: 32, or 256 (QK_K)
// for q4_k, q6_k, tq2_0 and tq1_0.
func (f Format) GGUFBlockLen() int {
	switch f {
	case Q4_K, Q6_K, TQ2_0, TQ1_0:
		return SuperLen
	}
	return BlockLen
}

// BytesPerWeight is the resident (packed) size per weight, scales
// included: 1.0625 (q8_0), 0.5625 (q4_0), 0.3125 (int2 and the ternary
// formats, held as int2: a GGUF file stores tq2_0 at 0.2578 and tq1_0 at
// 0.2109), 0.1875 (int1), 0.5625 (q4_k, as the file) and 0.828125 (q6_k,
// the file's 0.8203 plus 2 bytes of alignment per super-block and row).
func (f Format) BytesPerWeight() float64 {
	switch f {
	case Q4_K, Q6_K:
		return float64(SuperLen*f.pairBytes()/pairLen+4*f.metaWords()) / SuperLen
	}
	return float64(f.layout().GGUFBlockBytes()) / BlockLen
}

// Matrix is an N×K weight matrix in a block format, packed (see the package
// doc) in panels of PanelRows rows: pair p of the rows of panel t is stored
// contiguously, row by row, so a microkernel reads one address stream per
// panel. N is padded up to a whole panel with rows of scale 0. After
// Repack to ColumnOrder (Backend.ColumnFormats), q and d hold col.go's groups of
// ColRows rows instead (Layout says which). It is read-only after
// construction (and Repack) and safe for concurrent use.
type Matrix struct {
	Format Format
	N, K   int
	pairs  int      // block pairs per row: ceil(K/64) (K-quants: 4·ceil(K/256))
	q      []byte   // panels × pairs × PanelRows × Format.pairBytes()
	d      []uint32 // panels × pairs × PanelRows: a pair's two fp16 scales, block 0 low (K-quants: kquant.go's super-block words)
	// col: q and d hold the column-order layout instead (col.go; after
	// Repack).
	col bool
}

// PanelRows is the number of W rows per packed panel, the microkernels'
// tile width.
const PanelRows = 4

// Bytes is the packed size in bytes (quants and scales, panel padding
// included).
func (w *Matrix) Bytes() int64 { return int64(len(w.q)) + 4*int64(len(w.d)) }

func newMatrix(f Format, n, k int) (*Matrix, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, err
	}
	if n <= 0 || k <= 0 {
		return nil, fmt.Errorf("quant: %s matrix %d×%d: dimensions must be positive", f, n, k)
	}
	if k%BlockLen != 0 {
		return nil, fmt.Errorf("quant: %s matrix %d×%d: K must be a multiple of the block length %d", f, n, k, BlockLen)
	}
	pairs := f.pairsFor(k)
	rows := (n + PanelRows - 1) / PanelRows * PanelRows
	if int64(rows)*int64(pairs)*int64(f.pairBytes()) > math.MaxInt32*16 {
		return nil, fmt.Errorf("quant: %s matrix %d×%d: too large", f, n, k)
	}
	words := rows * pairs
	if f.kquant() {
		words = rows * (pairs / superPairs) * f.metaWords()
	}
	return &Matrix{Format: f, N: n, K: k, pairs: pairs,
		q: makeBytes(rows * pairs * f.pairBytes()), d: makeWords(words)}, nil
}

// pairsFor is the number of packed block pairs of a row of k weights:
// ceil(k/64), for the K-quants whole super-blocks (4·ceil(k/256)).
func (f Format) pairsFor(k int) int {
	if f.kquant() {
		return (k + SuperLen - 1) / SuperLen * superPairs
	}
	return (k + pairLen - 1) / pairLen
}

// dPanel is the number of w.d words per panel.
func (w *Matrix) dPanel() int {
	if w.Format.kquant() {
		return w.pairs / superPairs * PanelRows * w.Format.metaWords()
	}
	return w.pairs * PanelRows
}

// idx is the index of row r's pair p among the packed pairs (multiply by
// pairBytes for w.q; w.d directly).
func (w *Matrix) idx(r, p int) int {
	return (r/PanelRows*w.pairs+p)*PanelRows + r%PanelRows
}

// lanePos returns the packed position (0..63) of element e (0..31) of block
// b (0 or 1) of a pair.
func lanePos(b, e int) int { return (2*(e/4)+b)*4 + e%4 }

// setBlock stores block blk (0-based along K) of row r of a lane-order w:
// its fp16 scale (as the kernels use it: divided by mult) and its 32
// stored fields u.
func (w *Matrix) setBlock(r, blk int, d uint16, u *[BlockLen]uint8) {
	p, b := blk/2, blk%2
	w.d[w.idx(r, p)] |= uint32(d) << (16 * b)
	q := w.q[w.idx(r, p)*w.Format.pairBytes():][:w.Format.pairBytes()]
	for e, v := range u {
		w.Format.putU(q, lanePos(b, e), v)
	}
}

// block returns block blk of row r as the kernels see it: the stored scale
// as float32 and the signed values q (unpacked value minus offset), so that
// each weight is d·q exactly.
func (w *Matrix) block(r, blk int) (float32, [BlockLen]int32) {
	var out [BlockLen]int32
	if w.col {
		q := w.q[w.colChunk(r, blk)*w.Format.colBytes():][:w.Format.colBytes()]
		for e := range out {
			out[e] = colGetU(w.Format, q, r%ColRows, e) - w.Format.offset()
		}
		return FP16ToFloat32(w.scaleBits(r, blk)), out
	}
	p, b := blk/2, blk%2
	d := FP16ToFloat32(uint16(w.d[w.idx(r, p)] >> (16 * b)))
	q := w.q[w.idx(r, p)*w.Format.pairBytes():]
	for e := range out {
		out[e] = w.Format.getU(q, lanePos(b, e)) - w.Format.offset()
	}
	return d, out
}

// Dequantize returns W as row-major N×K float32 (w = d·q), exactly as
// ggml's dequantize_row_q8_0 / _q4_0 / _q4_K / _q6_K / _tq2_0 / _tq1_0
// compute it (the ternary formats equal as values: a zero of a 32-weight
// block that holds a TQ2_0 code 3, stored with scale −d/4, is −0).
func (w *Matrix) Dequantize() []float32 {
	if w.Format.kquant() {
		return w.dequantizeK()
	}
	out := make([]float32, w.N*w.K)
	for r := range w.N {
		for blk := range w.K / BlockLen {
			d, q := w.block(r, blk)
			y := out[r*w.K+blk*BlockLen:][:BlockLen]
			for e := range y {
				y[e] = d * float32(q[e])
			}
		}
	}
	return out
}

// FromGGUF packs an N×K tensor stored as GGUF blocks (ggml's block_q8_0,
// block_q4_0 — N rows of K/32 blocks — or block_q4_K, block_q6_K,
// block_tq2_0, block_tq1_0 — N rows of K/256 blocks; little-endian).
// Errors: a length that is not N·K/GGUFBlockLen blocks, K not a multiple
// of GGUFBlockLen, a NaN or infinite scale (naming the row and block), or
// a ternary scale d whose d/4 is not exact in fp16 (the int2 layout
// stores d/4; only |d| below 2^-12 can fail).
func FromGGUF(f Format, data []byte, n, k int) (*Matrix, error) {
	switch {
	case !f.GGUF():
		return nil, fmt.Errorf("quant: %s is not a GGUF tensor type", f)
	case f.kquant():
		return fromGGUFK(f, data, n, k)
	case f.layout() == Int2:
		return fromGGUFTQ(f, data, n, k)
	}
	w, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	bb, nb := f.GGUFBlockBytes(), k/BlockLen
	if want := int64(n) * int64(nb) * int64(bb); int64(len(data)) != want {
		return nil, fmt.Errorf("quant: %s tensor %d×%d: %d bytes, want %d (%d blocks of %d bytes)", f, n, k, len(data), want, int64(n)*int64(nb), bb)
	}
	var u [BlockLen]uint8
	for r := range n {
		for blk := range nb {
			src := data[(r*nb+blk)*bb:][:bb]
			d := binary.LittleEndian.Uint16(src)
			if d&0x7c00 == 0x7c00 {
				return nil, fmt.Errorf("quant: %s tensor %d×%d: row %d block %d: scale is %v", f, n, k, r, blk, FP16ToFloat32(d))
			}
			if f == Q4_0 {
				// ggml: element j is the low nibble of qs[j], element j+16
				// the high nibble, each value nibble − 8.
				for j := range BlockLen / 2 {
					u[j], u[j+16] = src[2+j]&0x0f, src[2+j]>>4
				}
			} else {
				for j := range BlockLen {
					u[j] = uint8(int8(src[2+j])) + 128
				}
			}
			w.setBlock(r, blk, d, &u)
		}
	}
	return w, nil
}

// Quantize packs row-major N×K float32 weights into format f as ggml's
// reference quantizers do (quantize_row_q8_0_ref: d = max|w|/127, q =
// round(w/d); quantize_row_q4_0_ref: d = m/−8 with m the value of largest
// magnitude, q = min(15, trunc(w/d + 8.5))), the scale rounded to fp16;
// int2 as q4_0 with levels −2..1 (d = m/−2, q = min(3, trunc(w/d + 2.5)),
// w ≈ d·(q − 2)); int1 as sign bits with d = mean |w| (w ≈ ±d); q4_k and
// q6_k with simplified reference quantizers (see quantizeK in kquant.go);
// tq2_0 and tq1_0 as quantize_row_tq2_0_ref (d = max|w| per 256, t =
// round(w/d)). A K-quant or ternary row whose K is not a multiple of 256
// ends in a partial super-block (GGUF files cannot hold it).
// Errors: a shape that does not match len(w), K not a multiple of 32, or a
// NaN or infinite weight.
func Quantize(f Format, w []float32, n, k int) (*Matrix, error) {
	m, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	if int64(len(w)) != int64(n)*int64(k) {
		return nil, fmt.Errorf("quant: %s matrix %d×%d: %d values", f, n, k, len(w))
	}
	switch {
	case f.kquant():
		return quantizeK(f, w, n, k)
	case f != Int2 && f.layout() == Int2:
		return quantizeTQ(f, w, n, k)
	}
	var u [BlockLen]uint8
	for r := range n {
		for blk := range k / BlockLen {
			x := w[r*k+blk*BlockLen:][:BlockLen]
			var amax, vmax float32
			for _, v := range x {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("quant: %s matrix %d×%d: row %d block %d holds %v", f, n, k, r, blk, v)
				}
				if a := float32(math.Abs(float64(v))); a > amax {
					amax, vmax = a, v
				}
			}
			var d float32
			switch f {
			case Int2:
				// Levels −2, −1, 0, 1 (§III-B's int2): as q4_0, the value of
				// largest magnitude maps to −2.
				d = vmax / -2
				id := float32(0)
				if d != 0 {
					id = 1 / d
				}
				for j, v := range x {
					u[j] = uint8(min(3, max(0, int(v*id+2.5))))
				}
				m.setBlock(r, blk, Float32ToFP16(d/4), &u)
				continue
			case Int1:
				// Sign bits with the block's mean magnitude (§III-D): ±d.
				var sum float64
				for j, v := range x {
					sum += math.Abs(float64(v))
					u[j] = 0
					if v >= 0 {
						u[j] = 1
					}
				}
				d = float32(sum / BlockLen)
				m.setBlock(r, blk, Float32ToFP16(d/8), &u)
				continue
			}
			if f == Q4_0 {
				d = vmax / -8
				id := float32(0)
				if d != 0 {
					id = 1 / d
				}
				for j, v := range x {
					u[j] = uint8(min(15, int(v*id+8.5)))
				}
			} else {
				d = amax / 127
				id := float32(0)
				if d != 0 {
					id = 1 / d
				}
				for j, v := range x {
					u[j] = uint8(int8(roundHalfAway(v*id))) + 128
				}
			}
			m.setBlock(r, blk, Float32ToFP16(d), &u)
		}
	}
	return m, nil
}

// roundHalfAway is C's roundf: to nearest, ties away from zero.
func roundHalfAway(v float32) float32 { return float32(math.Round(float64(v))) }

// FP16ToFloat32 widens IEEE 754 binary16 bits to the float32 of the same
// value (exact), as VCVTPH2PS does.
func FP16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
	v := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// Float32ToFP16 rounds a float32 to the nearest binary16 (ties to even, as
// VCVTPS2PH and ggml's GGML_FP32_TO_FP16), overflowing to infinity.
func Float32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff { // inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): value = man'·2^-24.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(h)
}

// AppendGGUF appends W as GGUF stores it (ggml's block_q8_0, block_q4_0,
// block_q4_K, block_q6_K, block_tq2_0 or block_tq1_0; N rows of
// K/GGUFBlockLen blocks, little-endian) to dst: the inverse of FromGGUF.
// It panics on int2 or int1, or on a K that is not a multiple of
// GGUFBlockLen.
func (w *Matrix) AppendGGUF(dst []byte) []byte {
	switch {
	case !w.Format.GGUF():
		panic("quant: AppendGGUF of " + string(w.Format))
	case w.Format.kquant():
		return w.appendGGUFK(dst)
	case w.Format.layout() == Int2:
		return w.appendGGUFTQ(dst)
	}
	for r := range w.N {
		for blk := range w.K / BlockLen {
			d := w.scaleBits(r, blk)
			_, q := w.block(r, blk)
			dst = binary.LittleEndian.AppendUint16(dst, d)
			if w.Format == Q4_0 {
				for j := range BlockLen / 2 {
					dst = append(dst, byte(q[j]+8)|byte(q[j+16]+8)<<4)
				}
			} else {
				for _, v := range q {
					dst = append(dst, byte(int8(v)))
				}
			}
		}
	}
	return dst
}

// Random returns an N×K matrix of format f filled directly in packed form
// from seed: every stored field uniform, every block scale d such that the
// weights lie in about ±0.05 (d·max|q| = 0.05), padding rows of scale 0;
// tq2_0 and tq1_0 hold only levels −1, 0, 1 (±0.025); q4_k and q6_k have
// uniform sub-block scales (and mins) within ±0.05 (see randomK).
// It builds DRAM-sized synthetic weights at memory speed, without a
// float32 copy (a 1 GiB int1 matrix is 5.7 G weights). Errors: as Quantize.
func Random(f Format, n, k int, seed uint64) (*Matrix, error) {
	m, err := newMatrix(f, n, k)
	if err != nil {
		return nil, err
	}
	x := seed*0x9e3779b97f4a7c15 | 1
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	if f.kquant() {
		m.randomK(next)
		return m, nil
	}
	for i := 0; i+8 <= len(m.q); i += 8 {
		binary.LittleEndian.PutUint64(m.q[i:], next())
	}
	if f.layout() != f {
		tqTernary(m.q) // levels −1, 0, 1 only
	}
	top := float32(8) // max |u − o| over the unpacked values, 8 for q4_0, int2, int1 (which store d/mult)
	if f == Q8_0 {
		top = 128
	}
	d := uint32(Float32ToFP16(0.05 / top))
	for r := range n {
		for p := range m.pairs {
			m.d[m.idx(r, p)] = d | d<<16
		}
	}
	if odd := (k / BlockLen) % 2; odd == 1 { // the last pair's second block is padding
		for r := range n {
			m.d[m.idx(r, m.pairs-1)] &= 0xffff
		}
	}
	return m, nil
}
