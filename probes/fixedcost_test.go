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

// TestColdLineFit: the slope between the two cold calls is the cost per
// line and the small call's remainder the fixed part; a large call no
// slower than the small one leaves everything per line, and the fixed part
// is never negative.
func TestColdLineFit(t *testing.T) {
	near := func(a, b float64) bool { return a-b < 1e-15 && b-a < 1e-15 }
	// 1.5 µs for 192 lines, 6.3 µs for 3072: 1/600 µs a line... exactly:
	// slope (6.3-1.5)/2880 µs, fixed 1.5 - 192·slope.
	pl, fx := coldLineFit(1.5e-6, 6.3e-6, 192, 3072)
	if !near(pl, 4.8e-6/2880) || !near(fx, 1.5e-6-192*4.8e-6/2880) {
		t.Errorf("fit %v, %v", pl, fx)
	}
	if pl, fx := coldLineFit(1.5e-6, 1.4e-6, 192, 3072); !near(pl, 1.5e-6/192) || fx != 0 {
		t.Errorf("large not slower: %v, %v; want all per line", pl, fx)
	}
	if _, fx := coldLineFit(1e-7, 1e-5, 192, 3072); fx != 0 {
		t.Errorf("fixed %v, want 0 when the slope explains more than the small call", fx)
	}
}
