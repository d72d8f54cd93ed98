package quant

import (
	"encoding/binary"
	"sync"
	"unsafe"
)

// The prefill path: for M ≥ PrefillMinM rows of X (prefill, large
// batches), a backend with prefill kernels does not run its GEMV tiles
// (which scale every VPDPBUSD's partial sum at once, 4 other instructions
// per VPDPBUSD) but up-converts 32 rows of W at a time from the GEMV panels
// into a prefill tile in "column order", once per call and tile, and runs
// an mr×32 quantized GEMM kernel over all M rows on it (16 VPDPBUSD per 17
// other instructions per block: a lane sums a whole block). The conversion
// reads each packed weight once per call and writes one byte per weight;
// its cost is amortized over the M rows (see BenchmarkPrefill).
//
// Prefill tile (pfCols = 32 rows j of W, all K), per block pair p, block h
// (0, 1), half s (rows 16s..16s+15), group g (0..7): 64 bytes, lane l (4
// bytes) holding the kernels' unsigned values u (the stored field times
// mult, as getU) of elements 4g..4g+3 of block 2p+h of row 16s+l:
//
//	quants: byte ((p·2+h)·2+s)·512 + g·64 + l·4 + i,  i < 4
//	scales: fp16 at ((p·2+h)·32 + j), as the GEMV panels store them (d/mult)
//
// Rows past the matrix are zero with scale 0.

// PrefillMinM is the number of rows of X from which Mul takes the prefill
// path on a backend that has one (below it the GEMV tiles are faster: the
// conversion is not amortized). Measured with BenchmarkPrefill.
const PrefillMinM = 16

// PrefillMinMK is PrefillMinM for the K-quants, whose tiles' float32
// scale words are made in Go per call (BenchmarkPrefill, Zen 5, N 3072 ×
// K 1024: at M 16 the GEMV tiles were twice as fast, at M 32 even, from
// M 64 the prefill path faster).
const PrefillMinMK = 32

// PrefillMinRows is the number of rows of X from which Mul takes the
// prefill path for format f (PrefillMinM, the K-quants PrefillMinMK).
func PrefillMinRows(f Format) int {
	if pfkSub(f) > 0 {
		return PrefillMinMK
	}
	return PrefillMinM
}

const (
	pfCols      = 32
	pfPairBytes = 4 * 8 * 64 // 2 blocks × 2 halves × 8 groups × 64 bytes
	pfPairScale = 2 * pfCols // fp16 scales per pair
)

// pfKern computes an mr×32 tile of Y over np block pairs (kernPFGo): a, as,
// ac as for kern; b, bs a prefill tile; c at Y[i0][j0] (row stride ldc
// floats), overwritten.
type pfKern func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint16, c *float32, ldc int)

// pfImpl is a backend's prefill kernels: k[mr-1] for tile heights 1..mr.
type pfImpl struct {
	k []pfKern
	// unavailable is "" or why the kernels must not run (a failed self-test).
	unavailable func() string
	// conv are the up-converts by format (a missing one: the Go loop).
	conv map[Format]pfConvFn
	// kk are the K-quant prefill kernels by format (prefill_k.go), heights
	// 1..len(k) as k.
	kk map[Format][]pfkKern
	// kconv are the K-quant quants' up-converts by format.
	kconv map[Format]pfkConvFn
	// colConv are the up-converts of the column-order layouts by format
	// (col.go; a missing one: the Go loop).
	colConv map[Format]pfColConvFn
	// kcolConv are the column-order K-quants' quant up-converts (colk.go;
	// a missing one: the Go loop).
	kcolConv map[Format]pfkColConvFn
}

// kernPFGo is the specification of the prefill kernels: for r < mr,
// j < 32,
//
//	c[r*ldc+j] = Σ_{p<np} Σ_{h<2} float32(S(r,j,p,h)) · (dw(j,p,h)·dx(r,p,h))
//	S(r,j,p,h) = Σ_{e<32} U(j,p,h,e)·Q(r,p,h,e) + 8·ac[p*sa4+r*2+h]
//
// with U the tile's value of row j, block 2p+h, element e (see the
// prefill tile layout above; pair p at b + p·pfPairBytes), dw its fp16
// scale bs[p·64 + h·32 + j], and Q, dx, ac, sa4 as in kernGo (ac is
// corrZ, −o·Σq/8). The float sum runs over p then h, as the assembly's.
func kernPFGo(mr int, np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint16, c *float32, ldc int) {
	sa4 := sa / 32
	A := unsafe.Slice(a, (np-1)*sa+mr*pairLen)
	AS := unsafe.Slice(as, (np-1)*sa4+mr*2)
	AC := unsafe.Slice(ac, (np-1)*sa4+mr*2)
	B := unsafe.Slice(b, np*pfPairBytes)
	BS := unsafe.Slice(bs, np*pfPairScale)
	C := unsafe.Slice(c, (mr-1)*ldc+pfCols)
	for r := range mr {
		for j := range pfCols {
			var sum float32
			for p := range np {
				for h := range 2 {
					s := 8 * AC[p*sa4+r*2+h]
					for e := range BlockLen {
						g, i := e/4, e%4
						u := B[p*pfPairBytes+((h*2+j/16)*8+g)*64+(j%16)*4+i]
						s += int32(u) * int32(int8(A[p*sa+r*pairLen+lanePos(h, e)]))
					}
					dw := FP16ToFloat32(BS[p*pfPairScale+h*pfCols+j])
					sum += float32(s) * (dw * AS[p*sa4+r*2+h])
				}
			}
			C[r*ldc+j] = sum
		}
	}
}

// pfWord returns the kernels' unsigned values of lane-order word wi (0..15:
// positions 4·wi .. 4·wi+3) of packed pair q, one per byte, little-endian:
// the 4 values getU returns there, computed a word at a time.
func (f Format) pfWord(q []byte, wi int) uint32 {
	switch f.layout() {
	case Q4_0: // low nibbles of bytes 4wi.. for wi < 8, high nibbles of bytes 4(wi−8).. after
		if wi < 8 {
			return binary.LittleEndian.Uint32(q[4*wi:]) & 0x0f0f0f0f
		}
		return binary.LittleEndian.Uint32(q[4*(wi-8):]) >> 4 & 0x0f0f0f0f
	case Int2: // field wi/4 of bytes 4(wi%4).., times 4
		return (binary.LittleEndian.Uint32(q[4*(wi%4):]) >> (2 * (wi / 4)) & 0x03030303) << 2
	case Int1: // bits 4(wi%2).. of byte wi/2, each times 16 into its byte
		v := uint32(q[wi/2] >> (4 * (wi % 2)))
		return (v&1)<<4 | (v&2)<<11 | (v&4)<<18 | (v&8)<<25
	case Q8_0:
		return binary.LittleEndian.Uint32(q[4*wi:])
	}
	panic("quant: pfWord: format " + string(f))
}

// pfFormat reports whether the prefill path handles format f: the formats
// of the per-32 layouts (the ternary ones use int2's).
func pfFormat(f Format) bool {
	l := f.layout()
	return l == Q8_0 || l == Q4_0 || l == Int2 || l == Int1
}

// pfConvFn up-converts the 16 rows of 4 whole panels into half a prefill
// tile (the assembly pfConv*: see kernels/_asm/quantpf): src at the first
// panel's pair 0, pstride bytes from a panel to the next (quants), ds and
// dstride the same for the scale words, dst and dd at pair 0 of the half.
type pfConvFn func(np int, src *byte, pstride int, ds *uint32, dstride int, dst *byte, dd *uint16)

// pfConvert writes rows j0 .. j0+31 of w (j0 a multiple of PanelRows)
// into the prefill tile q (np · pfPairBytes bytes) and scales d (np ·
// pfPairScale), zero past w.N, with conv where 16 rows are 4 whole panels
// (nil: the Go loop everywhere).
func pfConvert(w *Matrix, j0 int, q []byte, d []uint16, conv pfConvFn) {
	if w.col {
		pfConvertCol(w, j0, q, d, nil)
		return
	}
	pb := w.Format.layout().pairBytes()
	for s := range 2 {
		r0 := j0 + 16*s
		if conv != nil && r0+16 <= (w.N+PanelRows-1)/PanelRows*PanelRows {
			i := w.idx(r0, 0)
			conv(w.pairs, &w.q[i*pb], w.pairs*PanelRows*pb, &w.d[i], w.pairs*PanelRows*4, &q[s*8*64], &d[s*16])
			continue
		}
		pfConvertRows(w, r0, q[s*8*64:], d[s*16:])
	}
}

// pfConvertRows is pfConvert's Go loop for the 16 rows r0.. of one half:
// q and d at the half's pair 0.
func pfConvertRows(w *Matrix, r0 int, q []byte, d []uint16) {
	pb := w.Format.layout().pairBytes()
	for l := range 16 {
		row := r0 + l
		for p := range w.pairs {
			dst := q[p*pfPairBytes+l*4:]
			var dd uint32
			var src []byte
			if row < w.N {
				i := w.idx(row, p)
				src, dd = w.q[i*pb:][:pb], w.d[i]
			}
			d[p*pfPairScale+l] = uint16(dd)
			d[p*pfPairScale+pfCols+l] = uint16(dd >> 16)
			for wi := range 16 { // word wi is group wi/2 of block wi%2
				var v uint32
				if src != nil {
					v = w.Format.layout().pfWord(src, wi)
				}
				binary.LittleEndian.PutUint32(dst[(wi%2)*2*8*64+(wi/2)*64:], v)
			}
		}
	}
}

// pfScratch holds prefill tiles between calls (one per concurrent Mul).
var pfScratch sync.Pool

type pfBuf struct {
	q  []byte
	d  []uint16
	dk []float32 // K-quant tiles' scale words
	c  []float32
}

// mulPF is mul's prefill path with pf's kernels and up-converts.
func mulPF(pf *pfImpl, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) {
	ks, conv := pf.k, pf.conv[w.Format.layout()]
	pfTiles(w, a, y, ldy, n0, n1, len(ks), func(buf *pfBuf) {
		buf.d = resize(buf.d, w.pairs*pfPairScale)
	}, func(buf *pfBuf, j0 int) {
		if w.col {
			pfConvertCol(w, j0, buf.q, buf.d, pf.colConv[w.Format])
			return
		}
		pfConvert(w, j0, buf.q, buf.d, conv)
	}, func(buf *pfBuf, mm, i0 int, c *float32, ldc int) {
		ks[mm-1](w.pairs, &a.q[i0*pairLen], &a.d[i0*2], &a.corrZ[i0*2], a.M*pairLen, &buf.q[0], &buf.d[0], c, ldc)
	})
}

// pfTiles is the loop of the prefill paths over the 32-column tiles of
// [n0, n1): per tile, convert up-converts W's rows j0.. into buf, then run
// computes the tiles of mm ≤ mr rows of X from i0 into c (row stride ldc
// floats): Y itself where the tile lies inside [n0, n1), else buf.c, whose
// columns inside are copied out. size sizes buf's scale words.
func pfTiles(w *Matrix, a *Activations, y []float32, ldy, n0, n1, mr int,
	size func(buf *pfBuf), convert func(buf *pfBuf, j0 int), run func(buf *pfBuf, mm, i0 int, c *float32, ldc int)) {
	buf, _ := pfScratch.Get().(*pfBuf)
	if buf == nil {
		buf = &pfBuf{}
	}
	buf.q = resize(buf.q, w.pairs*pfPairBytes)
	buf.c = resize(buf.c, mr*pfCols)
	size(buf)
	align := PanelRows
	if w.col {
		align = ColRows // pfConvertCol's groups
	}
	for j0 := n0 - n0%align; j0 < n1; j0 += pfCols {
		convert(buf, j0)
		c0, c1 := max(j0, n0), min(j0+pfCols, n1) // the tile's columns inside [n0, n1)
		whole := c0 == j0 && c1 == j0+pfCols
		for i0 := 0; i0 < a.M; i0 += mr {
			mm := min(mr, a.M-i0)
			if whole {
				run(buf, mm, i0, &y[i0*ldy+j0], ldy)
				continue
			}
			run(buf, mm, i0, &buf.c[0], pfCols)
			for r := range mm {
				copy(y[(i0+r)*ldy+c0:(i0+r)*ldy+c1], buf.c[r*pfCols+c0-j0:])
			}
		}
	}
	pfScratch.Put(buf)
}

// resize returns s with length n, reallocated only if too short; the
// contents are not cleared (pfConvert writes every element).
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
