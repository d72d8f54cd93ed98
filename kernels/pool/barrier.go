package pool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Barrier makes n parties wait for each other inside one task, e.g. the
// workers of one group between two phases of an operator (ArcLight's local
// barrier) or every worker of a RunGroups (its global barrier; all groups
// must then be running). Wait spins up to the spin given to NewBarrier, then
// parks. A Barrier is reusable: the n Waits of one phase release together,
// and the next phase begins with the next n.
type Barrier struct {
	n     int32
	spin  time.Duration
	count atomic.Int32
	gen   atomic.Uint32
	mu    sync.Mutex
	cond  sync.Cond
}

// NewBarrier returns a barrier for n ≥ 1 parties that spins for up to spin
// (0: DefaultSpin; negative: none) before parking.
func NewBarrier(n int, spin time.Duration) (*Barrier, error) {
	if n < 1 || n > 1<<30 {
		return nil, fmt.Errorf("pool: barrier of %d parties: must be between 1 and %d", n, 1<<30)
	}
	b := &Barrier{n: int32(n), spin: spinOrDefault(spin, DefaultSpin)}
	b.cond.L = &b.mu
	return b, nil
}

// Wait returns once n parties have called Wait in this phase.
func (b *Barrier) Wait() {
	g := b.gen.Load()
	if b.count.Add(1) == b.n {
		b.count.Store(0)
		b.mu.Lock()
		b.gen.Add(1)
		b.cond.Broadcast()
		b.mu.Unlock()
		return
	}
	if _, ok := spinUntil(func() (struct{}, bool) { return struct{}{}, b.gen.Load() != g }, b.spin); ok {
		return
	}
	b.mu.Lock()
	for b.gen.Load() == g {
		b.cond.Wait()
	}
	b.mu.Unlock()
}
