package pool

import "fmt"

// Master is the handle Pool.Do gives its function: Runs made through it
// treat the calling goroutine, which is worker 0 on its pinned thread, as
// that worker, so worker 0's share runs inline instead of being posted
// (OpenMP's master thread; ArcLight's thread 0). No thread then waits
// without working, and the waits spin on a CPU the master owns. A Master is
// valid only inside its Do and only on the goroutine Do called it on.
type Master struct {
	p *Pool
	w *worker
}

// Do runs f on worker 0's pinned thread and returns its error when it
// returns; the calling goroutine parks meanwhile. Inside f, Runs through the
// Master dispatch the other workers and take worker 0's share inline, which
// is the fast path when the workers occupy every CPU (the caller would
// otherwise be a thread too many). Do fails with ErrClosed after Close and
// with an error if worker 0 is busy (another Do, or a Run that includes it).
// A panic in f is returned as an error. While f runs, idle workers on
// CPUs of their own keep polling for its next Run (up to HeldSpin) instead
// of parking after Options.Spin.
func (p *Pool) Do(f func(m *Master) error) error {
	g := p.master
	if g == nil {
		return fmt.Errorf("pool: Do on a pool without workers")
	}
	w := g.workers[0]
	p.held.Add(1)
	defer p.held.Add(-1)
	return g.Run(func(int, int) error { return f(&Master{p: p, w: w}) })
}

// Worker returns the master's pool index (0).
func (m *Master) Worker() int { return m.w.index }

// Run is Group.Run with the master taking its own share inline when it
// belongs to g.
func (m *Master) Run(g *Group, f func(local, n int) error) error {
	if g.p != m.p {
		return fmt.Errorf("pool: Master.Run on a group of another pool")
	}
	return g.run(m.w, f)
}

// RunBlocks is Group.RunBlocks through the master (see Run).
func (m *Master) RunBlocks(g *Group, r Region, t Tile, f BlockFunc) error {
	return m.Run(g, g.blockTask(r, t, f))
}

// RunGroups is Pool.RunGroups through the master (see Run).
func (m *Master) RunGroups(tasks ...Task) (Timing, error) {
	return m.p.runGroups(m.w, tasks)
}

// RunSplit is Pool.RunSplit through the master (see Run).
func (m *Master) RunSplit(a *Group, blockA BlockFunc, b *Group, blockB BlockFunc, s Split) (Timing, error) {
	return m.p.runSplit(m.w, a, blockA, b, blockB, s)
}
