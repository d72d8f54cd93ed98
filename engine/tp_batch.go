package engine

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// tpBatch is a Batch's per-group state under NUMA policy tp (tp.go).
type tpBatch struct {
	bufs []*tpBuf
	ws   []*attnScratch // per pool worker, for its group's KV layout
	next []tpCounter    // per group: the next attention job of the layer
	// mem records the buffers taken from the Model's tp allocator
	// (tpState.mem), freed when the Batch is collected; nil where the
	// groups' memory is on the Go heap.
	mem *tpMemBatch
}

// tpMemBatch is the record of a Batch's KV caches and activations from
// tp's allocator: the groups allocate concurrently (on their own
// workers), hence the lock.
type tpMemBatch struct {
	mem  *numaMem
	mu   sync.Mutex
	kv   [][]float32
	acts [][][]float32 // per group: its current activation buffers
}

// free unmaps every buffer of the record (the Batch's cleanup).
func (r *tpMemBatch) free() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mem.free(r.kv...)
	for _, a := range r.acts {
		r.mem.free(a...)
	}
	r.kv, r.acts = nil, nil
}

// tpCounter is an attention job counter on a cache line of its own.
type tpCounter struct {
	v atomic.Int64
	_ [56]byte
}

// tpBuf is one group's KV caches and activations, all from
// tpState.allocBuf: bound to the group's node where tp has an allocator.
// The buffers that every group reads are not here: the Scatter's source
// is the embedding table (the caller's Weights, on the Go heap), and the
// final norm's output and the logits (the LM head, on every worker from
// group 0's copy of the hidden state) are the Batch's own xb and logits,
// on the Go heap (first touch). The Gathers read the other groups'
// partials where they are, on their groups' nodes, and write only the
// group's own copy of the residual (x).
type tpBuf struct {
	kv     kvLayout      // its KV heads' layout
	kc, vc [][][]float32 // [slot][layer]
	rows   int           // rows the activations are sized for
	x      []float32     // [T][Dim] the group's copy of the hidden state (residual stream)
	xb     []float32     // [T][Dim] normed
	q, att []float32     // [T][heads·HeadDim]
	kn, vn []float32     // [T][kvHeads·HeadDim]
	hb     []float32     // [T][intermediate share]
	hb2    []float32
	// part are the partial sums of o_proj (0) and down_proj (1), [T][Dim]:
	// two buffers so that the attention Gather needs one global barrier
	// (Fig. 4's double buffering; tp.go).
	part [2][]float32
}

// tpNewBatch gives b per-group KV caches, allocated by the groups' own
// workers (from tp's allocator, bound to the group's node, or on the Go
// heap and prefaulted there), and per-worker attention scratch. The
// buffers from the allocator are freed when b is collected
// (runtime.AddCleanup, as numaBatchInit does), also after an error.
func (m *Model) tpNewBatch(b *Batch) error {
	t, c := m.tp, m.Config
	abe := m.attnBackend()
	packed := !m.opts.KVPackPerCall
	tb := &tpBatch{bufs: make([]*tpBuf, len(t.groups)), ws: make([]*attnScratch, m.pool.Size()), next: make([]tpCounter, len(t.groups))}
	if t.mem != nil {
		tb.mem = &tpMemBatch{mem: t.mem, acts: make([][][]float32, len(t.groups))}
		runtime.AddCleanup(b, func(r *tpMemBatch) { r.free() }, tb.mem)
	}
	b.tp = tb
	for g := range tb.bufs {
		tb.bufs[g] = &tpBuf{kv: kvLayoutFor(abe, t.kvHeads, c.HeadDim, b.maxSeq, packed, b.kv.bf16),
			kc: make([][][]float32, len(b.slots)), vc: make([][][]float32, len(b.slots))}
	}
	for w := range tb.ws {
		tb.ws[w] = newAttnScratch(abe, tb.bufs[t.gi[w]].kv, c.Heads/c.KVHeads)
	}
	workers := m.all.Workers()
	err := m.do(func(ms *pool.Master) error {
		return ms.Run(m.all, func(local, n int) error {
			w := workers[local]
			g, gl := t.gi[w], t.gl[w]
			bf := tb.bufs[g]
			for s := gl; s < len(b.slots); s += t.groups[g].Size() {
				if err := bf.allocKV(t, tb.mem, g, s, c.Layers); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("engine: model %s: TP KV caches: %w", c.Name, err)
	}
	return nil
}

// allocBuf returns n zeroed floats of class (numaKV or numaAct) for group
// g: with tp's allocator, mmap'ed memory bound to g's node (mbind
// MPOL_BIND, every page touched; the caller records it in its Batch's
// tpMemBatch); without one, a Go slice that the caller, one of g's
// workers, touches first, so that the OS's first-touch policy puts it on
// the node of g's CPUs. Errors: the allocator's (mmap, mbind), naming
// the class and the group.
func (t *tpState) allocBuf(class string, g, n int) ([]float32, error) {
	if t.mem == nil {
		return make([]float32, n), nil
	}
	return t.mem.allocIn(class, g, n, []numa.Span{{Off: 0, End: 4 * max(n, 1), Node: t.nodes[g]}})
}

// allocKV allocates slot s's caches of every layer for group g (allocBuf)
// and writes one float per page (see Batch.allocKV), on the calling
// worker.
func (bf *tpBuf) allocKV(t *tpState, rec *tpMemBatch, g, s, layers int) error {
	nk, nv := bf.kv.floats()
	bf.kc[s], bf.vc[s] = make([][]float32, layers), make([][]float32, layers)
	const pageFloats = 4096 / 4
	for l := range layers {
		for _, p := range []struct {
			dst *[]float32
			n   int
		}{{&bf.kc[s][l], nk}, {&bf.vc[s][l], nv}} {
			f, err := t.allocBuf(numaKV, g, p.n)
			if err != nil {
				return err
			}
			if rec != nil {
				rec.mu.Lock()
				rec.kv = append(rec.kv, f)
				rec.mu.Unlock()
			}
			for i := 0; i < len(f); i += pageFloats {
				f[i] = 0
			}
			*p.dst = f
		}
	}
	return nil
}

// grow sizes group g's activations for T rows (allocBuf, on one of g's
// workers); with tp's allocator the old buffers are unmapped once the new
// ones are all there (slices into them are invalid afterwards).
func (bf *tpBuf) grow(t *tpState, rec *tpMemBatch, g, T int, c Config) error {
	if T <= bf.rows {
		return nil
	}
	qd, kvd, hid := t.heads*c.HeadDim, t.kvHeads*c.HeadDim, t.inter[g+1]-t.inter[g]
	dst := []*[]float32{&bf.x, &bf.xb, &bf.q, &bf.att, &bf.kn, &bf.vn, &bf.hb, &bf.hb2, &bf.part[0], &bf.part[1]}
	width := []int{c.Dim, c.Dim, qd, qd, kvd, kvd, hid, hid, c.Dim, c.Dim}
	got := make([][]float32, len(dst))
	for i, wd := range width {
		var err error
		if got[i], err = t.allocBuf(numaAct, g, T*wd); err != nil {
			if rec != nil {
				rec.mem.free(got...)
			}
			return err
		}
	}
	if rec != nil {
		rec.mu.Lock()
		old := rec.acts[g]
		rec.acts[g] = got
		rec.mu.Unlock()
		rec.mem.free(old...)
	}
	for i, p := range dst {
		*p = got[i]
	}
	bf.rows = T
	return nil
}

// tpCall is one forward call's shared, read-only state under tp.
type tpCall struct {
	b       *Batch
	t       *tpState
	tb      *tpBatch
	T, p    int
	rowPos  []int
	rowSlot []int
	segs    []segment
	units   []attnUnit // per group: the same jobs over its KV heads
	tile    pool.Tile
	master  int // pool index of the worker that times the operators
	scale   float32
	tm      *[nLayerOps]cell
}

// tpSafe runs f, turning a panic into an error, so that a failing worker
// still meets its group at every barrier.
func tpSafe(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine: tp: panic: %v\n%s", r, debug.Stack())
		}
	}()
	return f()
}

// tpRun is Batch.run under NUMA policy tp (tp.go): Scatter, the decoder
// layers on the groups, then the final norm and LM head on every worker.
func (b *Batch) tpRun(ms *pool.Master, plan opPlan, tokens, rowPos []int, segs []segment, p int, all bool) ([]float32, error) {
	m, t, tb := b.m, b.m.tp, b.tp
	c := m.Config
	T, d := len(tokens), c.Dim
	workers := m.all.Workers()
	k := &tpCall{b: b, t: t, tb: tb, T: T, p: p, rowPos: rowPos, rowSlot: make([]int, T), segs: segs,
		units: attnUnits(segs, t.kvHeads, attnPlanRows(m.attnBackend(), c.Heads/c.KVHeads)), tile: m.Backend.Tile(), master: ms.Worker(),
		scale: float32(1 / math.Sqrt(float64(c.HeadDim)))}
	for _, sg := range segs {
		for r := sg.r0; r < sg.r1; r++ {
			k.rowSlot[r] = sg.slot
		}
	}

	// Each group's activations sized for T rows by its first worker.
	if slices.ContainsFunc(tb.bufs, func(bf *tpBuf) bool { return bf.rows < T }) {
		err := ms.Run(m.all, func(local, n int) error {
			w := workers[local]
			if g := t.gi[w]; t.gl[w] == 0 {
				return tb.bufs[g].grow(t, tb.mem, g, T, c)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("engine: model %s: TP activations: %w", c.Name, err)
		}
	}

	// Scatter: the embedding rows into every group's copy of the hidden
	// state, each group's by its own workers.
	st := time.Now()
	err := ms.Run(m.all, func(local, n int) error {
		w := workers[local]
		g, gl := t.gi[w], t.gl[w]
		gs := t.groups[g].Size()
		bf := tb.bufs[g]
		for r := gl * T / gs; r < (gl+1)*T/gs; r++ {
			copy(bf.x[r*d:(r+1)*d], m.embed[tokens[r]*d:(tokens[r]+1)*d])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.t.head[p][iEmbed].add(st, T)

	for li := range c.Layers {
		if err := m.opts.ctxErr(); err != nil {
			return nil, err
		}
		for g := range tb.next {
			tb.next[g].v.Store(0)
		}
		k.tm = &b.t.layer[p][li]
		if err := ms.Run(m.all, func(local, n int) error { return k.layer(li, workers[local]) }); err != nil {
			return nil, err
		}
	}
	if err := m.opts.ctxErr(); err != nil {
		return nil, err
	}

	// Final norm and LM head on every worker, from group 0's copy.
	x := tb.bufs[0].x[:T*d]
	r0 := T - 1
	if all {
		r0 = 0
	}
	R := T - r0
	xb := b.xb[:R*d]
	st = time.Now()
	err = b.par(ms, R, d, func(i0, i1 int) {
		kernels.RMSNormRows(xb[i0*d:i1*d], x[(r0+i0)*d:(r0+i1)*d], m.finalNorm, d, c.RMSEps)
	})
	if err != nil {
		return nil, err
	}
	b.t.head[p][iFinalNorm].add(st, R)
	if need := R * c.Vocab; cap(b.logits) < need {
		b.logits = make([]float32, need)
	}
	logits := b.logits[:R*c.Vocab]
	st = time.Now()
	if err := m.runLinear(ms, m.lmHead, logits, xb, R, plan.get(OpLMHead), &b.t.use); err != nil {
		return nil, err
	}
	b.t.head[p][iLMHead].add(st, R)
	return logits, nil
}

// layer runs decoder layer li on pool worker w, as its group's share:
// every worker of every group calls it once per layer (one fork-join), and
// each meets the barriers of tp.go's schedule whatever happens, so an
// error on one worker never leaves the others waiting.
func (k *tpCall) layer(li, w int) (err error) {
	b, t, tb := k.b, k.t, k.tb
	m := b.m
	c := m.Config
	g, gl := t.gi[w], t.gl[w]
	gs := t.groups[g].Size()
	bf := tb.bufs[g]
	L := &t.layers[g][li]
	T, d, hd := k.T, c.Dim, c.HeadDim
	qd, kvd, hid := t.heads*hd, t.kvHeads*hd, t.inter[g+1]-t.inter[g]
	x, xb, q, att := bf.x[:T*d], bf.xb[:T*d], bf.q[:T*qd], bf.att[:T*qd]
	kn, vn, hb, hb2 := bf.kn[:T*kvd], bf.vn[:T*kvd], bf.hb[:T*hid], bf.hb2[:T*hid]
	master := w == k.master
	wait := t.gbar[g].Wait // Sync B: the group's barrier
	if t.sync == SyncA {
		wait = t.all.Wait // a global barrier after every operator
	}
	span := func(n int) (int, int) { return gl * n / gs, (gl + 1) * n / gs }
	step := func(op int, linear bool, f func() error) {
		var st time.Time
		if master {
			st = time.Now()
		}
		if err == nil {
			err = tpSafe(f)
		}
		wait()
		if master {
			k.tm[op].add(st, T)
			if linear {
				b.t.use[useCores] += len(t.groups)
			}
		}
	}
	lin := func(wt *gemm.Weights, y, xin []float32) func() error {
		return func() error {
			r := pool.Block(pool.Region{M1: T, N1: wt.N}, k.tile, gs, gl)
			if r.Empty() {
				return nil
			}
			return wt.Block(y, wt.N, xin, wt.K, r.M0, r.M1, r.N0, r.N1, m.scratches[w])
		}
	}
	norm := func(dst, src, wt []float32, width, rows int) {
		i0, i1 := span(rows)
		kernels.RMSNormRows(dst[i0*width:i1*width], src[i0*width:i1*width], wt, width, c.RMSEps)
	}
	// gather: a global barrier (every group's partial is written), then
	// this group's workers add the partials of every group, in group
	// order, to their ranges of the group's residual copy.
	gather := func(op, buf int) {
		var st time.Time
		if master {
			st = time.Now()
		}
		t.all.Wait()
		if err == nil {
			e0, e1 := span(T * d)
			xs := x[e0:e1]
			for _, o := range tb.bufs {
				for i, v := range o.part[buf][e0:e1] {
					xs[i] += v
				}
			}
		}
		wait()
		if master {
			k.tm[op].add(st, T)
		}
	}

	step(iAttnNorm, false, func() error { norm(xb, x, L.attnNorm, d, T); return nil })
	step(iQProj, true, lin(L.wq, q, xb))
	step(iKProj, true, lin(L.wk, kn, xb))
	step(iVProj, true, lin(L.wv, vn, xb))
	if c.QKNorm {
		step(iQKNorm, false, func() error {
			norm(q, q, L.qNorm, hd, T*t.heads)
			norm(kn, kn, L.kNorm, hd, T*t.kvHeads)
			return nil
		})
	}
	step(iRoPE, false, func() error {
		i0, i1 := span(T)
		b.rope.ApplyRows(q[i0*qd:i1*qd], qd, k.rowPos[i0:i1], c.RoPELayout)
		b.rope.ApplyRows(kn[i0*kvd:i1*kvd], kvd, k.rowPos[i0:i1], c.RoPELayout)
		return nil
	})
	step(iKVWrite, false, func() error {
		i0, i1 := span(T)
		writeRuns(i0, i1, func(a, b int) bool {
			return k.rowSlot[a] == k.rowSlot[b] && k.rowPos[b] == k.rowPos[a]+1
		}, func(r0, r1 int) {
			s := k.rowSlot[r0]
			bf.kv.writeRows(bf.kc[s][li], bf.vc[s][li], k.rowPos[r0], r1-r0, kn[r0*kvd:r1*kvd], vn[r0*kvd:r1*kvd])
		})
		return nil
	})
	step(iAttention, false, func() error {
		gqa := c.Heads / c.KVHeads
		next := &tb.next[g].v
		var j attnJob
		for {
			i := int(next.Add(1) - 1)
			if i >= len(k.units) {
				return nil
			}
			u := k.units[i]
			sg := k.segs[u.seg]
			j = attnJob{out: att[sg.r0*qd : sg.r1*qd], q: q[sg.r0*qd : sg.r1*qd], ldq: qd,
				kc: bf.kc[sg.slot][li], vc: bf.vc[sg.slot][li], r0: u.r0 - sg.r0, r1: u.r1 - sg.r0, pos0: sg.pos0,
				kvHead: u.kvh, group: gqa, scale: k.scale, window: c.SlidingWindow}
			attend(&j, tb.ws[w])
		}
	})
	step(iOProj, true, lin(L.wo, bf.part[0][:T*d], att))
	gather(iAttnGather, 0)

	step(iFFNNorm, false, func() error { norm(xb, x, L.ffnNorm, d, T); return nil })
	step(iGateProj, true, lin(L.gate, hb, xb))
	step(iUpProj, true, lin(L.up, hb2, xb))
	step(iSiLUMul, false, func() error {
		e0, e1 := span(T * hid)
		kernels.SiLUMul(hb[e0:e1], hb[e0:e1], hb2[e0:e1])
		return nil
	})
	step(iDownProj, true, lin(L.down, bf.part[1][:T*d], hb))
	gather(iFFNGather, 1)
	return err
}
