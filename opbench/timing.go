package opbench

import (
	"context"
	"fmt"
	"time"

	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
)

// Timing is how a sweep times one figure: Reps ≥ 1 repetitions of at
// least RepDuration (at least one call each) after one warm-up of
// RepDuration/2, on worker 0 of the pool (kpool.Pool.Do).
type Timing struct {
	Reps        int
	RepDuration time.Duration
}

func (t Timing) validate() error {
	if t.Reps < 1 {
		return fmt.Errorf("--reps %d: must be ≥ 1", t.Reps)
	}
	if t.RepDuration <= 0 {
		return fmt.Errorf("--rep-ms %v: must be > 0", t.RepDuration)
	}
	return nil
}

// SecondsPerCall runs a warm-up and t.Reps timed repetitions of call
// inside p.Do and returns the seconds per call of each repetition
// (summarized). ctx is checked between repetitions.
func (t Timing) SecondsPerCall(ctx context.Context, p *kpool.Pool, call func(m *kpool.Master) error) (results.Stat, error) {
	var secs []float64
	for rep := 0; rep <= t.Reps; rep++ {
		if err := ctx.Err(); err != nil {
			return results.Stat{}, err
		}
		d := t.RepDuration
		if rep == 0 {
			d /= 2
		}
		var s float64
		err := p.Do(func(m *kpool.Master) error {
			t0 := time.Now()
			for n := 1; ; n++ {
				if err := call(m); err != nil {
					return err
				}
				if el := time.Since(t0); el >= d {
					s = el.Seconds() / float64(n)
					return nil
				}
			}
		})
		if err != nil {
			return results.Stat{}, err
		}
		if rep > 0 {
			secs = append(secs, s)
		}
	}
	return results.Summarize(secs), nil
}

// rates turns a Stat of seconds per call into one of work/seconds·scale
// (GFLOP/s from FLOPs with scale 1e-9): the min and max swap, the cv is
// recomputed from the samples.
func rates(sec results.Stat, work, scale float64) results.Stat {
	vals := make([]float64, 0, len(sec.Samples))
	for _, s := range sec.Samples {
		vals = append(vals, work/s*scale)
	}
	if len(vals) == 0 {
		return results.Stat{}
	}
	return results.Summarize(vals)
}
