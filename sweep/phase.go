package sweep

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/workloads"
)

// PhaseConfig is one phase's service configuration as a run or a sweep
// cell records it (Sandwich §3.2–3.3): the configuration as given, what
// it resolved to, the CPUs and the threads (one per CPU).
type PhaseConfig = results.SweepPhaseConfig

// PredictPhases is Predict with prefill predicted at prefillThreads
// workers and decode at decodeThreads (roofline.Machine.AtThreads: the
// cores target's ceilings and non-linear rate scaled to the threads,
// the per-call terms and level roofs at that thread count, other targets
// dropped). Errors: a machine without a cores target, and Predict's.
func PredictPhases(m *roofline.Machine, c engine.Config, prec engine.Precision, B, T, G, prefillThreads, decodeThreads int) (map[[2]string]float64, float64, float64, error) {
	if _, ok := m.Target(roofline.KindCores); !ok {
		return nil, 0, 0, fmt.Errorf("machine %s has no cores target: no per-thread-count prediction", m.Name)
	}
	pp, ttft, _, err := Predict(m.AtThreads(max(prefillThreads, 1)), c, prec, B, T, 0)
	if err != nil {
		return nil, 0, 0, err
	}
	pd, _, tpot, err := Predict(m.AtThreads(max(decodeThreads, 1)), c, prec, B, T, G)
	if err != nil {
		return nil, 0, 0, err
	}
	for k, v := range pd {
		if k[0] == string(roofline.Decode) {
			pp[k] = v
		}
	}
	return pp, ttft, tpot, nil
}

// PhaseTry is one configuration ranked for one phase by `--configs
// auto`: predicted seconds (TTFT for prefill, TPOT for decode) at its
// thread count, and measured seconds where it was tried.
type PhaseTry struct {
	PhaseConfig
	PredictedS float64  `json:"predicted_s"`
	MeasuredS  *float64 `json:"measured_s,omitempty"`
}

// AutoConfigs is `--configs auto`'s result: each phase's candidates
// ranked by predicted time (ascending; ties keep the candidates' order),
// the Try best of each measured, and the measured best chosen.
type AutoConfigs struct {
	Try     int        `json:"try"`
	Prefill []PhaseTry `json:"prefill"`
	Decode  []PhaseTry `json:"decode"`
	// PrefillChoice and DecodeChoice index Prefill and Decode.
	PrefillChoice int `json:"prefill_choice"`
	DecodeChoice  int `json:"decode_choice"`
	// DecodeSteps is the decode steps each tried decode configuration
	// was timed over (0: decode not measured, the choice by prediction).
	DecodeSteps int `json:"decode_steps"`
}

// RankConfigs predicts TTFT (a prompt of T tokens, B sequences) and TPOT
// (a decode step of B sequences, mean over G steps after the prompt; at
// least 1) for every candidate at its thread count (PredictPhases) and
// ranks them per phase. Errors: no candidates, PredictPhases'.
func RankConfigs(m *roofline.Machine, c engine.Config, prec engine.Precision, B, T, G int, cands []PhaseConfig, try int) (*AutoConfigs, error) {
	if len(cands) == 0 {
		return nil, fmt.Errorf("--configs auto: no configuration of TP degree 1 on this machine")
	}
	a := &AutoConfigs{Try: max(try, 1)}
	for _, cd := range cands {
		n := len(cd.CPUs)
		cd.Threads = n
		_, ttft, tpot, err := PredictPhases(m, c, prec, B, T, max(G, 1), n, n)
		if err != nil {
			return nil, err
		}
		a.Prefill = append(a.Prefill, PhaseTry{PhaseConfig: cd, PredictedS: ttft})
		a.Decode = append(a.Decode, PhaseTry{PhaseConfig: cd, PredictedS: tpot})
	}
	for _, l := range [][]PhaseTry{a.Prefill, a.Decode} {
		slices.SortStableFunc(l, func(x, y PhaseTry) int { return cmp.Compare(x.PredictedS, y.PredictedS) })
	}
	return a, nil
}

// Measure times the Try best-predicted configurations of each phase on
// m (a Model made with per-phase configurations whose pool spans every
// candidate's CPUs; Model.SetPhaseCPUs moves the phases, no thread
// created): the i-th tried prefill and decode configurations together,
// each prompt prefilled alone into its slot (TTFT: the mean) and then
// min(G, 16) batched greedy decode steps (TPOT: the mean), after one
// untimed warm-up. It then chooses, per phase, the tried configuration
// with the lowest measured time and leaves m on the choice. Errors: the
// engine's.
func (a *AutoConfigs) Measure(m *engine.Model, prompts [][]int, G int) error {
	T := len(prompts[0])
	a.DecodeSteps = min(G, 16, m.Config.MaxSeq-T)
	for i := range a.Try {
		p, d := min(i, len(a.Prefill)-1), min(i, len(a.Decode)-1)
		if i > 0 && a.Prefill[p].MeasuredS != nil && (a.DecodeSteps < 1 || a.Decode[d].MeasuredS != nil) {
			continue
		}
		if err := m.SetPhaseCPUs(a.Prefill[p].CPUs, a.Decode[d].CPUs); err != nil {
			return err
		}
		ttft, tpot, err := MeasurePhaseTimes(m, prompts, a.DecodeSteps)
		if err != nil {
			return err
		}
		if a.Prefill[p].MeasuredS == nil {
			a.Prefill[p].MeasuredS = &ttft
		}
		if a.DecodeSteps > 0 && a.Decode[d].MeasuredS == nil {
			a.Decode[d].MeasuredS = &tpot
		}
	}
	best := func(l []PhaseTry) int {
		b := 0
		for i, t := range l {
			if t.MeasuredS != nil && (l[b].MeasuredS == nil || *t.MeasuredS < *l[b].MeasuredS) {
				b = i
			}
		}
		return b
	}
	a.PrefillChoice, a.DecodeChoice = best(a.Prefill), best(a.Decode)
	return m.SetPhaseCPUs(a.Prefill[a.PrefillChoice].CPUs, a.Decode[a.DecodeChoice].CPUs)
}

// MeasurePhaseTimes runs one untimed warm-up (the first prompt's prefill
// and a decode step), then prefills each prompt into its own slot (one
// forward call each) and decodes G greedy steps of every slot together,
// with the pool held (Model.Hold), on a fresh Batch. It returns the mean
// seconds of a prefill (TTFT) and of a decode step (TPOT; 0 when G is 0).
func MeasurePhaseTimes(m *engine.Model, prompts [][]int, G int) (ttft, tpot float64, err error) {
	B, T := len(prompts), len(prompts[0])
	b, err := m.NewBatch(B, T+max(G, 1))
	if err != nil {
		return 0, 0, err
	}
	wt, err := b.PrefillNext(0, prompts[0], nil)
	if err != nil {
		return 0, 0, err
	}
	if err := b.DecodeNext([]int{0}, []int{wt}, []int{0}, nil); err != nil {
		return 0, 0, err
	}
	if err := b.Reset(0); err != nil {
		return 0, 0, err
	}
	slots, toks := make([]int, B), make([]int, B)
	err = m.Hold(func() error {
		st := time.Now()
		for i := range B {
			slots[i] = i
			if toks[i], err = b.PrefillNext(i, prompts[i], nil); err != nil {
				return err
			}
		}
		ttft = time.Since(st).Seconds() / float64(B)
		st = time.Now()
		for range G {
			if err := b.DecodeNext(slots, toks, toks, nil); err != nil {
				return err
			}
		}
		if G > 0 {
			tpot = time.Since(st).Seconds() / float64(G)
		}
		return nil
	})
	return ttft, tpot, err
}

// validatePhases checks the per-phase settings (their syntax is the
// command's to check) and puts them in the grid: the configurations
// (auto: "auto" for both) join each cell's key.
func (o *Options) validatePhases(g *workloads.Grid) error {
	switch {
	case o.Configs != "" && o.Configs != "auto":
		return fmt.Errorf("sweep: --configs %q: the only value is auto", o.Configs)
	case o.Configs != "" && o.ConfigsTry < 1:
		return fmt.Errorf("sweep: --configs-try %d: must be ≥ 1", o.ConfigsTry)
	case o.PrefillConfig == "" && o.DecodeConfig == "" && o.Configs == "":
		return nil
	case o.Configs != "" && (o.PrefillConfig != "" || o.DecodeConfig != ""):
		return errors.New("sweep: --configs auto picks both phases' configurations: give it without --prefill-config and --decode-config")
	case o.ThreadsGiven:
		return fmt.Errorf("sweep: --threads %s: the per-phase configurations set the threads; leave --threads out", o.Threads)
	case o.ResolveConfig == nil || o.ConfigCandidates == nil:
		return errors.New("sweep: per-phase configurations: no configuration resolver")
	}
	for _, p := range g.Placements {
		if p == string(engine.PlaceMixed) || p == string(engine.PlaceAuto) {
			return fmt.Errorf("sweep: --placement %s: per-phase configurations run placement cores or matrix (give --placement cores)", p)
		}
	}
	if o.Configs == "auto" {
		if o.Profile == "" {
			return errors.New("sweep: --configs auto: needs --profile (the configurations are ranked by the roofline's predictions)")
		}
		g.PrefillConfig, g.DecodeConfig = "auto", "auto"
		return nil
	}
	g.PrefillConfig, g.DecodeConfig = cmp.Or(o.PrefillConfig, "all"), cmp.Or(o.DecodeConfig, "all")
	return nil
}

// cellPhases are a cell's per-phase configurations: resolved, or the
// candidates of --configs auto.
type cellPhases struct {
	prefill, decode PhaseConfig
	cands           []PhaseConfig
	auto            *AutoConfigs
}

// cellPhases resolves the cell's configurations for model c and sets
// eo's per-phase CPUs (auto: the union of the candidates' for both;
// setupPhases then moves them). nil without per-phase configurations.
func (o *Options) cellPhases(cell workloads.Cell, c engine.Config, eo *engine.Options) (*cellPhases, error) {
	if cell.PrefillConfig == "" {
		return nil, nil
	}
	eo.Threads = 0
	ph := &cellPhases{}
	if cell.PrefillConfig == "auto" {
		cs, err := o.ConfigCandidates(c)
		if err != nil {
			return nil, fmt.Errorf("--configs auto: %w", err)
		}
		var union []int
		for _, cd := range cs {
			for _, x := range cd.CPUs {
				if !slices.Contains(union, x) {
					union = append(union, x)
				}
			}
		}
		slices.Sort(union)
		ph.cands, eo.PrefillCPUs, eo.DecodeCPUs = cs, union, union
		return ph, nil
	}
	var err error
	if ph.prefill, err = o.ResolveConfig(cell.PrefillConfig, c); err != nil {
		return nil, fmt.Errorf("--prefill-config: %w", err)
	}
	if ph.decode, err = o.ResolveConfig(cell.DecodeConfig, c); err != nil {
		return nil, fmt.Errorf("--decode-config: %w", err)
	}
	eo.PrefillCPUs, eo.DecodeCPUs = ph.prefill.CPUs, ph.decode.CPUs
	return ph, nil
}

// setupPhases runs --configs auto for the cell (ranked at the trace's
// mean prompt and output lengths, capped as the cell caps them, and the
// cell's batch; the best few measured on random prompts of that length),
// and sets the machines each phase is predicted with.
func (e *engineCell) setupPhases(ph *cellPhases, tr *workloads.Trace, cell workloads.Cell) error {
	e.mach = [2]*roofline.Machine{e.o.machine, e.o.machine}
	if ph == nil {
		return nil
	}
	e.phases = ph
	if ph.cands != nil {
		var pt, ot int
		for _, r := range tr.Requests {
			p, g := r.PromptTokens, r.OutputTokens
			if cell.MaxPromptTokens > 0 {
				p = min(p, cell.MaxPromptTokens)
			}
			if cell.MaxGenTokens > 0 {
				g = min(g, cell.MaxGenTokens)
			}
			pt, ot = pt+p, ot+g
		}
		n := max(len(tr.Requests), 1)
		T, G := max(pt/n, 1), max(ot/n, 1)
		a, err := RankConfigs(e.o.machine, e.m.Config, e.prec, cell.Batch, T, G, ph.cands, e.o.ConfigsTry)
		if err != nil {
			return fmt.Errorf("--configs auto: %w", err)
		}
		prompts := make([][]int, cell.Batch)
		for i := range prompts {
			prompts[i] = make([]int, T)
			for j := range prompts[i] {
				prompts[i][j] = e.rng.IntN(e.m.Config.Vocab)
			}
		}
		if err := a.Measure(e.m, prompts, G); err != nil {
			return fmt.Errorf("--configs auto: %w", err)
		}
		ph.auto = a
		ph.prefill, ph.decode = a.Prefill[a.PrefillChoice].PhaseConfig, a.Decode[a.DecodeChoice].PhaseConfig
		e.notes = append(e.notes, a.Lines(T)...)
	}
	// The Model's per-phase notes as they are now (auto moved the phases).
	isPhaseNote := func(n string) bool { return strings.HasPrefix(n, "per-phase configurations: ") }
	e.notes = slices.DeleteFunc(e.notes, isPhaseNote)
	for _, n := range e.m.Notes {
		if isPhaseNote(n) {
			e.notes = append(e.notes, n)
		}
	}
	ph.prefill.CPUs, ph.prefill.Threads = e.m.PhaseCPUs(engine.Prefill), e.m.PhaseThreads(engine.Prefill)
	ph.decode.CPUs, ph.decode.Threads = e.m.PhaseCPUs(engine.Decode), e.m.PhaseThreads(engine.Decode)
	if e.o.machine != nil {
		if _, ok := e.o.machine.Target(roofline.KindCores); ok {
			e.mach = [2]*roofline.Machine{e.o.machine.AtThreads(ph.prefill.Threads), e.o.machine.AtThreads(ph.decode.Threads)}
			e.notes = append(e.notes, fmt.Sprintf("predictions per phase at its threads: prefill %d, decode %d (the cores target's ceilings scaled)", ph.prefill.Threads, ph.decode.Threads))
		}
	}
	e.notes = append(e.notes, "prefill configuration: "+ph.prefill.Label, "decode configuration: "+ph.decode.Label)
	return nil
}

// machine is the roofline machine phase is predicted with.
func (e *engineCell) machine(phase roofline.Phase) *roofline.Machine {
	if phase == roofline.Decode && e.mach[1] != nil {
		return e.mach[1]
	}
	if e.mach[0] != nil {
		return e.mach[0]
	}
	return e.o.machine
}

// enginePhases is an engine that ran per-phase configurations.
type enginePhases interface {
	PhaseConfigs() (prefill, decode *results.SweepPhaseConfig)
}

// PhaseConfigs is what ran each phase (nil, nil without per-phase
// configurations).
func (e *engineCell) PhaseConfigs() (prefill, decode *results.SweepPhaseConfig) {
	if e.phases == nil {
		return nil, nil
	}
	p, d := e.phases.prefill, e.phases.decode
	return &p, &d
}

// Lines are the ranked configurations as note lines: per phase and rank,
// the configuration, predicted and measured time; T is the prompt length
// they were ranked at.
func (a *AutoConfigs) Lines(T int) []string {
	out := []string{fmt.Sprintf("--configs auto: TP-1 configurations ranked by the roofline at their threads (prefill: TTFT of %d tokens; decode: TPOT), the %d best per phase measured (decode over %d steps), the measured best chosen", T, a.Try, a.DecodeSteps)}
	for _, ph := range []struct {
		name   string
		l      []PhaseTry
		choice int
	}{{"prefill", a.Prefill, a.PrefillChoice}, {"decode", a.Decode, a.DecodeChoice}} {
		for i, t := range ph.l {
			meas := "not measured"
			if t.MeasuredS != nil {
				meas = fmt.Sprintf("measured %.4g s (measured/predicted %.2f)", *t.MeasuredS, *t.MeasuredS/t.PredictedS)
			}
			chosen := ""
			if i == ph.choice {
				chosen = ", chosen"
			}
			out = append(out, fmt.Sprintf("--configs auto: %s #%d %s (%d threads): predicted %.4g s, %s%s", ph.name, i+1, t.Label, t.Threads, t.PredictedS, meas, chosen))
		}
	}
	return out
}

// phaseArgs are the flags that reproduce the per-phase settings for a
// job (--configs auto, or the two configurations), or --threads threads
// without them.
func (o *Options) phaseArgs(threads string) []string {
	switch {
	case o.grid.PrefillConfig == "":
		return []string{"--threads", threads}
	case o.grid.PrefillConfig == "auto":
		return []string{"--configs", "auto", "--configs-try", fmt.Sprint(o.ConfigsTry)}
	}
	return []string{"--prefill-config", o.grid.PrefillConfig, "--decode-config", o.grid.DecodeConfig}
}

// threadsLabel is the summary's threads column: the cell's threads, or
// with per-phase configurations each phase's threads and CPUs
// ("prefill 2 (0-1), decode 1 (0)").
func threadsLabel(c *results.SweepCell) string {
	if c.PrefillConfig == nil || c.DecodeConfig == nil {
		return fmt.Sprint(c.Threads)
	}
	return fmt.Sprintf("prefill %d (%s), decode %d (%s)", c.PrefillConfig.Threads, topology.FormatCPUList(c.PrefillConfig.CPUs),
		c.DecodeConfig.Threads, topology.FormatCPUList(c.DecodeConfig.CPUs))
}
