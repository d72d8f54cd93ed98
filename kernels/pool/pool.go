package pool

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpubench/bench/internal/affinity"
)

// Default spin budgets (see Options).
const (
	DefaultSpin       = 200 * time.Microsecond
	DefaultCallerSpin = 50 * time.Microsecond
	// HeldSpin bounds how long an idle worker keeps polling while a Do
	// holds the pool (its master is about to post the next operator):
	// past it the worker parks as it would outside a Do.
	HeldSpin = 50 * time.Millisecond
)

// ErrClosed is returned by every Run after Close.
var ErrClosed = errors.New("pool: closed")

// Options configure New.
type Options struct {
	// CPUs lists the CPU each worker is pinned to, one worker per entry; a
	// CPU may repeat (oversubscription, for tests). Empty means one worker
	// per CPU of affinity.Allowed, or, where that fails, runtime.NumCPU
	// unpinned workers.
	CPUs []int
	// Spin is how long an idle worker polls for its next job before it
	// parks (0: DefaultSpin; negative: park at once). Spinning buys a
	// dispatch latency of well under a microsecond while the engine issues
	// operators back to back, at the price of burning the CPU for Spin after
	// the last one. While a Do holds the pool, a worker pinned to a CPU
	// other than the master's keeps polling past Spin, up to HeldSpin: a
	// forward call's operators follow each other, and a worker that
	// finished its share of a long, unevenly split operator more than Spin
	// before the others would otherwise park and make the next operator
	// pay its wake-up (hundreds of µs on a VM; issue #16).
	Spin time.Duration
	// CallerSpin is how long Run's caller polls for the join before it
	// parks (0: DefaultCallerSpin; negative: park at once).
	CallerSpin time.Duration
	// KeepGOMAXPROCS leaves GOMAXPROCS alone. By default New raises it to
	// the number of workers + 1 when it is lower, so that spinning workers
	// cannot hold every P and starve the caller (see the package doc).
	KeepGOMAXPROCS bool
}

// Pool is a set of workers, each a goroutine locked to its OS thread and
// pinned to a CPU. Runs on disjoint groups may proceed concurrently from
// different goroutines; a Run that needs a worker busy in another Run fails
// (it never waits). Close ends the workers.
type Pool struct {
	workers    []*worker
	pinErr     error
	spin       time.Duration
	callerSpin time.Duration
	epoch      time.Time // origin of the workers' monotonic end stamps
	all        *Group
	master     *Group       // worker 0 alone, for Do
	held       atomic.Int32 // Dos in progress: idle workers poll up to HeldSpin
	masterCPU  int          // worker 0's CPU (set before any worker starts)

	closeOnce sync.Once
	closed    atomic.Bool
	exited    sync.WaitGroup
}

// worker is one pinned goroutine. The dispatcher writes job, then bumps seq;
// the worker, seeing seq change, copies job. The dispatcher writes job again
// only after the worker has reported completion of the previous one, so the
// two never race.
type worker struct {
	index  int
	cpu    int
	pinned bool

	_        [64]byte
	seq      atomic.Uint64
	sleeping atomic.Bool
	job      job
	_        [64]byte
	busy     atomic.Bool // claimed by a Run (or by Close, for good)
	wake     chan struct{}
}

type job struct {
	f     func(local, n int) error
	local int
	n     int
	run   *runState
	quit  bool
}

// runState is the join of one Group: pending counts workers still running;
// the last to finish signals a parked caller. It is reused by every Run of
// the group; gen tells a late signal from a previous Run from the current one.
type runState struct {
	pending atomic.Int32
	waiting atomic.Uint64 // gen the caller is parked for; 0 = none
	gen     uint64        // written by the caller only
	done    chan struct{} // cap 1
	errs    []error       // per local index; written by its worker before it decrements pending
	ends    []int64       // per local index: ns since epoch when it finished, if timed
	timed   bool
}

// New starts the workers and waits until each has tried to pin itself. A
// failure to pin is not fatal: the worker runs unpinned and PinErr reports
// it. The error is for options that cannot make a pool (none today: every
// CPU list, even one of unknown CPUs, makes one).
func New(o Options) (*Pool, error) {
	cpus := o.CPUs
	var pinErr error
	if len(cpus) == 0 {
		allowed, err := affinity.Allowed()
		if err != nil || len(allowed) == 0 {
			pinErr = fmt.Errorf("pool: no CPU list: %v", err)
			cpus = make([]int, runtime.NumCPU())
			for i := range cpus {
				cpus[i] = -1
			}
		} else {
			cpus = allowed
		}
	}
	p := &Pool{
		spin:       spinOrDefault(o.Spin, DefaultSpin),
		callerSpin: spinOrDefault(o.CallerSpin, DefaultCallerSpin),
		epoch:      time.Now(),
		masterCPU:  -1,
	}
	if len(cpus) > 0 {
		p.masterCPU = cpus[0]
	}
	if !o.KeepGOMAXPROCS && runtime.GOMAXPROCS(0) < len(cpus)+1 {
		runtime.GOMAXPROCS(len(cpus) + 1)
	}
	started := make(chan error, len(cpus))
	for i, c := range cpus {
		w := &worker{index: i, cpu: c, wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		p.exited.Add(1)
		go p.loop(w, started)
	}
	var errs []error
	if pinErr != nil {
		errs = append(errs, pinErr)
	}
	for range cpus {
		if err := <-started; err != nil {
			errs = append(errs, err)
		}
	}
	p.pinErr = errors.Join(errs...)
	idx := make([]int, len(cpus))
	for i := range idx {
		idx[i] = i
	}
	p.all = p.newGroup(idx)
	if len(idx) > 0 {
		p.master = p.newGroup(idx[:1])
	}
	return p, nil
}

func spinOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Size returns the number of workers.
func (p *Pool) Size() int { return len(p.workers) }

// CPUs returns the CPU of each worker (-1: none was given).
func (p *Pool) CPUs() []int {
	out := make([]int, len(p.workers))
	for i, w := range p.workers {
		out[i] = w.cpu
	}
	return out
}

// Pinned reports, per worker, whether pinning its thread succeeded.
func (p *Pool) Pinned() []bool {
	out := make([]bool, len(p.workers))
	for i, w := range p.workers {
		out[i] = w.pinned
	}
	return out
}

// PinErr returns the pinning failures of the workers joined (nil if every
// worker is pinned), each naming its worker and CPU.
func (p *Pool) PinErr() error { return p.pinErr }

// All returns the group of every worker, in index order.
func (p *Pool) All() *Group { return p.all }

// Close waits for Runs in flight, then ends the workers and waits for them
// to exit. The workers' goroutines exit still locked to their threads, so
// the runtime discards the pinned threads. Later Runs return ErrClosed.
// Close is idempotent and safe to call concurrently.
func (p *Pool) Close() {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		for _, w := range p.workers {
			// Claim for good; wait out a Run in flight.
			for !w.busy.CompareAndSwap(false, true) {
				time.Sleep(10 * time.Microsecond)
			}
			w.post(job{quit: true})
		}
		p.exited.Wait()
	})
}

// loop is a worker's goroutine: lock, pin, then run jobs until quit. It
// never unlocks its thread.
func (p *Pool) loop(w *worker, started chan<- error) {
	defer p.exited.Done()
	runtime.LockOSThread()
	var err error
	if w.cpu >= 0 {
		if err = affinity.Pin(w.cpu); err != nil {
			err = fmt.Errorf("pool: worker %d: %w", w.index, err)
		}
	} else {
		err = fmt.Errorf("pool: worker %d: no CPU to pin to", w.index)
	}
	w.pinned = err == nil
	started <- err
	var last uint64
	// Polling through a Do only helps where the worker has a CPU of its
	// own: one sharing the master's (an oversubscribed pool) would take
	// its cycles.
	holdSpin := p.spin > 0 && w.pinned && w.cpu != p.masterCPU
	for {
		last = w.await(last, p.spin, holdSpin, &p.held)
		j := w.job
		if j.quit {
			return
		}
		p.complete(w, &j)
	}
}

// complete runs j on w (the calling goroutine is w's) and reports it to the
// join: error and end stamp first, then the decrement, after which j.run
// belongs to the next Run.
func (p *Pool) complete(w *worker, j *job) {
	rs := j.run
	gen := rs.gen
	rs.errs[j.local] = w.call(j)
	if rs.timed {
		rs.ends[j.local] = int64(time.Since(p.epoch))
	}
	if rs.pending.Add(-1) == 0 {
		rs.signal(gen)
	}
}

// call runs the job's function, turning a panic into an error that names
// the worker and carries the stack.
func (w *worker) call(j *job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pool: worker %d (CPU %d): panic: %v\n%s", w.index, w.cpu, r, debug.Stack())
		}
	}()
	if err := j.f(j.local, j.n); err != nil {
		return fmt.Errorf("pool: worker %d (CPU %d): %w", w.index, w.cpu, err)
	}
	return nil
}

// post hands j to w, which must be claimed by the caller and idle.
func (w *worker) post(j job) {
	w.job = j
	w.seq.Add(1)
	if w.sleeping.Load() {
		select {
		case w.wake <- struct{}{}:
		default: // a token is already pending
		}
	}
}

// await returns the worker's sequence number once it differs from last:
// polling for up to spin (and, with hold, for as long as held is positive,
// up to HeldSpin), then parking. A wake-up token may be stale (sent to a
// worker that had already seen its job); the loop re-checks.
func (w *worker) await(last uint64, spin time.Duration, hold bool, held *atomic.Int32) uint64 {
	changed := func() (uint64, bool) { s := w.seq.Load(); return s, s != last }
	if s, ok := spinUntil(changed, spin); ok {
		return s
	}
	if hold && held.Load() > 0 {
		start := time.Now()
		for held.Load() > 0 && time.Since(start) < HeldSpin {
			if s, ok := spinUntil(changed, spin); ok {
				return s
			}
		}
	}
	for {
		// Swap, not Store: the flag must be globally visible before seq is
		// re-read (the Dekker pair with post's Add then Load). Go's Store is
		// sequentially consistent, but qemu-user's translation of arm64
		// STLR;LDAR on an x86 host lets the load pass the store, and a CI
		// run under qemu lost a wake-up that way; an atomic read-modify-write
		// is a full barrier everywhere.
		w.sleeping.Swap(true)
		if s := w.seq.Load(); s != last {
			w.sleeping.Store(false)
			return s
		}
		<-w.wake
	}
}

// spinUntil polls cond for up to d, reading the clock every 64 polls.
func spinUntil[T any](cond func() (T, bool), d time.Duration) (T, bool) {
	if v, ok := cond(); ok || d <= 0 {
		return v, ok
	}
	start := time.Now()
	for i := 1; ; i++ {
		if v, ok := cond(); ok {
			return v, true
		}
		if i&63 == 0 && time.Since(start) > d {
			var zero T
			return zero, false
		}
	}
}

// signal wakes the caller if it is parked for generation gen.
func (rs *runState) signal(gen uint64) {
	if rs.waiting.Load() == gen {
		select {
		case rs.done <- struct{}{}:
		default:
		}
	}
}

// wait returns when every worker of the current generation has finished.
func (rs *runState) wait(spin time.Duration) {
	if _, ok := spinUntil(func() (struct{}, bool) { return struct{}{}, rs.pending.Load() == 0 }, spin); ok {
		return
	}
	for {
		rs.waiting.Swap(rs.gen) // a full barrier before the re-check: see worker.await
		if rs.pending.Load() == 0 {
			rs.waiting.Store(0)
			return
		}
		<-rs.done
	}
}
