package noise

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		n     results.Noise
		cpuOK bool
		noisy bool
		why   string
	}{
		{results.Noise{CPUFraction: 0.99, CV: 0.02}, true, false, ""},
		{results.Noise{CPUFraction: 0.60, CV: 0.02}, true, true, "threads got 60% of their CPUs"},
		{results.Noise{CPUFraction: 0.99, CV: 0.62}, true, true, "cv 62.0% > 10%"},
		// Without a CPU clock only the spread can mark a figure.
		{results.Noise{CV: 0.02}, false, false, ""},
		{results.Noise{CV: 0.2}, false, true, "cv 20.0%"},
		// Steal alone is reported with a noisy figure, not a reason by itself.
		{results.Noise{CPUFraction: 0.99, CV: 0.02, StealFraction: 0.05}, true, false, ""},
		{results.Noise{CPUFraction: 0.99, CV: 0.3, StealFraction: 0.05}, true, true, "steal 5.0%"},
	} {
		n := c.n
		Judge(&n, c.cpuOK)
		if n.Noisy != c.noisy || !strings.Contains(n.Why, c.why) || (!c.noisy && n.Why != "") {
			t.Errorf("Judge(%+v, %v) = noisy %v %q, want %v containing %q", c.n, c.cpuOK, n.Noisy, n.Why, c.noisy, c.why)
		}
	}
}

func TestCPUTicks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	steal, total, ok := CPUTicks([]int{0})
	if !ok || total == 0 || steal > total {
		t.Fatalf("CPUTicks(cpu0) = %d, %d, %v", steal, total, ok)
	}
	if _, _, ok := CPUTicks([]int{1 << 20}); ok {
		t.Fatal("CPUTicks of a CPU that does not exist must fail")
	}
}

// TestMeter: a span of one busy thread gets a CPU fraction in (0, 1.5]
// on Linux; a Meter that never ran marks nothing by its CPU.
func TestMeter(t *testing.T) {
	if n := NewMeter([]int{0}, 1).Noise(0.01); n.Noisy || n.CPUFraction != 0 || n.Attempts != 1 {
		t.Errorf("unused meter: %+v", n)
	}
	m := NewMeter([]int{0}, 1)
	m.Start()
	x := 0.0
	for i := range 20_000_000 {
		x += math.Sqrt(float64(i))
	}
	m.Stop()
	n := m.Noise(0)
	if runtime.GOOS == "linux" && (n.CPUFraction <= 0 || n.CPUFraction > 1.5) {
		t.Errorf("busy span: CPU fraction %v (x %g)", n.CPUFraction, x)
	}
	if (n.Why != "") != n.Noisy {
		t.Errorf("noisy %v, why %q", n.Noisy, n.Why)
	}
}

// TestSuccessiveCV: independent draws of cv 5% around a level that
// doubles over the series give about 5% (the drift adds little), where
// the plain cv is far larger; keys split the pairs; too few pairs give 0.
func TestSuccessiveCV(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 2000)
	for i := range xs {
		xs[i] = (1 + float64(i)/float64(len(xs))) * (1 + 0.05*rng.NormFloat64())
	}
	cv, pairs := SuccessiveCV(xs, nil)
	if pairs != len(xs)-1 || cv < 0.045 || cv > 0.055 {
		t.Errorf("SuccessiveCV = %.4f over %d pairs, want ≈ 0.05 over %d", cv, pairs, len(xs)-1)
	}
	if plain := results.Summarize(xs).CV; plain < 0.15 {
		t.Errorf("plain cv %.3f: the drift should dominate it", plain)
	}
	// Two interleaved levels: keyed pairs see only their own level.
	ys, keys := make([]float64, 400), make([]int, 400)
	for i := range ys {
		keys[i] = i / 100 % 2
		ys[i] = float64(1+9*keys[i]) * (1 + 0.02*rng.NormFloat64())
	}
	if cv, _ := SuccessiveCV(ys, keys); cv > 0.03 {
		t.Errorf("keyed SuccessiveCV = %.4f, want ≈ 0.02", cv)
	}
	if cv, n := SuccessiveCV([]float64{1, 2}, nil); cv != 0 || n != 1 {
		t.Errorf("one pair: %v, %d", cv, n)
	}
}

// TestCPUShare: a run that leaves its CPUs idle by itself is not
// contended; CPU time taken by other processes or stolen is.
func TestCPUShare(t *testing.T) {
	for _, c := range []struct {
		name      string
		cpu, wall float64
		t         Ticks
		want      float64
	}{
		// 2 CPUs for 2 s = 400 ticks; this process used 2 CPU s (200
		// ticks), the rest idle: nothing taken from it.
		{"idle by itself", 2, 2, Ticks{Idle: 200, Total: 400}, 1},
		// Others busy 100 ticks, 40 stolen: 1 − 140/400.
		{"others and steal", 2, 2, Ticks{Idle: 60, Steal: 40, Total: 400}, 0.65},
		// Too few ticks to judge: the process's own share, 0.1 / (0.1 × 2).
		{"short span", 0.1, 0.1, Ticks{Idle: 10, Total: 20}, 0.5},
	} {
		if got := cpuShare(c.cpu, c.wall, 2, c.t); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: cpuShare = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestJudgeDRAMDrift: a DRAM roof re-measured beside a run more than
// results.NoiseMaxRoofDrift from the profile's marks the run noisy with
// both figures; within it, or unchecked, it does not.
func TestJudgeDRAMDrift(t *testing.T) {
	for _, c := range []struct {
		now, prof float64
		noisy     bool
	}{
		{0, 0, false}, {50, 0, false}, {54, 50, false}, {46, 50, false}, {56, 50, true}, {40, 50, true},
	} {
		n := results.Noise{CPUFraction: 0.99, CV: 0.02, Attempts: 1, DRAMNowGBps: c.now, DRAMProfileGBps: c.prof}
		Judge(&n, true)
		if n.Noisy != c.noisy {
			t.Errorf("now %v, profile %v: noisy %v (%q), want %v", c.now, c.prof, n.Noisy, n.Why, c.noisy)
		}
		if c.noisy && !strings.Contains(n.Why, "DRAM read roof now") {
			t.Errorf("now %v, profile %v: why %q does not name the DRAM roof", c.now, c.prof, n.Why)
		}
	}
}

// TestJudgeGEMMDrift: an attained GEMM rate re-measured beside a run more
// than results.NoiseMaxRoofDrift from the profile's marks the run noisy,
// naming the backend; within it, or unchecked, it does not.
func TestJudgeGEMMDrift(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		noisy bool
	}{
		{0, false}, {1.05, false}, {0.95, false}, {1.2, true}, {0.8, true},
	} {
		n := results.Noise{CPUFraction: 0.99, CV: 0.02, Attempts: 1, GEMMRatio: c.ratio, GEMMBackend: "avx512-fp32"}
		Judge(&n, true)
		if n.Noisy != c.noisy {
			t.Errorf("ratio %v: noisy %v (%q), want %v", c.ratio, n.Noisy, n.Why, c.noisy)
		}
		if c.noisy && !strings.Contains(n.Why, "attained GEMM (avx512-fp32)") {
			t.Errorf("ratio %v: why %q does not name the GEMM check", c.ratio, n.Why)
		}
		// The same ratio at a long prefill's rows alone, the small
		// points' at 1.
		r := results.Noise{CPUFraction: 0.99, CV: 0.02, Attempts: 1, GEMMRatio: 1, GEMMBackend: "avx512-fp32", GEMMRowsRatio: c.ratio, GEMMRowsShape: "2048×3072×1024"}
		Judge(&r, true)
		if r.Noisy != c.noisy || (c.noisy && !strings.Contains(r.Why, "at the prefill's rows (2048×3072×1024)")) {
			t.Errorf("rows ratio %v: noisy %v (%q), want %v naming the shape", c.ratio, r.Noisy, r.Why, c.noisy)
		}
	}
}
