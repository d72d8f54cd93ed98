package noise

import (
	"context"
	"time"

	"github.com/cpubench/bench/results"
)

// PlacementGuard holds the figures of one run of measurements (a probe, a
// calibration) on more than one CPU to a reference placement (the one the
// probe began with, Profile.Placement; issue #16 part 3): a VM's host may
// move its vCPUs between dies, which moves every such figure
// (results.NoisePlacementRatio gives the 2-vCPU KVM guest's two
// placements). Before each attempt of such a figure it waits, within a
// budget for the whole run, for the host to put the CPUs back; before and
// after the attempt it measures the round trips again into the figure's
// noise record, which marks an attempt the host moved during as noisy
// (and the caller measures it again). A nil guard checks nothing.
type PlacementGuard struct {
	ref *results.Placement
	// waitLeft is what is left of the run's budget for waiting.
	waitLeft time.Duration
	// waited is the time spent waiting so far (Waited).
	waited time.Duration
}

// placementPoll is the interval between checks of a guard or a run
// waiting for the host to put the CPUs back.
const (
	placementPoll = 250 * time.Millisecond
	// poolSettle lets the workers of an engine pool (kernels/pool) stop
	// spinning (pool.DefaultSpin, 200 µs) before a round trip is timed
	// on their CPUs.
	poolSettle = time.Millisecond
)

// NewPlacementGuard returns a guard against ref that may wait budget in
// all (0: never waits, only records); nil (checking nothing) for a nil
// ref.
func NewPlacementGuard(ref *results.Placement, budget time.Duration) *PlacementGuard {
	if ref == nil {
		return nil
	}
	return &PlacementGuard{ref: ref, waitLeft: budget}
}

// Waited is the time the guard has spent waiting for the host so far.
func (g *PlacementGuard) Waited() time.Duration {
	if g == nil {
		return 0
	}
	return g.waited
}

// Before waits (polling, within the budget) until the round trips between
// cpus are within results.NoisePlacementRatio of the reference's, and
// returns the last placement measured (nil where the guard is nil or cpus
// hold no reference pair). A failed measurement is not fatal: it returns
// nil, and the figure goes unchecked; ctx's error is returned.
func (g *PlacementGuard) Before(ctx context.Context, cpus []int) (*results.Placement, error) {
	if g == nil || len(PlacementOf(g.ref, cpus)) == 0 {
		return nil, nil
	}
	for {
		time.Sleep(poolSettle)
		now, err := MeasureLike(ctx, g.ref, cpus)
		if err != nil {
			return nil, ctx.Err()
		}
		var n results.Noise
		RecordPlacement(&n, g.ref, now)
		if !Moved(n) || g.waitLeft <= 0 {
			return now, nil
		}
		t := time.Now()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(placementPoll):
		}
		d := time.Since(t)
		g.waitLeft -= d
		g.waited += d
	}
}

// After measures the round trips between cpus again (nil as Before does).
func (g *PlacementGuard) After(ctx context.Context, cpus []int) (*results.Placement, error) {
	if g == nil || len(PlacementOf(g.ref, cpus)) == 0 {
		return nil, nil
	}
	time.Sleep(poolSettle)
	now, err := MeasureLike(ctx, g.ref, cpus)
	if err != nil {
		return nil, ctx.Err()
	}
	return now, nil
}

// Record puts the placements measured before and after a figure into n
// (the one further from the reference is kept: RecordPlacement).
func (g *PlacementGuard) Record(n *results.Noise, before, after *results.Placement) {
	if g == nil {
		return
	}
	RecordPlacement(n, g.ref, before)
	RecordPlacement(n, g.ref, after)
}
