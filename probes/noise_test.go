package probes

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cpubench/bench/results"
)

func TestNoisier(t *testing.T) {
	if !noisier(results.Noise{Noisy: true, CV: 0.01}, results.Noise{CV: 0.5}) ||
		noisier(results.Noise{CV: 0.01}, results.Noise{CV: 0.02}) {
		t.Error("noisier: a noisy attempt must lose to a clean one, then the larger cv")
	}
}

// TestMeasureGroupsRecordsNoise: every figure measured on the probe's
// workers carries its noise record and raw samples.
func TestMeasureGroupsRecordsNoise(t *testing.T) {
	p := newPool([]int{0})
	defer p.close()
	spin := task{run: func(*worker) (int64, float64) {
		s := 0.0
		for i := range 1000 {
			s += float64(i)
		}
		return 8000, s
	}}
	m, err := measureGroups(context.Background(), nil, [][]*worker{p.workers}, []task{spin}, 2*time.Millisecond, 5)
	if err != nil {
		t.Fatal(err)
	}
	st := m.stat(0)
	if st.Noise == nil || st.Noise.Attempts < 1 || st.Noise.Attempts > 1+noiseRetries {
		t.Fatalf("noise record = %+v", st.Noise)
	}
	if len(st.Samples) != 5 || st.N != 5 {
		t.Fatalf("samples = %v (n %d), want 5", st.Samples, st.N)
	}
	if st.Noise.Noisy != (st.Noise.Why != "") {
		t.Fatalf("noisy %v with why %q", st.Noise.Noisy, st.Noise.Why)
	}
	if runtime.GOOS == "linux" && (st.Noise.CPUFraction <= 0 || st.Noise.CPUFraction > 1.05) {
		t.Fatalf("CPU fraction %v: the thread clock was not read", st.Noise.CPUFraction)
	}
}

// MovedSections names, in run order, the sections holding a figure whose
// recorded round trip is NoisePlacementRatio or more from its reference,
// and counts those figures; figures within it, or without a round trip,
// do not count.
func TestMovedSections(t *testing.T) {
	moved := &results.Noise{RoundTripNs: 400, RoundTripRefNs: 80, RoundTripCPUs: []int{0, 1}}
	within := &results.Noise{RoundTripNs: 90, RoundTripRefNs: 80, RoundTripCPUs: []int{0, 1}}
	p := &results.Profile{
		Memory: &results.Memory{DRAM: []results.DRAMRoof{{Threads: 2, GBps: results.Stat{Median: 50, Noise: moved}}, {Threads: 1, GBps: results.Stat{Median: 40}}}},
		Matrix: &results.Matrix{GEMV: []results.GEMMResult{{Threads: 2, GFLOPS: results.Stat{Median: 20, Noise: within}}},
			GEMMShapes: []results.GEMMResult{{Threads: 2, GFLOPS: results.Stat{Median: 400, Noise: moved}}, {Threads: 2, GFLOPS: results.Stat{Median: 400, Noise: moved}}}},
		Compute: &results.Compute{},
	}
	got, n := MovedSections(p)
	if !slices.Equal(got, []string{results.SectionMemory, results.SectionMatrix}) || n != 3 {
		t.Errorf("MovedSections = %v, %d figures; want [memory matrix], 3", got, n)
	}
	if got, n := MovedSections(&results.Profile{}); len(got) != 0 || n != 0 {
		t.Errorf("empty profile: %v, %d", got, n)
	}
}
