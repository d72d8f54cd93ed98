package probes

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/cpubench/bench/internal/hugepage"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// DRAMCheck is one re-measurement of a profile's DRAM read roof.
type DRAMCheck struct {
	Now, Profile results.Stat // GB/s (1e9 B/s): re-measured and the profile's
	Kernel       string       // "read" or "read_pf"
	Pages        string       // "huge (MADV_HUGEPAGE)" or "4 KiB"
	WorkingSets  []int64      // bytes over all threads, one median each
	Threads      int
}

// CheckDRAMRoof re-measures the DRAM read roof of profile p at threads
// threads, the way the probe measured it (p's memory.dram record for that
// thread count: its kernel and pages, each of its working sets once —
// the probe took the median over rounds of them, and on a VM the rate
// moves with the working set —, pinned threads in the probe's CPU order,
// median of 5 repetitions of 20 ms after a warm-up each; Now is the median
// of the working sets' medians): a check that the host's memory bandwidth
// has not moved since the probe (issue #16 part 3), taking about a second
// for 2 GiB of working sets. Errors: p has no DRAM roof at threads
// (which says so), threads beyond the allowed CPUs, memory this process
// may not use, ctx's error.
func CheckDRAMRoof(ctx context.Context, p *results.Profile, threads int) (DRAMCheck, error) {
	return checkDRAMRoof(ctx, p, threads, false)
}

// checkDRAMRoof is CheckDRAMRoof; largest measures only the largest of
// the roof's working sets (the quick check MeasureBesideRoof takes twice
// per figure; the largest, because a profile probed before dramMinWS may
// list smaller sets that were partly cache on a virtual machine).
func checkDRAMRoof(ctx context.Context, p *results.Profile, threads int, largest bool) (DRAMCheck, error) {
	var roof *results.DRAMRoof
	if p != nil && p.Memory != nil {
		for i := range p.Memory.DRAM {
			if p.Memory.DRAM[i].Threads == threads && p.Memory.DRAM[i].GBps.Median > 0 {
				roof = &p.Memory.DRAM[i]
			}
		}
	}
	if roof == nil {
		return DRAMCheck{}, fmt.Errorf("the profile has no DRAM read roof at %d threads (memory.dram)", threads)
	}
	wss := roof.WorkingSets
	if len(wss) == 0 {
		return DRAMCheck{}, fmt.Errorf("the profile's DRAM read roof at %d threads lists no working set", threads)
	}
	if largest {
		wss = []int64{slices.Max(wss)}
	}
	lim, _ := memlimit.Available()
	if err := lim.Check(fmt.Sprintf("the DRAM roof check's %s", sizeText(slices.Max(wss))), memlimit.Of(uint64(slices.Max(wss)))); err != nil {
		return DRAMCheck{}, err
	}
	topo, err := topology.ReadTopology(topology.LiveRoots())
	if err != nil {
		return DRAMCheck{}, err
	}
	order, err := cpuOrder(topo)
	if err != nil {
		return DRAMCheck{}, err
	}
	if threads < 1 || threads > len(order) {
		return DRAMCheck{}, fmt.Errorf("DRAM roof check at %d threads: this process may run on %d CPUs", threads, len(order))
	}
	r := &runner{cfg: Config{Reps: 5, RepDuration: 20 * time.Millisecond}, topo: topo, prog: nopProgress{}, impl: kernels.BestMem()}
	if prev := runtime.GOMAXPROCS(0); prev < threads+1 {
		runtime.GOMAXPROCS(threads + 1)
		defer runtime.GOMAXPROCS(prev)
	}
	r.pool = newPool(order[:threads])
	defer r.pool.close()
	pages := roof.Pages
	if pages == pagesHuge && !hugepage.Allowed() {
		pages = pagesSmall
	}
	ck := DRAMCheck{Profile: roof.GBps, Kernel: roof.Kernel, Pages: pages, Threads: threads}
	var medians []float64
	for _, ws := range wss {
		b, err := r.measureDRAMCandidate(ctx, dramCandidate{roof.Kernel, pages}, ws, threads)
		if err != nil {
			return DRAMCheck{}, err
		}
		// Each working set's buffers go before the next is built.
		for _, w := range r.pool.workers {
			w.free()
		}
		medians = append(medians, b.GBps.Median)
		ck.WorkingSets = append(ck.WorkingSets, b.WorkingSetBytes)
	}
	ck.Now = results.Summarize(medians)
	return ck, nil
}
