package engine

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
)

// attnTile is the number of key/value positions per tile. Measured on AVX2
// (2-core EPYC, thread CPU time, head dims 64 and 128, groups 1 and 4):
// 128 was 5-10% faster than 64 on blocks of 32 query rows (the engine's
// prefill work unit), where the per-tile costs (two BlockUnpacked calls,
// each building the backend registry and packing its operands, and the
// rescale of the accumulator) weigh most, and within noise of 64 and 256
// on whole 512-row blocks and in decode. The causal waste does not grow
// with the tile: tiles end at the block's last row, so only the block's
// own triangle is masked. Working set per tile: the K tile and Vᵀ tile
// (2·128·headDim floats, 128 KiB at headDim 128) and rows·group·128
// scores, in L2.
const attnTile = 128

// attnGEMMRows is the number of query rows (rows·group) from which the QKᵀ
// and P·V tiles go through gemm.BlockUnpacked; below it (decode with
// group < 8) the row kernels (qkRows, pvRows) are faster: each
// GEMM call repacks its K or Vᵀ tile (about one scalar pass over it) and
// builds the backend registry, which the GEMM's vector arithmetic repays
// only over several query rows. Measured with the scalar Go loops that
// preceded kernels.DotRows/AxpyRows (AVX2, context 2048, head dims 64 and
// 128): 4 rows 1.35x faster scalar, 8 rows 1.2-1.7x faster GEMM. The
// vector row kernels are about 5x faster than those loops in decode, and
// the crossover has moved above 8: on prefill blocks of 32 rows (AVX2,
// 2-core EPYC, T=512) they beat the GEMM tiles 1.4x at 32 query rows
// (group 1) and tie at 128 (group 4); the threshold is kept until
// measured at 8-16 rows. A "go" gemm backend
// (purego) always takes the row kernels, whose Go loops are as fast as its
// 4×4 Go microkernel without the packing.
const attnGEMMRows = 8

// attnScratch is one worker's reusable buffers for attendBlock.
type attnScratch struct {
	headDim, group int

	// be is the gemm backend for the tiles, on the cores (gemm.Best(gemm.FP32)); useGEMM
	// forces the GEMM (1) or row-kernel (-1) tiles, 0 chooses by attnGEMMRows.
	be      gemm.Backend
	bl      gemm.Blocking
	gs      *gemm.Scratch
	useGEMM int

	qs   []float32 // [M][headDim] queries times scale, M = rows·group, row (t-r0)·group+g
	s    []float32 // [M][attnTile] scores, then unnormalized probabilities
	kt   []float32 // [attnTile][headDim] the K tile, contiguous (GEMM tiles)
	vt   []float32 // [headDim][attnTile] the V tile transposed (GEMM tiles)
	pv   []float32 // [M][headDim] P·V of one tile (GEMM tiles)
	o    []float32 // [M][headDim] unnormalized output accumulator
	m, l []float32 // [M] running max of the scores and sum of e^(s-m)
	a    []float32 // [M] per tile: m_old - m_new, then the rescale e^(m_old-m_new)
}

// newAttnScratch returns buffers for attendBlock on heads of headDim
// floats served group query heads per KV head; they grow with the rows of
// the largest block.
func newAttnScratch(headDim, group int) *attnScratch {
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		panic(fmt.Sprintf("engine: attention: %v", err)) // go-fp32 always exists
	}
	return &attnScratch{headDim: headDim, group: group, be: be, bl: gemm.DefaultBlocking(be), gs: gemm.NewScratch(nil, gemm.Blocking{})}
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
// kc and vc are that sequence's KV cache, row-major [positions][ldkv] (ldkv = KVHeads*HeadDim), KV head kvHead at columns kvHead*headDim.
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
// on one CPU core: the keys and values are visited in tiles of attnTile
// positions shared by all group·(r1-r0) query rows of the KV head (the GQA
// heads batched into the M dimension, so each K/V tile is read once per
// block, not once per query head), each row keeps its running max m and
// sum l, the accumulator is rescaled by e^(m_old-m_new) when the max
// rises, and the division by l happens once, at the end. Rows are ordered
// by position, so a tile runs only on the suffix of rows that can see it
// (causal skip), and the tiles end at the block's last row, so only the
// block's own triangle is masked. With at least attnGEMMRows rows the two
// tile products are small GEMMs on kernels/gemm's microkernels (QKᵀ on the
// K tile copied contiguous, P·V on the V tile transposed), packed per call
// as SMEPilot's §5.4 "pack on every call" path does for weights; with
// fewer (decode), per query row one kernels.DotRows (the row's scores
// against the tile's keys, read in place in the cache) and one
// kernels.AxpyRows (its probabilities times the tile's values), AVX2 or
// FMA kernels with eight independent accumulators. Exponentials use kernels.Exp (≤ 2 ULP); the scale is folded into
// the copy of q.
//
// Accuracy (attnTol in attention_test.go): per output element,
//
//	|out - ref| ≤ 2^-24·(2·(headDim+3)·a + attnTile + 2·positions/attnTile + 18)·Σ_j p_j|v_j|
//
// with p the exact normalized probabilities and a = max_j Σ_d |scale·q_d·k_jd|:
// the rounding of each score (a headDim-term dot product) becomes a
// relative error of p_j through e^x, and the fp32 sums of l and P·V add
// attnTile terms per tile plus one addition and one rescale per tile.
// Measured on unit-scale scores: below 2e-6·Σ_j p_j|v_j|.
func attendBlock(out, q []float32, ldq int, kc, vc []float32, ldkv int, r0, r1, pos0, kvHead, group, headDim int, scale float32, ws *attnScratch) {
	rows := r1 - r0
	if rows <= 0 {
		return
	}
	hd := headDim
	M := rows * group
	ctx := pos0 + r1 // keys 0..ctx-1
	if ws.headDim != hd || ws.group != group {
		panic(fmt.Sprintf("engine: attention scratch for head dim %d, group %d used with %d, %d", ws.headDim, ws.group, hd, group))
	}
	if need := (ctx-1)*ldkv + (kvHead+1)*hd; len(kc) < need || len(vc) < need {
		panic(fmt.Sprintf("engine: attention: KV cache of %d, %d floats, want ≥ %d for %d positions", len(kc), len(vc), need, ctx))
	}
	ws.qs = growF32(ws.qs, M*hd)
	ws.s = growF32(ws.s, M*attnTile)
	ws.o = growF32(ws.o, M*hd)
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
	clear(o)
	clear(l)
	for i := range mx {
		mx[i] = float32(math.Inf(-1))
	}

	useGEMM := M >= attnGEMMRows && ws.be.ISA != "go"
	if ws.useGEMM != 0 {
		useGEMM = ws.useGEMM > 0
	}
	if useGEMM {
		ws.pv = growF32(ws.pv, M*hd)
		ws.kt = growF32(ws.kt, attnTile*hd)
		ws.vt = growF32(ws.vt, hd*attnTile)
	}
	ko := kvHead * hd
	// The tiles end at ctx (the first one is the short one), so the last
	// tile ends at the block's last row: the masked part of the diagonal
	// tiles is then only the block's own triangle.
	for j0, j1 := 0, ctx-(ctx-1)/attnTile*attnTile; j0 < ctx; j0, j1 = j1, j1+attnTile {
		nt := j1 - j0
		// Rows before position j0 see none of this tile.
		iA := max(0, j0-pos0-r0) * group

		// S = Qs·K_tileᵀ on rows [iA, M).
		if useGEMM {
			kt := ws.kt[:nt*hd]
			for jj := range nt {
				copy(kt[jj*hd:(jj+1)*hd], kc[(j0+jj)*ldkv+ko:])
			}
			if err := gemm.BlockUnpacked(ws.be, ws.bl, s, attnTile, qs, hd, kt, nt, hd, iA, M, 0, nt, ws.gs); err != nil {
				panic(err)
			}
		} else {
			qkRows(s, qs, kc[j0*ldkv+ko:], ldkv, nt, iA, M, hd)
		}

		// Online softmax: new max per row over its visible keys, the
		// scores shifted by it (masked ones -Inf), then one Exp over the
		// tile's scores and one over the rescale exponents.
		for i := iA; i < M; i++ {
			n := min(j1, pos0+r0+i/group+1) - j0 // visible keys, ≥ 1
			row := s[i*attnTile : i*attnTile+attnTile]
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
		kernels.Exp(s[iA*attnTile:M*attnTile], s[iA*attnTile:M*attnTile])
		kernels.Exp(a[iA:M], a[iA:M])
		for i := iA; i < M; i++ {
			row := s[i*attnTile : i*attnTile+nt]
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
		}

		// O = diag(a)·O + P·V_tile on rows [iA, M).
		if useGEMM {
			vt := ws.vt[:hd*nt]
			transposeTile(vt, vc[j0*ldkv+ko:], ldkv, nt, hd)
			pv := ws.pv
			if err := gemm.BlockUnpacked(ws.be, ws.bl, pv, hd, s, attnTile, vt, hd, nt, iA, M, 0, hd, ws.gs); err != nil {
				panic(err)
			}
			for i := iA; i < M; i++ {
				oi, pi, ai := o[i*hd:(i+1)*hd], pv[i*hd:(i+1)*hd], a[i]
				pi = pi[:len(oi)]
				for d := range oi {
					oi[d] = oi[d]*ai + pi[d]
				}
			}
		} else {
			pvRows(o, s, a, vc[j0*ldkv+ko:], ldkv, nt, iA, M, hd)
		}
	}

	for t := r0; t < r1; t++ {
		for g := range group {
			i := (t-r0)*group + g
			inv := 1 / l[i]
			dst := out[t*ldq+qo+g*hd : t*ldq+qo+(g+1)*hd]
			src := o[i*hd : (i+1)*hd]
			src = src[:len(dst)]
			for d := range dst {
				dst[d] = src[d] * inv
			}
		}
	}
}

// qkRows sets s[i·attnTile+jj] = qs[i]·k_jj for rows i in [iA, M) and
// the nt keys k_jj = k[jj·ldk : jj·ldk+hd], one kernels.DotRows per row
// (AVX2 FMA over eight keys at a time; Go loops under purego).
func qkRows(s, qs, k []float32, ldk, nt, iA, M, hd int) {
	for i := iA; i < M; i++ {
		kernels.DotRows(s[i*attnTile:i*attnTile+nt], qs[i*hd:(i+1)*hd], k, ldk, nt)
	}
}

// pvRows sets o[i] = a[i]·o[i] + Σ_jj p[i][jj]·v_jj for rows i in [iA,
// M), p[i] = s[i·attnTile:], v_jj = v[jj·ldv : jj·ldv+hd], one
// kernels.AxpyRows per row.
func pvRows(o, s, a, v []float32, ldv, nt, iA, M, hd int) {
	for i := iA; i < M; i++ {
		oi := o[i*hd : (i+1)*hd]
		if ai := a[i]; ai != 1 {
			for d := range oi {
				oi[d] *= ai
			}
		}
		kernels.AxpyRows(oi, s[i*attnTile:i*attnTile+nt], v, ldv)
	}
}

// transposeTile sets vt[d·nt+jj] = v[jj·ldv+d] for jj < nt, d < hd, four
// rows of v at a time (each row of vt gets four contiguous stores).
func transposeTile(vt, v []float32, ldv, nt, hd int) {
	jj := 0
	for ; jj+4 <= nt; jj += 4 {
		b := jj * ldv
		v0 := v[b : b+hd]
		v1 := v[b+ldv : b+ldv+hd][:len(v0)]
		v2 := v[b+2*ldv : b+2*ldv+hd][:len(v0)]
		v3 := v[b+3*ldv : b+3*ldv+hd][:len(v0)]
		for d := range v0 {
			t := vt[d*nt+jj : d*nt+jj+4 : d*nt+jj+4]
			t[0], t[1], t[2], t[3] = v0[d], v1[d], v2[d], v3[d]
		}
	}
	for ; jj < nt; jj++ {
		for d, x := range v[jj*ldv : jj*ldv+hd] {
			vt[d*nt+jj] = x
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
