package probes

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/results"
)

// A task is what one worker runs in one timed repetition: run executes one
// pass over the worker's buffers and returns the number of bytes the pass
// counts (STREAM convention) and a checksum.
type task struct {
	setup func(w *worker) error // runs on the pinned worker before timing
	run   func(w *worker) (bytes int64, sum float64)
	check func(w *worker, sum float64) error // runs after the rep, untimed
}

// repResult is one worker's outcome of one repetition.
type repResult struct {
	start, end time.Time
	bytes      int64
	passes     int64
	sum        float64
	err        error
	// cpu is the thread's CPU time over the timed loop in seconds (0 with
	// cpuOK false where the OS has no per-thread clock).
	cpu   float64
	cpuOK bool
}

type job struct {
	t        task
	d        time.Duration // timed duration
	warm     bool
	ready    *atomic.Int32 // barrier: workers increment, then spin until n
	n        int32
	out      chan<- repResult
	teardown bool
}

// worker is one goroutine locked to an OS thread pinned to one CPU. It owns
// its buffers (mapped with mmap and first touched by itself, so they live on
// its NUMA node unless a task binds them elsewhere).
type worker struct {
	cpu    int
	pinned bool
	jobs   chan job
	// arena is the worker's buffer; node is the node it is bound to (-1 =
	// first touch).
	arena []byte
	node  int
	// per-pass state for the task
	f64   [3][]float64
	u64   []uint64
	chase uint64
	steps int
	batch int64
	spare float64
	// layout names the buffer layout last set up, so a task's setup can
	// skip re-initializing identical arrays.
	layout string
}

// pool is a set of pinned workers, one per CPU.
type pool struct {
	workers []*worker
	pinErr  error
}

// newPool starts one pinned worker per CPU in cpus. A failure to pin is not
// fatal: the figures then say pinned=false and the error is kept in pinErr.
func newPool(cpus []int) *pool {
	p := &pool{}
	errs := make(chan error, len(cpus))
	for _, c := range cpus {
		w := &worker{cpu: c, jobs: make(chan job), node: -1}
		p.workers = append(p.workers, w)
		go w.loop(errs)
	}
	for range cpus {
		if err := <-errs; err != nil && p.pinErr == nil {
			p.pinErr = err
		}
	}
	return p
}

func (w *worker) loop(started chan<- error) {
	runtime.LockOSThread()
	err := affinity.Pin(w.cpu)
	w.pinned = err == nil
	started <- err
	for j := range w.jobs {
		if j.teardown {
			w.free()
			j.out <- repResult{}
			return
		}
		j.out <- w.do(j)
	}
}

func (w *worker) free() {
	if w.arena != nil {
		numa.Free(w.arena)
		w.arena = nil
	}
	w.layout = ""
	w.f64 = [3][]float64{}
	w.u64 = nil
}

// ensure makes the worker's arena at least size bytes, bound to node (-1 for
// first-touch placement), reallocating when needed.
func (w *worker) ensure(size int, node int) error {
	if w.arena != nil && len(w.arena) >= size && w.node == node {
		return nil
	}
	w.free()
	w.layout = ""
	var b []byte
	var err error
	if node < 0 {
		b, err = numa.Alloc(size)
	} else {
		b, err = numa.AllocOnNode(size, node)
	}
	if err != nil {
		return err
	}
	w.arena, w.node = b, node
	return nil
}

// do runs one repetition: setup (untimed), barrier, then passes until the
// duration has elapsed, then check (untimed). Each worker reads the clock
// itself, so no goroutine needs to wake during the timed region.
func (w *worker) do(j job) repResult {
	if j.t.setup != nil {
		if err := j.t.setup(w); err != nil {
			// Still join the barrier so the others are not stuck.
			j.ready.Add(1)
			return repResult{err: err}
		}
	}
	j.ready.Add(1)
	for j.ready.Load() < j.n {
		// spin: all workers start together
	}
	var r repResult
	if j.warm || w.batch <= 0 {
		w.batch = 1
	}
	cpu0, cpuOK := noise.ThreadCPU()
	start := time.Now()
	deadline := start.Add(j.d)
	var now time.Time
	for {
		for i := int64(0); i < w.batch; i++ {
			b, s := j.t.run(w)
			r.bytes += b
			r.sum = s
		}
		r.passes += w.batch
		now = time.Now()
		if !now.Before(deadline) {
			break
		}
	}
	r.start, r.end = start, now
	if cpu1, ok := noise.ThreadCPU(); ok && cpuOK {
		r.cpu, r.cpuOK = cpu1-cpu0, true
	}
	if j.warm {
		// Calibrate the batch so one batch takes about 50 µs: the clock is
		// read rarely and the overshoot past the deadline stays small.
		per := now.Sub(start).Seconds() / float64(r.passes)
		w.batch = max(1, int64(50e-6/per))
	}
	if j.t.check != nil {
		r.err = j.t.check(w, r.sum)
	}
	return r
}

// groupRep is the outcome of one repetition of a group of workers.
type groupRep struct {
	bytes   int64
	seconds float64 // max(end) - min(start)
	sum     float64 // checksum of the first worker
	// cpu and wall are the workers' thread CPU seconds and their own timed
	// seconds, summed over the group's workers (cpu 0 without a thread
	// clock: cpuOK false).
	cpu, wall float64
	cpuOK     bool
}

// run executes one repetition of t on the given workers concurrently (with
// more groups, see runGroups) and returns per-group totals.
func runGroups(ctx context.Context, groups [][]*worker, tasks []task, d time.Duration, warm bool) ([]groupRep, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	var ready atomic.Int32
	outs := make([]chan repResult, len(groups))
	for gi, g := range groups {
		outs[gi] = make(chan repResult, len(g))
		for _, w := range g {
			w.jobs <- job{t: tasks[gi], d: d, warm: warm, ready: &ready, n: int32(n), out: outs[gi]}
		}
	}
	reps := make([]groupRep, len(groups))
	var firstErr error
	for gi, g := range groups {
		var minStart, maxEnd time.Time
		for i := range g {
			r := <-outs[gi]
			if r.err != nil && firstErr == nil {
				firstErr = r.err
			}
			if i == 0 || r.start.Before(minStart) {
				minStart = r.start
			}
			if i == 0 || r.end.After(maxEnd) {
				maxEnd = r.end
			}
			if i == 0 {
				reps[gi].sum = r.sum
			}
			reps[gi].bytes += r.bytes
			reps[gi].cpu += r.cpu
			reps[gi].wall += r.end.Sub(r.start).Seconds()
			reps[gi].cpuOK = r.cpuOK && (i == 0 || reps[gi].cpuOK)
		}
		reps[gi].seconds = maxEnd.Sub(minStart).Seconds()
	}
	return reps, firstErr
}

// close stops the workers and unmaps their buffers.
func (p *pool) close() {
	out := make(chan repResult, len(p.workers))
	for _, w := range p.workers {
		w.jobs <- job{teardown: true, out: out}
	}
	for range p.workers {
		<-out
	}
}

// measured is the outcome of measureGroups: per group, the samples in GB/s
// (1e9 bytes/s) and the last checksum, and the figure's noise record.
type measured struct {
	samples [][]float64
	sums    []float64
	noise   results.Noise
}

// stat summarizes group gi's samples with the
// figure's noise record attached.
func (m measured) stat(gi int) results.Stat {
	st := results.Summarize(m.samples[gi])
	n := m.noise
	st.Noise = &n
	return st
}

// statOf summarizes values derived one-to-one from the samples (e.g.
// nanoseconds per load) with the figure's noise record attached.
func (m measured) statOf(values []float64) results.Stat {
	st := results.Summarize(values)
	n := m.noise
	st.Noise = &n
	return st
}

// noiseRetries is how many more times measureGroups measures a figure that
// came out noisy before it keeps the least noisy attempt with the mark.
const noiseRetries = 2

// measureGroups runs a warm-up and reps timed repetitions of the tasks on the
// groups concurrently and returns, per group, the bandwidth samples in GB/s
// (1e9 bytes/s), the last checksum and the noise record (issue #16 part 3):
// a figure whose threads got less than results.NoiseMinCPUFraction of their
// CPUs or whose repetitions spread more than results.NoiseMaxCV is measured
// again, at most noiseRetries more times, and the least noisy attempt is
// kept, still marked noisy if it fails a threshold.
//
// On more than one CPU, guard (nil: none) waits for the host to put the
// CPUs where the probe began before each attempt, and records the
// round trips beside it: an attempt the host moved the CPUs during is
// noisy too.
func measureGroups(ctx context.Context, guard *noise.PlacementGuard, groups [][]*worker, tasks []task, d time.Duration, reps int) (measured, error) {
	var best measured
	for attempt := 1; ; attempt++ {
		m, err := measureOnce(ctx, guard, groups, tasks, d, reps)
		if err != nil {
			return measured{}, err
		}
		m.noise.Attempts = attempt
		if attempt == 1 || noisier(best.noise, m.noise) {
			best = m
		}
		best.noise.Attempts = attempt
		if !best.noise.Noisy || attempt > noiseRetries {
			return best, nil
		}
	}
}

// noisier reports whether a is a worse attempt than b: noisy before clean,
// then the larger spread.
func noisier(a, b results.Noise) bool {
	if a.Noisy != b.Noisy {
		return a.Noisy
	}
	return a.CV > b.CV
}

// measureOnce is one attempt of measureGroups.
func measureOnce(ctx context.Context, guard *noise.PlacementGuard, groups [][]*worker, tasks []task, d time.Duration, reps int) (measured, error) {
	var cpus []int
	for _, g := range groups {
		for _, w := range g {
			cpus = append(cpus, w.cpu)
		}
	}
	placeBefore, err := guard.Before(ctx, cpus)
	if err != nil {
		return measured{}, err
	}
	if _, err := runGroups(ctx, groups, tasks, d/2, true); err != nil {
		return measured{}, err
	}
	steal0, total0, ticksOK := noise.CPUTicks(cpus)
	m := measured{samples: make([][]float64, len(groups)), sums: make([]float64, len(groups))}
	var cpu, wall float64
	cpuOK := true
	for range reps {
		rs, err := runGroups(ctx, groups, tasks, d, false)
		if err != nil {
			return measured{}, err
		}
		for gi, r := range rs {
			if r.seconds <= 0 {
				return measured{}, fmt.Errorf("probe: non-positive duration measured")
			}
			m.samples[gi] = append(m.samples[gi], float64(r.bytes)/r.seconds/1e9)
			m.sums[gi] = r.sum
			cpu += r.cpu
			wall += r.wall
			cpuOK = cpuOK && r.cpuOK
		}
	}
	n := &m.noise
	if cpuOK && wall > 0 {
		n.CPUFraction = cpu / wall
	}
	if steal1, total1, ok := noise.CPUTicks(cpus); ok && ticksOK && total1 > total0 {
		n.StealFraction = float64(steal1-steal0) / float64(total1-total0)
	}
	n.LoadAvg1 = noise.LoadAvg1()
	for _, s := range m.samples {
		n.CV = max(n.CV, results.Summarize(s).CV)
	}
	placeAfter, err := guard.After(ctx, cpus)
	if err != nil {
		return measured{}, err
	}
	guard.Record(n, placeBefore, placeAfter)
	noise.Judge(n, cpuOK)
	return m, nil
}
