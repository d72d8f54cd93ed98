package engine

import (
	"github.com/cpubench/bench/kernels/gemm"
)

// kvLayout is how one layer of a slot's KV cache is stored.
//
// Packed (the default; SMEPilot §4.3, Fig. 7: producer-side packing): K
// and V are written by their producer, the RoPE step, directly in the
// fp32 panel layout of the attention's gemm backend (NR = its TileN), so
// attention (gemm.PanelBlock) never copies or transposes them. Per KV head
// h, at h·kHead and h·vHead:
//
//	K: [ceil(maxSeq/NR) panels][HeadDim][NR]   K[pos][d] at (pos/NR)·HeadDim·NR + d·NR + pos%NR
//	V: [hdPad/NR panels][maxSeq][NR]           V[pos][d] at (d/NR)·maxSeq·NR + pos·NR + d%NR
//
// The keys are the rows of B in S = Q·Kᵀ (panel stride HeadDim·NR, a tile
// of positions starting at a multiple of NR starts on a panel); the head
// dims are the rows of B in O = P·V (Vᵀ's rows: panel stride maxSeq·NR,
// the tile of positions j0.. starts at j0·NR in every panel). hdPad is
// HeadDim rounded up to a multiple of NR; V's padding columns stay zero.
//
// Row-major (the kv-packing ablation, Options.KVPackPerCall): [maxSeq]
// [KVHeads·HeadDim] as a standard CPU cache stores it, and attention packs
// each tile it reads into the same panels itself, once per tile and block
// of query rows ("pack on every call").
type kvLayout struct {
	packed       bool
	kvHeads, hd  int
	maxSeq       int
	nr           int // panel width: the attention backend's TileN
	hdPad        int // HeadDim rounded up to a multiple of nr
	tile         int // positions per attention tile: attnPlanTile (a multiple of nr)
	kHead, vHead int // packed: floats of one KV head's K and V
}

// newKVLayout returns the layout of a cache of maxSeq positions of
// kvHeads heads of hd floats for attention on backend be (fp32).
func newKVLayout(be gemm.Backend, kvHeads, hd, maxSeq int, packed bool) kvLayout {
	nr := max(be.TileN, 1)
	l := kvLayout{packed: packed, kvHeads: kvHeads, hd: hd, maxSeq: maxSeq, nr: nr,
		hdPad: (hd + nr - 1) / nr * nr, tile: attnPlanTile(be, hd, gemm.DefaultL2)}
	l.kHead = (maxSeq + nr - 1) / nr * hd * nr
	l.vHead = l.hdPad * maxSeq
	return l
}

// floats is the size of one layer's K and V caches.
func (l *kvLayout) floats() (k, v int) {
	if !l.packed {
		return l.maxSeq * l.kvHeads * l.hd, l.maxSeq * l.kvHeads * l.hd
	}
	return l.kvHeads * l.kHead, l.kvHeads * l.vHead
}

// write stores position pos's keys and values, k and v (KVHeads·HeadDim
// floats each, head-major, as the K and V projections produce them), into
// one layer's caches kc and vc.
func (l *kvLayout) write(kc, vc []float32, pos int, k, v []float32) {
	hd, nr := l.hd, l.nr
	if !l.packed {
		kvd := l.kvHeads * hd
		copy(kc[pos*kvd:(pos+1)*kvd], k[:kvd])
		copy(vc[pos*kvd:(pos+1)*kvd], v[:kvd])
		return
	}
	for h := range l.kvHeads {
		kh, vh := k[h*hd:(h+1)*hd], v[h*hd:(h+1)*hd]
		kp := kc[h*l.kHead+pos/nr*hd*nr+pos%nr:]
		kp = kp[:(hd-1)*nr+1]
		for d, x := range kh {
			kp[d*nr] = x
		}
		vp := vc[h*l.vHead+pos*nr:]
		for d0 := 0; d0 < hd; d0 += nr {
			copy(vp[d0*l.maxSeq:d0*l.maxSeq+min(nr, hd-d0)], vh[d0:])
		}
	}
}

// packTile is the kv-packing ablation's on-path packing: it packs the nt
// positions j0.. of KV head kvHead of the row-major caches kc, vc (row
// stride KVHeads·HeadDim) into kt (ceil(nt/NR) K panels of HeadDim·NR,
// positions past nt zero) and vt (hdPad/NR V panels of nt·NR), the
// layouts attendBlock reads from a packed cache with panel strides
// HeadDim·NR and nt·NR.
func (l *kvLayout) packTile(kt, vt, kc, vc []float32, j0, nt, kvHead int) {
	hd, nr := l.hd, l.nr
	ldkv, ko := l.kvHeads*hd, kvHead*hd
	ntPad := (nt + nr - 1) / nr * nr
	for jj := range ntPad {
		kp := kt[jj/nr*hd*nr+jj%nr:]
		kp = kp[:(hd-1)*nr+1]
		if jj >= nt {
			for d := range hd {
				kp[d*nr] = 0
			}
			continue
		}
		for d, x := range kc[(j0+jj)*ldkv+ko : (j0+jj)*ldkv+ko+hd] {
			kp[d*nr] = x
		}
		row := vc[(j0+jj)*ldkv+ko : (j0+jj)*ldkv+ko+hd]
		for d0 := 0; d0 < hd; d0 += nr {
			copy(vt[d0*nt+jj*nr:d0*nt+jj*nr+min(nr, hd-d0)], row[d0:])
		}
	}
}
