package engine

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cpubench/bench/internal/hugepage"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// Batch is a set of sequence slots sharing one Model: each slot has its
// own KV cache and position. Prefill runs one slot's prompt (GEMMs with M =
// the prompt's length); Decode runs one new token for each of several slots
// together (GEMMs with M = the number of slots: batched decode), each
// attending to its own cache. A Batch is not safe for concurrent use.
type Batch struct {
	m      *Model
	maxSeq int
	rope   *kernels.RoPETable
	kv     kvLayout // every slot's KV cache, per layer
	slots  []slot

	rows    int // rows the buffers below are sized for
	x, xb   []float32
	q, att  []float32
	kn, vn  []float32 // new K and V rows before they go to the caches
	ob      []float32
	hb, hb2 []float32
	logits  []float32
	attnWS  []*attnScratch // per pool worker
	// vecG and matG are the attention pipeline's vector and matrix
	// groups (attnGroups; nil: prefill attention runs serially).
	vecG, matG *pool.Group
	moe        moeBuffers
	t          *timers
	vp         vocabPar // the in-pool sampling passes' scratch (DecodeNext)
	last       []float32
	tp         *tpBatch   // NUMA policy tp's per-group caches and buffers (tp_batch.go)
	nm         *numaBatch // NUMA interleave/local: the buffers below from the Model's allocator (numa_mem.go)
}

// slot is one sequence: its KV cache, per layer in the Batch's kvLayout
// (the attention backend's panels, SMEPilot §4.3; row-major [maxSeq][KVDim]
// under the kv-packing ablation), allocated on first use.
type slot struct {
	pos    int
	kc, vc [][]float32
}

// NewBatch returns n slots with KV caches of maxSeq positions each (0:
// Config.MaxSeq; at most Config.MaxSeq). Every cache is allocated and its
// pages touched here (prefaulted), so that no timed step pays first-touch
// page faults (≈3 µs a page on the VMs measured, issue #16). Errors: maxSeq or n out of range, and all n caches
// (Config.KVBytes) not fitting in the memory this process may use
// (memlimit.Check; a *memlimit.Error).
func (m *Model) NewBatch(n, maxSeq int) (*Batch, error) {
	c := m.Config
	if maxSeq == 0 {
		maxSeq = c.MaxSeq
	}
	if maxSeq < 1 || maxSeq > c.MaxSeq {
		return nil, fmt.Errorf("engine: max sequence %d: must be between 1 and the model's %d", maxSeq, c.MaxSeq)
	}
	if n < 1 {
		return nil, fmt.Errorf("engine: batch of %d slots: must be ≥ 1", n)
	}
	// Every slot's KV cache (allocated on first use, but a batch is made
	// to be used), the slot table and the RoPE table, before any of it.
	packed := !m.opts.KVPackPerCall
	abe := m.attnBackend()
	bf16 := m.opts.KVDType == "bf16"
	need := kvSlotBytes(c, abe, maxSeq, packed, bf16).Times(n).
		Plus(memlimit.Mul(n, int(unsafe.Sizeof(slot{})))).Plus(memlimit.Mul(maxSeq, c.HeadDim, 4))
	if err := memlimit.Check(fmt.Sprintf("engine: model %s: %d slots' KV caches of %d positions", c.Name, n, maxSeq), need); err != nil {
		return nil, err
	}
	rope, err := kernels.NewRoPETable(c.HeadDim, c.RoPETheta, maxSeq, c.RoPEScaling)
	if err != nil {
		return nil, fmt.Errorf("engine: model %s: %w", c.Name, err)
	}
	b := &Batch{m: m, maxSeq: maxSeq, rope: rope, slots: make([]slot, n), t: newTimers(c.Layers),
		kv:     kvLayoutFor(abe, c.KVHeads, c.HeadDim, maxSeq, packed, bf16),
		attnWS: make([]*attnScratch, m.pool.Size())}
	for i := range b.attnWS {
		b.attnWS[i] = newAttnScratch(abe, b.kv, c.Heads/c.KVHeads)
	}
	if b.vecG, b.matG, err = m.attnGroups(); err != nil {
		return nil, err
	}
	if m.tp != nil {
		return b, m.tpNewBatch(b)
	}
	b.numaBatchInit()
	for i := range b.slots {
		if err := b.allocKV(&b.slots[i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// allocKV allocates slot sl's K and V caches for every layer, advised for
// transparent huge pages (internal/hugepage; decode attention streams
// them), and writes one float per page (4 KiB), so the OS maps them now
// rather than inside a timed operator.
func (b *Batch) allocKV(sl *slot) error {
	if b.nm != nil {
		return b.numaAllocKV(sl)
	}
	layers := b.m.Config.Layers
	sl.kc, sl.vc = make([][]float32, layers), make([][]float32, layers)
	nk, nv := b.kv.floats()
	const pageFloats = 4096 / 4
	for l := range sl.kc {
		sl.kc[l], sl.vc[l] = hugepage.Make[float32](nk), hugepage.Make[float32](nv)
		for _, c := range [][]float32{sl.kc[l], sl.vc[l]} {
			for i := 0; i < len(c); i += pageFloats {
				c[i] = 0
			}
		}
	}
	return nil
}

// kvSlotBytes is one slot's K and V caches over every layer, as
// kvLayoutFor lays them out for attention on backend be (packed: K's
// positions and V's head dim padded to whole panels of be's TileN; bf16:
// 2 bytes an element; the AMX layout also pads K's head dim and V's
// positions to whole K steps of 32), overflow-checked.
func kvSlotBytes(c Config, be gemm.Backend, maxSeq int, packed, bf16 bool) memlimit.Size {
	if !packed {
		return memlimit.Mul(c.Layers, 2, maxSeq, c.KVHeads, c.HeadDim, 4)
	}
	nr := max(be.TileN, 1)
	ceil := func(x int) int { return x/nr + min(x%nr, 1) }
	k := memlimit.Mul(c.KVHeads, ceil(maxSeq), nr, c.HeadDim)
	v := memlimit.Mul(c.KVHeads, ceil(c.HeadDim), nr, maxSeq)
	if bf16 && AttentionAMX(be) {
		k = memlimit.Mul(c.KVHeads, ceil(maxSeq), nr, ceil(c.HeadDim), nr)
		v = memlimit.Mul(c.KVHeads, ceil(c.HeadDim), nr, ceil(maxSeq), nr)
	}
	if bf16 {
		return k.Plus(v).Times(c.Layers, 2)
	}
	return k.Plus(v).Times(c.Layers, 4)
}

// Slots is the number of slots.
func (b *Batch) Slots() int { return len(b.slots) }

// Pos is the number of tokens in slot's KV cache: the position of its next.
func (b *Batch) Pos(slot int) int { return b.slots[slot].pos }

// Reset empties slot's KV cache (the memory is kept for reuse).
func (b *Batch) Reset(slot int) error {
	if slot < 0 || slot >= len(b.slots) {
		return fmt.Errorf("engine: slot %d: batch has %d", slot, len(b.slots))
	}
	b.slots[slot].pos = 0
	return nil
}

// Touch reads one float in every 4 KiB page of the embedding table and
// of every slot's KV caches (the tp policy's per-group caches included),
// so that pages reclaimed while they sat idle come back before a timed
// request rather than inside its gather or kv_write. A VM's host may
// reclaim a guest's idle pages, which the guest does not see as faults:
// measured on this project's 2-vCPU Firecracker guest (2026-11-27), random
// 4 KiB rows of a freshly filled 622 MB table took more than 5 µs (about 8
// µs, against a median of 0.6–0.7 µs) in 0.25% of gathers, 1.9% after 10 s
// idle and 8% after 40 s. In `bench run` (2 layers, placement cores,
// prompts of 128, 512 and 2048 tokens, twice each, interleaved with and
// without Touch) the batch-1 prefill embed ran at 0.63–2.03× its predicted
// time (median 0.78) with Touch before each request and at 0.97–20×
// (median 9) without; prefill kv_write stayed at 1.3–4.5× either way.
// It returns the bytes spanned.
func (b *Batch) Touch() int64 {
	const page = 4096 / 4
	var sum float32
	n := 0
	touch := func(c []float32) {
		for i := 0; i < len(c); i += page {
			sum += c[i]
		}
		n += len(c)
	}
	touch(b.m.embed)
	for i := range b.slots {
		for l := range b.slots[i].kc {
			touch(b.slots[i].kc[l])
			touch(b.slots[i].vc[l])
		}
	}
	if b.tp != nil {
		for _, g := range b.tp.bufs {
			if g == nil {
				continue
			}
			for s := range g.kc {
				for l := range g.kc[s] {
					touch(g.kc[s][l])
					touch(g.vc[s][l])
				}
			}
		}
	}
	touchSink = sum
	return int64(n) * 4
}

// touchSink keeps Touch's loads.
var touchSink float32

// Timings returns every operator's accumulated time, per phase and layer.
func (b *Batch) Timings() []Timing { return b.t.list() }

// ResetTimings zeroes the timers and the counts of Use; the OpObserver
// stays.
func (b *Batch) ResetTimings() {
	obs := b.t.obs
	b.t = newTimers(b.m.Config.Layers)
	b.t.obs = obs
}

// Observe sets the function called as each operator of the Batch's
// forward calls ends (nil: none).
func (b *Batch) Observe(f OpObserver) { b.t.obs = f }

// Prefill runs tokens into slot at positions Pos(slot)..Pos(slot)+len-1
// (GEMMs with M = len(tokens)) and returns the logits after the last one,
// Vocab floats owned by the batch and valid until its next call.
func (b *Batch) Prefill(slot int, tokens []int) ([]float32, error) {
	if slot < 0 || slot >= len(b.slots) {
		return nil, fmt.Errorf("engine: prefill: slot %d: batch has %d", slot, len(b.slots))
	}
	return b.forward(rowsOf(slot, len(tokens)), tokens, 0, false, nil)
}

// PrefillNext is Prefill followed by drawing the next token from the
// logits with s (nil: greedy, Argmax) inside the same call on the worker
// pool, as DecodeNext does; the logits stay readable through Logits.
func (b *Batch) PrefillNext(slot int, tokens []int, s *Sampler) (int, error) {
	if slot < 0 || slot >= len(b.slots) {
		return 0, fmt.Errorf("engine: prefill: slot %d: batch has %d", slot, len(b.slots))
	}
	next := []int{0}
	_, err := b.forward(rowsOf(slot, len(tokens)), tokens, 0, false, &sampleReq{s: s, next: next})
	return next[0], err
}

// PrefillAll is Prefill returning the logits at every position:
// len(tokens)×Vocab row-major (the LM head then runs with M = len(tokens)).
func (b *Batch) PrefillAll(slot int, tokens []int) ([]float32, error) {
	if slot < 0 || slot >= len(b.slots) {
		return nil, fmt.Errorf("engine: prefill: slot %d: batch has %d", slot, len(b.slots))
	}
	return b.forward(rowsOf(slot, len(tokens)), tokens, 0, true, nil)
}

// Decode runs one decode step: tokens[i] into slots[i] at its position
// (GEMMs with M = len(slots)), and returns the len(slots)×Vocab logits,
// row i for slots[i], owned by the batch and valid until its next call.
// Slots must be distinct.
func (b *Batch) Decode(slots, tokens []int) ([]float32, error) {
	if err := b.checkDecode(slots, tokens); err != nil {
		return nil, err
	}
	return b.forward(slots, tokens, 1, true, nil)
}

// DecodeNext is Decode followed by drawing each slot's next token, in the
// same call on the worker pool (issue #16): next[i] (len(slots) ints) gets
// what s.Sample (nil s: Argmax) of row i of the logits returns, rows drawn
// in order from s's one RNG stream. The vocabulary-wide passes (the
// argmax; with a temperature the scaling, and for top-p the sort) are
// split over every worker by vocabulary range and combined on worker 0,
// so that no worker is idle, or parks after its spin and pays a wake-up
// in the next step's first operator, while one thread samples. The
// logits stay readable through Logits until the next call.
func (b *Batch) DecodeNext(slots, tokens, next []int, s *Sampler) error {
	if err := b.checkDecode(slots, tokens); err != nil {
		return err
	}
	if len(next) != len(slots) {
		return fmt.Errorf("engine: decode: %d slots but room for %d next tokens", len(slots), len(next))
	}
	_, err := b.forward(slots, tokens, 1, true, &sampleReq{s: s, next: next})
	return err
}

// Logits is the logits of the last forward call (rows × Vocab, as that
// call returned them; nil before any), valid until the next call.
func (b *Batch) Logits() []float32 { return b.last }

func (b *Batch) checkDecode(slots, tokens []int) error {
	if len(slots) != len(tokens) {
		return fmt.Errorf("engine: decode: %d slots but %d tokens", len(slots), len(tokens))
	}
	seen := make([]bool, len(b.slots))
	for _, s := range slots {
		if s < 0 || s >= len(b.slots) {
			return fmt.Errorf("engine: decode: slot %d: batch has %d", s, len(b.slots))
		}
		if seen[s] {
			return fmt.Errorf("engine: decode: slot %d listed twice", s)
		}
		seen[s] = true
	}
	return nil
}

// sampleReq asks forward to draw one token per logits row (s nil: greedy)
// into next, inside the pool.
type sampleReq struct {
	s    *Sampler
	next []int
}

// rowsOf is the slot of each of n prefill rows.
func rowsOf(slot, n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = slot
	}
	return r
}

// unitWeight is AxpyRows' one row weight of the residual adds.
var unitWeight = [1]float32{1}

func (b *Batch) grow(T int) error {
	if T <= b.rows {
		return nil
	}
	if b.nm != nil {
		return b.numaGrow(T)
	}
	c := b.m.Config
	b.rows = T
	b.x = make([]float32, T*c.Dim)
	b.xb = make([]float32, T*c.Dim)
	b.q = make([]float32, T*c.QDim())
	b.att = make([]float32, T*c.QDim())
	b.kn = make([]float32, T*c.KVDim())
	b.vn = make([]float32, T*c.KVDim())
	b.ob = make([]float32, T*c.Dim)
	b.hb = make([]float32, T*c.Intermediate)
	b.hb2 = make([]float32, T*c.Intermediate)
	return nil
}

// segment is a run of consecutive rows of one slot (a prefill is one
// segment; a decode step one per slot).
type segment struct{ slot, r0, r1, pos0 int }

// parMinElems is the work below which a row-wise vector operator runs on
// the calling worker alone: dispatching the pool costs about a
// microsecond, a 4096-element RMSNorm about as much.
const parMinElems = 1 << 14

// forward runs row r of tokens into slot rowSlot[r] at its next position
// in phase p (0 prefill, 1 decode). Rows of one slot must be consecutive
// (a prefill). With all, the logits of every row are returned, else the
// last row's. With smp, each returned row's next token is drawn inside
// the pool before it returns.
func (b *Batch) forward(rowSlot []int, tokens []int, p int, all bool, smp *sampleReq) ([]float32, error) {
	m := b.m
	c := m.Config
	if m.closed {
		return nil, fmt.Errorf("engine: %s: model %s is closed", phaseName(p), c.Name)
	}
	T := len(tokens)
	if T == 0 {
		return nil, fmt.Errorf("engine: %s: no tokens", phaseName(p))
	}
	for i, tok := range tokens {
		if tok < 0 || tok >= c.Vocab {
			return nil, fmt.Errorf("engine: token %d (index %d): must be between 0 and vocab %d", tok, i, c.Vocab-1)
		}
	}
	// Segments and positions.
	var segs []segment
	rowPos := make([]int, T)
	for r := 0; r < T; {
		s := rowSlot[r]
		r1 := r + 1
		for r1 < T && rowSlot[r1] == s {
			r1++
		}
		sl := &b.slots[s]
		if sl.pos+(r1-r) > b.maxSeq {
			return nil, fmt.Errorf("engine: %s of %d tokens at position %d (slot %d): exceeds the max sequence %d", phaseName(p), r1-r, sl.pos, s, b.maxSeq)
		}
		for i := r; i < r1; i++ {
			rowPos[i] = sl.pos + i - r
		}
		segs = append(segs, segment{slot: s, r0: r, r1: r1, pos0: sl.pos})
		r = r1
	}
	for _, sg := range segs {
		sl := &b.slots[sg.slot]
		if sl.kc == nil && m.tp == nil {
			if err := b.allocKV(sl); err != nil {
				return nil, err
			}
		}
	}
	if err := b.grow(T); err != nil {
		return nil, err
	}
	plan, err := m.plan(p, T, segs, b)
	if err != nil {
		return nil, err
	}
	var out []float32
	err = m.do(func(ms *pool.Master) error {
		// The phase configuration's workers (phase.go).
		m.usePhase(p)
		if m.lay != nil { // the weight layout policy's per-call state (layout.go)
			m.lay.begin(p)
			defer m.lay.end()
		}
		var err error
		run := b.run
		if m.tp != nil {
			run = b.tpRun
		}
		if out, err = run(ms, plan, tokens, rowPos, segs, p, all); err != nil || smp == nil {
			return err
		}
		return b.sample(ms, out, smp)
	})
	if err != nil {
		return nil, err
	}
	b.last = out
	for _, sg := range segs {
		b.slots[sg.slot].pos += sg.r1 - sg.r0
	}
	return out, nil
}

// sample draws smp.next[i] from row i of logits (Vocab floats a row),
// rows in order, with the vocabulary-wide passes on every worker.
func (b *Batch) sample(ms *pool.Master, logits []float32, smp *sampleReq) error {
	V := b.m.Config.Vocab
	b.vp.ms, b.vp.g, b.vp.err = ms, b.m.all, nil
	defer func() { b.vp.ms, b.vp.g = nil, nil }()
	for i := range smp.next {
		row := logits[i*V : (i+1)*V]
		if smp.s == nil {
			smp.next[i] = b.vp.argmax(row)
		} else {
			smp.next[i] = smp.s.sample(&b.vp, row)
		}
		if b.vp.err != nil {
			return fmt.Errorf("engine: sampling: %w", b.vp.err)
		}
	}
	return nil
}

// par runs f over [0, n) cut into one chunk per worker of every worker,
// or on the caller alone when n·width is below parMinElems.
func (b *Batch) par(ms *pool.Master, n, width int, f func(i0, i1 int)) error {
	g := b.m.all
	if n*width < parMinElems || g.Size() == 1 || n == 1 {
		f(0, n)
		return nil
	}
	return ms.Run(g, func(local, k int) error {
		i0, i1 := local*n/k, (local+1)*n/k
		if i0 < i1 {
			f(i0, i1)
		}
		return nil
	})
}

// run is forward inside the pool.
func (b *Batch) run(ms *pool.Master, plan opPlan, tokens, rowPos []int, segs []segment, p int, all bool) ([]float32, error) {
	m := b.m
	c := m.Config
	T := len(tokens)
	d, qd, kvd, hd, hid := c.Dim, c.QDim(), c.KVDim(), c.HeadDim, c.Intermediate
	x, xb, q, att, ob := b.x[:T*d], b.xb[:T*d], b.q[:T*qd], b.att[:T*qd], b.ob[:T*d]
	kn, vn := b.kn[:T*kvd], b.vn[:T*kvd]
	eps := c.RMSEps
	group := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	units := attnUnits(segs, c.KVHeads, attnPlanRows(m.attnBackend(), group))
	var split []int // decode: the units' static split over the workers, the same for every layer
	if p != 0 {
		split = attnDecodeSplit(segs, units, m.all.Size())
	}
	rowSlot := make([]*slot, T)
	for _, sg := range segs {
		for r := sg.r0; r < sg.r1; r++ {
			rowSlot[r] = &b.slots[sg.slot]
		}
	}
	lin := func(l *linear, y, xin []float32, M int) error {
		return m.runLinear(ms, l, y, xin, M, plan.get(l.op), &b.t.use)
	}
	norm := func(dst, src, w []float32, width int, rows int) error {
		return b.par(ms, rows, width, func(i0, i1 int) {
			kernels.RMSNormRows(dst[i0*width:i1*width], src[i0*width:i1*width], w, width, eps)
		})
	}
	add := func(dst, src []float32) error {
		return b.par(ms, T, d, func(i0, i1 int) {
			// a += 1·s on the vector kernel: FMA by 1 rounds once, as
			// a[i] += s[i] does, at the read roof (not a scalar loop).
			kernels.AxpyRows(dst[i0*d:i1*d], unitWeight[:], src[i0*d:i1*d], 0)
		})
	}

	st := time.Now()
	for t, tok := range tokens {
		copy(x[t*d:(t+1)*d], m.embed[tok*d:(tok+1)*d])
	}
	b.t.head[p][iEmbed].add(st, T)

	for li := range m.layers {
		if err := m.opts.ctxErr(); err != nil {
			return nil, err
		}
		l := &m.layers[li]
		tm := &b.t.layer[p][li]

		st = time.Now()
		if err := norm(xb, x, l.attnNorm, d, T); err != nil {
			return nil, err
		}
		tm[iAttnNorm].add(st, T)

		st = time.Now()
		if err := lin(l.wq, q, xb, T); err != nil {
			return nil, err
		}
		tm[iQProj].add(st, T)
		st = time.Now()
		if err := lin(l.wk, kn, xb, T); err != nil {
			return nil, err
		}
		tm[iKProj].add(st, T)
		st = time.Now()
		if err := lin(l.wv, vn, xb, T); err != nil {
			return nil, err
		}
		tm[iVProj].add(st, T)

		if c.QKNorm {
			st = time.Now()
			if err := norm(q, q, l.qNorm, hd, T*c.Heads); err != nil {
				return nil, err
			}
			if err := norm(kn, kn, l.kNorm, hd, T*c.KVHeads); err != nil {
				return nil, err
			}
			tm[iQKNorm].add(st, T)
		}

		// RoPE on q and the new k; then K and V written by this producer
		// into each row's slot cache at its position, in the cache's layout
		// (kvLayout.write: the attention backend's panels, so attention
		// never repacks them; SMEPilot §4.3), timed as its own operator
		// (kv_write) so that each timer measures what its name says.
		st = time.Now()
		err := b.par(ms, T, qd+kvd, func(i0, i1 int) {
			b.rope.ApplyRows(q[i0*qd:i1*qd], qd, rowPos[i0:i1], c.RoPELayout)
			b.rope.ApplyRows(kn[i0*kvd:i1*kvd], kvd, rowPos[i0:i1], c.RoPELayout)
		})
		if err != nil {
			return nil, err
		}
		tm[iRoPE].add(st, T)
		st = time.Now()
		err = b.par(ms, T, 2*kvd, func(i0, i1 int) {
			writeRuns(i0, i1, func(a, b int) bool {
				return rowSlot[a] == rowSlot[b] && rowPos[b] == rowPos[a]+1
			}, func(r0, r1 int) {
				sl := rowSlot[r0]
				b.kv.writeRows(sl.kc[li], sl.vc[li], rowPos[r0], r1-r0, kn[r0*kvd:r1*kvd], vn[r0*kvd:r1*kvd])
			})
		})
		if err != nil {
			return nil, err
		}
		tm[iKVWrite].add(st, T)

		st = time.Now()
		if err := b.attention(ms, li, p, q, att, segs, units, split, group, scale); err != nil {
			return nil, err
		}
		tm[iAttention].add(st, T)

		st = time.Now()
		if err := lin(l.wo, ob, att, T); err != nil {
			return nil, err
		}
		tm[iOProj].add(st, T)
		st = time.Now()
		if err := add(x, ob); err != nil {
			return nil, err
		}
		tm[iAttnResidual].add(st, T)

		st = time.Now()
		if err := norm(xb, x, l.ffnNorm, d, T); err != nil {
			return nil, err
		}
		tm[iFFNNorm].add(st, T)
		if l.moe {
			if err := b.moeFFN(ms, plan, l, tm, ob, xb, T); err != nil {
				return nil, err
			}
		} else {
			hb, hb2 := b.hb[:T*hid], b.hb2[:T*hid]
			st = time.Now()
			if err := lin(l.gate, hb, xb, T); err != nil {
				return nil, err
			}
			tm[iGateProj].add(st, T)
			st = time.Now()
			if err := lin(l.up, hb2, xb, T); err != nil {
				return nil, err
			}
			tm[iUpProj].add(st, T)
			st = time.Now()
			if err := b.par(ms, T, hid, func(i0, i1 int) {
				kernels.SiLUMul(hb[i0*hid:i1*hid], hb[i0*hid:i1*hid], hb2[i0*hid:i1*hid])
			}); err != nil {
				return nil, err
			}
			tm[iSiLUMul].add(st, T)
			st = time.Now()
			if err := lin(l.down, ob, hb, T); err != nil {
				return nil, err
			}
			tm[iDownProj].add(st, T)
		}
		st = time.Now()
		if err := add(x, ob); err != nil {
			return nil, err
		}
		tm[iFFNResidual].add(st, T)
	}

	if err := m.opts.ctxErr(); err != nil {
		return nil, err
	}
	// Final norm and LM head on the rows whose logits are wanted.
	r0 := T - 1
	if all {
		r0 = 0
	}
	R := T - r0
	st = time.Now()
	if err := norm(xb, x[r0*d:], m.finalNorm, d, R); err != nil {
		return nil, err
	}
	b.t.head[p][iFinalNorm].add(st, R)
	if need := R * c.Vocab; cap(b.logits) < need {
		b.logits = make([]float32, need)
	}
	logits := b.logits[:R*c.Vocab]
	st = time.Now()
	if err := lin(m.lmHead, logits, xb[:R*d], R); err != nil {
		return nil, err
	}
	b.t.head[p][iLMHead].add(st, R)
	return logits, nil
}

// attnUnit is one work unit of attention: rows [r0, r1) of segment seg
// (at most the tile planner's rows, attnPlanRows) against KV head kvh.
type attnUnit struct{ seg, r0, r1, kvh int }

// attnUnits cuts the segments into attention work units of at most rows
// rows, the latest (most expensive) rows first, so that the workers
// claiming them in order end within about one unit of each other; the
// same for every layer of a forward call.
func attnUnits(segs []segment, kvHeads, rows int) []attnUnit {
	var units []attnUnit
	for si, sg := range segs {
		for r1 := sg.r1; r1 > sg.r0; r1 -= rows {
			for h := range kvHeads {
				units = append(units, attnUnit{si, max(r1-rows, sg.r0), r1, h})
			}
		}
	}
	return units
}

// attention runs causal GQA attention for every segment over units (from
// attnUnits) in phase p: a prefill through the pipeline (attnPipeline,
// SMEPilot §4.2) on two or more workers unless Options.NoPipeline, else
// (decode, the ablation, one worker) each unit serially (attend): in
// decode on the worker of the static split (split: attnDecodeSplit), in
// prefill on the worker that claims it.
func (b *Batch) attention(ms *pool.Master, li, p int, q, out []float32, segs []segment, units []attnUnit, split []int, group int, scale float32) error {
	c := b.m.Config
	qd := c.QDim()
	job := func(i int, _ *attnScratch, j *attnJob) {
		u := units[i]
		sg := segs[u.seg]
		sl := &b.slots[sg.slot]
		// The job's rows are relative to the segment's first row.
		*j = attnJob{out: out[sg.r0*qd : sg.r1*qd], q: q[sg.r0*qd : sg.r1*qd], ldq: qd, kc: sl.kc[li], vc: sl.vc[li],
			r0: u.r0 - sg.r0, r1: u.r1 - sg.r0, pos0: sg.pos0, kvHead: u.kvh, group: group, scale: scale, window: c.SlidingWindow}
	}
	if p == 0 && b.vecG != nil {
		return attnPipeline(nil, ms, b.vecG, b.matG, len(units), func(w int) *attnScratch { return b.attnWS[w] }, job)
	}
	var j attnJob
	if len(units) == 1 || b.m.all.Size() == 1 {
		for i := range units {
			job(i, nil, &j)
			attend(&j, b.attnWS[ms.Worker()])
		}
		return nil
	}
	workers := b.m.all.Workers()
	if p != 0 {
		// Decode: the static split (attnDecodeSplit), so that each worker
		// reads the same sequences' KV every step.
		return ms.Run(b.m.all, func(local, _ int) error {
			var j attnJob
			for i := split[local]; i < split[local+1]; i++ {
				job(i, nil, &j)
				attend(&j, b.attnWS[workers[local]])
			}
			return nil
		})
	}
	var next atomic.Int64
	return ms.Run(b.m.all, func(local, n int) error {
		w := workers[local]
		var j attnJob
		for {
			i := int(next.Add(1) - 1)
			if i >= len(units) {
				return nil
			}
			job(i, nil, &j)
			attend(&j, b.attnWS[w])
		}
	})
}

// attnDecodeSplit is decode attention's static split of units (from
// attnUnits) over workers workers (attnSplit), each unit costing its rows
// times the positions its last row sees; Batch.run computes it once per
// forward call for all the layers.
func attnDecodeSplit(segs []segment, units []attnUnit, workers int) []int {
	costs := make([]float64, len(units))
	for i, u := range units {
		costs[i] = float64(u.r1-u.r0) * float64(segs[u.seg].pos0+u.r1-segs[u.seg].r0)
	}
	return attnSplit(costs, workers)
}

// attnSplit cuts units of costs costs (≥ 0, in order) into w contiguous
// runs of about equal cost: worker k runs units [bounds[k], bounds[k+1]),
// bounds[0] = 0 and bounds[w] = len(costs). A unit goes to the run in
// which its cost's midpoint falls on the cumulative cost, so no run is
// more than one unit's cost above total/w. Decode attention runs this
// static split (Batch.attention, AttentionBench.Decode): its units are
// one sequence's KV head each, of about equal cost, and a worker that
// reads the same sequences' KV on every call keeps what it read in its
// own caches (measured: bench attention --ablate pipeline, qwen3-0.6b,
// context 1024, 2 threads on the Zen 5 VM, whose two vCPUs read 34 MiB
// at 202 GB/s in the probe's sweep; 12 runs of each, alternated: batch 4,
// 33.6 MB of KV, at 35–44% of the L3 roof with the units claimed
// dynamically against 35–70% split statically, batch 8 at 74–94% of the
// DRAM roof against 73–106%; the static split won in the host's phases
// where the two vCPUs kept their own caches, and was never slower).
func attnSplit(costs []float64, w int) []int {
	w = max(w, 1)
	bounds := make([]int, w+1)
	total := 0.0
	for _, c := range costs {
		total += c
	}
	k, cum := 1, 0.0
	for i, c := range costs {
		mid := cum + c/2
		for k < w && mid >= total*float64(k)/float64(w) {
			bounds[k] = i
			k++
		}
		cum += c
	}
	for ; k <= w; k++ {
		bounds[k] = len(costs)
	}
	return bounds
}

// Session is one sequence being generated: a Batch of one slot.
type Session struct {
	b *Batch
}

// NewSession returns a session with a KV cache for maxSeq positions (0:
// Config.MaxSeq; at most Config.MaxSeq).
func (m *Model) NewSession(maxSeq int) (*Session, error) {
	b, err := m.NewBatch(1, maxSeq)
	if err != nil {
		return nil, err
	}
	return &Session{b: b}, nil
}

// Pos is the number of tokens in the KV cache: the position of the next.
func (s *Session) Pos() int { return s.b.Pos(0) }

// Reset empties the KV cache (the timers keep counting).
func (s *Session) Reset() { s.b.slots[0].pos = 0 }

// Timings returns every operator's accumulated time, per phase and layer.
func (s *Session) Timings() []Timing { return s.b.Timings() }

// ResetTimings zeroes the timers and the counts of Use.
func (s *Session) ResetTimings() { s.b.ResetTimings() }

// Prefill runs the tokens at positions Pos()..Pos()+len-1 (GEMMs with M =
// len(tokens)) and returns the logits after the last one, Vocab floats
// owned by the session and valid until its next call.
func (s *Session) Prefill(tokens []int) ([]float32, error) { return s.b.Prefill(0, tokens) }

// PrefillAll is Prefill returning the logits at every position:
// len(tokens)×Vocab row-major.
func (s *Session) PrefillAll(tokens []int) ([]float32, error) { return s.b.PrefillAll(0, tokens) }

// Decode runs one token at position Pos() (GEMMs with M = 1) and returns
// its logits, Vocab floats owned by the session and valid until its next
// call.
func (s *Session) Decode(token int) ([]float32, error) {
	return s.b.Decode([]int{0}, []int{token})
}
