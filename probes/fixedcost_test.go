package probes

import (
	"context"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
)

// TestMeasureDispatch checks the dispatch figures' shape: positive
// medians in seconds, the stated number of samples, and a wake-up that is
// not cheaper than the inline one-thread call (no timing bound: the
// machine may be loaded).
func TestMeasureDispatch(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		t.Skipf("no CPU list: %v", err)
	}
	pt, err := MeasureDispatch(context.Background(), cpus[:1])
	if err != nil {
		t.Fatal(err)
	}
	if pt.Threads != 1 || pt.CallSeconds.N != dispatchSamples || pt.WakeSeconds.N != wakeSamples {
		t.Fatalf("threads %d, n %d/%d", pt.Threads, pt.CallSeconds.N, pt.WakeSeconds.N)
	}
	if !(pt.CallSeconds.Median > 0) || !(pt.WakeSeconds.Median > 0) || pt.CallSeconds.Noise == nil {
		t.Fatalf("call %+v wake %+v", pt.CallSeconds, pt.WakeSeconds)
	}
	if _, err := MeasureDispatch(context.Background(), nil); err == nil {
		t.Fatal("no CPUs: want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MeasureDispatch(ctx, cpus[:1]); err == nil {
		t.Fatal("cancelled: want an error")
	}
}
