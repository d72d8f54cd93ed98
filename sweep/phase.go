package sweep

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/roofline"
)

// PhaseConfig is one phase's service configuration as a run or a sweep
// cell records it (Sandwich §3.2–3.3): the configuration as given, what
// it resolved to, the CPUs and the threads (one per CPU).
type PhaseConfig struct {
	Spec    string `json:"spec"`
	Label   string `json:"label"`
	CPUs    []int  `json:"cpus"`
	Threads int    `json:"threads"`
}

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
