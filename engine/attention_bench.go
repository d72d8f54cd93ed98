package engine

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/cpubench/bench/internal/hugepage"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// AttentionBenchOptions configure NewAttentionBench.
type AttentionBenchOptions struct {
	// Heads, KVHeads and HeadDim are the model's attention shape (query
	// heads, KV heads, floats per head); Heads must be a multiple of
	// KVHeads (GQA).
	Heads, KVHeads, HeadDim int
	// MaxSeq is the positions of every KV cache, all filled at creation
	// (the longest context measured).
	MaxSeq int
	// Seqs is the number of sequences, each with its own cache (the
	// largest decode batch; prefill uses the first).
	Seqs int
	// Width is the most new tokens per sequence of a decode step (0: 1).
	Width int
	// KVPackPerCall is the kv-packing ablation (Options.KVPackPerCall):
	// the caches are row-major and attention packs every K and V tile it
	// reads inside each call.
	KVPackPerCall bool
	// KVDType is the caches' element type (Options.KVDType): "" or
	// "fp32", or "bf16" (packed panels in bfloat16, each tile converted
	// to fp32 by attention); bf16 does not combine with KVPackPerCall.
	KVDType string
	// Workers is the fp32 gemm backend each pool worker (by pool index)
	// runs its attention tiles on; the caches are laid out once per
	// distinct backend (each backend's panel width), holding the same
	// values.
	Workers []gemm.Backend
}

// AttentionBench is the engine's attention (attendBlock on the KV cache
// layout of kvcache.go, in Batch.attention's work units of the tile
// planner's query rows (AttentionRows of the last worker's backend, the
// pipeline's matrix group) × one KV head, claimed dynamically by the
// workers in prefill and split statically in decode, as Batch.attention
// runs them) alone, on
// synthetic queries, keys and values in [-1, 1), for `bench attention`
// (SMEPilot §4.3, Figs. 10b and 11b). It is not safe for concurrent use.
type AttentionBench struct {
	o      AttentionBenchOptions
	lays   map[string]kvLayout
	kc, vc map[string][][]float32 // per backend name, per sequence
	ws     []*attnScratch         // per pool worker
	q, out []float32              // [rows][Heads·HeadDim]
	rows   int
	// jobRows is the query rows of a work unit: attnPlanRows of the
	// last worker's backend.
	jobRows int
}

// benchValue is the synthetic tensor element i of stream s, in [-1, 1)
// (splitmix64's finalizer).
func benchValue(s, i uint64) float32 {
	z := s<<40 + i + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float32(int32(z>>32)) * 0x1p-31
}

// AttentionBenchBytes is what NewAttentionBench allocates for o: every
// distinct backend's caches (packed: panels' padding included) and the
// query and output rows, overflow-checked.
func AttentionBenchBytes(o AttentionBenchOptions) memlimit.Size {
	seen := map[string]bool{}
	need := memlimit.Mul(o.rows(), o.Heads, o.HeadDim, 4, 2)
	for _, b := range o.Workers {
		if seen[b.Name] {
			continue
		}
		seen[b.Name] = true
		c := Config{Layers: 1, KVHeads: o.KVHeads, HeadDim: o.HeadDim}
		need = need.Plus(kvSlotBytes(c, b, o.MaxSeq, !o.KVPackPerCall, o.KVDType == "bf16").Times(o.Seqs))
	}
	return need
}

// rows is the query rows the bench holds: a prefill's or a decode step's.
func (o AttentionBenchOptions) rows() int {
	n, ok := memlimit.Mul(o.Seqs, max(o.Width, 1)).Int()
	if !ok {
		n = math.MaxInt // refused by the memory check
	}
	return max(o.MaxSeq, n)
}

// NewAttentionBench fills o.Seqs caches of o.MaxSeq positions per
// distinct backend of o.Workers. Errors (one line naming the value): a
// shape ≤ 0, Heads not a multiple of KVHeads, no workers, a backend that
// is not fp32 or is unavailable, and caches that do not fit in the memory
// this process may use (memlimit.Check).
func NewAttentionBench(o AttentionBenchOptions) (*AttentionBench, error) {
	switch {
	case o.Heads < 1 || o.KVHeads < 1 || o.HeadDim < 1:
		return nil, fmt.Errorf("engine: attention bench: heads %d, KV heads %d, head dim %d: must be ≥ 1", o.Heads, o.KVHeads, o.HeadDim)
	case o.Heads%o.KVHeads != 0:
		return nil, fmt.Errorf("engine: attention bench: heads %d not a multiple of KV heads %d", o.Heads, o.KVHeads)
	case o.MaxSeq < 1:
		return nil, fmt.Errorf("engine: attention bench: context %d: must be ≥ 1", o.MaxSeq)
	case o.Seqs < 1:
		return nil, fmt.Errorf("engine: attention bench: %d sequences: must be ≥ 1", o.Seqs)
	case o.Width < 0 || o.Width > o.MaxSeq:
		return nil, fmt.Errorf("engine: attention bench: decode width %d: must be between 0 and the context %d", o.Width, o.MaxSeq)
	case len(o.Workers) == 0:
		return nil, fmt.Errorf("engine: attention bench: no workers")
	}
	if err := CheckKVDType(o.KVDType, o.KVPackPerCall); err != nil {
		return nil, err
	}
	for _, b := range o.Workers {
		if b.DType != gemm.FP32 && !(AttentionAMX(b) && o.KVDType == "bf16") {
			return nil, fmt.Errorf("engine: attention bench: backend %s computes %s: attention's panels are fp32 (amx-bf16 needs the bf16 KV cache)", b.Name, b.DType)
		}
		if b.Unavailable != "" {
			return nil, fmt.Errorf("engine: attention bench: backend %s: %s", b.Name, b.Unavailable)
		}
	}
	if err := memlimit.Check(fmt.Sprintf("engine: attention bench: %d sequences' KV caches of %d positions", o.Seqs, o.MaxSeq), AttentionBenchBytes(o)); err != nil {
		return nil, err
	}
	a := &AttentionBench{o: o, lays: map[string]kvLayout{}, kc: map[string][][]float32{}, vc: map[string][][]float32{},
		ws: make([]*attnScratch, len(o.Workers)), rows: o.rows(), jobRows: attnPlanRows(o.Workers[len(o.Workers)-1], o.Heads/o.KVHeads)}
	kvd := o.KVHeads * o.HeadDim
	k, v := make([]float32, kvd), make([]float32, kvd)
	for wi, b := range o.Workers {
		lay, ok := a.lays[b.Name]
		if !ok {
			lay = kvLayoutFor(b, o.KVHeads, o.HeadDim, o.MaxSeq, !o.KVPackPerCall, o.KVDType == "bf16")
			a.lays[b.Name] = lay
			nk, nv := lay.floats()
			for s := range o.Seqs {
				kc, vc := hugepage.Make[float32](nk), hugepage.Make[float32](nv) // as Batch.allocKV
				for pos := range o.MaxSeq {
					for i := range kvd {
						e := uint64((s*o.MaxSeq+pos)*kvd + i)
						k[i], v[i] = benchValue(1, e), benchValue(2, e)
					}
					lay.write(kc, vc, pos, k, v)
				}
				a.kc[b.Name] = append(a.kc[b.Name], kc)
				a.vc[b.Name] = append(a.vc[b.Name], vc)
			}
		}
		a.ws[wi] = newAttnScratch(b, lay, o.Heads/o.KVHeads)
	}
	qd := o.Heads * o.HeadDim
	a.q, a.out = make([]float32, a.rows*qd), make([]float32, a.rows*qd)
	for i := range a.q {
		a.q[i] = benchValue(3, uint64(i))
	}
	return a, nil
}

// checkWorkers reports an error for a worker of gs that the bench has no
// backend (scratch) for.
func (a *AttentionBench) checkWorkers(gs ...*pool.Group) error {
	for _, g := range gs {
		for _, w := range g.Workers() {
			if w < 0 || w >= len(a.ws) {
				return fmt.Errorf("engine: attention bench: pool worker %d: the bench has backends for %d workers", w, len(a.ws))
			}
		}
	}
	return nil
}

// run runs the units on g's workers through ms, each worker claiming the
// next unit while ctx runs; do gets the pool worker index.
func (a *AttentionBench) run(ctx context.Context, ms *pool.Master, g *pool.Group, n int, do func(worker, i int)) error {
	if err := a.checkWorkers(g); err != nil {
		return err
	}
	workers := g.Workers()
	var next atomic.Int64
	return ms.Run(g, func(local, _ int) error {
		w := workers[local]
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			i := int(next.Add(1) - 1)
			if i >= n {
				return nil
			}
			do(w, i)
		}
	})
}

// runSplit runs the units on g's workers through ms as the engine's decode
// does (Batch.attention): worker k of g runs units [bounds[k],
// bounds[k+1]) (attnSplit), while ctx runs; do gets the pool worker index.
func (a *AttentionBench) runSplit(ctx context.Context, ms *pool.Master, g *pool.Group, bounds []int, do func(worker, i int)) error {
	if err := a.checkWorkers(g); err != nil {
		return err
	}
	workers := g.Workers()
	return ms.Run(g, func(local, _ int) error {
		for i := bounds[local]; i < bounds[local+1]; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			do(workers[local], i)
		}
		return nil
	})
}

// Prefill runs causal attention for a prompt of T tokens from an empty
// cache (query rows 0..T-1 of the first sequence, row t attending to
// positions 0..t) on g's workers: T/AttentionRows (rounded up) × KVHeads work
// units, the latest rows first. Its FLOPs are PrefillFLOPs. Once ctx is
// done the workers claim no further unit (a unit is at most AttentionRows
// rows against T positions) and its error is returned. Errors: T out of
// 1..MaxSeq, a worker without a backend, the pool's errors.
func (a *AttentionBench) Prefill(ctx context.Context, ms *pool.Master, g *pool.Group, T int) error {
	o := a.o
	if T < 1 || T > o.MaxSeq {
		return fmt.Errorf("engine: attention bench: prefill of %d tokens: must be between 1 and %d", T, o.MaxSeq)
	}
	type unit struct{ r0, r1, h int }
	var units []unit
	for r1 := T; r1 > 0; r1 -= a.jobRows {
		for h := range o.KVHeads {
			units = append(units, unit{max(r1-a.jobRows, 0), r1, h})
		}
	}
	qd, group := o.Heads*o.HeadDim, o.Heads/o.KVHeads
	scale := float32(1 / math.Sqrt(float64(o.HeadDim)))
	return a.run(ctx, ms, g, len(units), func(w, i int) {
		u, ws := units[i], a.ws[w]
		name := ws.be.Name
		attendBlock(a.out[:T*qd], a.q[:T*qd], qd, a.kc[name][0], a.vc[name][0], u.r0, u.r1, 0, u.h, group, scale, ws)
	})
}

// PrefillPipelined is Prefill through the phase-aware pipeline (SMEPilot
// §4.2, Fig. 6; attention_pipeline.go): the same work units on the pairs
// (vec.Workers()[k], mat.Workers()[k]), the matrix worker running QKᵀ and
// P·V on its backend's panels and the vector worker the softmax and
// rescale; a vector worker without a partner runs units serially. The
// outputs equal Prefill's bit for bit where the pair's matrix worker has
// the backend Prefill's worker of the unit had. Errors: as Prefill's, a
// matrix group larger than the vector group, the groups' workers without
// a backend.
func (a *AttentionBench) PrefillPipelined(ctx context.Context, ms *pool.Master, vec, mat *pool.Group, T int) error {
	o := a.o
	if T < 1 || T > o.MaxSeq {
		return fmt.Errorf("engine: attention bench: prefill of %d tokens: must be between 1 and %d", T, o.MaxSeq)
	}
	if err := a.checkWorkers(vec, mat); err != nil {
		return err
	}
	type unit struct{ r0, r1, h int }
	var units []unit
	for r1 := T; r1 > 0; r1 -= a.jobRows {
		for h := range o.KVHeads {
			units = append(units, unit{max(r1-a.jobRows, 0), r1, h})
		}
	}
	qd, group := o.Heads*o.HeadDim, o.Heads/o.KVHeads
	scale := float32(1 / math.Sqrt(float64(o.HeadDim)))
	return attnPipeline(ctx, ms, vec, mat, len(units), func(w int) *attnScratch { return a.ws[w] }, func(i int, ws *attnScratch, j *attnJob) {
		u, name := units[i], ws.be.Name
		*j = attnJob{out: a.out[:T*qd], q: a.q[:T*qd], ldq: qd, kc: a.kc[name][0], vc: a.vc[name][0], r0: u.r0, r1: u.r1, kvHead: u.h, group: group, scale: scale}
	})
}

// Decode runs one decode step of seqs sequences at context ctx, each
// adding width new tokens (width 1: ordinary decode; more: a multi-token
// step, SMEPilot Fig. 11b's decode token width): sequence s's rows
// s·width..s·width+width-1 are at positions ctx-width..ctx-1 and attend
// causally to its own cache, on g's workers in seqs × KVHeads ×
// ceil(width/AttentionRows) work units, split statically over the workers
// as the engine's decode splits them (attnSplit). Its FLOPs are
// DecodeFLOPs, its KV bytes DecodeKVBytes. Once cx is done no further
// unit is run and its error is returned. Errors: ctx out of 1..MaxSeq, seqs out of 1..Seqs,
// width out of 1..min(ctx, Width), a worker without a backend, the pool's
// errors.
func (a *AttentionBench) Decode(cx context.Context, ms *pool.Master, g *pool.Group, ctx, seqs, width int) error {
	o := a.o
	if ctx < 1 || ctx > o.MaxSeq {
		return fmt.Errorf("engine: attention bench: decode at context %d: must be between 1 and %d", ctx, o.MaxSeq)
	}
	if seqs < 1 || seqs > o.Seqs {
		return fmt.Errorf("engine: attention bench: decode batch %d: must be between 1 and %d", seqs, o.Seqs)
	}
	if width < 1 || width > min(ctx, max(o.Width, 1)) {
		return fmt.Errorf("engine: attention bench: decode width %d: must be between 1 and %d", width, min(ctx, max(o.Width, 1)))
	}
	type unit struct{ s, r0, r1, h int }
	var units []unit
	for s := range seqs {
		for r1 := width; r1 > 0; r1 -= a.jobRows {
			for h := range o.KVHeads {
				units = append(units, unit{s, max(r1-a.jobRows, 0), r1, h})
			}
		}
	}
	qd, group := o.Heads*o.HeadDim, o.Heads/o.KVHeads
	scale := float32(1 / math.Sqrt(float64(o.HeadDim)))
	costs := make([]float64, len(units))
	for i, u := range units {
		costs[i] = float64(u.r1-u.r0) * float64(ctx-width+u.r1)
	}
	return a.runSplit(cx, ms, g, attnSplit(costs, len(g.Workers())), func(w, i int) {
		u, ws := units[i], a.ws[w]
		name := ws.be.Name
		rows := a.out[u.s*width*qd : (u.s+1)*width*qd]
		attendBlock(rows, a.q[u.s*width*qd:(u.s+1)*width*qd], qd, a.kc[name][u.s], a.vc[name][u.s], u.r0, u.r1, ctx-width, u.h, group, scale, ws)
	})
}

// PrefillFLOPs is 4·HeadDim FLOPs (QKᵀ and P·V) per query head and
// causal (query, key) pair of a T-token prefill: 4·d·H·T(T+1)/2.
func (o AttentionBenchOptions) PrefillFLOPs(T int) float64 {
	return 4 * float64(o.HeadDim) * float64(o.Heads) * float64(T) * float64(T+1) / 2
}

// DecodeFLOPs is 4·HeadDim FLOPs per query head and causal pair of a
// decode step of width new tokens per sequence at context ctx:
// 4·d·H·seqs·(width·(ctx−width) + width(width+1)/2) (width 1: 4·d·H·ctx
// per sequence).
func (o AttentionBenchOptions) DecodeFLOPs(ctx, seqs, width int) float64 {
	w, c := float64(width), float64(ctx)
	return 4 * float64(o.HeadDim) * float64(o.Heads) * float64(seqs) * (w*(c-w) + w*(w+1)/2)
}

// DecodeKVBytes is the K and V bytes a decode step reads, each KV head's
// ctx positions once per sequence (its GQA query heads and, up to
// AttentionRows, its new tokens share them): 2·ctx·KVHeads·HeadDim·e per
// sequence, e = 4 (fp32) or 2 (bf16) bytes (panel padding and a wide
// step's re-reads not counted).
func (o AttentionBenchOptions) DecodeKVBytes(ctx, seqs int) float64 {
	e := 4.0
	if o.KVDType == "bf16" {
		e = 2
	}
	return 2 * e * float64(ctx) * float64(o.KVHeads) * float64(o.HeadDim) * float64(seqs)
}

// CheckOutput compares query row r's output (prompt row r in prefill;
// in decode row s·width+i, sequence s's new token i) for query head h,
// after Prefill or Decode, with a float64 reference of
// softmax(q·kᵀ/√d)·v over positions 0..pos (pos = r in prefill,
// ctx-width+i in decode), and returns the largest
// error relative to Σ_j p_j|v_j| (attendBlock's accuracy bound is about
// 1e-6 of it in fp32). seq is the sequence whose cache row r read. The
// keys and values of the reference are those the cache holds (rounded to
// bfloat16 in a bf16 cache), so the error is the kernel's, not the
// cache's rounding.
func (a *AttentionBench) CheckOutput(r, seq, pos, h int) (float64, error) {
	o := a.o
	if h < 0 || h >= o.Heads || r < 0 || r >= a.rows || seq < 0 || seq >= o.Seqs || pos < 0 || pos >= o.MaxSeq {
		return 0, fmt.Errorf("engine: attention bench: check of row %d, sequence %d, position %d, head %d: out of range", r, seq, pos, h)
	}
	qd, kvd, hd := o.Heads*o.HeadDim, o.KVHeads*o.HeadDim, o.HeadDim
	kh := h / (o.Heads / o.KVHeads)
	held := func(x float32) float64 {
		if o.KVDType == "bf16" {
			return float64(fromBF16(toBF16(x)))
		}
		return float64(x)
	}
	q := a.q[r*qd+h*hd : r*qd+(h+1)*hd]
	scale := 1 / math.Sqrt(float64(hd))
	s := make([]float64, pos+1)
	m := math.Inf(-1)
	for j := range s {
		var dot float64
		for d := range hd {
			dot += float64(q[d]) * held(benchValue(1, uint64((seq*o.MaxSeq+j)*kvd+kh*hd+d)))
		}
		s[j] = dot * scale
		m = max(m, s[j])
	}
	var l float64
	for j := range s {
		s[j] = math.Exp(s[j] - m)
		l += s[j]
	}
	worst := 0.0
	for d := range hd {
		var ref, mag float64
		for j := range s {
			v := held(benchValue(2, uint64((seq*o.MaxSeq+j)*kvd+kh*hd+d)))
			ref += s[j] / l * v
			mag += s[j] / l * math.Abs(v)
		}
		got := float64(a.out[r*qd+h*hd+d])
		worst = max(worst, math.Abs(got-ref)/max(mag, 1e-30))
	}
	return worst, nil
}
