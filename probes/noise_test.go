package probes

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/results"
)

func TestJudgeNoise(t *testing.T) {
	for _, c := range []struct {
		n     results.Noise
		cpuOK bool
		noisy bool
		why   string
	}{
		{results.Noise{CPUFraction: 0.99, CV: 0.02}, true, false, ""},
		{results.Noise{CPUFraction: 0.60, CV: 0.02}, true, true, "threads got 60% of their CPUs"},
		{results.Noise{CPUFraction: 0.99, CV: 0.62}, true, true, "cv 62.0% > 10%"},
		// Without a thread clock only the spread can mark a figure.
		{results.Noise{CV: 0.02}, false, false, ""},
		{results.Noise{CV: 0.2}, false, true, "cv 20.0%"},
		// Steal alone is reported with a noisy figure, not a reason by itself.
		{results.Noise{CPUFraction: 0.99, CV: 0.02, StealFraction: 0.05}, true, false, ""},
		{results.Noise{CPUFraction: 0.99, CV: 0.3, StealFraction: 0.05}, true, true, "steal 5.0%"},
	} {
		n := c.n
		judgeNoise(&n, c.cpuOK)
		if n.Noisy != c.noisy || !strings.Contains(n.Why, c.why) || (!c.noisy && n.Why != "") {
			t.Errorf("judgeNoise(%+v, %v) = noisy %v %q, want %v containing %q", c.n, c.cpuOK, n.Noisy, n.Why, c.noisy, c.why)
		}
	}
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
	m, err := measureGroups(context.Background(), [][]*worker{p.workers}, []task{spin}, 2*time.Millisecond, 5)
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

func TestCPUTicks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	steal, total, ok := cpuTicks([]int{0})
	if !ok || total == 0 || steal > total {
		t.Fatalf("cpuTicks(cpu0) = %d, %d, %v", steal, total, ok)
	}
	if _, _, ok := cpuTicks([]int{1 << 20}); ok {
		t.Fatal("cpuTicks of a CPU that does not exist must fail")
	}
}
