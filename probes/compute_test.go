package probes

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/peak"
	"github.com/cpubench/bench/results"
)

type countProgress struct {
	steps []string
}

func (c *countProgress) Start(int)        {}
func (c *countProgress) Step(desc string) { c.steps = append(c.steps, desc) }
func (c *countProgress) Finish()          {}

// The compute section measures every available kernel at 1 thread and all
// cores, with verified checksums, and lists the others with their reason.
func TestComputeSection(t *testing.T) {
	r := newTestRunner(t, kernels.BestMem())
	r.plan.cores = len(r.pool.workers)
	prog := &countProgress{}
	r.prog = prog
	c, err := r.computeSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.steps) != r.computeSteps() {
		t.Errorf("%d progress steps, computeSteps says %d: %v", len(prog.steps), r.computeSteps(), prog.steps)
	}
	_, asm := peak.AddChain(1)
	if asm && (c.FrequencyHz < 2e8 || c.FrequencyHz > 8e9 || !strings.Contains(c.FrequencySource, "dependent-add")) {
		t.Errorf("clock %v Hz from %q", c.FrequencyHz, c.FrequencySource)
	}
	if !asm && (c.FrequencyHz != 0 || !strings.HasPrefix(c.FrequencySource, "unavailable")) {
		t.Errorf("purego clock %v Hz from %q", c.FrequencyHz, c.FrequencySource)
	}
	want := map[string]bool{}
	for _, k := range peak.Kernels() {
		if k.Unavailable == "" {
			want[k.Name] = true
		}
	}
	seen := map[string][]int{}
	for _, p := range c.Peaks {
		seen[p.Kernel] = append(seen[p.Kernel], p.Threads)
		if p.Rate.N != r.cfg.Reps || p.Rate.Median <= 0 || len(p.CPUs) != p.Threads {
			t.Errorf("%s threads=%d: %+v", p.Kernel, p.Threads, p)
		}
		if p.Checksum == 0 || math.IsNaN(p.Checksum) {
			t.Errorf("%s: checksum %v", p.Kernel, p.Checksum)
		}
		if p.IPC > 0 && asm {
			if p.TheoreticalRate <= 0 || math.Abs(p.AchievedFraction-p.Rate.Median/p.TheoreticalRate) > 1e-12 {
				t.Errorf("%s: theoretical %v fraction %v", p.Kernel, p.TheoreticalRate, p.AchievedFraction)
			}
			// A fraction far above 1 means a wrong IPC or clock (an IPC off
			// by 2x shows as 2). Loose: the test's reps are 1 ms, and under
			// `go test ./...` other packages share the CPUs, which can only
			// lower the measured clock and so raise the fraction a little.
			if p.AchievedFraction > 1.5 {
				t.Errorf("%s threads=%d: %.2f of the theoretical rate", p.Kernel, p.Threads, p.AchievedFraction)
			}
		}
		if p.IPC == 0 && (p.TheoreticalRate != 0 || p.AchievedFraction != 0) {
			t.Errorf("%s: unknown IPC but theoretical %v", p.Kernel, p.TheoreticalRate)
		}
	}
	for name := range want {
		if got := seen[name]; len(got) != len(r.computeThreads()) {
			t.Errorf("%s measured at threads %v, want %v", name, got, r.computeThreads())
		}
	}
	for _, u := range c.Unavailable {
		if want[u.Kernel] || !strings.HasPrefix(u.Why, "unavailable: ") {
			t.Errorf("unavailable entry %+v", u)
		}
	}
	if len(c.Peaks)/len(r.computeThreads())+len(c.Unavailable) != len(peak.Kernels()) {
		t.Errorf("%d peaks + %d unavailable for %d kernels", len(c.Peaks), len(c.Unavailable), len(peak.Kernels()))
	}
}

// With AVX2 disabled no AVX2/AVX-512/AMX kernel runs; they are listed as
// unavailable.
func TestComputeDisabledISA(t *testing.T) {
	defer cpu.DisableAVX2()()
	defer cpu.DisableSVE()()
	r := newTestRunner(t, kernels.BestMem())
	r.plan.cores = 1
	c, err := r.computeSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Peaks {
		switch p.ISA {
		case "avx2", "avx512", "avx_vnni", "amx", "sve", "sme":
			t.Errorf("%s ran with AVX2/SVE disabled", p.Kernel)
		}
	}
	for _, k := range peak.Kernels() {
		if k.ISA == "avx2" && !containsKernel(c.Unavailable, k.Name) {
			t.Errorf("%s not listed unavailable", k.Name)
		}
	}
}

func containsKernel(us []results.Unavailable, name string) bool {
	for _, u := range us {
		if u.Kernel == name {
			return true
		}
	}
	return false
}

// A kernel whose checksum disagrees with its model fails the measurement.
func TestComputeChecksumCatchesError(t *testing.T) {
	var k peak.Kernel
	for _, c := range peak.Kernels() {
		if c.Unavailable == "" {
			k = c
			break
		}
	}
	if k.Run == nil {
		t.Skip("no compute kernel available")
	}
	run := k.Run
	k.Run = func(iters int) float64 { return run(iters) + 1 }
	r := newTestRunner(t, kernels.BestMem())
	if _, err := r.measurePeak(context.Background(), k, r.pool.workers[:1], 0); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("err = %v, want checksum error", err)
	}
}

func TestTheoreticalRate(t *testing.T) {
	k := peak.Kernel{OpsPerInstruction: 32, IPC: 2}
	// 32 FLOP x 2 per cycle x 2.7 GHz x 2 threads = 345.6 GFLOP/s
	if got := theoreticalRate(k, 2.7e9, 2); math.Abs(got-345.6) > 1e-9 {
		t.Fatalf("got %v", got)
	}
	if got := theoreticalRate(peak.Kernel{OpsPerInstruction: 32}, 2.7e9, 2); got != 0 {
		t.Fatalf("unknown IPC: %v", got)
	}
}

// TestComputeJSON writes {"compute": <section>} to the file named by
// BENCH_COMPUTE_JSON, measured with the default reps (7 x 20 ms): a stand-in
// for `bench probe --only compute --json -` until the command runs the
// section; scripts/compare-likwid-peak.sh can use it through
// BENCH_COMPUTE_CMD.
func TestComputeJSON(t *testing.T) {
	out := os.Getenv("BENCH_COMPUTE_JSON")
	if out == "" {
		t.Skip("BENCH_COMPUTE_JSON not set")
	}
	r := newTestRunner(t, kernels.BestMem())
	r.cfg.Reps, r.cfg.RepDuration = 7, 20*time.Millisecond
	r.plan.cores = len(r.pool.workers)
	c, err := r.computeSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(struct {
		Compute *results.Compute `json:"compute"`
	}{c}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
