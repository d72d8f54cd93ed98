package noise

import (
	"context"
	"fmt"
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
// (and the caller measures it again). A guard that may adopt (the
// probe's) takes the host's new placement as its reference once one
// figure has waited adoptAfter for the old one: the host kept the 2-vCPU
// guest's vCPUs where it had moved them for minutes; Rereference then
// settles the profile's placement on the one most figures were measured
// in. A failed round trip (a machine whose CPUs are busy with other work)
// turns the guard off (Err). A nil guard checks nothing.
type PlacementGuard struct {
	ref *results.Placement // a copy: adopting changes it
	// waitLeft is what is left of the run's budget for waiting.
	waitLeft time.Duration
	// waited is the time spent waiting so far (Waited); adopted counts
	// the placements adopted (Adopted).
	waited  time.Duration
	adopted int
	// adoptAfter is how long one figure waits before its guard adopts
	// the host's placement (0: never).
	adoptAfter time.Duration
	// err is the first failed measurement, after which the guard checks
	// nothing more (Err): a machine whose CPUs are too busy for a round
	// trip would otherwise cost every figure the timeout.
	err error
}

// Err is the failed measurement that turned the guard off (nil: none).
func (g *PlacementGuard) Err() error {
	if g == nil {
		return nil
	}
	return g.err
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
// all (0: never waits, only records) and, with adoptAfter > 0, adopts the
// host's placement once a figure has waited that long for ref; nil
// (checking nothing) for a nil ref.
func NewPlacementGuard(ref *results.Placement, budget, adoptAfter time.Duration) *PlacementGuard {
	if ref == nil {
		return nil
	}
	cp := *ref
	cp.RoundTrips = append([]results.RoundTrip(nil), ref.RoundTrips...)
	return &PlacementGuard{ref: &cp, waitLeft: budget, adoptAfter: adoptAfter}
}

// Adopted is how many times the guard took the host's new placement as
// its reference.
func (g *PlacementGuard) Adopted() int {
	if g == nil {
		return 0
	}
	return g.adopted
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
// hold no reference pair); a guard that may adopt takes the placement
// measured as its reference once this figure has waited adoptAfter. A
// failed measurement is not fatal: it returns nil, and the figure goes
// unchecked; ctx's error is returned.
func (g *PlacementGuard) Before(ctx context.Context, cpus []int) (*results.Placement, error) {
	if g == nil || g.err != nil || len(PlacementOf(g.ref, cpus)) == 0 {
		return nil, nil
	}
	var waited time.Duration
	for {
		now, moved, err := g.sample(ctx, cpus)
		if now == nil || !moved {
			return now, err
		}
		if g.adoptAfter > 0 && waited >= g.adoptAfter {
			g.adopt(now)
			return now, nil
		}
		if g.waitLeft <= 0 {
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
		waited += d
	}
}

// adopt takes now's round trips as the reference's for the pairs now has.
func (g *PlacementGuard) adopt(now *results.Placement) {
	for _, rt := range now.RoundTrips {
		for i := range g.ref.RoundTrips {
			if q := &g.ref.RoundTrips[i]; q.A == rt.A && q.B == rt.B {
				q.NS = rt.NS
			}
		}
	}
	g.adopted++
}

// After measures the round trips between cpus again (nil as Before does).
func (g *PlacementGuard) After(ctx context.Context, cpus []int) (*results.Placement, error) {
	if g == nil || g.err != nil || len(PlacementOf(g.ref, cpus)) == 0 {
		return nil, nil
	}
	now, _, err := g.sample(ctx, cpus)
	return now, err
}

// sample is the package's sample against the guard's reference; a failed
// one (not ctx's) turns the guard off, and only ctx's error is returned
// (nil, nil otherwise).
func (g *PlacementGuard) sample(ctx context.Context, cpus []int) (*results.Placement, bool, error) {
	now, moved, err := sample(ctx, g.ref, cpus)
	if err != nil {
		if ctx.Err() == nil {
			g.err = err
		}
		return nil, false, ctx.Err()
	}
	return now, moved, nil
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

// Rereference settles profile p's placement on the one most of its
// checked figures were measured in (issue #16 part 3): a figure on 2 or
// more CPUs records its round trip (RecordPlacement); where more of them
// lie NoisePlacementRatio or more from p.Placement than within it, the
// reference of each pair becomes the median of the far figures' round
// trips of that pair. Every figure with a recorded round trip is then
// judged again (Judge) against the reference, so a profile whose guard
// adopted a placement midway says which figures were measured in the
// other one. It returns how many checked figures were measured within
// p.Placement as it was (at) and away from it (away), and whether the
// reference changed.
func Rereference(p *results.Profile) (at, away int, changed bool) {
	if p == nil || p.Placement == nil {
		return 0, 0, false
	}
	ref := map[[2]int]float64{}
	for _, rt := range p.Placement.RoundTrips {
		ref[[2]int{rt.A, rt.B}] = rt.NS.Median
	}
	far := map[[2]int][]float64{}
	var figs []*results.Noise
	p.WalkStats(func(_ string, st *results.Stat) {
		n := st.Noise
		if n == nil || n.RoundTripNs <= 0 || len(n.RoundTripCPUs) != 2 {
			return
		}
		k := [2]int{n.RoundTripCPUs[0], n.RoundTripCPUs[1]}
		r, ok := ref[k]
		if !ok {
			return
		}
		figs = append(figs, n)
		if moveRatio(n.RoundTripNs, r) >= results.NoisePlacementRatio {
			away++
			far[k] = append(far[k], n.RoundTripNs)
		} else {
			at++
		}
	})
	if away > at {
		pl := *p.Placement
		pl.RoundTrips = append([]results.RoundTrip(nil), p.Placement.RoundTrips...)
		for i := range pl.RoundTrips {
			rt := &pl.RoundTrips[i]
			if v := far[[2]int{rt.A, rt.B}]; len(v) > 0 {
				rt.NS = results.Summarize(v)
				ref[[2]int{rt.A, rt.B}] = rt.NS.Median
			}
		}
		pl.Method += fmt.Sprintf("; taken again from the figures: %d of %d figures on 2 or more CPUs were measured %.1f× or more from the placement the probe began with, and its round trips are now the median of theirs", away, away+at, results.NoisePlacementRatio)
		p.Placement = &pl
		changed = true
	}
	for _, n := range figs {
		n.RoundTripRefNs = ref[[2]int{n.RoundTripCPUs[0], n.RoundTripCPUs[1]}]
		Judge(n, n.CPUFraction > 0)
	}
	return at, away, changed
}
