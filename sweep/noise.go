package sweep

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/results"
)

// The noise record of an engine run (bench run, a sweep cell; issue #16
// part 3) and the fidelity count it gates.

// FidelityTol is the relative error within which a predicted operator
// time counts as matching the measured one (issue #16's target: ±10%).
const FidelityTol = 0.10

// RunNoise is the noise record of an engine run whose timed phases m
// metered: m's CPU share and steal, and the cv of its repetitions, the
// decode steps' seconds (steps; keys, when not nil, the batch size of
// each step, since only steps of one size repeat one another) by
// successive differences (noise.SuccessiveCV: a step's time grows with
// its context, which plain cv would count as noise), or with fewer than
// two pairs of steps the plain cv of the prefills' seconds (prefills;
// two or more), else none. The record is judged against results'
// thresholds (< 90% of the CPUs, cv > 10%).
func RunNoise(m *noise.Meter, steps []float64, keys []int, prefills []float64) results.Noise {
	cv, pairs := noise.SuccessiveCV(steps, keys)
	if pairs < 2 && len(prefills) >= 2 {
		cv = results.Summarize(prefills).CV
	}
	return m.Noise(cv)
}

// ReplayNoise is RunNoise for a sweep cell's replay, judged on the CPU
// share (which counts steal) alone: a replay's decode steps are not
// repetitions of one another (requests join and leave, prompts and
// contexts differ, a prefill lands between two steps), so their spread is
// the workload's as much as the machine's. The cv is recorded, not
// judged: with Poisson arrivals it measured 11–17% on an idle machine
// whose CPUs the cells had to themselves (99–100%).
func ReplayNoise(m *noise.Meter, steps []float64, keys []int, prefills []float64) results.Noise {
	n := RunNoise(m, steps, keys, prefills)
	cv := n.CV
	n.CV = 0
	noise.Judge(&n, n.CPUFraction > 0)
	n.CV = cv
	return n
}

// Fidelity counts operator rows whose measured time is within
// FidelityTol of the predicted one. Noisy runs are flagged, not counted
// (issue #16): Counted is false and Why says why.
type Fidelity struct {
	// Rows are the operator rows with a prediction; Within those within
	// FidelityTol.
	Rows   int `json:"rows"`
	Within int `json:"within"`
	// TimeS is their measured seconds; WithinS those of the rows within.
	TimeS   float64 `json:"time_s"`
	WithinS float64 `json:"within_s"`
	Counted bool    `json:"counted"`
	Why     string  `json:"why,omitempty"`
}

// CountFidelity counts pairs of (measured, predicted) seconds, one per
// operator row, under the run's noise record n (nil: not checked).
func CountFidelity(pairs [][2]float64, n *results.Noise) Fidelity {
	var f Fidelity
	for _, p := range pairs {
		ms, ps := p[0], p[1]
		if !(ps > 0) || !(ms >= 0) || math.IsInf(ps, 0) || math.IsInf(ms, 0) {
			continue
		}
		f.Rows++
		f.TimeS += ms
		if math.Abs(ms/ps-1) <= FidelityTol {
			f.Within++
			f.WithinS += ms
		}
	}
	f.Counted = n == nil || !n.Noisy
	if !f.Counted {
		f.Why = "run NOISY (" + n.Why + "): flagged, not counted"
	}
	return f
}

// String is one line, e.g. "operators within ±10% of the prediction: 12
// of 20 rows, 81% of the measured time".
func (f Fidelity) String() string {
	if f.Rows == 0 {
		return "operators within ±10% of the prediction: no operator has a prediction"
	}
	s := fmt.Sprintf("operators within ±%.0f%% of the prediction: %d of %d rows, %.0f%% of the measured time",
		100*FidelityTol, f.Within, f.Rows, 100*f.WithinS/max(f.TimeS, 1e-300))
	if !f.Counted {
		s += " — " + f.Why
	}
	return s
}

// NoiseLine is one line saying what a noise record found, e.g. "noise:
// threads got 97% of their CPUs, steal 0.0%, load average 1.20, cv 2.1%"
// with " — NOISY: why" when marked.
func NoiseLine(n *results.Noise) string {
	if n == nil {
		return "noise: not recorded"
	}
	s := "noise: "
	if n.CPUFraction > 0 {
		s += fmt.Sprintf("threads got %.0f%% of their CPUs, ", 100*n.CPUFraction)
	} else {
		s += "CPU time unavailable, "
	}
	s += fmt.Sprintf("steal %.1f%%, load average %.2f, cv %.1f%%", 100*n.StealFraction, n.LoadAvg1, 100*n.CV)
	if n.Noisy {
		s += " — NOISY: " + n.Why
	}
	return s
}
