package pool

import (
	"errors"
	"fmt"
	"time"
)

// Group is a view of a subset of a pool's workers (ArcLight §3: one pool,
// many logical thread groups). Groups are cheap: making one starts no
// thread, and views that overlap may coexist; only their Runs may not
// overlap in time (the later one fails). One Group must not be Run from two
// goroutines at once.
type Group struct {
	p       *Pool
	workers []*worker
	index   []int
	rs      runState
}

func (p *Pool) newGroup(index []int) *Group {
	g := &Group{p: p, index: index}
	for _, i := range index {
		g.workers = append(g.workers, p.workers[i])
	}
	g.rs.done = make(chan struct{}, 1)
	g.rs.errs = make([]error, len(index))
	g.rs.ends = make([]int64, len(index))
	return g
}

// Groups cuts the pool into consecutive groups of the given sizes: with
// sizes 2, 3 the first group is workers 0–1 and the second 2–4. Sizes must
// be ≥ 1 and sum to at most Size(); workers left over belong to no group.
func (p *Pool) Groups(sizes ...int) ([]*Group, error) {
	parts := make([][]int, len(sizes))
	next := 0
	for gi, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("pool: group %d of sizes %v: size %d must be ≥ 1", gi, sizes, s)
		}
		if next+s > len(p.workers) {
			return nil, fmt.Errorf("pool: group sizes %v: sum exceeds the pool's %d workers", sizes, len(p.workers))
		}
		for range s {
			parts[gi] = append(parts[gi], next)
			next++
		}
	}
	return p.View(parts)
}

// View makes one group per entry of parts, each listing worker indices
// (0 ≤ i < Size()). The groups of one view are disjoint: an index may appear
// only once across parts. Empty parts are an error.
func (p *Pool) View(parts [][]int) ([]*Group, error) {
	seen := make(map[int]int)
	groups := make([]*Group, len(parts))
	for gi, part := range parts {
		if len(part) == 0 {
			return nil, fmt.Errorf("pool: view %v: group %d is empty", parts, gi)
		}
		for _, i := range part {
			if i < 0 || i >= len(p.workers) {
				return nil, fmt.Errorf("pool: view %v: worker %d out of range [0, %d)", parts, i, len(p.workers))
			}
			if prev, dup := seen[i]; dup {
				return nil, fmt.Errorf("pool: view %v: worker %d in groups %d and %d", parts, i, prev, gi)
			}
			seen[i] = gi
		}
		groups[gi] = p.newGroup(append([]int(nil), part...))
	}
	return groups, nil
}

// Size returns the number of workers in the group.
func (g *Group) Size() int { return len(g.workers) }

// Workers returns the pool indices of the group's workers, in local order:
// the worker with local index l is pool worker Workers()[l].
func (g *Group) Workers() []int { return append([]int(nil), g.index...) }

// CPUs returns the CPU of each worker of the group, in local order.
func (g *Group) CPUs() []int {
	out := make([]int, len(g.workers))
	for i, w := range g.workers {
		out[i] = w.cpu
	}
	return out
}

// Run calls f(local, n) on every worker of the group, local = 0..n-1 and
// n = Size(), and returns when all have returned: the group-local barrier.
// It returns the error of the lowest local index that failed, wrapped with
// the worker and CPU ("pool: worker 3 (CPU 3): ..."; a panic in f becomes
// such an error with the stack), ErrClosed after Close, or an error naming
// the worker if one is busy in another Run.
//
// The calling goroutine waits (spinning up to Options.CallerSpin, then
// parked). When the workers occupy every CPU, prefer Pool.Do and
// Master.Run, which make the caller one of the workers.
func (g *Group) Run(f func(local, n int) error) error {
	return g.run(nil, f)
}

func (g *Group) run(self *worker, f func(local, n int) error) error {
	local, err := g.start(self, f, false)
	if err != nil {
		return err
	}
	g.inline(self, local, f)
	return g.finish(self)
}

// start claims the group's workers and posts f to them, except to self (the
// master, already claimed by Do), whose local index it returns (-1 if self
// is not in the group).
func (g *Group) start(self *worker, f func(local, n int) error, timed bool) (int, error) {
	if err := g.claim(self); err != nil {
		return -1, err
	}
	rs := &g.rs
	rs.gen++
	rs.timed = timed
	n := len(g.workers)
	rs.pending.Store(int32(n))
	selfLocal := -1
	for l, w := range g.workers {
		if w == self {
			selfLocal = l
			continue
		}
		w.post(job{f: f, local: l, n: n, run: rs})
	}
	return selfLocal, nil
}

// inline runs the master's own share (local ≥ 0) on the calling goroutine.
func (g *Group) inline(self *worker, local int, f func(local, n int) error) {
	if local < 0 {
		return
	}
	g.p.complete(self, &job{f: f, local: local, n: len(g.workers), run: &g.rs})
}

// finish waits for the join, releases the workers and returns the first
// error by local index.
func (g *Group) finish(self *worker) error {
	_, err := g.join(self)
	return err
}

// join is finish that also returns the latest end stamp of a timed run
// (ns since the pool's epoch). Everything the workers wrote to the run
// state is read before they are released: once released, another Run may
// claim them and they write it again.
func (g *Group) join(self *worker) (time.Duration, error) {
	rs := &g.rs
	spin := g.p.callerSpin
	if self != nil {
		spin = g.p.spin // the master owns its CPU
	}
	rs.wait(spin)
	var first error
	for i, err := range rs.errs {
		if err != nil {
			first = err
			clear(rs.errs[i:])
			break
		}
	}
	end := time.Duration(0)
	if rs.timed {
		for _, e := range rs.ends {
			end = max(end, time.Duration(e))
		}
	}
	for _, w := range g.workers {
		if w != self {
			w.busy.Store(false)
		}
	}
	return end, first
}

func (g *Group) claim(self *worker) error {
	if g.p.closed.Load() {
		return ErrClosed
	}
	for i, w := range g.workers {
		if w == self {
			continue
		}
		if !w.busy.CompareAndSwap(false, true) {
			for _, u := range g.workers[:i] {
				if u != self {
					u.busy.Store(false)
				}
			}
			if g.p.closed.Load() {
				return ErrClosed
			}
			return fmt.Errorf("pool: worker %d (CPU %d) is busy in another Run", w.index, w.cpu)
		}
	}
	return nil
}

// Task is one group's share of RunGroups: F runs on every worker of Group
// as in Group.Run.
type Task struct {
	Group *Group
	F     func(local, n int) error
}

// Timing is what RunGroups measured, in seconds on the monotonic clock.
type Timing struct {
	// Seconds is, per task, the time from just before its group was
	// dispatched until its last worker returned.
	Seconds []float64
	// Makespan is the time from the first dispatch until the last worker of
	// any group returned.
	Makespan float64
}

// RunGroups runs every task's function on its group concurrently and
// returns when all groups are done: the global barrier (ArcLight §3, Fig. 6;
// within each task the groups proceed asynchronously, the "Sync B" of
// Fig. 9). The groups must be disjoint. A task with a nil Group or F is
// skipped and timed 0. Errors are joined over the groups, each as Run
// reports it; a group that could not start leaves the others to run to
// completion first.
func (p *Pool) RunGroups(tasks ...Task) (Timing, error) {
	return p.runGroups(nil, tasks)
}

func (p *Pool) runGroups(self *worker, tasks []Task) (Timing, error) {
	t := Timing{Seconds: make([]float64, len(tasks))}
	started := make([]time.Duration, len(tasks))
	ok := make([]bool, len(tasks))
	mine, mineLocal := -1, -1
	var errs []error
	for i, task := range tasks {
		if task.Group == nil || task.F == nil {
			continue
		}
		if task.Group.p != p {
			errs = append(errs, fmt.Errorf("pool: task %d: group of another pool", i))
			continue
		}
		started[i] = time.Since(p.epoch)
		local, err := task.Group.start(self, task.F, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if local >= 0 {
			mine, mineLocal = i, local
		}
		ok[i] = true
	}
	if mine >= 0 {
		tasks[mine].Group.inline(self, mineLocal, tasks[mine].F)
	}
	first, last := time.Duration(-1), time.Duration(0)
	for i, task := range tasks {
		if !ok[i] {
			continue
		}
		g := task.Group
		end, err := g.join(self)
		if err != nil {
			errs = append(errs, err)
		}
		t.Seconds[i] = (end - started[i]).Seconds()
		if first < 0 {
			first = started[i]
		}
		last = max(last, end)
	}
	if first >= 0 {
		t.Makespan = (last - first).Seconds()
	}
	return t, errors.Join(errs...)
}
