package engine

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
)

// attnTile is the number of key/value positions per tile. Measured on AVX2
// (2-core EPYC, go test -bench Attention, headDim 64 and 128): 64 is where
// the per-tile costs (two BlockUnpacked calls, repacking the queries, the
// rescale of the accumulator: each O(rows·headDim) per tile) fall below 10%
// of the tile's two GEMMs, while the causal waste on the diagonal (half a
// tile per row) and the working set (K tile, Vᵀ tile: 2·64·headDim floats,
// 64 KiB at headDim 128, in L2 beside the scores) stay small; 128 was no
// faster at T = 512.
const attnTile = 64

// attnGEMMRows is the number of query rows (rows·group) from which the QKᵀ
// and P·V tiles go through gemm.BlockUnpacked; below it (decode with
// group < attnGEMMRows) a scalar loop over four keys at a time is faster,
// since packing a K or V tile costs about as much as the scalar loop's
// arithmetic for one query row. A "go" (scalar) gemm backend always takes
// the loop.
const attnGEMMRows = 2

// attnScratch is one worker's reusable buffers for attendBlock.
type attnScratch struct {
	headDim, group int

	// be is the gemm backend for the tiles (gemm.Best(gemm.FP32)); useGEMM
	// forces the GEMM (1) or scalar (-1) tiles, 0 chooses by attnGEMMRows.
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
	return &attnScratch{headDim: headDim, group: group, be: be, bl: gemm.DefaultBlocking(be), gs: gemm.NewScratch(nil, gemm.Blocking{}),
		kt: make([]float32, attnTile*headDim), vt: make([]float32, headDim*attnTile)}
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
// on a CPU core: the keys and values are visited in tiles of attnTile
// positions shared by all group·(r1-r0) query rows of the KV head (GQA
// rows batched as one M dimension, so each K/V tile is read once per
// block), each row keeps its running max m and sum l, the accumulator is
// rescaled by e^(m_old-m_new) when the max rises, and the division by l
// happens once, at the end. Rows are ordered by position, so a tile only
// runs on the suffix of rows that can see it (causal skip) and only the
// diagonal tiles need masking. With at least attnGEMMRows rows the two
// tile products are small GEMMs on kernels/gemm's microkernels (QKᵀ on the
// K tile copied contiguous, P·V on the V tile transposed), packed per call
// as in SMEPilot's §5.4 "pack on every call" path; with fewer (decode) a
// scalar loop over four keys at a time. Exponentials use kernels.Exp
// (≤ 2 ULP).
//
// Accuracy (attention_test.go): |out - ref| ≤ 2^-22·(headDim·a + attnTile +
// positions/attnTile + 8)·Σ_j p_j|v_j| per element, a = max_j Σ_d
// |scale·q_d·k_jd| (the rounding of each score, amplified by e^x, plus the
// fp32 sums of P·V within and across tiles).
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
	}
	ko := kvHead * hd
	for j0 := 0; j0 < ctx; j0 += attnTile {
		j1 := min(j0+attnTile, ctx)
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
			qkScalar(s, qs, kc[j0*ldkv+ko:], ldkv, nt, iA, M, hd)
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
			for jj := range nt {
				v := vc[(j0+jj)*ldkv+ko : (j0+jj)*ldkv+ko+hd]
				for d, x := range v {
					vt[d*nt+jj] = x
				}
			}
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
			pvScalar(o, s, a, vc[j0*ldkv+ko:], ldkv, nt, iA, M, hd)
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

// qkScalar sets s[i·attnTile+jj] = qs[i]·k_jj for rows i in [iA, M) and
// the nt keys k_jj = k[jj·ldk : jj·ldk+hd], four keys at a time (four
// independent sums: the loop is bound by the FP ports, not by the latency
// of one chain).
func qkScalar(s, qs, k []float32, ldk, nt, iA, M, hd int) {
	for i := iA; i < M; i++ {
		q := qs[i*hd : (i+1)*hd]
		row := s[i*attnTile : i*attnTile+nt]
		jj := 0
		for ; jj+4 <= nt; jj += 4 {
			b := jj * ldk
			k0 := k[b : b+hd]
			k1 := k[b+ldk : b+ldk+hd]
			k2 := k[b+2*ldk : b+2*ldk+hd]
			k3 := k[b+3*ldk : b+3*ldk+hd]
			k0, k1, k2, k3 = k0[:len(q)], k1[:len(q)], k2[:len(q)], k3[:len(q)]
			var s0, s1, s2, s3 float32
			for d, x := range q {
				s0 += x * k0[d]
				s1 += x * k1[d]
				s2 += x * k2[d]
				s3 += x * k3[d]
			}
			row[jj], row[jj+1], row[jj+2], row[jj+3] = s0, s1, s2, s3
		}
		for ; jj < nt; jj++ {
			k0 := k[jj*ldk : jj*ldk+hd]
			k0 = k0[:len(q)]
			var s0, s1 float32
			d := 0
			for ; d+2 <= len(q); d += 2 {
				s0 += q[d] * k0[d]
				s1 += q[d+1] * k0[d+1]
			}
			for ; d < len(q); d++ {
				s0 += q[d] * k0[d]
			}
			row[jj] = s0 + s1
		}
	}
}

// pvScalar sets o[i] = a[i]·o[i] + Σ_jj p[i][jj]·v_jj for rows i in [iA,
// M), p[i] = s[i·attnTile:], v_jj = v[jj·ldv : jj·ldv+hd], four values at a
// time (one load and store of o per four).
func pvScalar(o, s, a, v []float32, ldv, nt, iA, M, hd int) {
	for i := iA; i < M; i++ {
		oi := o[i*hd : (i+1)*hd]
		if ai := a[i]; ai != 1 {
			for d := range oi {
				oi[d] *= ai
			}
		}
		p := s[i*attnTile : i*attnTile+nt]
		jj := 0
		for ; jj+4 <= nt; jj += 4 {
			p0, p1, p2, p3 := p[jj], p[jj+1], p[jj+2], p[jj+3]
			b := jj * ldv
			v0 := v[b : b+hd]
			v1 := v[b+ldv : b+ldv+hd]
			v2 := v[b+2*ldv : b+2*ldv+hd]
			v3 := v[b+3*ldv : b+3*ldv+hd]
			v0, v1, v2, v3 = v0[:len(oi)], v1[:len(oi)], v2[:len(oi)], v3[:len(oi)]
			for d := range oi {
				oi[d] += (p0*v0[d] + p1*v1[d]) + (p2*v2[d] + p3*v3[d])
			}
		}
		for ; jj < nt; jj++ {
			pj := p[jj]
			v0 := v[jj*ldv : jj*ldv+hd]
			v0 = v0[:len(oi)]
			for d := range oi {
				oi[d] += pj * v0[d]
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
