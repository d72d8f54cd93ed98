package probes

import (
	"context"
	"fmt"
	"time"

	"github.com/cpubench/bench/kernels/peak"
	"github.com/cpubench/bench/results"
)

// Compute-section constants.
const (
	// computeOpsPerCall is the work of one pass of a compute kernel (one
	// Run call): about 0.2 ms on one AVX2 core, so the per-call set-up
	// (filling and summing the accumulators, under 1 µs) costs < 0.5%.
	computeOpsPerCall = 16e6
	// computeMinIters keeps passes of the matrix kernels (64K ops per
	// iteration) near 0.1 ms too.
	computeMinIters = 4096
	// freqMinRep is the shortest timed repetition of the clock measurement.
	freqMinRep = 20 * time.Millisecond
)

// computeThreads is the thread counts every compute kernel is measured at:
// 1 and all cores.
func (r *runner) computeThreads() []int {
	if r.plan.cores > 1 {
		return []int{1, r.plan.cores}
	}
	return []int{1}
}

// computeSteps is the number of progress steps of the compute section: the
// clock, then one per available kernel and thread count.
func (r *runner) computeSteps() int {
	n := 1
	for _, k := range peak.Kernels() {
		if k.Unavailable == "" {
			n += len(r.computeThreads())
		}
	}
	return n
}

// computeIters is the number of loop iterations of one pass of k.
func computeIters(k peak.Kernel) int {
	return max(int(computeOpsPerCall/float64(k.OpsPerIter)), computeMinIters)
}

// computeTask runs k for iters iterations per pass; a pass counts
// OpsPerIter x iters ops, so measureGroups' samples are G ops/s (GFLOP/s or
// GOP/s), and every rep's last checksum must equal the Go model's.
func computeTask(k peak.Kernel) task {
	iters := computeIters(k)
	ops := k.OpsPerIter * int64(iters)
	want := k.Model(iters)
	return task{
		run: func(*worker) (int64, float64) { return ops, k.Run(iters) },
		check: func(_ *worker, sum float64) error {
			if sum != want {
				return fmt.Errorf("compute %s: checksum %v after %d iterations, model %v", k.Name, sum, iters, want)
			}
			return nil
		},
	}
}

// measureClock times peak.AddChain (a chain of dependent 1-cycle integer
// adds) on the first worker and returns the clock in Hz and a description.
// Each pass (256K adds, about 0.1 ms) is timed on its own and the fastest
// pass wins: a time slice lost to another process or the hypervisor (ms
// scale) only ever slows a pass, so the best short window is the clock even
// on a shared machine, where a whole-rep average would understate it.
func (r *runner) measureClock(ctx context.Context) (float64, string, error) {
	if _, ok := peak.AddChain(1); !ok {
		return 0, "unavailable: this build has no assembly (tag purego), so no clock measurement", nil
	}
	const iters = 1 << 12
	var best float64 // adds per second; written by the one worker, read after measureGroups
	passes := 0
	t := task{run: func(*worker) (int64, float64) {
		t0 := time.Now()
		n, _ := peak.AddChain(iters)
		if dt := time.Since(t0).Seconds(); dt > 0 {
			best = max(best, float64(n)/dt)
		}
		passes++
		return int64(n), float64(n)
	}, check: func(_ *worker, sum float64) error {
		if sum != iters*peak.AddChainLen {
			return fmt.Errorf("clock: add chain returned %v, want %d", sum, iters*peak.AddChainLen)
		}
		return nil
	}}
	w := r.pool.workers[0]
	d := max(r.cfg.RepDuration, freqMinRep)
	if _, err := measureGroups(ctx, r.place, [][]*worker{{w}}, []task{t}, d, r.cfg.Reps); err != nil {
		return 0, "", fmt.Errorf("compute clock: %w", err)
	}
	pin := "pinned"
	if !w.pinned {
		pin = "unpinned"
	}
	src := fmt.Sprintf("dependent-add chain (ADD reg,reg, 1 cycle latency) timed against the OS monotonic clock on %s CPU %d, 1 thread: fastest of %d passes of %d adds over %d reps of at least %v; /sys cpufreq not used",
		pin, w.cpu, passes, iters*peak.AddChainLen, r.cfg.Reps, d)
	return best, src, nil
}

// computeSection measures every available compute kernel at 1 thread and at
// all cores on pinned workers: warm-up plus r.cfg.Reps timed reps of at least
// r.cfg.RepDuration, each checked against the kernel's Go model. The
// theoretical rate is OpsPerInstruction x IPC x clock x threads, with the
// clock measured at 1 thread (an all-core or wide-vector clock below it makes
// the fraction smaller, never larger than what the core delivered per
// measured cycle).
func (r *runner) computeSection(ctx context.Context) (*results.Compute, error) {
	c := &results.Compute{Peaks: []results.ComputePeak{}}
	hz, src, err := r.measureClock(ctx)
	if err != nil {
		return nil, err
	}
	c.FrequencyHz, c.FrequencySource = hz, src
	r.step("compute clock")
	for _, k := range peak.Kernels() {
		if k.Unavailable != "" {
			c.Unavailable = append(c.Unavailable, results.Unavailable{Kernel: k.Name, Why: k.Unavailable})
			continue
		}
		for _, threads := range r.computeThreads() {
			p, err := r.measurePeak(ctx, k, r.pool.workers[:threads], hz)
			if err != nil {
				return nil, err
			}
			c.Peaks = append(c.Peaks, p)
			r.step(fmt.Sprintf("compute %s threads=%d", k.Name, threads))
		}
	}
	return c, nil
}

// measurePeak measures k on the given workers; hz is the clock for the
// theoretical rate (0: unknown).
func (r *runner) measurePeak(ctx context.Context, k peak.Kernel, ws []*worker, hz float64) (results.ComputePeak, error) {
	m, err := measureGroups(ctx, r.place, [][]*worker{ws}, []task{computeTask(k)}, r.cfg.RepDuration, r.cfg.Reps)
	if err != nil {
		return results.ComputePeak{}, fmt.Errorf("compute %s threads=%d: %w", k.Name, len(ws), err)
	}
	p := results.ComputePeak{
		Kernel: k.Name, ISA: k.ISA, Instruction: k.Instruction, Precision: k.Precision, Unit: k.Unit,
		Threads: len(ws), CPUs: cpusOf(ws), Pinned: allPinned(ws),
		Accumulators: k.Accumulators, OpsPerInstruction: k.OpsPerInstruction,
		Rate: m.stat(0), IPC: k.IPC, Checksum: m.sums[0],
	}
	p.TheoreticalRate = theoreticalRate(k, hz, len(ws))
	if p.TheoreticalRate > 0 {
		p.AchievedFraction = p.Rate.Median / p.TheoreticalRate
	}
	return p, nil
}

// theoreticalRate is OpsPerInstruction x IPC x hz x threads in G ops/s, 0
// when the IPC or the clock is unknown.
func theoreticalRate(k peak.Kernel, hz float64, threads int) float64 {
	return float64(k.OpsPerInstruction) * k.IPC * hz * float64(threads) / 1e9
}
