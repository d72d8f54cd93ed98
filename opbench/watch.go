package opbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/results"
)

// Watch records each figure's noise (issue #16 part 3) the way the probe
// and `bench run` do: the share of the CPUs the figure's threads got and
// the steal time (/proc/stat, noise.Meter), the load average, the spread
// of its repetitions, and where the host put its CPUs (core-to-core round
// trips before and after it against Ref, through a noise.PlacementGuard
// that never adopts another placement): on a VM whose host moves its
// vCPUs between dies, the L3 a batch's KV cache fits in and the DRAM
// bandwidth move with them. A figure that fails a test is marked noisy
// (results.Noise.Noisy, Why) and kept.
type Watch struct {
	// Ref is the placement the figures are checked against (nil: none,
	// e.g. one CPU); RefFrom says where it came from.
	Ref     *results.Placement
	RefFrom string
	// Wait is how long, in all, the figures may wait for the host to put
	// their CPUs back where Ref had them before each is measured (0: no
	// waiting; a moved figure is marked either way).
	Wait  time.Duration
	guard *noise.PlacementGuard
}

// NewWatch returns the Watch of figures on cpus: Ref is profile p's
// placement where it has a pair within cpus, else one measured now
// (noise.MeasurePlacement); with fewer than 2 CPUs, or where the round
// trips cannot be measured (noise.ErrRoundTripTimeout: CPUs busy), Ref is
// nil and RefFrom says why. Errors: ctx's.
func NewWatch(ctx context.Context, p *results.Profile, cpus []int, wait time.Duration) (*Watch, error) {
	w := &Watch{Wait: wait}
	switch {
	case len(slices.Compact(slices.Sorted(slices.Values(cpus)))) < 2:
		w.RefFrom = "one CPU: no core-to-core round trip to check"
		return w, nil
	case p != nil && len(noise.PlacementOf(p.Placement, cpus)) > 0:
		w.Ref, w.RefFrom = p.Placement, "the profile's (profile.placement)"
	default:
		ref, err := noise.MeasurePlacement(ctx, cpus)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			w.RefFrom = "not measured: " + err.Error()
			return w, nil
		}
		w.Ref, w.RefFrom = ref, "measured as this run began (the profile has none for these CPUs)"
	}
	w.guard = noise.NewPlacementGuard(w.Ref, wait, 0)
	return w, nil
}

// Measure times one figure on cpus with measure (which returns its
// seconds per call, summarized) inside Check, under a noise.Meter, and
// returns the figure with its noise record judged (noise.Judge at the
// figure's cv; noise.MarkMoved where the round trips moved from Ref).
// Errors: measure's, ctx's.
func (w *Watch) Measure(ctx context.Context, cpus []int, measure func() (results.Stat, error)) (results.Stat, *results.Noise, error) {
	var st results.Stat
	m := noise.NewMeter(cpus, len(cpus))
	rec, err := w.Check(ctx, cpus, func() error {
		m.Start()
		defer m.Stop()
		var err error
		st, err = measure()
		return err
	})
	if err != nil {
		return results.Stat{}, nil, err
	}
	n := m.Noise(st.CV)
	rec(&n)
	return st, &n, nil
}

// Check runs f, which measures one figure on cpus, between a placement
// sample before and one after (PlacementGuard.Before, which first waits
// what is left of w.Wait for the CPUs to be back where Ref had them, and
// After), and returns the function that records them in the figure's
// noise record (the round trip that moved most from Ref) and marks it
// noisy where they moved (noise.MarkMoved). Errors: f's, ctx's.
func (w *Watch) Check(ctx context.Context, cpus []int, f func() error) (record func(*results.Noise), err error) {
	before, err := w.guard.Before(ctx, cpus)
	if err != nil {
		return nil, err
	}
	if err := f(); err != nil {
		return nil, err
	}
	after, err := w.guard.After(ctx, cpus)
	if err != nil {
		return nil, err
	}
	return func(n *results.Noise) {
		if n == nil {
			return
		}
		w.guard.Record(n, before, after)
		noise.MarkMoved(n)
	}, nil
}

// Waited is how long the figures waited for the placement in all.
func (w *Watch) Waited() time.Duration { return w.guard.Waited() }

// Line says what the watch checked, for a report's context lines.
func (w *Watch) Line() string {
	if w.Ref == nil {
		return "noise: each figure's CPU share, steal, load and cv (noise.Judge); placement not checked: " + w.RefFrom
	}
	s := fmt.Sprintf("noise: each figure's CPU share, steal, load and cv (noise.Judge) and the core-to-core round trips before and after it against %s", w.RefFrom)
	for _, rt := range w.Ref.RoundTrips {
		s += fmt.Sprintf(" %d↔%d %.0f ns", rt.A, rt.B, rt.NS.Median)
	}
	s += fmt.Sprintf(" (≥ %.1f× apart either way: the host moved the CPUs, the figure is marked noisy)", results.NoisePlacementRatio)
	if w.Wait > 0 {
		s += fmt.Sprintf("; waited %.1f s of --wait-placement %v for the placement", w.guard.Waited().Seconds(), w.Wait)
	}
	return s
}
