package engine

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/cpubench/bench/internal/hugepage"
	"github.com/cpubench/bench/kernels"
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
// bf16 (Options.KVDType "bf16"): the packed layout above with each
// element stored as bfloat16 (the upper 16 bits of the fp32 value,
// rounded to nearest even), two per float32 word of the cache slices
// (element i in the uint16 view of the slice): half the bytes. Attention
// converts each K and V tile it reads to the fp32 panels of the same
// layout (convertTile: a shift per element, no transpose) and runs the
// fp32 path on them.
//
// AMX (a bf16 cache whose attention backend is amx-bf16, AttentionAMX): K
// and V written by the producer as bfloat16 directly in the B tile layout
// of gemm.AMXTiles (32 columns per panel, pairs of consecutive k per
// column), so that QKᵀ and P·V run on the tile unit with no copy:
//
//	K: [ceil(maxSeq/32) panels][AMXKPad(HeadDim)/2][32][2]   K[pos][d] at (pos/32)·kPanel + AMXPanelIndex(pos%32, d)
//	V: [hdPad/32 panels][AMXKPad(maxSeq)/2][32][2]          V[pos][d] at (d/32)·vPanel + AMXPanelIndex(d%32, pos)
//
// (kPanel, vPanel: gemm.AMXPanelElems of HeadDim and maxSeq; the padding
// stays zero). In S = Q·Kᵀ the keys are the panels' columns and the head
// dims their k; in O = P·V the head dims are the columns and the
// positions their k, so a tile of positions j0.. (a multiple of 32)
// starts at j0·32 in every V panel. Decode's vector kernel reads the
// same panels in place (kernels.AxpyPanelsBF16Pairs).
//
// Measured on a lent 16-core Emerald Rapids VM (bench attention,
// qwen3-0.6b, 16 threads, serial schedule, 2026-11-27, two rounds each):
// prefill attention on the tiles took 10.3-10.5 ms at context 2048 and
// 126-133 ms at 8192 (queries and probabilities rounded to bf16; 11.3-11.7
// and 155-157 with them split into three exact terms), against
// 15.0-15.7 and 234-243 ms on avx512-fp32 with the fp32 cache and
// 20.5-20.7 and 302-326 ms with the bf16 cache in its 32-wide panels.
// In `bench run` (4 layers, prompt 2048, placement matrix) prefill
// attention took 37-40 ms against 61-64 with the fp32 cache, and decode
// attention 12-18 ms against 28.
//
// Row-major (the kv-packing ablation, Options.KVPackPerCall): [maxSeq]
// [KVHeads·HeadDim] as a standard CPU cache stores it, and attention packs
// each tile it reads into the same panels itself, once per tile and block
// of query rows ("pack on every call").
type kvLayout struct {
	packed       bool
	bf16         bool // packed panels of bfloat16 elements (packed is true)
	amx          bool // bf16 in the AMX B tile layout (nr is 32)
	kvHeads, hd  int
	maxSeq       int
	nr           int // panel width: the attention backend's TileN
	hdPad        int // HeadDim rounded up to a multiple of nr
	tile         int // positions per attention tile: attnPlanTile (a multiple of nr)
	kHead, vHead int // packed: elements of one KV head's K and V
	// kPanel, vPanel: amx: elements of one K and one V panel.
	kPanel, vPanel int
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

// KVDTypes are the KV cache element types Options.KVDType accepts.
var KVDTypes = []string{"fp32", "bf16"}

// CheckKVDType checks a KV cache element type (Options.KVDType), and that
// bf16 is not combined with the kv-packing ablation (packPerCall): one
// error line naming the value.
func CheckKVDType(dt string, packPerCall bool) error {
	switch dt {
	case "", "fp32":
		return nil
	case "bf16":
		if packPerCall {
			return fmt.Errorf("engine: KV cache dtype bf16 does not combine with the kv-packing ablation (its cache is row-major fp32)")
		}
		return nil
	}
	return fmt.Errorf("engine: KV cache dtype %q: want one of %s", dt, strings.Join(KVDTypes, ", "))
}

// kvLayoutFor is the layout of a cache of maxSeq positions of kvHeads
// heads of hd elements for attention on backend be: row-major where not
// packed (the kv-packing ablation), else the packed panels in fp32 or,
// with bf16, in bfloat16 (the AMX tile layout where AttentionAMX(be)).
func kvLayoutFor(be gemm.Backend, kvHeads, hd, maxSeq int, packed, bf16 bool) kvLayout {
	switch {
	case bf16 && AttentionAMX(be):
		return newKVLayoutAMX(be, kvHeads, hd, maxSeq)
	case bf16:
		return newKVLayoutBF16(be, kvHeads, hd, maxSeq)
	}
	return newKVLayout(be, kvHeads, hd, maxSeq, packed)
}

// newKVLayoutBF16 is newKVLayout's packed layout with bfloat16 elements.
func newKVLayoutBF16(be gemm.Backend, kvHeads, hd, maxSeq int) kvLayout {
	l := newKVLayout(be, kvHeads, hd, maxSeq, true)
	l.bf16 = true
	return l
}

// AttentionAMX reports whether attention's tile products on backend be
// run on the AMX tile unit (gemm.AMXTiles): be is amx-bf16, which
// attention takes only with a bf16 KV cache (Options.KVDType "bf16"),
// laid out for it (kvLayout's AMX layout).
func AttentionAMX(be gemm.Backend) bool { return be.ISA == "amx" && be.DType == gemm.BF16 }

// newKVLayoutAMX is the bf16 cache in the AMX B tile layout for
// attention on amx-bf16 (be, whose TileN is 32).
func newKVLayoutAMX(be gemm.Backend, kvHeads, hd, maxSeq int) kvLayout {
	l := newKVLayoutBF16(be, kvHeads, hd, maxSeq)
	l.amx = true
	l.kPanel, l.vPanel = gemm.AMXPanelElems(hd), gemm.AMXPanelElems(maxSeq)
	l.kHead = (maxSeq + l.nr - 1) / l.nr * l.kPanel
	l.vHead = l.hdPad / l.nr * l.vPanel
	return l
}

// amxK and amxV are the element indices of K[pos][d] and V[pos][d] of
// KV head h in an AMX layout's caches.
func (l *kvLayout) amxK(h, pos, d int) int {
	return h*l.kHead + pos/l.nr*l.kPanel + gemm.AMXPanelIndex(pos%l.nr, d)
}

func (l *kvLayout) amxV(h, pos, d int) int {
	return h*l.vHead + d/l.nr*l.vPanel + gemm.AMXPanelIndex(d%l.nr, pos)
}

// elemBytes is the bytes of one cached element: 2 (bf16) or 4 (fp32).
func (l *kvLayout) elemBytes() int {
	if l.bf16 {
		return 2
	}
	return 4
}

// floats is the size of one layer's K and V caches in float32 words (a
// bf16 cache holds two elements per word).
func (l *kvLayout) floats() (k, v int) {
	if !l.packed {
		return l.maxSeq * l.kvHeads * l.hd, l.maxSeq * l.kvHeads * l.hd
	}
	k, v = l.kvHeads*l.kHead, l.kvHeads*l.vHead
	if l.bf16 {
		return (k + 1) / 2, (v + 1) / 2
	}
	return k, v
}

// bf16View is the cache slice c (float32 words) as its bfloat16
// elements.
func bf16View(c []float32) []uint16 {
	if len(c) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(c))), 2*len(c))
}

// toBF16 rounds x to bfloat16, to nearest even (NaN stays NaN).
func toBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// fromBF16 is the float32 value of bfloat16 h (exact).
func fromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// write stores position pos's keys and values, k and v (KVHeads·HeadDim
// floats each, head-major, as the K and V projections produce them), into
// one layer's caches kc and vc.
func (l *kvLayout) write(kc, vc []float32, pos int, k, v []float32) {
	kvd := l.kvHeads * l.hd
	l.writeRows(kc, vc, pos, 1, k[:kvd], v[:kvd])
}

// kvBlock is how many consecutive positions writeRows transposes into a
// K panel at a time: each head dim's nr-wide panel row receives that many
// contiguous elements per visit, read from as many source rows (a few
// lines, whatever the row stride's cache-set aliasing).
const kvBlock = 8

// writeRows stores the n consecutive positions pos.. (row j of k and v,
// KVHeads·HeadDim floats at j·KVHeads·HeadDim, is position pos+j) into one
// layer's caches kc and vc. A prefill's rows are written a block of
// kvBlock positions at a time: K's transpose into its panels then stores
// each panel row's elements contiguously instead of one element per cache
// line per position (the per-position scatter made prefill's kv_write
// 2.7–3.6× its predicted time).
func (l *kvLayout) writeRows(kc, vc []float32, pos, n int, k, v []float32) {
	hd, nr, kvd := l.hd, l.nr, l.kvHeads*l.hd
	if !l.packed {
		copy(kc[pos*kvd:(pos+n)*kvd], k[:n*kvd])
		copy(vc[pos*kvd:(pos+n)*kvd], v[:n*kvd])
		return
	}
	var kb, vb []uint16
	if l.bf16 {
		kb, vb = bf16View(kc), bf16View(vc)
	}
	if l.amx {
		l.writeRowsAMX(kb, vb, pos, n, k, v)
		return
	}
	for h := range l.kvHeads {
		for j0 := 0; j0 < n; {
			p := pos + j0
			c := min(kvBlock, nr-p%nr, n-j0) // positions of one panel
			off := h*l.kHead + p/nr*hd*nr + p%nr
			if !l.bf16 && c == kvBlock {
				kernels.TransposeRows8(kc[off:][:(hd-1)*nr+c], nr, k[j0*kvd+h*hd:], kvd, hd)
				j0 += c
				continue
			}
			if c == 1 {
				// One position (a decode step's): one element per panel
				// row, stored straight from the source row (the general
				// loop below spent 3.6 µs a position on 8 heads of 128 in
				// its slice headers, hot, on the 2-vCPU Zen 5 VM).
				src := k[j0*kvd+h*hd:][:hd]
				if l.bf16 {
					dst := kb[off:][:(hd-1)*nr+1]
					for d, x := range src {
						dst[d*nr] = toBF16(x)
					}
				} else {
					dst := kc[off:][:(hd-1)*nr+1]
					for d, x := range src {
						dst[d*nr] = x
					}
				}
				j0++
				continue
			}
			var rows [kvBlock][]float32
			for j := range c {
				rows[j] = k[(j0+j)*kvd+h*hd:][:hd]
			}
			if l.bf16 && c == kvBlock {
				transpose8BF16(kb[off:][:(hd-1)*nr+c], nr, rows)
			} else if l.bf16 {
				dst := kb[off:][:(hd-1)*nr+c]
				for d := range hd {
					out := dst[d*nr:][:c]
					for j := range out {
						out[j] = toBF16(rows[j][d])
					}
				}
			} else {
				dst := kc[off:][:(hd-1)*nr+c]
				for d := range hd {
					out := dst[d*nr:][:c]
					for j := range out {
						out[j] = rows[j][d]
					}
				}
			}
			j0 += c
		}
		for j := range n {
			vh := v[j*kvd+h*hd:][:hd]
			if l.bf16 {
				vp := vb[h*l.vHead+(pos+j)*nr:]
				for d0 := 0; d0 < hd; d0 += nr {
					src := vh[d0:min(d0+nr, hd)]
					out := vp[d0*l.maxSeq:][:len(src)]
					for i, x := range src {
						out[i] = toBF16(x)
					}
				}
				continue
			}
			vp := vc[h*l.vHead+(pos+j)*nr:]
			for d0 := 0; d0 < hd; d0 += nr {
				copy(vp[d0*l.maxSeq:d0*l.maxSeq+min(nr, hd-d0)], vh[d0:])
			}
		}
	}
}

// writeRowsAMX is writeRows on an AMX layout (kb, vb: the caches'
// bfloat16 elements): each element rounded to bfloat16 at amxK, amxV.
// Within a K panel row a position's pairs of head dims are adjacent, and
// within a V panel row its head dims 2 elements apart.
//
// A position that starts a K step of positions (a multiple of 32: the
// first of a K panel and of a 32-position block of every V panel) zeroes
// that K panel and those V blocks first. The tile unit multiplies whole K
// steps, so P·V reads V up to 31 positions past the last one written,
// against probabilities of 0, and QKᵀ reads K's head-dim padding against
// queries padded with 0; zero there keeps each product 0 whatever a
// previous sequence of the slot or a fresh page left (0·NaN is NaN).
// Positions are written in order from 0, so every block is zeroed before
// its first position is written.
func (l *kvLayout) writeRowsAMX(kb, vb []uint16, pos, n int, k, v []float32) {
	hd, kvd := l.hd, l.kvHeads*l.hd
	for h := range l.kvHeads {
		for j := range n {
			p := pos + j
			if p%l.nr == 0 {
				clear(kb[l.amxK(h, p, 0):][:l.kPanel])
				for d0 := 0; d0 < l.hdPad; d0 += l.nr {
					clear(vb[l.amxV(h, p, d0):][:l.nr*l.nr])
				}
			}
			kr, vr := k[j*kvd+h*hd:][:hd], v[j*kvd+h*hd:][:hd]
			ko := l.amxK(h, p, 0)
			for d, x := range kr {
				kb[ko+(d>>1)*2*l.nr+d&1] = toBF16(x)
			}
			for d0 := 0; d0 < hd; d0 += l.nr {
				vo := l.amxV(h, p, d0)
				for e, x := range vr[d0:min(d0+l.nr, hd)] {
					vb[vo+2*e] = toBF16(x)
				}
			}
		}
	}
}

// transpose8BF16 stores element d of the eight rows r (of equal length)
// at dst[d·nr : d·nr+8] as bfloat16 (toBF16): kernels.TransposeRows8's
// loop, written so that the compiler drops the bounds checks of the inner
// statements.
func transpose8BF16(dst []uint16, nr int, r [kvBlock][]float32) {
	r0 := r[0]
	r1, r2, r3, r4, r5, r6, r7 := r[1][:len(r0)], r[2][:len(r0)], r[3][:len(r0)], r[4][:len(r0)], r[5][:len(r0)], r[6][:len(r0)], r[7][:len(r0)]
	for d := range r0 {
		o := dst[d*nr:][:8]
		o[0], o[1], o[2], o[3] = toBF16(r0[d]), toBF16(r1[d]), toBF16(r2[d]), toBF16(r3[d])
		o[4], o[5], o[6], o[7] = toBF16(r4[d]), toBF16(r5[d]), toBF16(r6[d]), toBF16(r7[d])
	}
}

// writeRuns calls write(r0, r1) for each run [r0, r1) of rows within
// [i0, i1) that go to consecutive positions of one slot (same(r-1, r)
// true within a run): a prefill's rows of a slot form one run, a decode
// step's rows one run each.
func writeRuns(i0, i1 int, same func(a, b int) bool, write func(r0, r1 int)) {
	for r0 := i0; r0 < i1; {
		r1 := r0 + 1
		for r1 < i1 && same(r1-1, r1) {
			r1++
		}
		write(r0, r1)
		r0 = r1
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

// convertTile is a bf16 cache's (not the AMX layout's) per-tile conversion: the nt positions
// j0.. (j0 a multiple of NR) of KV head kvHead of the bf16 caches kc, vc
// to fp32 in kt (ceil(nt/NR) K panels of HeadDim·NR, as in the cache:
// positions past nt are the cache's, zero where never written) and vt
// (hdPad/NR V panels of nt·NR), the buffers and strides of packTile.
func (l *kvLayout) convertTile(kt, vt, kc, vc []float32, j0, nt, kvHead int) {
	hd, nr := l.hd, l.nr
	np := (nt + nr - 1) / nr
	bf16ToF32(kt, kc, kvHead*l.kHead+j0/nr*hd*nr, np*hd*nr)
	for p := range l.hdPad / nr {
		bf16ToF32(vt[p*nt*nr:(p+1)*nt*nr], vc, kvHead*l.vHead+p*l.maxSeq*nr+j0*nr, nt*nr)
	}
}

// bf16ToF32 sets dst[i] = the bf16 element off+i of the cache words c,
// i < n. An even off and n (every panel offset and length where NR is
// even) run two elements per 32-bit word: a shift and a mask.
func bf16ToF32(dst, c []float32, off, n int) {
	dst = dst[:n]
	if off%2 == 0 && n%2 == 0 {
		w := c[off/2 : (off+n)/2]
		for i, x := range w {
			b := math.Float32bits(x)
			d := dst[2*i : 2*i+2 : 2*i+2]
			d[0], d[1] = math.Float32frombits(b<<16), math.Float32frombits(b&0xffff0000)
		}
		return
	}
	e := bf16View(c)[off : off+n]
	for i, h := range e {
		dst[i] = fromBF16(h)
	}
}

// KVWriter stores K and V rows into one layer's producer-packed fp32 KV
// cache as the engine's kv_write does (kvLayout.writeRows: K transposed
// into its panels, V into its panel rows), so that the operator can be
// timed alone (bench calibrate's kv_write shapes). NewKVWriter allocates
// the cache and touches every page of it once.
type KVWriter struct {
	lay    kvLayout
	kc, vc []float32
}

// NewKVWriter returns a writer of a cache of maxSeq positions of kvHeads
// heads of headDim floats, packed for backend be. Error: a count below 1.
func NewKVWriter(be gemm.Backend, kvHeads, headDim, maxSeq int) (*KVWriter, error) {
	if kvHeads < 1 || headDim < 1 || maxSeq < 1 {
		return nil, fmt.Errorf("engine: KV writer of %d heads of %d at %d positions: each must be ≥ 1", kvHeads, headDim, maxSeq)
	}
	w := &KVWriter{lay: newKVLayout(be, kvHeads, headDim, maxSeq, true)}
	nk, nv := w.lay.floats()
	w.kc, w.vc = hugepage.Make[float32](nk), hugepage.Make[float32](nv) // as Batch.allocKV
	for _, c := range [][]float32{w.kc, w.vc} {
		for i := 0; i < len(c); i += 1024 { // one store per 4 KiB page
			c[i] = 0
		}
	}
	return w, nil
}

// MaxSeq is the cache's positions.
func (w *KVWriter) MaxSeq() int { return w.lay.maxSeq }

// Write stores the n positions pos.. from k and v (row j, KVHeads·HeadDim
// floats at j·KVHeads·HeadDim, is position pos+j). It panics if pos < 0,
// pos+n > MaxSeq or k or v is shorter than n rows.
func (w *KVWriter) Write(pos, n int, k, v []float32) {
	kvd := w.lay.kvHeads * w.lay.hd
	if pos < 0 || n < 0 || pos+n > w.lay.maxSeq || len(k) < n*kvd || len(v) < n*kvd {
		panic(fmt.Sprintf("engine: KV writer: positions %d..%d of %d, %d and %d floats of k and v for %d rows of %d", pos, pos+n, w.lay.maxSeq, len(k), len(v), n, kvd))
	}
	w.lay.writeRows(w.kc, w.vc, pos, n, k, v)
}
