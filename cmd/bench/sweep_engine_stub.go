package main

// A temporary cellEngine on the engine's Session API, so that `bench
// sweep` runs before the batched adapter (sweep_engine.go) lands; delete
// this file then. One Session per slot: a decode step over several slots
// decodes each session in turn (GEMMs with M = 1, not M = len(slots)).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/workloads"
)

func init() { newCellEngine = newStubCellEngine }

// stubPrecision is the dtype of the stub's predictions (the engine's
// weights, activations and KV cache under placement cores).
const stubPrecision = "fp32"

// stubWeights caches the last model's weights: the cells of one model
// share them (synthesizing Qwen3-0.6B's takes seconds).
var stubWeights struct {
	sync.Mutex
	key   string
	w     *engine.Weights
	full  int
	notes []string
}

func stubLoadWeights(cell workloads.Cell, maxSeq int) (*engine.Weights, int, []string, error) {
	stubWeights.Lock()
	defer stubWeights.Unlock()
	key := fmt.Sprintf("%s|%s|%d|%d", cell.Model, cell.Weights, cell.Layers, cell.Seed)
	if stubWeights.key == key && stubWeights.w.Config.MaxSeq >= maxSeq {
		return stubWeights.w, stubWeights.full, stubWeights.notes, nil
	}
	stubWeights.key, stubWeights.w = "", nil // let the old weights go first
	var notes []string
	if cell.Weights != "synthetic" {
		w, err := engine.LoadLlama2C(cell.Weights)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--weights: %w", err)
		}
		full := w.Config.Layers
		if cell.Layers > full {
			return nil, 0, nil, fmt.Errorf("--layers %d: the model has %d", cell.Layers, full)
		}
		if cell.Layers > 0 {
			w.Layers, w.Config.Layers = w.Layers[:cell.Layers], cell.Layers
		}
		stubWeights.key, stubWeights.w, stubWeights.full, stubWeights.notes = key, w, full, nil
		return w, full, nil, nil
	}
	data, name, err := models.ReadConfig(cell.Model)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("--models: %w", err)
	}
	cfg, err := engine.FromHF(data, name)
	if err != nil {
		mc, merr := models.Load(cell.Model)
		if merr != nil {
			return nil, 0, nil, fmt.Errorf("--models: %w", merr)
		}
		if cfg, err = engine.FromModel(mc, engine.HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: maxSeq}); err != nil {
			return nil, 0, nil, fmt.Errorf("--models: %w", err)
		}
		notes = append(notes, "config lacks RoPE θ or RMSNorm ε: defaults θ 1e6 and ε 1e-6 used (timing-neutral)")
	}
	if cell.Layers > cfg.Layers {
		return nil, 0, nil, fmt.Errorf("--layers %d: model %s has %d", cell.Layers, cfg.Name, cfg.Layers)
	}
	w, err := engine.Synthetic(cfg, cell.Layers, cell.Seed)
	if err != nil {
		return nil, 0, nil, err
	}
	stubWeights.key, stubWeights.w, stubWeights.full, stubWeights.notes = key, w, cfg.Layers, notes
	return w, cfg.Layers, notes, nil
}

type stubEngine struct {
	m        *engine.Model
	full     int
	sessions []*engine.Session
	next     []int // each slot's next input token: the argmax of its last logits
	rng      *rand.Rand
	o        *sweepOptions
	pred     map[[2]string]float64 // (phase, op) → predicted seconds since ResetOps
	predErr  error
	notes    []string
}

func newStubCellEngine(cell workloads.Cell, o *sweepOptions) (cellEngine, error) {
	if cell.Placement == "mixed" && cell.Threads < 2 {
		return nil, fmt.Errorf("placement mixed with %d thread: needs ≥ 2 (one group each for the cores and the matrix backend): %w", cell.Threads, errCellUnavailable)
	}
	tr, err := cell.Trace()
	if err != nil {
		return nil, err
	}
	maxSeq := workloads.MaxPositions(tr, cell.MaxPromptTokens, cell.MaxGenTokens)
	w, full, notes, err := stubLoadWeights(cell, maxSeq)
	if err != nil {
		return nil, err
	}
	if c := w.Config; maxSeq > c.MaxSeq {
		return nil, fmt.Errorf("the trace needs %d positions per slot (prompt + output), model %s has %d: lower --max-prompt-tokens or --max-gen-tokens", maxSeq, c.Name, c.MaxSeq)
	}
	m, err := engine.New(w, engine.Options{Threads: cell.Threads, Placement: engine.Placement(cell.Placement), Machine: o.machine,
		NoPartition: cell.Ablation == "partition", PackPerCall: cell.Ablation == "packing"})
	if err != nil {
		return nil, err
	}
	e := &stubEngine{m: m, full: full, o: o, rng: rand.New(rand.NewPCG(cell.Seed, 0x73776565)), next: make([]int, cell.Batch),
		pred: map[[2]string]float64{}}
	for range cell.Batch {
		s, err := m.NewSession(maxSeq)
		if err != nil {
			m.Close()
			return nil, err
		}
		e.sessions = append(e.sessions, s)
	}
	e.notes = append(notes, m.Notes...)
	if cell.Batch > 1 {
		e.notes = append(e.notes, "stub engine: a decode step decodes each slot in turn (GEMMs with M = 1), not one batched step")
	}
	if c := w.Config; c.Layers < full {
		e.notes = append(e.notes, fmt.Sprintf("%d of the model's %d layers instantiated: times are for %d layer(s)", c.Layers, full, c.Layers))
	}
	if o.machine != nil {
		e.notes = append(e.notes, "predictions: roofline at fp32 weights, activations and KV cache, one sequence per forward call")
	}
	return e, nil
}

func (e *stubEngine) slot(s int) (*engine.Session, error) {
	if s < 0 || s >= len(e.sessions) {
		return nil, fmt.Errorf("slot %d: the batch has %d", s, len(e.sessions))
	}
	return e.sessions[s], nil
}

// predict adds the roofline's times of one forward call (one sequence of
// T new tokens at context C) to the predictions.
func (e *stubEngine) predict(phase string, T, C int) {
	if e.o.machine == nil || e.predErr != nil {
		return
	}
	p, err := engine.Predict(e.o.machine, e.m.Config, phase, 1, T, C, stubPrecision)
	if err != nil {
		e.predErr = err
		return
	}
	for op, t := range p {
		e.pred[[2]string{phase, op}] += t
	}
}

func (e *stubEngine) Prefill(slot, n int) error {
	s, err := e.slot(slot)
	if err != nil {
		return err
	}
	tokens := make([]int, n)
	for i := range tokens {
		tokens[i] = e.rng.IntN(e.m.Config.Vocab)
	}
	logits, err := s.Prefill(tokens)
	if err != nil {
		return err
	}
	e.next[slot] = engine.Argmax(logits)
	e.predict(engine.Prefill, n, s.Pos())
	return nil
}

func (e *stubEngine) Decode(slots []int) error {
	for _, slot := range slots {
		s, err := e.slot(slot)
		if err != nil {
			return err
		}
		logits, err := s.Decode(e.next[slot])
		if err != nil {
			return fmt.Errorf("slot %d: %w", slot, err)
		}
		e.next[slot] = engine.Argmax(logits)
		e.predict(engine.Decode, 1, s.Pos())
	}
	return nil
}

func (e *stubEngine) Reset(slot int) error {
	s, err := e.slot(slot)
	if err != nil {
		return err
	}
	s.Reset()
	return nil
}

func (e *stubEngine) Ops() []results.SweepOp {
	idx := map[[2]string]int{}
	var ops []results.SweepOp
	for _, s := range e.sessions {
		calls := map[[2]string]int{}
		for _, t := range s.Timings() {
			k := [2]string{t.Phase, t.Op}
			i, ok := idx[k]
			if !ok {
				i = len(ops)
				idx[k] = i
				ops = append(ops, results.SweepOp{Phase: t.Phase, Op: t.Op})
			}
			ops[i].MeasuredS += t.Seconds
			calls[k] = max(calls[k], t.Calls) // calls per layer
		}
		for k, c := range calls {
			ops[idx[k]].Calls += c
		}
	}
	if e.o.machine != nil && e.predErr == nil {
		for i := range ops {
			if p, ok := e.pred[[2]string{ops[i].Phase, ops[i].Op}]; ok {
				ops[i].PredictedS = &p
			}
		}
	}
	return ops
}

func (e *stubEngine) ResetOps() {
	for _, s := range e.sessions {
		s.ResetTimings()
	}
	clear(e.pred)
}

func (e *stubEngine) Backends() string     { return e.m.Backends() }
func (e *stubEngine) PackSeconds() float64 { return e.m.PackSeconds }
func (e *stubEngine) Close() error         { e.m.Close(); return nil }

func (e *stubEngine) Layers() (run, model int) { return e.m.Config.Layers, e.full }

func (e *stubEngine) Notes() []string {
	if e.predErr != nil {
		return append(e.notes, "no predictions: "+e.predErr.Error())
	}
	return e.notes
}

func (e *stubEngine) PredictPrefill(n int) (float64, error) {
	if e.o.machine == nil {
		return 0, errors.New("no profile")
	}
	p, err := engine.Predict(e.o.machine, e.m.Config, engine.Prefill, 1, n, n, stubPrecision)
	if err != nil {
		return 0, err
	}
	var t float64
	for _, v := range p {
		t += v
	}
	return t, nil
}
