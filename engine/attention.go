package engine

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
)

// attnTile is the number of key/value positions per tile (rounded down to
// a multiple of the backend's panel width NR: kvLayout.tile). Measured on
// AVX2 (2-core EPYC, thread CPU time, head dims 64 and 128, groups 1 and
// 4) with the tiles packed on every call: 128 was 5-10% faster than 64 on
// blocks of 32 query rows (the engine's prefill work unit), where the
// per-tile costs (two GEMM calls and the rescale of the accumulator) weigh
// most, and within noise of 64 and 256 on whole 512-row blocks and in
// decode. Working set per tile: the K and V panels of the tile
// (2·128·headDim floats, 128 KiB at headDim 128) and rows·group·128
// scores, in L2.
const attnTile = 128

// attnScratch is one worker's reusable buffers for attendBlock.
type attnScratch struct {
	lay   kvLayout // the KV cache's layout (head dim, panel width, tile)
	group int

	// be is the gemm backend of the tile products, on the cores
	// (Model.Backend), the one lay's panels are laid out for.
	be gemm.Backend
	gs *gemm.Scratch

	qs   []float32 // [M][headDim] queries times scale, M = rows·group, row (t-r0)·group+g
	qp   []float32 // qs packed once per call (gemm.PackX) for every tile's QKᵀ
	s    []float32 // [M][tile] scores, then unnormalized probabilities
	kt   []float32 // kv-packing ablation: the K tile packed, ceil(tile/NR) panels of headDim·NR
	vt   []float32 // kv-packing ablation: the V tile packed, hdPad/NR panels of tile·NR
	o    []float32 // [M][hdPad] unnormalized output accumulator
	m, l []float32 // [M] running max of the scores and sum of e^(s-m)
	a    []float32 // [M] per tile: m_old - m_new, then the rescale e^(m_old-m_new)
}

// newAttnScratch returns buffers for attendBlock on a KV cache of layout
// lay (laid out for backend be, an fp32 gemm backend) with group query
// heads per KV head; they grow with the rows of the largest block.
func newAttnScratch(be gemm.Backend, lay kvLayout, group int) *attnScratch {
	return &attnScratch{lay: lay, group: group, be: be, gs: gemm.NewScratch(nil, gemm.DefaultBlocking(be))}
}

func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// attendBlock computes causal attention for query rows [r0, r1) of one sequence and one KV head.
// q and out are row-major [rows][ldq] (ldq = Heads*HeadDim; query head h occupies columns h*headDim..(h+1)*headDim);
// row t is at position pos0+t and attends to cache positions 0..pos0+t inclusive.
// kc and vc are that sequence's KV cache for one layer in the layout ws.lay (kvLayout: the backend's
// panels, or row-major [positions][KVHeads*HeadDim] under the kv-packing ablation).
// The query heads served are kvHead*group .. kvHead*group+group-1 (GQA). scale multiplies q·k (1/sqrt(headDim)).
// It writes out's columns of those heads for rows [r0,r1) and nothing else.
//
// Specification, for each row t in [r0, r1) and served head h:
//
//	s_j = scale · q[t][h]·k[j][kvHead]            j = 0..pos0+t
//	out[t][h] = Σ_j e^(s_j - max s) v[j][kvHead] / Σ_j e^(s_j - max s)
//
// It is FlashAttention-2's forward loop (Dao 2023, "FlashAttention-2:
// Faster Attention with Better Parallelism and Work Partitioning", Alg. 1)
// on one CPU core: the keys and values are visited in tiles of T =
// ws.lay.tile positions (attnTile rounded down to a multiple of the panel
// width, tiles aligned at multiples of T from position 0, so every tile
// starts on a K panel; the last one ends at the block's last row and may
// be short) shared by all group·(r1-r0) query rows of the KV head (the GQA
// heads batched into the M dimension, so each K/V tile is read once per
// block, not once per query head); each row keeps its running max m and
// sum l, the accumulator is rescaled by e^(m_old-m_new) when the max
// rises, and the division by l happens once, at the end. Rows are ordered
// by position, so a tile runs only on the suffix of rows that can see it
// (causal skip), and masked scores are only those past a row's position
// in the tiles it sees (at most the block's own triangle plus the panel
// padding of the last tile).
//
// Both tile products run the backend's microkernels directly on panels
// at every M (prefill blocks and decode's M = group rows, where the
// short-tile kernels keep several FMA chains in flight): S = Qs·Kᵀ
// (gemm.PanelBlockPacked, Qs packed into slivers once per call) on the K
// panels of the tile (whole panels; the scores past the tile's last
// position are discarded) and O += P·V (gemm.PanelBlock, which packs P) on
// the V panels at the tile's offset (k = the tile's positions). With the packed cache those
// panels are the cache itself, written by the producer (SMEPilot §4.3);
// under the kv-packing ablation each tile is first packed from the
// row-major cache (kvLayout.packTile). Exponentials use kernels.Exp (≤ 2
// ULP); the scale is folded into the copy of q.
//
// Accuracy (attnTol in attention_test.go): per output element,
//
//	|out - ref| ≤ 2^-24·(2·(headDim+3)·a + T + 2·positions/T + 18)·Σ_j p_j|v_j|
//
// with p the exact normalized probabilities and a = max_j Σ_d |scale·q_d·k_jd|:
// the rounding of each score (a headDim-term dot product) becomes a
// relative error of p_j through e^x, and the fp32 sums of l and P·V add
// T terms per tile plus one addition and one rescale per tile.
// Measured on unit-scale scores: below 1e-6·Σ_j p_j|v_j| on every fp32 backend.
func attendBlock(out, q []float32, ldq int, kc, vc []float32, r0, r1, pos0, kvHead, group int, scale float32, ws *attnScratch) {
	rows := r1 - r0
	if rows <= 0 {
		return
	}
	lay := &ws.lay
	hd, nr, hdPad, T := lay.hd, lay.nr, lay.hdPad, lay.tile
	M := rows * group
	ctx := pos0 + r1 // keys 0..ctx-1
	if ws.group != group {
		panic(fmt.Sprintf("engine: attention scratch for group %d used with %d", ws.group, group))
	}
	if kvHead < 0 || kvHead >= lay.kvHeads || ctx > lay.maxSeq {
		panic(fmt.Sprintf("engine: attention: KV head %d of %d, %d positions of a cache of %d", kvHead, lay.kvHeads, ctx, lay.maxSeq))
	}
	if nk, nv := lay.floats(); len(kc) < nk || len(vc) < nv {
		panic(fmt.Sprintf("engine: attention: KV cache of %d, %d floats, want %d, %d", len(kc), len(vc), nk, nv))
	}
	ws.qs = growF32(ws.qs, M*hd)
	ws.s = growF32(ws.s, M*T)
	ws.o = growF32(ws.o, M*hdPad)
	ws.m = growF32(ws.m, M)
	ws.l = growF32(ws.l, M)
	ws.a = growF32(ws.a, M)
	qs, s, o, mx, l, a := ws.qs, ws.s, ws.o, ws.m, ws.l, ws.a

	// The block's queries, scaled, one row per (position, served head).
	qo := kvHead * group * hd
	for t := r0; t < r1; t++ {
		src := q[t*ldq+qo : t*ldq+qo+group*hd]
		dst := qs[(t-r0)*group*hd : (t-r0+1)*group*hd]
		for i, v := range src {
			dst[i] = v * scale
		}
	}
	var err error
	if ws.qp, err = gemm.PackX(ws.be, ws.qp, qs, hd, M, hd); err != nil {
		panic(err)
	}
	mr := ws.be.TileM
	clear(o)
	clear(l)
	for i := range mx {
		mx[i] = float32(math.Inf(-1))
	}
	if !lay.packed {
		ws.kt = growF32(ws.kt, T*hd)
		ws.vt = growF32(ws.vt, hdPad*T)
	}
	var kHead, vHead []float32 // the KV head's panels in a packed cache
	if lay.packed {
		kHead, vHead = kc[kvHead*lay.kHead:], vc[kvHead*lay.vHead:]
	}

	for j0 := 0; j0 < ctx; j0 += T {
		j1 := min(j0+T, ctx)
		nt := j1 - j0
		ntPad := (nt + nr - 1) / nr * nr
		// Rows before position j0 see none of this tile.
		iA := max(0, j0-pos0-r0) * group

		// The tile's panels: in the cache, or packed now (ablation).
		var kp, vp []float32
		kStride, vStride := hd*nr, lay.maxSeq*nr
		if lay.packed {
			kp, vp = kHead[j0/nr*hd*nr:], vHead[j0*nr:]
		} else {
			lay.packTile(ws.kt, ws.vt, kc, vc, j0, nt, kvHead)
			kp, vp, vStride = ws.kt, ws.vt, nt*nr
		}

		// S = Qs·K_tileᵀ on rows [iA, M), whole panels, from the sliver
		// holding row iA (the rows before iA get scores they never use).
		iS := iA / mr * mr
		if err := gemm.PanelBlockPacked(ws.be, s[iS*T:], T, ws.qp[iS*hd:], M-iS, hd, kp, kStride, ntPad, false, ws.gs); err != nil {
			panic(err)
		}

		// Online softmax: new max per row over its visible keys, the
		// scores shifted by it (masked ones -Inf), then one Exp over the
		// tile's scores and one over the rescale exponents.
		for i := iA; i < M; i++ {
			n := min(j1, pos0+r0+i/group+1) - j0 // visible keys, ≥ 1
			row := s[i*T : i*T+T]
			m := rowMax(row[:n], mx[i])
			for jj := range row[:n] {
				row[jj] -= m
			}
			for jj := n; jj < nt; jj++ {
				row[jj] = float32(math.Inf(-1))
			}
			a[i] = mx[i] - m // -Inf on the first tile: rescale by 0
			mx[i] = m
		}
		kernels.Exp(s[iA*T:M*T], s[iA*T:M*T])
		kernels.Exp(a[iA:M], a[iA:M])
		for i := iA; i < M; i++ {
			row := s[i*T : i*T+nt]
			var s0, s1, s2, s3 float32
			jj := 0
			for ; jj+4 <= len(row); jj += 4 {
				s0 += row[jj]
				s1 += row[jj+1]
				s2 += row[jj+2]
				s3 += row[jj+3]
			}
			for ; jj < len(row); jj++ {
				s0 += row[jj]
			}
			l[i] = l[i]*a[i] + (s0 + s1) + (s2 + s3)
			if ai := a[i]; ai != 1 {
				oi := o[i*hdPad : (i+1)*hdPad]
				for d := range oi {
					oi[d] *= ai
				}
			}
		}

		// O = diag(a)·O + P·V_tile on rows [iA, M): the rescale above,
		// then the product accumulated in place.
		if err := gemm.PanelBlock(ws.be, o[iA*hdPad:], hdPad, s[iA*T:], T, M-iA, nt, vp, vStride, hdPad, true, ws.gs); err != nil {
			panic(err)
		}
	}

	for t := r0; t < r1; t++ {
		for g := range group {
			i := (t-r0)*group + g
			inv := 1 / l[i]
			dst := out[t*ldq+qo+g*hd : t*ldq+qo+(g+1)*hd]
			src := o[i*hdPad : i*hdPad+hd]
			src = src[:len(dst)]
			for d := range dst {
				dst[d] = src[d] * inv
			}
		}
	}
}

// rowMax returns the largest of m and the elements of x, four running
// maxima at a time (no data-dependent branch); NaNs are ignored (they reach
// the output through e^(x-m)).
func rowMax(x []float32, m float32) float32 {
	m0, m1, m2, m3 := m, m, m, m
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0 = max32(m0, x[i])
		m1 = max32(m1, x[i+1])
		m2 = max32(m2, x[i+2])
		m3 = max32(m3, x[i+3])
	}
	for ; i < len(x); i++ {
		m0 = max32(m0, x[i])
	}
	return max32(max32(m0, m1), max32(m2, m3))
}

// max32 is a > b ? a : b, which the compiler turns into a conditional
// move (the builtin max must also order NaN and ±0, and branches).
func max32(a, b float32) float32 {
	if b > a {
		return b
	}
	return a
}
