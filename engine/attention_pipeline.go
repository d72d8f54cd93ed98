package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/roofline"
)

// The phase-aware attention pipeline (SMEPilot §4.2, Fig. 6).
//
// A prefill's attention jobs (attnJob: a block of query rows against one
// KV head) run on pairs of workers: the matrix worker computes QKᵀ of tile
// i+1 and P·V of tile i (qkTile, pvTile: the backend's microkernels) while
// the vector worker runs the online softmax of tile i (softmaxTile: max,
// exp, sum) and the rescale of the accumulator (rescaleTile). The scores
// go through two buffers (s[0], s[1] of a job slot's attnScratch, by
// tile parity): QKᵀ of tile i+1 fills one while the softmax works on the
// other. A pair holds up to attnSlots jobs in a ring of slots, so that
// tile i+1 may be the first tile of the next job: the stages overlap
// across jobs too. The hand-off is lock-free: four counters per pair
// (jobs posted, tiles scored, tiles whose probabilities are ready, tiles
// added by P·V; tiles counted across the pair's jobs), each written by
// one side and spun on by the other; no goroutine per tile, the pairs are
// the pool's workers (kernels/pool RunGroups over two groups). Per tile
// the two sides meet twice, so the pipeline's time is, per tile, the
// longer of the matrix stage (QKᵀ + P·V) and the vector stage (softmax +
// rescale), not their sum, plus one tile's stage per pair to fill and
// drain (roofline.PredictAttention).
//
// Measured (bench attention --placement cores, qwen3-0.6b, 2 threads: one
// pair of cores, the Zen 5 VM): with one job at a time per pair (the
// previous schedule: each job filled and drained the pipeline alone, and
// the next job began only after the last P·V) the pipelined prefill took
// 6.6, 16.1 and 128.7 ms at contexts 256, 512 and 2048; with the ring of
// job slots 2.0, 6.5 and 88.3 ms, measured back to back.
//
// The matrix group is the second half of the workers (as the mixed
// placement cuts them) running the attention backend (attnBackend, the
// one the KV cache is packed for: the matrix placement's backend where it
// is fp32, e.g. sme-fp32, else the cores' fp32 backend). On a CPU without
// a matrix unit it is a second group of cores, which the run's notes say. With one worker there is no pair and the pipeline
// degenerates to the serial schedule (attend); an odd worker out runs
// jobs serially beside the pairs. The pipeline ablation
// (Options.NoPipeline, `--ablate pipeline`) runs the same jobs serially
// on every worker: the same stages on the same buffers in the same order
// per job, so the outputs are bit-identical and only the time changes.

// attnSlots is the number of jobs a pipeline pair holds at once (its
// ring of job slots, each with its own buffers): the job whose output the
// vector worker still has to finish, the job whose tiles flow through
// the stages, and the next job, posted ahead so that the matrix worker
// computes QKᵀ of its first tile while the vector worker runs the
// softmax of the current job's last tile (the stages overlap across
// jobs, not only across the tiles of one job).
const attnSlots = 3

// attnPair is one pipeline pair's shared state.
type attnPair struct {
	ws [attnSlots]*attnScratch // the job slots' buffers, of the matrix worker's backend
	// unit is the job index posted in each slot (-1: no more jobs),
	// written by the vector worker before it increments posted.
	unit [attnSlots]int64
	// The counters: jobs posted (slot posted%attnSlots), and tiles, counted
	// across the pair's jobs in order, through QKᵀ (scored), through the
	// softmax and the rescale (probs), through P·V (added).
	posted, scored, probs, added atomic.Int64
	failed                       atomic.Bool // one side panicked: the other stops waiting
	_                            [64]byte    // keep consecutive pairs' counters off each other's cache lines
}

// waitFor spins until c reaches n, yielding the processor between polls
// (the partner runs on another pinned thread). It panics when the partner
// has failed, so that a panic in one side reaches Run instead of leaving
// the other spinning.
func (p *attnPair) waitFor(c *atomic.Int64, n int64) {
	for i := 0; c.Load() < n; i++ {
		if p.failed.Load() {
			panic("engine: attention pipeline: the partner worker failed")
		}
		if i > 64 {
			runtime.Gosched()
		}
	}
}

// fail marks the pair failed when the calling side panics (deferred).
func (p *attnPair) fail() {
	if r := recover(); r != nil {
		p.failed.Store(true)
		panic(r)
	}
}

// pipelineSlot returns the pipeline's job slot k of ws (0: ws itself; the
// others are made on first use and kept with ws, so a pair allocates
// them once): buffers of ws's backend, KV layout and group.
func (ws *attnScratch) pipelineSlot(k int) *attnScratch {
	if k == 0 {
		return ws
	}
	for len(ws.slots) < k {
		ws.slots = append(ws.slots, newAttnScratch(ws.be, ws.lay, ws.group))
	}
	s := ws.slots[k-1]
	s.lay, s.group = ws.lay, ws.group
	return s
}

// attnPipeline runs jobs (claimed in order, dynamically) on the pairs
// (vec.Workers()[k], mat.Workers()[k]), the pair's buffers from
// scratch(matrix worker) (and its pipelineSlot twins); vector workers
// without a partner run jobs serially on their own scratch. job(i, ws, j)
// fills *j with job i for the buffers ws (whose layout its caches must
// have). Once ctx (nil: none) is done no further job is claimed and its
// error is returned.
//
// Per pair, the tiles of its jobs form one sequence g = 0, 1, ...: the
// matrix worker computes QKᵀ of tile g+1 (the next tile of the job, or
// the first tile of the next job) before P·V of tile g, while the vector
// worker runs the softmax and the rescale of tile g. The vector worker
// claims and begins (scales and packs the queries of) the next job
// before the softmax of the current job's last tile, and finishes (the
// division by the sums and the output) the previous job after the rescale
// of the current job's first tile, so neither waits for the other at a
// job's boundary beyond the one tile's stage the pipeline needs to fill
// and drain per pair and call.
func attnPipeline(ctx context.Context, ms *pool.Master, vec, mat *pool.Group, n int, scratch func(worker int) *attnScratch, job func(i int, ws *attnScratch, j *attnJob)) error {
	vw, mw := vec.Workers(), mat.Workers()
	if len(vw) < len(mw) {
		return fmt.Errorf("engine: attention pipeline: %d vector workers for %d matrix workers", len(vw), len(mw))
	}
	pairs := make([]attnPair, len(mw))
	for k := range pairs {
		ws := scratch(mw[k])
		for s := range attnSlots {
			pairs[k].ws[s] = ws.pipelineSlot(s)
		}
	}
	var next atomic.Int64
	claim := func() int {
		if ctx != nil && ctx.Err() != nil {
			return -1
		}
		if i := int(next.Add(1) - 1); i < n {
			return i
		}
		return -1
	}
	vecSide := func(local, _ int) error {
		if local >= len(pairs) { // no partner: serial
			ws := scratch(vw[local])
			var j attnJob
			for i := claim(); i >= 0; i = claim() {
				job(i, ws, &j)
				attend(&j, ws)
			}
			return nil
		}
		p := &pairs[local]
		defer p.fail()
		var js [attnSlots]attnJob
		posted := 0
		// post claims the next non-empty job, begins it in the next slot
		// (free: its previous job was finished) and posts it; without
		// one it posts the end and reports false.
		post := func() bool {
			k := posted % attnSlots
			posted++
			for {
				i := claim()
				if i < 0 {
					p.unit[k] = -1
					p.posted.Add(1)
					return false
				}
				job(i, p.ws[k], &js[k])
				if !p.ws[k].begin(&js[k]) {
					continue
				}
				if len(p.ws[k].tiles) == 0 { // no tile to pipeline (begin lists at least one)
					p.ws[k].finish(&js[k])
					continue
				}
				p.unit[k] = int64(i)
				p.posted.Add(1)
				return true
			}
		}
		g := int64(0) // the pair's tiles so far
		prev := -1    // the slot of the job to finish, -1: none
		prevEnd := int64(0)
		more := post()
		for c := 0; more; c++ {
			k := c % attnSlots
			ws, j := p.ws[k], &js[k]
			nt := len(ws.tiles)
			for t := range nt {
				if t == nt-1 {
					more = post()
				}
				p.waitFor(&p.scored, g+1)
				ws.softmaxTile(j, t, t%2)
				if t > 0 {
					p.waitFor(&p.added, g) // P·V of the job's previous tile is in o
				}
				ws.rescaleTile(t)
				g++
				p.probs.Store(g)
				if t == 0 && prev >= 0 {
					p.waitFor(&p.added, prevEnd)
					p.ws[prev].finish(&js[prev])
					prev = -1
				}
			}
			prev, prevEnd = k, g
		}
		if prev >= 0 {
			p.waitFor(&p.added, prevEnd)
			p.ws[prev].finish(&js[prev])
		}
		return nil
	}
	matSide := func(local, _ int) error {
		p := &pairs[local]
		defer p.fail()
		var js [attnSlots]attnJob
		taken := int64(0)
		// take waits for the next posted job and returns its slot, or -1
		// at the end.
		take := func() int {
			taken++
			p.waitFor(&p.posted, taken)
			k := int((taken - 1) % attnSlots)
			i := p.unit[k]
			if i < 0 {
				return -1
			}
			job(int(i), p.ws[k], &js[k])
			return k
		}
		k := take()
		if k < 0 {
			return nil
		}
		p.ws[k].qkTile(&js[k], 0, 0)
		g := int64(0)
		p.scored.Store(1)
		for k >= 0 {
			ws, j := p.ws[k], &js[k]
			nt := len(ws.tiles)
			nk := k
			for t := range nt {
				if t+1 < nt {
					ws.qkTile(j, t+1, (t+1)%2)
					p.scored.Store(g + 2)
				} else if nk = take(); nk >= 0 {
					p.ws[nk].qkTile(&js[nk], 0, 0)
					p.scored.Store(g + 2)
				}
				p.waitFor(&p.probs, g+1)
				ws.pvTile(j, t, t%2)
				g++
				p.added.Store(g)
			}
			k = nk
		}
		return nil
	}
	if _, err := ms.RunGroups(pool.Task{Group: vec, F: vecSide}, pool.Task{Group: mat, F: matSide}); err != nil {
		return err
	}
	if ctx != nil {
		return ctx.Err()
	}
	return nil
}

// attnPipelineDefault reports whether prefill attention on backend be runs
// the pipeline by default: where its matrix stage has a matrix unit that
// the cores share (SME: one unit per cluster of cores, SMEPilot §4.2), so
// the vector group's cores add their vector units to it. On the cores
// alone each stage would get half the workers (roofline.PredictAttention
// ≈ 0.5× serial), and AMX is a unit of every core, so each core running
// both stages keeps all the tile units and all the vector units busy:
// measured on a 16-core Emerald Rapids VM (bench attention, qwen3-0.6b,
// bf16 KV cache on amx-bf16, 16 threads, 2026-11-27, four runs), the
// pipeline took 1.93-2.00× the serial schedule's time at context 2048
// and 1.75-2.20× at 8192.
func attnPipelineDefault(be gemm.Backend) bool {
	return be.Unit == gemm.MatrixUnit && be.ISA != "amx"
}

// attnGroups cuts the pool into the pipeline's vector group (the first
// Threads − Threads/2 workers, worker 0 among them) and matrix group (the
// other Threads/2), or returns nil groups where prefill attention runs
// serially: the pipeline ablation, or one worker.
func (m *Model) attnGroups() (vec, mat *pool.Group, err error) {
	n := m.pool.Size()
	if m.opts.NoPipeline || n < 2 || !m.opts.ForcePipeline && !attnPipelineDefault(m.attnBackend()) {
		return nil, nil, nil
	}
	gs, err := m.pool.Groups(n-n/2, n/2)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: attention pipeline: %w", err)
	}
	return gs[0], gs[1], nil
}

// attentionNotes is the attention plan per shape, for Model.Notes: which
// kernels and schedule decode and prefill attention run, and on what.
func (m *Model) attentionNotes() []string {
	c := m.Config
	group := c.Heads / max(c.KVHeads, 1)
	n := m.pool.Size()
	abe := m.attnBackend()
	be := abe.Name
	rows := attnPlanRows(abe, group)
	var notes []string
	if group < attnVecRows {
		notes = append(notes, fmt.Sprintf("attention plan: decode (one token per sequence: %d query rows per KV head, fewer than %d) runs the vector kernels (SMEPilot §4.2: low intensity; kernels.AxpyPanels on the packed panels, all %d rows per K and V panel row read; DotRows and AxpyRows per row on the kv-packing ablation's row-major cache) on every worker, one job per sequence and KV head", group, attnVecRows, group))
	} else {
		notes = append(notes, fmt.Sprintf("attention plan: decode (one token per sequence: %d query rows per KV head, at least %d) runs %s's GEMM microkernels on every worker, serially per job", group, attnVecRows, be))
	}
	if m.opts.KVDType == "bf16" {
		how := "attention converts each K and V tile it reads to fp32 and computes in fp32"
		if group < attnVecRows && kernels.AxpyPanelsBF16Direct(max(abe.TileN, 1)) {
			how = "decode attention reads the bf16 panels in place, widened to fp32 in registers (kernels.AxpyPanelsBF16), and computes in fp32; prefill converts each K and V tile it reads to fp32"
		}
		if AttentionAMX(abe) {
			how = "prefill's QKᵀ and P·V run on the AMX tiles on K and V as the producer wrote them (queries and probabilities rounded to bf16 as the cache's K and V are, fp32 accumulation: gemm.AMXTiles.Rounded); decode's vector kernel reads the same panels in place (kernels.AxpyPanelsBF16Pairs: pairs of k per column widened to fp32 in registers)"
		}
		notes = append(notes, fmt.Sprintf("KV cache: bf16 panels of %s's layout (half the bytes of fp32); %s", be, how))
	} else if mb := m.Matrix; mb != nil && AttentionAMX(*mb) && mb.Unavailable == "" {
		notes = append(notes, fmt.Sprintf("attention: on %s, not %s: the AMX tiles multiply bf16 K and V, so attention runs on them only with the bf16 KV cache (--kv-dtype bf16)", be, mb.Name))
	}
	if c.SlidingWindow > 0 {
		notes = append(notes, fmt.Sprintf("attention: sliding window of %d positions; tiles wholly outside every row's window are skipped", c.SlidingWindow))
	}
	switch {
	case m.opts.NoPipeline:
		notes = append(notes, fmt.Sprintf("attention plan: prefill (blocks of up to %d rows × %d heads per KV head) runs each job's QKᵀ, softmax, rescale and P·V serially on %s, jobs spread over all %d workers (pipeline ablation)", rows, group, be, n))
	case n < 2:
		notes = append(notes, fmt.Sprintf("attention plan: prefill runs serially on %s: with 1 thread the pipeline (SMEPilot §4.2) has no second worker and degenerates to the serial schedule", be))
	case !m.opts.ForcePipeline && abe.Unit == gemm.MatrixUnit && !attnPipelineDefault(abe):
		notes = append(notes, fmt.Sprintf("attention plan: prefill (blocks of up to %d rows × %d heads per KV head) runs each job's QKᵀ, softmax, rescale and P·V serially on %s, jobs spread over all %d workers: "+
			"its matrix unit is a unit of every core, so each core runs both stages (the pipeline, SMEPilot §4.2, took 1.75–2.2× the serial time on a 16-core Emerald Rapids VM; bench attention measures both)", rows, group, be, n))
	case !m.opts.ForcePipeline && !attnPipelineDefault(abe):
		notes = append(notes, fmt.Sprintf("attention plan: prefill (blocks of up to %d rows × %d heads per KV head) runs each job's QKᵀ, softmax, rescale and P·V serially on %s, jobs spread over all %d workers: "+
			"the pipeline (SMEPilot §4.2) needs a matrix unit for its matrix stage, and this CPU's attention backend has none (on a second group of cores each stage gets half the workers: roofline.PredictAttention ≈ 0.5× serial; bench attention measures both)", rows, group, be, n))
	default:
		unit := "a second group of cores: this CPU's attention backend has no matrix unit"
		if abe.Unit == gemm.MatrixUnit {
			unit = "the matrix unit"
		}
		notes = append(notes, fmt.Sprintf("attention plan: prefill (blocks of up to %d rows × %d heads per KV head) runs the phase-aware pipeline (SMEPilot §4.2, Fig. 6), pairs of workers: %d; matrix stage (QKᵀ, P·V on %s) on workers %v = %s; vector stage (softmax, rescale) on workers %v",
			rows, group, n/2, be, m.pool.All().Workers()[n-n/2:], unit, m.pool.All().Workers()[:n-n/2]))
		if n%2 == 1 {
			notes = append(notes, fmt.Sprintf("attention pipeline: worker %d has no partner and runs prefill jobs serially", m.pool.All().Workers()[n/2]))
		}
	}
	return notes
}

// AttentionTile is the KV positions per attention tile on backend b at
// head dim headDim (the tile planner, attnPlanTile, with gemm.DefaultL2).
func AttentionTile(b gemm.Backend, headDim int) int {
	return attnPlanTile(b, headDim, gemm.DefaultL2)
}

// AttentionRows is the query rows of one prefill attention job (per KV
// head; its GQA heads share the job's tiles) on backend b with group
// query heads per KV head: the tile planner's (attnPlanRows), 48 at
// group 2 on a backend of MR 12.
func AttentionRows(b gemm.Backend, group int) int {
	return attnPlanRows(b, group)
}

// AttentionPlan is the tiling of prefill attention on backend b for a
// model of head dim headDim and group query heads per KV head, as the
// roofline times it (roofline.AttentionSchedule's tile, rows, MR, NR,
// softmax padding and vector-path threshold; its shares and target are
// the caller's): the planner's choices (attnPlanTile, attnPlanRows,
// softmaxPad, attnVecRows).
func AttentionPlan(b gemm.Backend, headDim, group int) roofline.AttentionSchedule {
	return roofline.AttentionSchedule{MatrixShare: 1, VectorShare: 1,
		Tile: AttentionTile(b, headDim), Rows: AttentionRows(b, group),
		TileM: max(b.TileM, 1), PanelN: max(b.TileN, 1), Pad: softmaxPad, VecRows: attnVecRows}
}

// AttentionKernels is the planner's choice of tile kernels for an
// attention job of rows query rows per KV head with group query heads
// each (attnVecRows): "vector" (kernels.AxpyPanels on the packed panels,
// kernels.AxpyPanelsBF16Pairs on the AMX layout's, DotRows/AxpyRows per
// query row on the row-major cache; SMEPilot §4.2's choice for low
// intensity) below attnVecRows query rows, else "gemm" (the backend's
// microkernels on the panels, the AMX tiles on amx-bf16).
func AttentionKernels(rows, group int) string {
	if rows*group < attnVecRows {
		return "vector"
	}
	return "gemm"
}

// attnBackend is the gemm backend of attention's tile products, whose
// panels the KV cache is packed in: the matrix target's backend where the
// placement has one (matrix, mixed, auto) and it computes fp32 (the cache
// is fp32), e.g. sme-fp32 on a CPU with SME, or amx-bf16 on a bf16 cache
// (Options.KVDType "bf16"; the cache then takes the AMX tile layout,
// AttentionAMX), so that the pipeline's matrix stage runs on the matrix unit
// (SMEPilot §4.2); else the cores' fp32 backend (Model.Backend).
func (m *Model) attnBackend() gemm.Backend {
	if mb := m.Matrix; mb != nil && mb.Unavailable == "" && (mb.DType == gemm.FP32 || AttentionAMX(*mb) && m.opts.KVDType == "bf16") {
		return *mb
	}
	return m.Backend
}
