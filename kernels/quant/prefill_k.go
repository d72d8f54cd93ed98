package quant

import (
	"encoding/binary"
	"unsafe"
)

// The prefill path of the K-quants (Q4_K, Q6_K). The quants go into the
// same column-order tile as the per-32 formats (prefill.go: pair p, block
// h, half s, group g, lane l), the unsigned value u = q (Q4_K 0..15,
// Q6_K 0..63, the low nibble and the high 2 bits merged). What differs is
// the scaling: a K-quant's scale changes every sub-block (Q4_K: 32
// weights, Q6_K: 16) and is d·sc, exact in float32 but not in fp16, and
// Q4_K subtracts a per-sub-block min. So per pair the tile holds, for each
// of its nsub sub-blocks b (Q4_K 2, Q6_K 4) and each of its 32 rows j of
// W, two float32 words:
//
//	D(j,p,b)  = d·sc                      (scale)
//	Mn(j,p,b) = dmin·m (Q4_K), 32·d·sc (Q6_K: its offset −32)
//
// at bs[p·2·nsub·32 + b·32 + j] and bs[p·2·nsub·32 + nsub·32 + b·32 + j],
// and each row r of X brings, per pair and sub-block, the float32
// X(r,p,b) = dx·Σq over the sub-block's int8 activations (Activations.kpf,
// pair-major: ax[p·M·nsub + r·nsub + b]). A sub-block then contributes
//
//	float32(Σ u·q)·(D·dx) − Mn·X
//
// which is the dequantized weights' dot product up to float32 rounding:
// w = D·q − dmin·m (Q4_K), w = D·(q − 32) (Q6_K). Sub-block b of a pair
// covers block h = b/(nsub/2), groups (b mod (nsub/2))·8/(nsub/2) onward.
// The conversion from the GEMV panels is a Go loop (pfkConvert).

// pfkSub returns the number of sub-blocks per block pair of a K-quant
// prefill tile (Q4_K 2, Q6_K 4), 0 for other formats.
func pfkSub(f Format) int {
	switch f {
	case Q4_K:
		return 2
	case Q6_K:
		return 4
	}
	return 0
}

// pfkKern computes an mr×32 tile of Y over np block pairs (kernPFKGo):
// a, as as for kern; ax at the activations' sub-block terms of row i0 (pair
// stride sa/64·nsub floats); b, bs a K-quant prefill tile; c at Y[i0][j0]
// (row stride ldc floats), overwritten.
type pfkKern func(np int, a *byte, as *float32, ax *float32, sa int, b *byte, bs *float32, c *float32, ldc int)

// kernPFKGo is the specification of the K-quant prefill kernels with
// nsub sub-blocks per pair: for r < mr, j < 32,
//
//	c[r*ldc+j] = Σ_{p<np} Σ_{b<nsub} ( float32(S(r,j,p,b))·(D(j,p,b)·dx(r,p,h)) − Mn(j,p,b)·X(r,p,b) )
//	S(r,j,p,b) = Σ_{e in sub-block b} U(j,p,h,e)·Q(r,p,h,e)
//
// with U, Q, dx as in kernPFGo, D, Mn, X as in the layout above; the
// float sum runs over p then b, each term added then the min subtracted,
// as the assembly's.
func kernPFKGo(nsub, mr, np int, a *byte, as *float32, ax *float32, sa int, b *byte, bs *float32, c *float32, ldc int) {
	sa4 := sa / 32
	axs := sa4 * nsub / 2
	sw := 2 * nsub * pfCols
	A := unsafe.Slice(a, (np-1)*sa+mr*pairLen)
	AS := unsafe.Slice(as, (np-1)*sa4+mr*2)
	AX := unsafe.Slice(ax, (np-1)*axs+mr*nsub)
	B := unsafe.Slice(b, np*pfPairBytes)
	BS := unsafe.Slice(bs, np*sw)
	C := unsafe.Slice(c, (mr-1)*ldc+pfCols)
	half := nsub / 2
	el := BlockLen / half // elements per sub-block
	for r := range mr {
		for j := range pfCols {
			var sum float32
			for p := range np {
				for sb := range nsub {
					h := sb / half
					var s int32
					for e := (sb % half) * el; e < (sb%half+1)*el; e++ {
						g, i := e/4, e%4
						u := B[p*pfPairBytes+((h*2+j/16)*8+g)*64+(j%16)*4+i]
						s += int32(u) * int32(int8(A[p*sa+r*pairLen+lanePos(h, e)]))
					}
					d, mn := BS[p*sw+sb*pfCols+j], BS[p*sw+nsub*pfCols+sb*pfCols+j]
					sum += float32(s) * (d * AS[p*sa4+r*2+h])
					sum -= mn * AX[p*axs+r*nsub+sb]
				}
			}
			C[r*ldc+j] = sum
		}
	}
}

// pfkWord is pfWord for the K-quants' packed pairs: the 4 values u of
// lane-order word wi, one per byte.
func pfkWord(f Format, q []byte, wi int) uint32 {
	if f == Q6_K {
		return Q4_0.pfWord(q[:32], wi) | Int2.pfWord(q[32:48], wi)<<2
	}
	return Q4_0.pfWord(q, wi)
}

// pfkConvFn up-converts the quants of the 16 rows of 4 whole panels of a
// K-quant matrix into half a prefill tile (the assembly pfConvQ4K,
// pfConvQ6K): src at the first panel's pair 0, pstride bytes from a panel
// to the next, dst at pair 0 of the half.
type pfkConvFn func(np int, src *byte, pstride int, dst *byte)

// pfkConvert writes rows j0 .. j0+31 of the K-quant matrix w into the
// prefill tile q (np · pfPairBytes bytes) and its scale words d (np ·
// 2·nsub·32), zero past w.N: the quants with conv where 16 rows are 4
// whole panels (nil: the Go loop everywhere), the scale words in Go.
func pfkConvert(w *Matrix, j0 int, q []byte, d []float32, conv pfkConvFn) {
	f, nsub := w.Format, pfkSub(w.Format)
	pb := f.pairBytes()
	sw := 2 * nsub * pfCols
	var asm [2]bool
	for s := range 2 {
		r0 := j0 + 16*s
		if conv != nil && r0+16 <= (w.N+PanelRows-1)/PanelRows*PanelRows {
			conv(w.pairs, &w.q[w.idx(r0, 0)*pb], w.pairs*PanelRows*pb, &q[s*8*64])
			asm[s] = true
		}
	}
	for l := range pfCols {
		row := j0 + l
		s, lane := l/16, l%16
		for p := range w.pairs {
			if asm[s] {
				break
			}
			dst := q[p*pfPairBytes+s*8*64+lane*4:]
			var src []byte
			if row < w.N {
				src = w.q[w.idx(row, p)*pb:][:pb]
			}
			for wi := range 16 { // word wi is group wi/2 of block wi%2
				var v uint32
				if src != nil {
					v = pfkWord(f, src, wi)
				}
				binary.LittleEndian.PutUint32(dst[(wi%2)*2*8*64+(wi/2)*64:], v)
			}
		}
		nsb, mw := w.pairs/superPairs, f.metaWords()
		for sbk := range nsb {
			var D [16]float32
			var M [8]float32
			if row < w.N {
				// w.kScales(row, sbk), with the index computed here
				// (kScales' division by the super-block count cost most
				// of the conversion).
				i := ((row/PanelRows*nsb+sbk)*PanelRows + row%PanelRows) * mw
				mb := unsafe.Slice((*byte)(unsafe.Pointer(&w.d[i])), 4*mw)
				D, M = kScalesOf(f, mb)
			}
			for pp := range superPairs {
				ds := d[(sbk*superPairs+pp)*sw:][:sw]
				for b := range nsub {
					k := pp*nsub + b // the super-block's sub-block
					ds[b*pfCols+l] = D[k]
					if f == Q4_K {
						ds[(nsub+b)*pfCols+l] = M[k]
					} else {
						ds[(nsub+b)*pfCols+l] = 32 * D[k]
					}
				}
			}
		}
	}
}

// prefillK computes Activations.kpf, the K-quant prefill kernels' X(r,p,b)
// = dx·Σq per sub-block (pair-major: p·M·nsub + r·nsub + b).
func (a *Activations) prefillK() {
	nsub := pfkSub(a.Format)
	half := nsub / 2
	el := BlockLen / half
	a.kpf = grow(a.kpf, a.pairs*a.M*nsub)
	for p := range a.pairs {
		for r := range a.M {
			q := a.q[(p*a.M+r)*pairLen:][:pairLen]
			for sb := range nsub {
				h := sb / half
				var s int32
				for e := (sb % half) * el; e < (sb%half+1)*el; e++ {
					s += int32(int8(q[lanePos(h, e)]))
				}
				a.kpf[(p*a.M+r)*nsub+sb] = a.d[(p*a.M+r)*2+h] * float32(s)
			}
		}
	}
}

// mulPFK is mulPF for the K-quants, with the kernels ks (heights 1..len)
// and the up-convert conv (nil: Go), or for a column-order w (colk.go)
// colConv (nil: Go); a.kpf was made by Quantize (M ≥ PrefillMinM).
func mulPFK(ks []pfkKern, conv pfkConvFn, colConv pfkColConvFn, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) {
	nsub := pfkSub(w.Format)
	pfTiles(w, a, y, ldy, n0, n1, len(ks), func(buf *pfBuf) {
		buf.dk = resize(buf.dk, w.pairs*2*nsub*pfCols)
	}, func(buf *pfBuf, j0 int) {
		switch {
		case w.col && w.Format == Q6_K:
			pfkConvertColK6(w, j0, buf.q, buf.dk, colConv)
			return
		case w.col:
			pfkConvertCol(w, j0, buf.q, buf.dk, colConv)
			return
		}
		pfkConvert(w, j0, buf.q, buf.dk, conv)
	}, func(buf *pfBuf, mm, i0 int, c *float32, ldc int) {
		ks[mm-1](w.pairs, &a.q[i0*pairLen], &a.d[i0*2], &a.kpf[i0*nsub], a.M*pairLen, &buf.q[0], &buf.dk[0], c, ldc)
	})
}
