package sweep

// The CellEngine of a sweep: one engine.Model per cell and one
// engine.Batch whose slots are the replay's slots, so that a decode step
// over several slots is one batched forward call (GEMMs with M =
// len(slots)), as continuous batching runs it.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/workloads"
)

func init() { NewCellEngine = newEngineCell }

// cellWeightCache caches the last model's weights: the cells of one model
// share them (synthesizing Qwen3-0.6B's takes seconds).
var cellWeightCache struct {
	sync.Mutex
	key   string
	w     *engine.Weights
	full  int
	notes []string
}

func cellWeights(cell workloads.Cell, maxSeq int) (*engine.Weights, int, []string, error) {
	cellWeightCache.Lock()
	defer cellWeightCache.Unlock()
	key := fmt.Sprintf("%s|%s|%s|%d|%d", cell.Model, cell.Weights, cell.WeightDType, cell.Layers, cell.Seed)
	if cellWeightCache.key == key && cellWeightCache.w.Config.MaxSeq >= maxSeq {
		return cellWeightCache.w, cellWeightCache.full, cellWeightCache.notes, nil
	}
	cellWeightCache.key, cellWeightCache.w = "", nil // let the old weights go first
	w, full, notes, err := ResolveWeights(WeightSpec{Model: cell.Model, Weights: cell.Weights, WeightDType: cell.WeightDType, Layers: cell.Layers, Seed: cell.Seed,
		PromptTokens: maxSeq, Placement: cell.Placement})
	if err != nil {
		return nil, 0, nil, err
	}
	cellWeightCache.key, cellWeightCache.w, cellWeightCache.full, cellWeightCache.notes = key, w, full, notes
	return w, full, notes, nil
}

type engineCell struct {
	m    *engine.Model
	b    *engine.Batch
	full int
	next []int // each slot's next input token: the argmax of its last logits
	rng  *rand.Rand
	o    *Options
	pred map[[2]string]engine.OpPrediction // (phase, op) → predicted seconds, FLOPs, bytes since ResetOps
	// phases are the per-phase configurations (nil without; phase.go)
	// and mach the machines each phase is predicted with (o.machine, or
	// it at the phase's threads).
	phases  *cellPhases
	mach    [2]*roofline.Machine
	prec    engine.Precision // the predictions' dtypes and ceilings
	predErr error
	notes   []string
	// The timed calls' seconds since ResetOps, for the noise record:
	// each decode step's with its batch size, each prefill's.
	steps, prefills []float64
	stepSlots       []int
}

func newEngineCell(cell workloads.Cell, o *Options) (CellEngine, error) {
	if engine.Placement(cell.Placement) == engine.PlaceMixed && cell.Threads < 2 {
		return nil, fmt.Errorf("placement mixed with %d thread: needs ≥ 2 (one group each for the cores and the matrix backend): %w", cell.Threads, ErrCellUnavailable)
	}
	tr, err := cell.Trace()
	if err != nil {
		return nil, err
	}
	maxSeq := workloads.MaxPositions(tr, cell.MaxPromptTokens, cell.MaxGenTokens)
	w, full, notes, err := cellWeights(cell, maxSeq)
	if err != nil {
		return nil, err
	}
	if c := w.Config; maxSeq > c.MaxSeq {
		return nil, fmt.Errorf("the trace needs %d positions per slot (prompt + output), model %s has %d: lower --max-prompt-tokens or --max-gen-tokens", maxSeq, c.Name, c.MaxSeq)
	}
	eo := engine.Options{Context: o.ctx, Threads: cell.Threads, Placement: engine.Placement(cell.Placement), Machine: o.machine,
		Backend: cell.CoresBackend, MatrixBackend: cell.MatrixBackend}
	engine.Ablation(cell.Ablation).Apply(&eo)
	ph, err := o.cellPhases(cell, w.Config, &eo)
	if err != nil {
		return nil, err
	}
	m, err := engine.New(w, eo)
	if err != nil {
		return nil, err
	}
	b, err := m.NewBatch(cell.Batch, maxSeq)
	if err != nil {
		m.Close()
		return nil, err
	}
	e := &engineCell{m: m, b: b, full: full, o: o, rng: rand.New(rand.NewPCG(cell.Seed, 0x73776565)), next: make([]int, cell.Batch),
		pred: map[[2]string]engine.OpPrediction{}}
	e.notes = append(append([]string(nil), notes...), m.Notes...)
	if c := w.Config; c.Layers < full {
		e.notes = append(e.notes, fmt.Sprintf("%d of the model's %d layers instantiated: times are for %d layer(s)", c.Layers, full, c.Layers))
	}
	var note string
	e.prec, note = m.PredictionPrecision(o.machine)
	if o.machine != nil && note == "" {
		e.notes = append(e.notes, "predictions: roofline at "+e.prec.String()+", per forward call (a batched decode step at the slots' mean context)")
	} else if o.machine != nil {
		e.notes = append(e.notes, note+", per forward call (a batched decode step at the slots' mean context)")
	}
	if err := e.setupPhases(ph, tr, cell); err != nil {
		m.Close()
		return nil, err
	}
	return e, nil
}

// predict adds the roofline's times of one forward call (B sequences of T
// new tokens at context C) to the predictions.
func (e *engineCell) predict(phase roofline.Phase, B, T, C int) {
	if e.o.machine == nil || e.predErr != nil {
		return
	}
	p, err := engine.PredictOpsAs(e.machine(phase), e.m.Config, phase, B, T, C, e.prec)
	if err != nil {
		e.predErr = err
		return
	}
	for op, t := range p {
		k := [2]string{string(phase), op}
		q := e.pred[k]
		q.Seconds += t.Seconds
		q.FLOPs += t.FLOPs
		q.Bytes += t.Bytes
		e.pred[k] = q
	}
}

func (e *engineCell) Prefill(slot, n int) error {
	if slot < 0 || slot >= e.b.Slots() {
		return fmt.Errorf("slot %d: the batch has %d", slot, e.b.Slots())
	}
	tokens := make([]int, n)
	for i := range tokens {
		tokens[i] = e.rng.IntN(e.m.Config.Vocab)
	}
	// The argmax runs inside the forward call, on every worker.
	st := time.Now()
	next, err := e.b.PrefillNext(slot, tokens, nil)
	if err != nil {
		return err
	}
	e.prefills = append(e.prefills, time.Since(st).Seconds())
	e.next[slot] = next
	e.predict(engine.Prefill, 1, n, e.b.Pos(slot))
	return nil
}

func (e *engineCell) Decode(slots []int) error {
	toks := make([]int, len(slots))
	for i, s := range slots {
		if s < 0 || s >= e.b.Slots() {
			return fmt.Errorf("slot %d: the batch has %d", s, e.b.Slots())
		}
		toks[i] = e.next[s]
	}
	// The argmax of every slot's logits runs inside the step, split over
	// the workers, so none parks before the next step (issue #16).
	st := time.Now()
	if err := e.b.DecodeNext(slots, toks, toks, nil); err != nil {
		return err
	}
	e.steps = append(e.steps, time.Since(st).Seconds())
	e.stepSlots = append(e.stepSlots, len(slots))
	ctx := 0
	for i, s := range slots {
		e.next[s] = toks[i]
		ctx += e.b.Pos(s)
	}
	e.predict(engine.Decode, len(slots), 1, ctx/len(slots))
	return nil
}

func (e *engineCell) Reset(slot int) error { return e.b.Reset(slot) }

func (e *engineCell) Ops() []results.SweepOp {
	ops := sweepOps(e.b.Timings())
	if e.o.machine != nil && e.predErr == nil {
		for i := range ops {
			if p, ok := e.pred[[2]string{ops[i].Phase, ops[i].Op}]; ok {
				ops[i].PredictedS = &p.Seconds
				ops[i].FLOPs, ops[i].Bytes = p.FLOPs, p.Bytes
			}
		}
	}
	return ops
}

func (e *engineCell) ResetOps() {
	e.b.ResetTimings()
	clear(e.pred)
	e.steps, e.stepSlots, e.prefills = e.steps[:0], e.stepSlots[:0], e.prefills[:0]
}

// sweepOps sums timings per (phase, operator) in first-seen order: seconds
// and interrupted calls over layers and calls, calls per layer, and the
// uninterrupted time where any call was interrupted.
func sweepOps(ts []engine.Timing) []results.SweepOp {
	idx := map[[2]string]int{}
	var ops []results.SweepOp
	excess := map[int]float64{}
	for _, t := range ts {
		k := [2]string{string(t.Phase), t.Op}
		i, ok := idx[k]
		if !ok {
			i = len(ops)
			idx[k] = i
			ops = append(ops, results.SweepOp{Phase: string(t.Phase), Op: t.Op})
		}
		ops[i].MeasuredS += t.Seconds
		ops[i].Calls = max(ops[i].Calls, t.Calls) // calls per layer
		if t.InterruptedCalls > 0 {
			ops[i].InterruptedCalls += t.InterruptedCalls
			excess[i] += t.InterruptedSeconds
		}
	}
	for i, ex := range excess {
		u := ops[i].MeasuredS - ex
		ops[i].UninterruptedS = &u
	}
	return ops
}

// CPUs is where the model's workers run, and how many there are.
func (e *engineCell) CPUs() ([]int, int) { return e.m.CPUs(), e.m.Threads }

// Steps is the timed calls' seconds since ResetOps: each decode step's
// with its batch size, each prefill's.
func (e *engineCell) Steps() (steps []float64, slots []int, prefills []float64) {
	return e.steps, e.stepSlots, e.prefills
}

// PredictedPrecision says what the cell's predictions assume, as it ran.
func (e *engineCell) PredictedPrecision() string { return e.prec.String() }

// Hold runs f with the model's workers held (engine.Model.Hold).
func (e *engineCell) Hold(f func() error) error { return e.m.Hold(f) }

func (e *engineCell) Backends() string     { return e.m.Backends() }
func (e *engineCell) PackSeconds() float64 { return e.m.PackSeconds }
func (e *engineCell) Close() error         { e.m.Close(); return nil }

// Targets is what ran each placement target since ResetOps.
func (e *engineCell) Targets() []results.SweepTarget { return Targets(e.b.Use()) }

func (e *engineCell) Layers() (run, model int) { return e.m.Config.Layers, e.full }

func (e *engineCell) Notes() []string {
	if e.predErr != nil {
		return append(e.notes, "no predictions: "+e.predErr.Error())
	}
	return e.notes
}

func (e *engineCell) PredictPrefill(n int) (float64, error) {
	if e.o.machine == nil {
		return 0, errors.New("no profile")
	}
	p, err := engine.PredictOpsAs(e.machine(engine.Prefill), e.m.Config, engine.Prefill, 1, n, n, e.prec)
	if err != nil {
		return 0, err
	}
	var t float64
	for _, v := range p {
		t += v.Seconds
	}
	return t, nil
}
