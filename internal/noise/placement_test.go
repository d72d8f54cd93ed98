package noise

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/results"
)

func placementOf(ns ...float64) *results.Placement {
	p := &results.Placement{Method: PlacementMethod}
	for i, v := range ns {
		p.RoundTrips = append(p.RoundTrips, results.RoundTrip{A: 0, B: i + 1, NS: results.Stat{Median: v, N: 9}})
	}
	return p
}

func TestRecordPlacement(t *testing.T) {
	ref := placementOf(140, 150)
	for _, c := range []struct {
		now   *results.Placement
		noisy bool
		cpus  []int
	}{
		{placementOf(160, 130), false, nil},
		{placementOf(430, 150), true, []int{0, 1}},
		{placementOf(140, 50), true, []int{0, 2}}, // faster counts too
		{nil, false, nil},
	} {
		var n results.Noise
		RecordPlacement(&n, ref, c.now)
		Judge(&n, false)
		if n.Noisy != c.noisy || (c.cpus != nil && (len(n.RoundTripCPUs) != 2 || n.RoundTripCPUs[1] != c.cpus[1])) {
			t.Errorf("now %v: noisy %v cpus %v %q, want %v %v", c.now, n.Noisy, n.RoundTripCPUs, n.Why, c.noisy, c.cpus)
		}
		if c.noisy && !strings.Contains(n.Why, "the host moved the CPUs") {
			t.Errorf("why %q does not say the host moved the CPUs", n.Why)
		}
	}
	// Before and after: the one further from the reference is kept.
	var n results.Noise
	RecordPlacement(&n, ref, placementOf(420, 150))
	RecordPlacement(&n, ref, placementOf(150, 150))
	if n.RoundTripNs != 420 || n.RoundTripRefNs != 140 {
		t.Errorf("kept %v against %v, want 420 against 140", n.RoundTripNs, n.RoundTripRefNs)
	}
	// A record without its pair (an older or hand-written file) is not judged.
	if Moved(results.Noise{RoundTripNs: 500, RoundTripRefNs: 100}) {
		t.Error("Moved without RoundTripCPUs")
	}
}

func TestPlacementOf(t *testing.T) {
	ref := placementOf(140, 150, 160)
	got := PlacementOf(ref, []int{0, 2})
	if len(got) != 1 || got[0].B != 2 {
		t.Errorf("PlacementOf(0..3, [0 2]) = %v, want the pair 0↔2", got)
	}
	if PlacementOf(nil, []int{0, 1}) != nil {
		t.Error("PlacementOf(nil) not nil")
	}
}

func TestRoundTrip(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 || runtime.GOOS != "linux" {
		t.Skip("needs 2 allowed CPUs on Linux")
	}
	p, err := MeasurePlacement(context.Background(), cpus[:2])
	if errors.Is(err, ErrRoundTripTimeout) {
		t.Skipf("the CPUs are busy with other work: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(p.RoundTrips) != 1 || p.RoundTrips[0].NS.N != roundTripBursts || !(p.RoundTrips[0].NS.Median > 0) {
		t.Fatalf("placement %+v, want one pair of %d bursts with a positive median", p, roundTripBursts)
	}
	if _, err := RoundTrip(context.Background(), cpus[0], cpus[0]); err == nil {
		t.Error("a round trip of a CPU with itself did not fail")
	}
	if _, err := RoundTrip(context.Background(), cpus[0], 1<<20); err == nil || !strings.Contains(err.Error(), "1048576") {
		t.Errorf("a CPU out of range: %v, want an error naming it", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RoundTrip(ctx, cpus[0], cpus[1]); err == nil {
		t.Error("a cancelled round trip did not fail")
	}
	// The placement just measured: Await sees it (a ratio of 2.5 within
	// a second is no host move) or, at worst, gives up after 1 ms.
	c := NewPlacementCheck(p, cpus[:2])
	if c == nil {
		t.Fatal("no check for the pair just measured")
	}
	if _, _, err := c.Await(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Await: %v", err)
	}
	if err := c.Sample(context.Background(), "now"); errors.Is(c.err, ErrRoundTripTimeout) {
		t.Skipf("the CPUs are busy with other work: %v", c.err)
	} else if err != nil || !strings.Contains(c.Note(), "now") {
		t.Errorf("Sample: %v, note %q", err, c.Note())
	}
	var nilCheck *PlacementCheck
	if w, back, err := nilCheck.Await(context.Background(), time.Second); w != 0 || !back || err != nil || nilCheck.Note() != "" {
		t.Errorf("a nil check waited %v, back %v, err %v", w, back, err)
	}
	if p, err := MeasurePlacement(context.Background(), cpus[:1]); p != nil || err != nil {
		t.Errorf("one CPU: %v %v, want nil nil", p, err)
	}
}

func TestMarkMoved(t *testing.T) {
	// A sweep cell's record: cv not judged, CPU share fine.
	n := results.Noise{CPUFraction: 0.99, CV: 0.3}
	RecordPlacement(&n, placementOf(80), placementOf(390))
	MarkMoved(&n)
	if !n.Noisy || !strings.Contains(n.Why, "the host moved the CPUs") || strings.Contains(n.Why, "cv") {
		t.Errorf("MarkMoved: noisy %v %q, want noisy for the move alone", n.Noisy, n.Why)
	}
	why := n.Why
	MarkMoved(&n)
	if n.Why != why {
		t.Errorf("MarkMoved twice: %q, want the reason once", n.Why)
	}
	quiet := results.Noise{CPUFraction: 0.99}
	RecordPlacement(&quiet, placementOf(80), placementOf(95))
	MarkMoved(&quiet)
	if quiet.Noisy {
		t.Errorf("MarkMoved on 80 → 95 ns: %q", quiet.Why)
	}
}

// A profile whose figures were mostly measured away from the placement it
// began with takes their placement; each figure is judged again.
func TestRereference(t *testing.T) {
	fig := func(rt float64) results.Bandwidth {
		n := &results.Noise{CPUFraction: 0.99, CV: 0.01, RoundTripNs: rt, RoundTripRefNs: 360, RoundTripCPUs: []int{0, 1}}
		Judge(n, true)
		return results.Bandwidth{GBps: results.Stat{Median: 50, Noise: n}}
	}
	p := &results.Profile{Placement: placementOf(360), Memory: &results.Memory{
		WorkingSet: []results.Bandwidth{fig(370), fig(80), fig(75), fig(85), {GBps: results.Stat{Median: 40}}},
	}}
	at, away, changed := Rereference(p)
	if at != 1 || away != 3 || !changed {
		t.Fatalf("at %d away %d changed %v, want 1 3 true", at, away, changed)
	}
	if got := p.Placement.RoundTrips[0].NS.Median; got != 80 {
		t.Errorf("placement now %v ns, want the median of the far figures, 80", got)
	}
	ws := p.Memory.WorkingSet
	if !ws[0].GBps.Noise.Noisy || ws[1].GBps.Noise.Noisy || ws[2].GBps.Noise.Noisy || ws[1].GBps.Noise.RoundTripRefNs != 80 {
		t.Errorf("judged again: %+v %+v", *ws[0].GBps.Noise, *ws[1].GBps.Noise)
	}
	// Most figures where it began: the placement stays.
	q := &results.Profile{Placement: placementOf(360), Memory: &results.Memory{WorkingSet: []results.Bandwidth{fig(370), fig(350), fig(80)}}}
	if at, away, changed := Rereference(q); at != 2 || away != 1 || changed || !q.Memory.WorkingSet[2].GBps.Noise.Noisy {
		t.Errorf("at %d away %d changed %v, want 2 1 false and the far figure noisy", at, away, changed)
	}
}

// A guard that may adopt takes the host's placement after waiting; one
// that may not keeps its reference (and the profile's is never changed).
func TestGuardAdopts(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 || runtime.GOOS != "linux" {
		t.Skip("needs 2 allowed CPUs on Linux")
	}
	// A reference no host gives: a 1 ns round trip.
	ref := &results.Placement{Method: PlacementMethod, RoundTrips: []results.RoundTrip{{A: cpus[0], B: cpus[1], NS: results.Stat{Median: 1}}}}
	g := NewPlacementGuard(ref, time.Second, time.Millisecond)
	now, err := g.Before(context.Background(), cpus[:2])
	if errors.Is(g.Err(), ErrRoundTripTimeout) {
		t.Skipf("the CPUs are busy with other work: %v", g.Err())
	}
	if err != nil || now == nil || g.Adopted() != 1 {
		t.Fatalf("Before: %v %v, adopted %d", now, err, g.Adopted())
	}
	if ref.RoundTrips[0].NS.Median != 1 {
		t.Error("the guard changed the placement it was given")
	}
	var n results.Noise
	g.Record(&n, now, nil)
	if Moved(n) {
		t.Errorf("after adopting, the placement measured is the reference: %+v", n)
	}
	h := NewPlacementGuard(ref, 0, 0)
	if _, err := h.Before(context.Background(), cpus[:2]); err != nil || h.Adopted() != 0 || h.Waited() != 0 {
		t.Errorf("a guard without budget or adoption waited %v, adopted %d (%v)", h.Waited(), h.Adopted(), err)
	}
}
