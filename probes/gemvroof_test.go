package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// TestMeasureGEMVBeside: a GEMV measured between two DRAM roof
// measurements gets their mean as roof_now_gbps and its fraction of it
// where they agree; a GEMV whose roofs cannot agree (here the roof's record
// is 0 working sets: none measured) is its measurement as is; and the
// measurement runs once per attempt.
func TestMeasureGEMVBeside(t *testing.T) {
	r := newTestRunner(t, kernels.BestMem())
	mem := &results.Memory{DRAM: []results.DRAMRoof{{Threads: 1, Kernel: "read", Pages: pagesSmall, WorkingSets: []int64{1 << 20}, GBps: results.Stat{Median: 10, N: 5}}}}
	calls := 0
	measure := func() (results.GEMMResult, error) {
		calls++
		return results.GEMMResult{Threads: 1, WeightGBps: 5}, nil
	}
	g, err := r.measureGEMVBeside(context.Background(), mem, 1, measure)
	if err != nil {
		t.Fatal(err)
	}
	if calls < 1 || calls > gemvRoofAttempts {
		t.Errorf("%d measurements", calls)
	}
	switch {
	case g.RoofNowGBps > 0:
		if g.Fraction != 5/g.RoofNowGBps || !strings.Contains(g.FractionOf, "roof_now_gbps") {
			t.Errorf("agreeing roofs: %+v", g)
		}
	default:
		// The roofs kept moving (a loaded machine): marked noisy, naming them.
		if g.GFLOPS.Noise == nil || !g.GFLOPS.Noise.Noisy || !strings.Contains(g.GFLOPS.Noise.Why, "DRAM read roof moved") || calls != gemvRoofAttempts {
			t.Errorf("moving roofs: %+v (%d calls)", g, calls)
		}
	}
	// No roof at 2 threads: the measurement as is, once.
	calls = 0
	g, err = r.measureGEMVBeside(context.Background(), mem, 2, measure)
	if err != nil || calls != 1 || g.RoofNowGBps != 0 || g.GFLOPS.Noise != nil {
		t.Errorf("no roof: %+v, %v, %d calls", g, err, calls)
	}
}

// TestMeasureBesideRoof: bench gemm's form re-measures the profile's DRAM
// roof (CheckDRAMRoof) around the figure; a profile without a roof at the
// threads gives the figure as is. DRAMSized is more than 4× the LLC.
func TestMeasureBesideRoof(t *testing.T) {
	p := &results.Profile{Memory: &results.Memory{DRAM: []results.DRAMRoof{{
		Threads: 1, Kernel: "read", Pages: pagesSmall, WorkingSets: []int64{1 << 20},
		GBps: results.Stat{Median: 20, N: 5},
	}}}}
	measure := func() (results.GEMMResult, error) { return results.GEMMResult{Threads: 1, WeightGBps: 5}, nil }
	g, err := MeasureBesideRoof(context.Background(), p, 1, measure)
	if err != nil {
		t.Fatal(err)
	}
	if g.RoofNowGBps == 0 && (g.GFLOPS.Noise == nil || !g.GFLOPS.Noise.Noisy) {
		t.Errorf("neither a roof now nor a noisy mark: %+v", g)
	}
	if g, err := MeasureBesideRoof(context.Background(), p, 2, measure); err != nil || g.RoofNowGBps != 0 || g.WeightGBps != 5 {
		t.Errorf("no roof at 2 threads: %+v, %v", g, err)
	}
	q := &results.Profile{Topology: &results.Topology{Caches: []results.Cache{{Level: 3, Type: "Unified", SizeBytes: 16 << 20}}}}
	if DRAMSized(q, 64<<20) || !DRAMSized(q, 64<<20+1) || DRAMSized(&results.Profile{}, 1<<40) {
		t.Error("DRAMSized: want more than 4× the 16 MiB LLC, false without caches")
	}
}

// TestGEMVBesideOverRoof: a GEMV faster than the agreeing roofs around it
// by more than the threshold is measured again and then kept noisy, with
// no roof_now_gbps; one within the threshold gets its fraction.
func TestGEMVBesideOverRoof(t *testing.T) {
	roofs := []float64{24.5, 24.0}
	n := 0
	roof := func() (float64, error) { n++; return roofs[n%2], nil }
	for _, c := range []struct {
		gbps  float64
		noisy bool
	}{{33.9, true}, {26, false}} {
		calls := 0
		g, err := gemvBeside(roof, func() (results.GEMMResult, error) {
			calls++
			return results.GEMMResult{Threads: 2, WeightGBps: c.gbps}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		noisy := g.GFLOPS.Noise != nil && g.GFLOPS.Noise.Noisy
		if noisy != c.noisy || noisy && (g.RoofNowGBps != 0 || calls != gemvRoofAttempts || !strings.Contains(g.GFLOPS.Noise.Why, "above the DRAM read roof")) ||
			!noisy && (g.RoofNowGBps == 0 || calls != 1) {
			t.Errorf("GEMV %v GB/s between roofs %v: %+v (%d calls)", c.gbps, roofs, g, calls)
		}
	}
}
