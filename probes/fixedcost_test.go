package probes

import (
	"context"
	"slices"
	"strings"
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

// TestColdEvictions: 16 MiB, 256 MiB and 1 GiB besides the main eviction
// (quick: 4× it), none above the probe's largest working set or equal to
// the main one.
func TestColdEvictions(t *testing.T) {
	for _, c := range []struct {
		evict, maxWS int64
		quick        bool
		want         []int64
	}{
		{64 << 20, 1 << 30, false, []int64{16 << 20, 256 << 20, 1 << 30}},
		{256 << 20, 512 << 20, false, []int64{16 << 20}},
		{64 << 20, 1 << 30, true, []int64{256 << 20}},
		{64 << 20, 128 << 20, true, nil},
	} {
		if got := coldEvictions(c.evict, c.maxWS, c.quick); !slices.Equal(got, c.want) {
			t.Errorf("coldEvictions(%d, %d, %v) = %v; want %v", c.evict, c.maxWS, c.quick, got, c.want)
		}
	}
}

// TestMeasureColdVector checks the cold call's shape: a positive median
// per eviction size, the stated samples, the points ascending with the
// main eviction's among them (no timing bound: the machine may be loaded).
func TestMeasureColdVector(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		t.Skipf("no CPU list: %v", err)
	}
	cv, err := measureColdVector(context.Background(), cpus[0], 2<<20, []int64{4 << 20, 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if cv.EvictBytes != 2<<20 || cv.Seconds.N != coldSamples || !(cv.SecondsPerLine > 0) || len(cv.Points) != 3 {
		t.Fatalf("cold vector %+v", cv)
	}
	for i, pt := range cv.Points {
		if pt.EvictBytes != int64(1<<i)<<20 || !(pt.Seconds.Median >= 0) {
			t.Errorf("point %d: %+v; want %d bytes", i, pt, int64(1<<i)<<20)
		}
		if pt.EvictBytes == cv.EvictBytes && pt.Seconds.Median != cv.Seconds.Median {
			t.Errorf("main eviction's point %v, main figure %v", pt.Seconds.Median, cv.Seconds.Median)
		}
		if pt.EvictBytes != cv.EvictBytes && pt.Seconds.N != coldSamplesOther {
			t.Errorf("point %d: %d samples; want %d", i, pt.Seconds.N, coldSamplesOther)
		}
	}
	if !strings.Contains(cv.Method, "1.0 MiB, 2.0 MiB, 4.0 MiB") {
		t.Errorf("method %q does not name the points' sizes", cv.Method)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := measureColdVector(ctx, cpus[0], 1<<20, nil); err == nil {
		t.Fatal("cancelled: want an error")
	}
}

// TestMeasureCoreToCore checks the core-to-core figure's shape on two
// workers (the same CPU twice where only one is allowed): positive rates,
// the stated samples and buffer, one CPU an error, a cancelled context an
// error (no timing bound: the machine may be loaded).
func TestMeasureCoreToCore(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		t.Skipf("no CPU list: %v", err)
	}
	two := []int{cpus[0], cpus[len(cpus)-1]}
	cc, err := measureCoreToCore(context.Background(), nil, two, 64<<10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Threads != 2 || cc.Bytes != 64<<10 || cc.GBps.N != coreToCoreSamples || cc.LocalGBps.N != coreToCoreSamples ||
		!(cc.GBps.Median > 0) || !(cc.LocalGBps.Median > 0) || cc.GBps.Noise == nil {
		t.Fatalf("core to core %+v", cc)
	}
	if !strings.Contains(cc.Method, "64 KiB") {
		t.Errorf("method %q does not name the buffer", cc.Method)
	}
	if _, err := measureCoreToCore(context.Background(), nil, two[:1], 64<<10, 0); err == nil {
		t.Error("one CPU: want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := measureCoreToCore(ctx, nil, two, 64<<10, 0); err == nil {
		t.Error("cancelled: want an error")
	}
}
