package noise

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/results"
)

// Round-trip sampling: bursts of roundTripTrips round trips after one
// untimed burst; the sample is the median over roundTripBursts bursts.
// On the 2-vCPU KVM guest a sample takes 1–5 ms.
const (
	roundTripBursts = 15
	roundTripTrips  = 1000
	// maxPairs bounds MeasurePlacement: the first CPU with at most this
	// many others (the ones after it in the list, in order).
	maxPairs = 16
	// roundTripTimeout abandons a sample whose partner does not answer
	// in time: a sample takes 1.5–8 ms on the 2-vCPU guest, and where
	// other processes hold the CPUs each round trip may wait a scheduler
	// quantum (a loaded machine is not told apart from a moved one).
	roundTripTimeout = 250 * time.Millisecond
)

// ErrRoundTripTimeout is RoundTrip's error for a sample that did not
// finish in time.
var ErrRoundTripTimeout = fmt.Errorf("not finished within %v (the CPUs busy with other work?)", roundTripTimeout)

// PlacementMethod is results.Placement.Method for MeasurePlacement.
var PlacementMethod = fmt.Sprintf("core-to-core round trip: a thread pinned to the first CPU stores to a cache line, a thread pinned to the other spins until it sees the store and stores back, %d round trips per burst after an untimed burst, median of %d bursts; ns per round trip (two one-way latencies)", roundTripTrips, roundTripBursts)

// line is a cache line of its own for the ping-pong flag.
type line struct {
	_ [64]byte
	v atomic.Int64
	_ [56]byte
}

// RoundTrip measures the core-to-core round trip between CPUs a and b
// (results.RoundTrip): two fresh threads pinned to a and b pass a counter
// back and forth through one cache line; the Stat is in ns per round trip,
// one sample per burst. The calling goroutine's thread is not pinned.
// Errors: a or b cannot be pinned (which names the CPU), a equals b, a
// sample that did not finish within 250 ms (ErrRoundTripTimeout: CPUs
// shared with other processes), ctx's error.
func RoundTrip(ctx context.Context, a, b int) (results.Stat, error) {
	if a == b {
		return results.Stat{}, fmt.Errorf("round trip: CPU %d with itself", a)
	}
	if err := ctx.Err(); err != nil {
		return results.Stat{}, err
	}
	var flag line
	var abort atomic.Bool
	type out struct {
		ns  []float64
		err error
	}
	pinned := make(chan error, 2)
	go1 := make(chan struct{})
	res := make(chan out, 2)
	total := roundTripBursts + 1
	// wait spins until flag holds want, checking abort now and then.
	wait := func(want int64) bool {
		for n := 0; flag.v.Load() != want; n++ {
			if n&0xfff == 0xfff && abort.Load() {
				return false
			}
		}
		return true
	}
	// ready locks the calling goroutine's thread and pins it to cpu,
	// reports the pin on pinned (and a failure on res), and waits for go1;
	// false where the pin failed. Each side then returns without
	// UnlockOSThread, so its pinned thread is discarded
	// (internal/affinity).
	ready := func(cpu int) bool {
		runtime.LockOSThread()
		err := affinity.Pin(cpu)
		pinned <- err
		if err != nil {
			res <- out{err: err}
			return false
		}
		<-go1
		return true
	}
	// The answering side (CPU b).
	go func() {
		if !ready(b) {
			return
		}
		for i := range int64(total * roundTripTrips) {
			if !wait(2*i + 1) {
				break
			}
			flag.v.Store(2*i + 2)
		}
		res <- out{}
	}()
	// The timing side (CPU a).
	go func() {
		if !ready(a) {
			return
		}
		var ns []float64
		i := int64(0)
		for burst := range total {
			t := time.Now()
			for range roundTripTrips {
				flag.v.Store(2*i + 1)
				if !wait(2*i + 2) {
					res <- out{err: fmt.Errorf("round trip CPU %d↔%d: %w", a, b, ErrRoundTripTimeout)}
					return
				}
				i++
			}
			if burst > 0 {
				ns = append(ns, float64(time.Since(t).Nanoseconds())/roundTripTrips)
			}
		}
		res <- out{ns: ns}
	}()
	var err error
	for range 2 {
		if e := <-pinned; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		abort.Store(true)
		close(go1)
		for range 2 {
			<-res
		}
		return results.Stat{}, err
	}
	close(go1)
	timer := time.NewTimer(roundTripTimeout)
	defer timer.Stop()
	var ns []float64
	done := ctx.Done()
	for got := 0; got < 2; {
		select {
		case o := <-res:
			got++
			if o.err != nil && err == nil {
				err = o.err
			}
			if o.ns != nil {
				ns = o.ns
			}
		case <-timer.C:
			abort.Store(true)
		case <-done:
			done = nil
			abort.Store(true)
			if err == nil {
				err = ctx.Err()
			}
		}
	}
	if err != nil {
		return results.Stat{}, err
	}
	return results.Summarize(ns), nil
}

// MeasurePlacement measures the core-to-core round trip from cpus[0] to
// each of the next (at most 16) CPUs of cpus (RoundTrip, one after
// another), referenceSamples times 50 ms apart, and keeps per pair the
// sample with the lowest median: a reference is the placement's level,
// and interference only ever adds to a round trip (the 2-vCPU KVM guest's
// medians within one placement ran 71–165 ns, one sample at 147 with
// bursts of 80 and of 160–195 ns). It returns nil, nil with fewer than 2
// CPUs; errors are RoundTrip's.
func MeasurePlacement(ctx context.Context, cpus []int) (*results.Placement, error) {
	if len(cpus) < 2 {
		return nil, nil
	}
	p := &results.Placement{Method: PlacementMethod + fmt.Sprintf("; the lowest median of %d such samples 50 ms apart", referenceSamples)}
	for i := range referenceSamples {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		for j, c := range cpus[1:min(len(cpus), maxPairs+1)] {
			st, err := RoundTrip(ctx, cpus[0], c)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				p.RoundTrips = append(p.RoundTrips, results.RoundTrip{A: cpus[0], B: c, NS: st})
			} else if st.Median < p.RoundTrips[j].NS.Median {
				p.RoundTrips[j].NS = st
			}
		}
	}
	return p, nil
}

// referenceSamples is how many samples MeasurePlacement takes.
const referenceSamples = 3

// PlacementOf returns the pairs of ref whose two CPUs are both in cpus,
// in ref's order: the pairs a figure on cpus can be checked on.
func PlacementOf(ref *results.Placement, cpus []int) []results.RoundTrip {
	if ref == nil {
		return nil
	}
	in := map[int]bool{}
	for _, c := range cpus {
		in[c] = true
	}
	var out []results.RoundTrip
	for _, rt := range ref.RoundTrips {
		if in[rt.A] && in[rt.B] {
			out = append(out, rt)
		}
	}
	return out
}

// MeasureLike measures again the pairs of ref that lie within cpus
// (PlacementOf), one sample each (RoundTrip); nil, nil where none does.
func MeasureLike(ctx context.Context, ref *results.Placement, cpus []int) (*results.Placement, error) {
	pairs := PlacementOf(ref, cpus)
	if len(pairs) == 0 {
		return nil, nil
	}
	p := &results.Placement{Method: PlacementMethod}
	for _, q := range pairs {
		st, err := RoundTrip(ctx, q.A, q.B)
		if err != nil {
			return nil, err
		}
		p.RoundTrips = append(p.RoundTrips, results.RoundTrip{A: q.A, B: q.B, NS: st})
	}
	return p, nil
}

// sample measures the pairs of ref within cpus again (MeasureLike), after
// poolSettle for an engine pool's workers to stop spinning, and reports
// whether they moved from ref (Moved). Errors are MeasureLike's.
func sample(ctx context.Context, ref *results.Placement, cpus []int) (*results.Placement, bool, error) {
	time.Sleep(poolSettle)
	now, err := MeasureLike(ctx, ref, cpus)
	if err != nil {
		return nil, false, err
	}
	var n results.Noise
	RecordPlacement(&n, ref, now)
	return now, Moved(n), nil
}

// moveRatio is how far now's round trip is from ref's, as a ratio ≥ 1.
func moveRatio(now, ref float64) float64 {
	if !(now > 0) || !(ref > 0) {
		return 1
	}
	return math.Max(now/ref, ref/now)
}

// RecordPlacement records in n the pair of now (measured beside a figure)
// that moved most from ref, if it moved more than the pair n already
// holds (a figure checked before and after keeps the worse); Judge then
// marks n noisy at results.NoisePlacementRatio. Pairs of now absent from
// ref, and a nil ref or now, record nothing.
func RecordPlacement(n *results.Noise, ref, now *results.Placement) {
	if ref == nil || now == nil {
		return
	}
	refNs := map[[2]int]float64{}
	for _, rt := range ref.RoundTrips {
		refNs[[2]int{rt.A, rt.B}] = rt.NS.Median
	}
	for _, rt := range now.RoundTrips {
		r, ok := refNs[[2]int{rt.A, rt.B}]
		if !ok {
			continue
		}
		MergePlacement(n, results.Noise{RoundTripNs: rt.NS.Median, RoundTripRefNs: r, RoundTripCPUs: []int{rt.A, rt.B}})
	}
}

// Moved reports whether n's recorded round trip (RecordPlacement) is
// results.NoisePlacementRatio or more from its reference, either way
// (false without the pair's two CPUs).
func Moved(n results.Noise) bool {
	return n.RoundTripNs > 0 && len(n.RoundTripCPUs) == 2 && moveRatio(n.RoundTripNs, n.RoundTripRefNs) >= results.NoisePlacementRatio
}

// MergePlacement copies src's recorded round trip into dst where it moved
// further from its reference than dst's (a figure combined from several,
// e.g. a DRAM roof over working sets, keeps the worst).
func MergePlacement(dst *results.Noise, src results.Noise) {
	if src.RoundTripNs == 0 || len(src.RoundTripCPUs) != 2 {
		return
	}
	if dst.RoundTripNs == 0 || moveRatio(src.RoundTripNs, src.RoundTripRefNs) > moveRatio(dst.RoundTripNs, dst.RoundTripRefNs) {
		dst.RoundTripNs, dst.RoundTripRefNs, dst.RoundTripCPUs = src.RoundTripNs, src.RoundTripRefNs, src.RoundTripCPUs
	}
}

// PlacementCheck samples, at points of a run outside its timers, where the
// host put the run's CPUs, against a profile's placement (issue #16 part
// 3): a run the host moved the CPUs during cannot test predictions made
// from the profile. Not safe for concurrent use.
type PlacementCheck struct {
	ref    *results.Placement
	cpus   []int
	points []string
	seen   []*results.Placement
	err    error
}

// NewPlacementCheck returns a check of cpus against ref; nil where ref has
// no pair within cpus (fewer than 2 CPUs, a profile without a placement),
// on which every method does nothing.
func NewPlacementCheck(ref *results.Placement, cpus []int) *PlacementCheck {
	if len(PlacementOf(ref, cpus)) == 0 {
		return nil
	}
	return &PlacementCheck{ref: ref, cpus: append([]int(nil), cpus...)}
}

// Sample measures the round trips now (MeasureLike), after a millisecond
// for an engine pool's workers to stop spinning, and names the point
// (e.g. "before prefill"). A failed measurement is kept for Note; ctx's
// error is returned.
func (c *PlacementCheck) Sample(ctx context.Context, point string) error {
	if c == nil {
		return nil
	}
	p, _, err := sample(ctx, c.ref, c.cpus)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.err = err
		return nil
	}
	c.points, c.seen = append(c.points, point), append(c.seen, p)
	return nil
}

// Record puts the sample that moved most from the reference into n
// (RecordPlacement); Judge then marks n noisy at
// results.NoisePlacementRatio.
func (c *PlacementCheck) Record(n *results.Noise) {
	if c == nil {
		return
	}
	for _, p := range c.seen {
		RecordPlacement(n, c.ref, p)
	}
}

// Note says what the samples found, for a run's notes ("" for a nil check).
func (c *PlacementCheck) Note() string {
	if c == nil {
		return ""
	}
	if len(c.seen) == 0 {
		return "placement check: not measured: " + fmt.Sprint(c.err)
	}
	pairs := PlacementOf(c.ref, c.cpus)
	var b strings.Builder
	fmt.Fprintf(&b, "placement check: core-to-core round trip")
	for i, q := range pairs {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %d↔%d", q.A, q.B)
		for j, p := range c.seen {
			for _, rt := range p.RoundTrips {
				if rt.A == q.A && rt.B == q.B {
					fmt.Fprintf(&b, " %.0f ns %s,", rt.NS.Median, c.points[j])
				}
			}
		}
		fmt.Fprintf(&b, " the profile's %.0f ns", q.NS.Median)
	}
	fmt.Fprintf(&b, " (%.1f× apart either way marks the run noisy: the host moved the CPUs)", results.NoisePlacementRatio)
	if c.err != nil {
		fmt.Fprintf(&b, "; a sample failed: %v", c.err)
	}
	return b.String()
}

// Await waits, polling every 250 ms, at most within, until the round
// trips between the check's CPUs are within results.NoisePlacementRatio of
// the reference's, and returns how long it waited and whether they are
// (true at once for a nil check or within ≤ 0; a failed measurement ends
// the wait with false). Its samples are not recorded (Sample is). Errors:
// ctx's.
func (c *PlacementCheck) Await(ctx context.Context, within time.Duration) (time.Duration, bool, error) {
	if c == nil || within <= 0 {
		return 0, true, nil
	}
	start := time.Now()
	for {
		_, moved, err := sample(ctx, c.ref, c.cpus)
		if err != nil {
			return time.Since(start), false, ctx.Err()
		}
		if !moved {
			return time.Since(start), true, nil
		}
		if time.Since(start) >= within {
			return time.Since(start), false, nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), false, ctx.Err()
		case <-time.After(placementPoll):
		}
	}
}

// MarkMoved marks n noisy, with the reason Judge gives, where its recorded
// round trip moved (Moved), leaving its other verdicts as they are: for
// records judged on fewer tests than Judge's (a sweep cell's replay).
func MarkMoved(n *results.Noise) {
	if !Moved(*n) {
		return
	}
	why := movedWhy(*n)
	if strings.Contains(n.Why, why) {
		return
	}
	n.Noisy = true
	if n.Why != "" {
		n.Why += ", "
	}
	n.Why += why
}

// movedWhy is the reason a moved placement gives (Judge, MarkMoved).
func movedWhy(n results.Noise) string {
	return fmt.Sprintf("the host moved the CPUs: core-to-core round trip %d↔%d %.0f ns, %.0f ns in the reference (≥ %.1f× apart)",
		n.RoundTripCPUs[0], n.RoundTripCPUs[1], n.RoundTripNs, n.RoundTripRefNs, results.NoisePlacementRatio)
}
