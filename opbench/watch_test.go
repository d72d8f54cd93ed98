package opbench

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/results"
)

// A figure whose round trip is far from the reference's is marked noisy
// with the reason, and its record keeps the pair, the round trip and the
// reference; the figure itself is returned as measured.
func TestWatchMarksMovedPlacement(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 {
		t.Skip("needs 2 CPUs")
	}
	cpus = cpus[:2]
	ref := &results.Placement{RoundTrips: []results.RoundTrip{{A: cpus[0], B: cpus[1], NS: results.Stat{Median: 1e7}}}}
	w := &Watch{Ref: ref, RefFrom: "a test's", guard: noise.NewPlacementGuard(ref, 0, 0)}
	want := results.Summarize([]float64{1, 2, 3})
	st, n, err := w.Measure(context.Background(), cpus, func() (results.Stat, error) { return want, nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Median != want.Median || n == nil || n.CV != want.CV {
		t.Fatalf("figure %+v, noise %+v", st, n)
	}
	if n.RoundTripNs == 0 {
		t.Skip("round trip not measured (CPUs busy with other work)")
	}
	if !n.Noisy || !strings.Contains(n.Why, "the host moved the CPUs") || n.RoundTripRefNs != 1e7 || !slices.Equal(n.RoundTripCPUs, cpus) {
		t.Errorf("noise %+v: want noisy, moved from the 1e7 ns reference", n)
	}
	if l := w.Line(); !strings.Contains(l, "a test's") || !strings.Contains(l, "10000000 ns") {
		t.Errorf("line %q", l)
	}
}

// One CPU (or the same CPU twice) has no round trip to check: no
// reference, the reason given, and figures still get their noise record.
func TestWatchOneCPU(t *testing.T) {
	w, err := NewWatch(context.Background(), nil, []int{0, 0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Ref != nil || !strings.Contains(w.RefFrom, "one CPU") || !strings.Contains(w.Line(), "placement not checked") {
		t.Errorf("watch %+v, line %q", w, w.Line())
	}
	_, n, err := w.Measure(context.Background(), []int{0}, func() (results.Stat, error) { return results.Summarize([]float64{1}), nil })
	if err != nil || n == nil || n.RoundTripNs != 0 {
		t.Errorf("noise %+v, %v", n, err)
	}
}
