package engine

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
)

// The tile planner of prefill attention (attnPlanRows, attnPlanTile):
// the query rows of a job (× its GQA group: M, the rows of both tile
// products) and the KV positions of a tile (T: QKᵀ's N and P·V's K) are
// chosen so that the products run at the GEMM microkernel's preferred
// shape, whole MR-row slivers, and the job's working set stays in L2.
//
// Measured (avx512-fp32, MR 12, NR 32; one worker, head dim 128, group
// 2, contexts 2K and 4K, thread CPU time on a loaded 2-core Zen 5 VM,
// best and mean of 4 interleaved runs, indicative): 48 rows × 256
// positions (M 96) ran 5-8% faster than the previous 32 × 128 (M 64:
// five slivers of 12 and one of 4) and than 36 × 128, 48 × 128 and 96 ×
// 256.

// attnTile is the planner's largest tile: positions per KV tile (rounded
// down to a multiple of the backend's panel width NR: attnPlanTile).
const attnTile = 256

// attnTargetM is the planner's query rows per job and KV head (rows ·
// group): 8 slivers of AVX-512's MR 12, 16 of AVX2's 6.
const attnTargetM = 96

// attnPlanRows is the query rows of one prefill job on backend be for
// group query heads per KV head: the fewest rows from attnTargetM/group
// up such that rows·group is a whole number of be's MR-row slivers (so
// that no sliver of the tile products runs short), at least 1.
func attnPlanRows(be gemm.Backend, group int) int {
	mr, group := max(be.TileM, 1), max(group, 1)
	step := mr / gcd(mr, group) // rows·group is a multiple of mr iff rows is one of step
	rows := (attnTargetM + group - 1) / group
	return max(step, (rows+step-1)/step*step)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// attnPlanTile is the KV positions per tile on backend be at head dim hd
// with an L2 of l2 bytes (per core): the largest of attnTile, attnTile/2,
// ... (rounded down to a multiple of NR, at least NR) at which a job of
// attnTargetM query rows keeps its tile's working set in half of L2: the
// packed queries (M·hd), the scores (M·T), the accumulator (M·hdPad) and
// the tile's K and V panels (2·T·hdPad), fp32. At head dim 128 and a 1
// MiB L2 that is 256 positions (448 KiB).
func attnPlanTile(be gemm.Backend, hd int, l2 int64) int {
	nr := max(be.TileN, 1)
	hdPad := (hd + nr - 1) / nr * nr
	t := attnTile
	for ; t > nr; t /= 2 {
		ws := 4 * (int64(attnTargetM)*int64(hd+t+hdPad) + 2*int64(t)*int64(hdPad))
		if ws <= l2/2 {
			break
		}
	}
	return max(nr, t/nr*nr)
}

// attnVecRows is the planner's threshold between the two kernel families
// of a work unit's tile products (SMEPilot §4.2: low-intensity attention
// on the vector cores): below it query rows (rows·group, one decode token
// per sequence and its GQA heads) the tiles run the vector kernels
// kernels.DotRows and kernels.AxpyRows, per query row; from it (prefill
// blocks) the backend's GEMM microkernels (gemm.PanelBlock), serially or
// in the pipeline (attention_pipeline.go). 8 is where the GEMM tiles
// overtook the row kernels when both read a row-major cache (AVX2, 2-core
// EPYC, head dims 64 and 128); it has not been re-measured on the
// producer-packed cache.
const attnVecRows = 8

// attnVecTile is the planner's KV positions per tile of a job on the
// vector kernels that read the cache in place (decode on the
// producer-packed fp32 cache, or on a bf16 one where
// kernels.AxpyPanelsBF16Direct), rounded down to a multiple of the panel
// width: longer runs of each V panel per tile and fewer tiles per job
// than the GEMM tile (attnPlanTile, 256 at head dim 128); the scores of a
// tile are at most attnVecRows·attnVecTile floats. Measured (qwen3-0.6b
// shapes, fp32 cache, context 1024, batch 16: 128 MiB of KV per step, 2
// threads on the loaded 2-core Zen 5 VM, best of 300 calls against the
// best of 300 reads of 128 MiB in the same run): 1024 positions reached
// 79-80% of the read roof, 256 72%.
const attnVecTile = 1024

// attnJob is one work unit of attention: query rows [r0, r1) of one
// sequence against one KV head (see attendBlock for the arguments).
type attnJob struct {
	out, q                      []float32
	ldq                         int
	kc, vc                      []float32
	r0, r1, pos0, kvHead, group int
	scale                       float32
	// window is the sliding window (Config.SlidingWindow): row t attends
	// to positions max(0, pos0+t-window+1)..pos0+t; 0 is none.
	window int
}

// attnSpan is one KV tile of a job: positions [j0, j1), the query rows
// [iA, iB) that see at least one of them (causal: rows at or after j0;
// sliding window: rows whose window starts before j1), and [iS, iE) the
// rows the QKᵀ product computes (iA..iB widened to whole MR-row slivers of
// the packed queries; the scores of the extra rows are never used).
type attnSpan struct{ j0, j1, iA, iB, iS, iE int }

// attnScratch is one worker's reusable buffers for a job (in the pipeline,
// one pair's: the matrix worker writes s, kt, vt and o by P·V; the vector
// worker m, l, a and o by the rescale).
type attnScratch struct {
	lay   kvLayout // the KV cache's layout (head dim, panel width, tile)
	group int

	// be is the gemm backend of the tile products (Model.attnBackend:
	// the cores' fp32 backend, an fp32 matrix backend, or amx-bf16 on the
	// AMX layout), the one lay's panels are laid out for.
	be gemm.Backend
	gs *gemm.Scratch
	// amx: the tile products on an AMX layout (lay.amx): QKᵀ and P·V of
	// prefill jobs on the tile unit, qa the job's queries and pa a tile's
	// probabilities converted into its A slivers.
	amx    *gemm.AMXTiles
	qa, pa []byte

	tiles []attnSpan // the job's tiles that some row sees, in order
	vec   bool       // the job runs the vector kernels (attnVecRows)
	// T is the job's positions per tile: lay.tile, or attnVecTile (a
	// multiple of the panel width) for a vec job reading the cache in
	// place.
	T int
	// bf16Direct: a vec job on a bf16 cache whose panels the vector
	// kernel reads as they are (kernels.AxpyPanelsBF16Direct), not
	// widened into kt, vt first.
	bf16Direct bool

	qs   []float32    // [M][headDim] queries times scale, M = rows·group, row (t-r0)·group+g
	qp   []float32    // qs packed once per job (gemm.PackX) for every tile's QKᵀ
	s    [2][]float32 // [M][tile] scores, then unnormalized probabilities; two for the pipeline
	kt   [2][]float32 // kv-packing ablation: the K tile packed, ceil(tile/NR) panels of headDim·NR
	vt   [2][]float32 // kv-packing ablation: the V tile packed, hdPad/NR panels of tile·NR
	o    []float32    // [M][hdPad] unnormalized output accumulator
	m, l []float32    // [M] running max of the scores and sum of e^(s-m)
	a    []float32    // [M] per tile: m_old - m_new, then the rescale e^(m_old-m_new)
	lt   []float32    // [M] per tile: the sum of the tile's e^(s-m_new)

	// rmax and expSubSum are kernels.SoftmaxPasses, taken once per job.
	rmax      func(x []float32) float32
	expSubSum func(dst, src []float32, m float32) float32
	// scale is kernels.Scale's best kernel (kernels.ScaleKernel): the
	// queries' 1/√d, the accumulator's rescale, the output's 1/sum.
	scale func(x []float32, s float32)

	// slots are the pipeline's further job slots of a pair whose matrix
	// worker owns these buffers (pipelineSlot), made on first use.
	slots []*attnScratch
}

// newAttnScratch returns buffers for attendBlock on a KV cache of layout
// lay (laid out for backend be: an fp32 gemm backend, or amx-bf16 on the
// AMX layout) with group query
// heads per KV head; they grow with the rows of the largest block.
func newAttnScratch(be gemm.Backend, lay kvLayout, group int) *attnScratch {
	ws := &attnScratch{lay: lay, group: group, be: be, gs: gemm.NewScratch(nil, gemm.DefaultBlocking(be))}
	if lay.amx {
		// Queries and probabilities rounded to bf16, as the cache's K and
		// V are: one TDPBF16PS per tile and K step, not three.
		ws.amx = amxTiles(be).Rounded()
	}
	return ws
}

// amxTiles returns the AMX tile products of backend be (amx-bf16, which
// the model found available); tests that run the AMX attention path on a
// CPU without AMX replace it with the Go specification
// (gemm.AMXTilesSpec).
var amxTiles = func(be gemm.Backend) *gemm.AMXTiles {
	t, err := gemm.NewAMXTiles(be)
	if err != nil {
		panic(err) // the backend was chosen available
	}
	return t
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
// It is attend on one worker without a sliding window.
func attendBlock(out, q []float32, ldq int, kc, vc []float32, r0, r1, pos0, kvHead, group int, scale float32, ws *attnScratch) {
	attend(&attnJob{out: out, q: q, ldq: ldq, kc: kc, vc: vc, r0: r0, r1: r1, pos0: pos0, kvHead: kvHead, group: group, scale: scale}, ws)
}

// attend runs job j on one worker, its stages one after the other (the
// serial schedule: the pipeline ablation, one thread, and decode).
//
// Specification, for each row t in [r0, r1) and served head h, with lo_t
// = max(0, pos0+t-window+1) (0 without a window):
//
//	s_j = scale · q[t][h]·k[j][kvHead]            j = lo_t..pos0+t
//	out[t][h] = Σ_j e^(s_j - max s) v[j][kvHead] / Σ_j e^(s_j - max s)
//
// It is FlashAttention-2's forward loop (Dao 2023, "FlashAttention-2:
// Faster Attention with Better Parallelism and Work Partitioning", Alg. 1)
// on one CPU core: the keys and values are visited in tiles of T =
// ws.T positions (attnPlanTile, or attnVecTile for decode on the packed
// cache: a multiple of the panel width, tiles aligned at multiples of T from position 0, so every tile
// starts on a K panel; the last one ends at the block's last row and may
// be short) shared by all group·(r1-r0) query rows of the KV head (the GQA
// heads batched into the M dimension, so each K/V tile is read once per
// block, not once per query head); each row keeps its running max m and
// sum l, the accumulator is rescaled by e^(m_old-m_new) when the max
// rises, and the division by l happens once, at the end.
//
// Mask-aware tiles (SMEPilot §4.2, "mask-aware matrix phases"): a tile
// that every row's mask hides (past the block's last row: causal; before
// every row's window: sliding window) is never visited; a tile runs only
// on the rows that see it (rows are ordered by position, so they are a
// contiguous range, attnSpan), and masked scores are only those outside a
// row's range in the tiles it sees (the diagonal tiles' triangle, the
// window's edge, the panel padding of the last tile).
//
// On a cache in the AMX tile layout (kvLayout, amx-bf16) the prefill
// products run on the tile unit instead (gemm.AMXTiles.Rounded: Qs
// rounded to bf16 into A slivers once per job, P per tile, on the
// cache's panels in place; fp32 accumulation) and decode's on
// kernels.AxpyPanelsBF16Pairs (fp32 queries and probabilities).
//
// Per tile (the stages the pipeline spreads over two workers): QKᵀ
// (qkTile), the online softmax (softmaxTile: max, shift, exp, sum), the
// rescale of the accumulator (rescaleTile) and P·V (pvTile). Their
// products run on the backend's microkernels on panels (S = Qs·Kᵀ with
// gemm.PanelBlockPacked, Qs packed into slivers once per job, on the K
// panels of the tile; O += P·V with gemm.PanelBlock on the V panels at
// the tile's offset), or, for jobs of fewer than attnVecRows query rows
// (decode), on the vector kernels: on the packed panels
// kernels.AxpyPanels (or AxpyPanelsBF16 on a bf16 cache, reading its
// bf16 panels in place where AxpyPanelsBF16Direct), one call per tile
// and product for all the job's query rows, so that each K panel and
// each V panel's run of the tile is read once, from memory; on the
// row-major cache of the kv-packing ablation kernels.DotRows and
// AxpyRows per query row, read in place. With the packed cache the panels
// are the cache itself, written by the producer (SMEPilot §4.3); under
// the kv-packing ablation the GEMM tiles are first packed from the
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
// The serial and pipelined schedules run the same operations on the same
// buffers in the same order per job, so their outputs are bit-identical.
func attend(j *attnJob, ws *attnScratch) {
	if !ws.begin(j) {
		return
	}
	for i := range ws.tiles {
		ws.qkTile(j, i, 0)
		ws.softmaxTile(j, i, 0)
		ws.rescaleTile(i)
		ws.pvTile(j, i, 0)
	}
	ws.finish(j)
}

// begin checks job j, sizes the buffers, scales and packs the queries,
// resets the running max, sum and accumulator and lists the tiles. It
// reports false for an empty job.
func (ws *attnScratch) begin(j *attnJob) bool {
	rows := j.r1 - j.r0
	if rows <= 0 {
		return false
	}
	lay := &ws.lay
	hd, hdPad, group := lay.hd, lay.hdPad, j.group
	M := rows * group
	ctx := j.pos0 + j.r1 // keys 0..ctx-1
	if ws.group != group {
		panic(fmt.Sprintf("engine: attention scratch for group %d used with %d", ws.group, group))
	}
	if j.kvHead < 0 || j.kvHead >= lay.kvHeads || ctx > lay.maxSeq || j.window < 0 {
		panic(fmt.Sprintf("engine: attention: KV head %d of %d, %d positions of a cache of %d, window %d", j.kvHead, lay.kvHeads, ctx, lay.maxSeq, j.window))
	}
	if nk, nv := lay.floats(); len(j.kc) < nk || len(j.vc) < nv {
		panic(fmt.Sprintf("engine: attention: KV cache of %d, %d floats, want %d, %d", len(j.kc), len(j.vc), nk, nv))
	}
	ws.vec = M < attnVecRows
	ws.bf16Direct = ws.vec && lay.bf16 && !lay.amx && kernels.AxpyPanelsBF16Direct(lay.nr)
	ws.T = lay.tile
	if ws.vec && lay.packed && (!lay.bf16 || ws.bf16Direct || lay.amx) {
		ws.T = max(lay.nr, attnVecTile/lay.nr*lay.nr)
	}
	T := ws.T
	ws.qs = growF32(ws.qs, M*hd)
	for b := range ws.s {
		ws.s[b] = growF32(ws.s[b], M*T)
	}
	ws.o = growF32(ws.o, M*hdPad)
	ws.m = growF32(ws.m, M)
	ws.l = growF32(ws.l, M)
	ws.a = growF32(ws.a, M)
	ws.lt = growF32(ws.lt, M)
	ws.rmax, ws.expSubSum = kernels.SoftmaxPasses()
	ws.scale = kernels.ScaleKernel()

	// The block's queries, scaled, one row per (position, served head):
	// copied, then scaled in one call over the contiguous buffer (the
	// same multiplication per element as a call per row, without a
	// kernel call per row).
	qo := j.kvHead * group * hd
	for t := j.r0; t < j.r1; t++ {
		copy(ws.qs[(t-j.r0)*group*hd:(t-j.r0+1)*group*hd], j.q[t*j.ldq+qo:t*j.ldq+qo+group*hd])
	}
	ws.scale(ws.qs[:M*hd], j.scale)
	switch {
	case !ws.vec && lay.amx:
		ws.qa = ws.amx.PackA(ws.qa, ws.qs, hd, M, hd)
	case !ws.vec:
		var err error
		if ws.qp, err = gemm.PackX(ws.be, ws.qp, ws.qs, hd, M, hd); err != nil {
			panic(err)
		}
	}
	if !ws.vec && !lay.packed || lay.bf16 {
		for b := range ws.kt {
			ws.kt[b] = growF32(ws.kt[b], T*hd)
			ws.vt[b] = growF32(ws.vt[b], hdPad*T)
		}
	}
	clear(ws.o)
	clear(ws.l)
	for i := range ws.m {
		ws.m[i] = float32(math.Inf(-1))
	}

	// The tiles some row sees: from the one holding the first row's
	// window start to the last row's position.
	mr := max(ws.be.TileM, 1)
	ws.tiles = ws.tiles[:0]
	first := 0
	if j.window > 0 {
		first = max(0, j.pos0+j.r0-j.window+1) / T * T
	}
	for j0 := first; j0 < ctx; j0 += T {
		j1 := min(j0+T, ctx)
		// Rows before position j0 see none of this tile (causal); rows
		// whose window starts at or after j1 none either.
		tA := max(0, j0-j.pos0-j.r0)
		tB := rows
		if j.window > 0 {
			tB = min(rows, j1+j.window-1-j.pos0-j.r0)
		}
		if tA >= tB {
			continue
		}
		iA, iB := tA*group, tB*group
		ws.tiles = append(ws.tiles, attnSpan{j0: j0, j1: j1, iA: iA, iB: iB, iS: iA / mr * mr, iE: min(M, (iB+mr-1)/mr*mr)})
	}
	return true
}

// visible is the range [lo, hi) of positions of tile sp that query row i
// (relative to the job's first row) sees.
func (j *attnJob) visible(sp *attnSpan, i int) (lo, hi int) {
	p := j.pos0 + j.r0 + i/j.group
	lo, hi = sp.j0, min(sp.j1, p+1)
	if j.window > 0 {
		lo = max(lo, p-j.window+1)
	}
	return lo, hi
}

// tilePanels are tile ti's K and V panels and their strides: in the cache
// (packed fp32), or in the buffers kt[b], vt[b] that qkTile packed them
// into (row-major cache) or converted them into (bf16 cache).
func (ws *attnScratch) tilePanels(j *attnJob, ti, b int) (kp []float32, kStride int, vp []float32, vStride int) {
	lay := &ws.lay
	sp := &ws.tiles[ti]
	hd, nr := lay.hd, lay.nr
	if lay.packed && !lay.bf16 {
		return j.kc[j.kvHead*lay.kHead+sp.j0/nr*hd*nr:], hd * nr, j.vc[j.kvHead*lay.vHead+sp.j0*nr:], lay.maxSeq * nr
	}
	return ws.kt[b], hd * nr, ws.vt[b], (sp.j1 - sp.j0) * nr
}

// qkTile computes tile ti's scores S = Qs·K_tileᵀ into s[b] (the matrix
// stage's first product).
func (ws *attnScratch) qkTile(j *attnJob, ti, b int) {
	lay := &ws.lay
	sp := &ws.tiles[ti]
	hd, nr, T := lay.hd, lay.nr, ws.T
	nt := sp.j1 - sp.j0
	s := ws.s[b]
	if ws.bf16Direct {
		// The bf16 K panels as the cache holds them, widened to fp32 in
		// the kernel's registers.
		np := (nt + nr - 1) / nr
		for i := sp.iA; i < sp.iB; i++ {
			clear(s[i*T : i*T+np*nr])
		}
		kernels.AxpyPanelsBF16(s[sp.iA*T:], T, ws.qs[sp.iA*hd:], hd, sp.iB-sp.iA, hd, bf16View(j.kc)[j.kvHead*lay.kHead+sp.j0/nr*hd*nr:], nr, hd*nr, np)
		return
	}
	if lay.amx && ws.vec {
		// The AMX layout's K panels read in place, pairs of head dims
		// per key widened in the kernel's registers.
		np := (nt + nr - 1) / nr
		for i := sp.iA; i < sp.iB; i++ {
			clear(s[i*T : i*T+np*nr])
		}
		kernels.AxpyPanelsBF16Pairs(s[sp.iA*T:], T, ws.qs[sp.iA*hd:], hd, sp.iB-sp.iA, hd, bf16View(j.kc)[lay.amxK(j.kvHead, sp.j0, 0):], lay.kPanel, np)
		return
	}
	if lay.amx {
		// The tile's K panels as the cache holds them, on the tile unit,
		// from the sliver holding row iS.
		ntPad := (nt + nr - 1) / nr * nr
		if err := ws.amx.Product(s, T, ws.qa, sp.iS, sp.iE, hd, bf16View(j.kc)[lay.amxK(j.kvHead, sp.j0, 0):], lay.kPanel, ntPad, false); err != nil {
			panic(err)
		}
		return
	}
	if lay.bf16 {
		lay.convertTile(ws.kt[b], ws.vt[b], j.kc, j.vc, sp.j0, nt, j.kvHead)
	}
	if ws.vec {
		if !lay.packed {
			// One query row at a time on the vector kernels.
			ldkv, ko := lay.kvHeads*hd, j.kvHead*hd
			for i := sp.iA; i < sp.iB; i++ {
				kernels.DotRows(s[i*T:i*T+nt], ws.qs[i*hd:(i+1)*hd], j.kc[sp.j0*ldkv+ko:], ldkv, nt)
			}
			return
		}
		// A K panel holds NR keys' dims d-major (stride NR): their scores
		// are Σ_d q_d·panel[d], for all the query rows at once
		// (kernels.AxpyPanels: each panel read once, from memory).
		kp, kStride, _, _ := ws.tilePanels(j, ti, b)
		np := (nt + nr - 1) / nr
		for i := sp.iA; i < sp.iB; i++ {
			clear(s[i*T : i*T+np*nr])
		}
		kernels.AxpyPanels(s[sp.iA*T:], T, ws.qs[sp.iA*hd:], hd, sp.iB-sp.iA, hd, kp, nr, kStride, np)
		return
	}
	if !lay.packed {
		lay.packTile(ws.kt[b], ws.vt[b], j.kc, j.vc, sp.j0, nt, j.kvHead)
	}
	kp, kStride, _, _ := ws.tilePanels(j, ti, b)
	ntPad := (nt + nr - 1) / nr * nr
	mr := max(ws.be.TileM, 1)
	if !ws.ragged(j, ti, sp.iS) || sp.iE-sp.iS <= mr {
		if err := gemm.PanelBlockPacked(ws.be, s[sp.iS*T:], T, ws.qp[sp.iS*hd:], sp.iE-sp.iS, hd, kp, kStride, ntPad, false, ws.gs); err != nil {
			panic(err)
		}
		return
	}
	// A tile that the first rows see only part of (the causal diagonal):
	// one K panel at a time (the loop order of the whole call: each panel
	// read once, from L1, by every sliver), each from the sliver holding
	// the first row that sees its first key, so the slivers wholly above
	// the diagonal are not computed.
	for p0 := 0; p0 < ntPad; p0 += nr {
		i0 := max(sp.iS, (sp.j0+p0-j.pos0-j.r0)*j.group) / mr * mr
		if i0 >= sp.iE {
			break
		}
		if err := gemm.PanelBlockPacked(ws.be, s[i0*T+p0:], T, ws.qp[i0*hd:], sp.iE-i0, hd, kp[p0/nr*kStride:], kStride, nr, false, ws.gs); err != nil {
			panic(err)
		}
	}
}

// ragged reports whether query row i (relative to the job's first row)
// sees only part of tile ti: from it on, rows' visible ranges of the tile
// differ (the causal diagonal), and QKᵀ runs per K panel from the first
// sliver that sees it.
func (ws *attnScratch) ragged(j *attnJob, ti, i int) bool {
	sp := &ws.tiles[ti]
	_, hi := j.visible(sp, i)
	return hi < sp.j1
}

// softmaxTile is the online softmax of tile ti's scores in s[b] (the
// vector stage), two vector passes per row over its visible keys only:
// the new running max, then e^(s-m) written in place with its sum
// (kernels.SoftmaxPasses); the masked scores of the row (the diagonal
// tile's triangle, the window's edge, the last tile's padding up to nt)
// are set to 0, the probability they stand for. One Exp over the rescale
// exponents a of the tile's rows, and the running sums l updated.
func (ws *attnScratch) softmaxTile(j *attnJob, ti, b int) {
	sp := &ws.tiles[ti]
	T := ws.T
	nt := sp.j1 - sp.j0
	s, mx, l, a := ws.s[b], ws.m, ws.l, ws.a
	negInf := float32(math.Inf(-1))
	for i := sp.iA; i < sp.iB; i++ {
		lo, hi := j.visible(sp, i) // ≥ 1 key
		lo, hi = lo-sp.j0, hi-sp.j0
		// The passes run over [lo, hi) widened to whole vectors (softmaxPad)
		// with the widening set to -Inf: its max is the row's, its e^(s-m)
		// is 0, the probability a masked score stands for. A run of any
		// length then costs one vector call per pass, not a second call for
		// its last partial vector (measured: 75 ns for a row of 100 scores
		// against 33 for one of 128, AVX-512).
		row := s[i*T : (i+1)*T]
		loP, hiP := lo&^(softmaxPad-1), min((hi+softmaxPad-1)&^(softmaxPad-1), T)
		for k := loP; k < lo; k++ {
			row[k] = negInf
		}
		for k := hi; k < hiP; k++ {
			row[k] = negInf
		}
		m := max32(mx[i], ws.rmax(row[loP:hiP]))
		clear(row[:loP])
		ws.lt[i] = ws.expSubSum(row[loP:hiP], row[loP:hiP], m)
		if hiP < nt {
			clear(row[hiP:nt])
		}
		a[i] = mx[i] - m // -Inf on the first tile: rescale by 0
		mx[i] = m
	}
	kernels.Exp(a[sp.iA:sp.iB], a[sp.iA:sp.iB])
	for i := sp.iA; i < sp.iB; i++ {
		l[i] = l[i]*a[i] + ws.lt[i]
	}
}

// softmaxPad is the element count the online softmax's runs are widened
// to a multiple of (softmaxTile): the widest vector of the kernels (16
// fp32 lanes of AVX-512 or SVE-512), so a multiple of every narrower one.
const softmaxPad = 16

// rescaleTile multiplies the accumulator rows that see tile ti by their
// rescale e^(m_old-m_new) (the vector stage's second part), before P·V
// adds the tile.
func (ws *attnScratch) rescaleTile(ti int) {
	sp := &ws.tiles[ti]
	hdPad := ws.lay.hdPad
	for i := sp.iA; i < sp.iB; i++ {
		if ai := ws.a[i]; ai != 1 {
			ws.scale(ws.o[i*hdPad:(i+1)*hdPad], ai)
		}
	}
}

// pvTile adds P·V_tile to the accumulator rows that see tile ti (the
// matrix stage's second product), P the probabilities in s[b].
func (ws *attnScratch) pvTile(j *attnJob, ti, b int) {
	lay := &ws.lay
	sp := &ws.tiles[ti]
	hd, nr, hdPad, T := lay.hd, lay.nr, lay.hdPad, ws.T
	nt := sp.j1 - sp.j0
	s := ws.s[b]
	if ws.bf16Direct {
		kernels.AxpyPanelsBF16(ws.o[sp.iA*hdPad:], hdPad, s[sp.iA*T:], T, sp.iB-sp.iA, nt, bf16View(j.vc)[j.kvHead*lay.vHead+sp.j0*nr:], nr, lay.maxSeq*nr, hdPad/nr)
		return
	}
	if lay.amx && ws.vec {
		kernels.AxpyPanelsBF16Pairs(ws.o[sp.iA*hdPad:], hdPad, s[sp.iA*T:], T, sp.iB-sp.iA, nt, bf16View(j.vc)[lay.amxV(j.kvHead, sp.j0, 0):], lay.vPanel, hdPad/nr)
		return
	}
	if lay.amx {
		// The rows' probabilities converted into slivers, on the tile's run
		// of every V panel as the cache holds it.
		ws.pa = ws.amx.PackA(ws.pa, s[sp.iA*T:], T, sp.iB-sp.iA, nt)
		if err := ws.amx.Product(ws.o[sp.iA*hdPad:], hdPad, ws.pa, 0, sp.iB-sp.iA, nt, bf16View(j.vc)[lay.amxV(j.kvHead, sp.j0, 0):], lay.vPanel, hdPad, true); err != nil {
			panic(err)
		}
		return
	}
	_, _, vp, vStride := ws.tilePanels(j, ti, b)
	if ws.vec {
		if !lay.packed {
			ldkv, ko := lay.kvHeads*hd, j.kvHead*hd
			for i := sp.iA; i < sp.iB; i++ {
				kernels.AxpyRows(ws.o[i*hdPad:i*hdPad+hd], s[i*T:i*T+nt], j.vc[sp.j0*ldkv+ko:], ldkv)
			}
			return
		}
		// A V panel holds NR head dims of every position (stride NR): the
		// tile's run of each is read once, from memory, for all the query
		// rows (kernels.AxpyPanels).
		kernels.AxpyPanels(ws.o[sp.iA*hdPad:], hdPad, s[sp.iA*T:], T, sp.iB-sp.iA, nt, vp, nr, vStride, hdPad/nr)
		return
	}
	if err := gemm.PanelBlock(ws.be, ws.o[sp.iA*hdPad:], hdPad, s[sp.iA*T:], T, sp.iB-sp.iA, nt, vp, vStride, hdPad, true, ws.gs); err != nil {
		panic(err)
	}
}

// finish divides each accumulator row by its sum and writes the job's
// output columns.
func (ws *attnScratch) finish(j *attnJob) {
	hd, hdPad, group := ws.lay.hd, ws.lay.hdPad, j.group
	qo := j.kvHead * group * hd
	for t := j.r0; t < j.r1; t++ {
		for g := range group {
			i := (t-j.r0)*group + g
			dst := j.out[t*j.ldq+qo+g*hd : t*j.ldq+qo+(g+1)*hd]
			copy(dst, ws.o[i*hdPad:i*hdPad+hd])
			ws.scale(dst, 1/ws.l[i])
		}
	}
}

// max32 is a > b ? a : b, which the compiler turns into a conditional
// move (the builtin max must also order NaN and ±0, and branches).
func max32(a, b float32) float32 {
	if b > a {
		return b
	}
	return a
}
