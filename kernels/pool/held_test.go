package pool

import (
	"testing"
	"time"

	"github.com/cpubench/bench/internal/affinity"
)

// TestHeldWorkersDoNotPark: inside a Do, a worker on a CPU of its own keeps
// polling through an idle gap far longer than Spin (here 10 µs against a
// 2 ms gap, well under HeldSpin), so the next Run finds it awake; after
// the Do it parks as before. A worker sharing the master's CPU parks
// inside a Do too.
func TestHeldWorkersDoNotPark(t *testing.T) {
	allowed, err := affinity.Allowed()
	if err != nil || len(allowed) < 2 {
		t.Skip("needs 2 CPUs")
	}
	for _, c := range []struct {
		name string
		cpus []int
		hold bool
	}{{"own CPU", allowed[:2], true}, {"master's CPU", []int{allowed[0], allowed[0]}, false}} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(Options{CPUs: c.cpus, Spin: 10 * time.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if !p.workers[1].pinned {
				t.Skip("worker 1 not pinned")
			}
			empty := func(int, int) error { return nil }
			var parked bool
			err = p.Do(func(ms *Master) error {
				if err := ms.Run(p.All(), empty); err != nil {
					return err
				}
				if c.hold {
					time.Sleep(2 * time.Millisecond)
				} else {
					// Waited for, not timed: it parks once it has run.
					deadline := time.Now().Add(10 * time.Second)
					for !p.workers[1].sleeping.Load() && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
				}
				parked = p.workers[1].sleeping.Load()
				return ms.Run(p.All(), empty)
			})
			if err != nil {
				t.Fatal(err)
			}
			if parked == c.hold {
				t.Errorf("worker 1 parked inside the Do: %v, want %v", parked, !c.hold)
			}
			// Outside a Do the worker parks after its spin (waited for,
			// not timed: a loaded machine may take long to run it).
			deadline := time.Now().Add(10 * time.Second)
			for !p.workers[1].sleeping.Load() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if !p.workers[1].sleeping.Load() {
				t.Error("worker 1 did not park after the Do")
			}
		})
	}
}
