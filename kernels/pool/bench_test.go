package pool

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkForkJoin measures one empty fork-join over every worker on hot
// workers: the dispatch and join overhead the engine pays per operator.
// mode=master runs inside Pool.Do (the caller is worker 0); mode=caller runs
// Group.Run from an outside goroutine, one thread more than the workers.
// Worker counts above the machine's CPUs are skipped: spinning
// oversubscribed threads measures the OS scheduler, not the pool.
func BenchmarkForkJoin(b *testing.B) {
	f := func(local, n int) error { return nil }
	for _, n := range []int{1, 2, 4, 8, 16} {
		for _, mode := range []string{"master", "caller"} {
			b.Run(fmt.Sprintf("mode=%s/workers=%d", mode, n), func(b *testing.B) {
				if n > runtime.NumCPU() {
					b.Skipf("%d workers > %d CPUs", n, runtime.NumCPU())
				}
				p := newPool(b, n)
				g := p.All()
				b.ReportAllocs()
				if mode == "caller" {
					for b.Loop() {
						if err := g.Run(f); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				err := p.Do(func(m *Master) error {
					for b.Loop() {
						if err := m.Run(g, f); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkRunSplit measures the overhead of a split fork-join (two groups,
// empty blocks) through the master.
func BenchmarkRunSplit(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	p := newPool(b, 2)
	gs, _ := p.Groups(1, 1)
	s, _ := PlanSplit(64, 4096, 1, 1, Tile{6, 16}, Tile{16, 32})
	k := func(w, m0, m1, n0, n1 int) error { return nil }
	b.ReportAllocs()
	err := p.Do(func(m *Master) error {
		for b.Loop() {
			if _, err := m.RunSplit(gs[0], k, gs[1], k, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
