package probes

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// BandwidthConfig selects single bandwidth figures for `bench bandwidth`:
// every combination of kernel, working set and thread count.
type BandwidthConfig struct {
	Kernels     []string // "read", "write", "write_nt", "copy", "triad"
	WorkingSets []int64  // total bytes over all arrays and threads
	Threads     []int
	ISA         string // "" = best available
	Reps        int    // ≥ 5; default 7
	RepDuration time.Duration
	Roots       topology.Roots
	Progress    Progress
}

// Bandwidth measures each requested figure with the memory section's
// machinery (pinned threads, mmap buffers, warm-up, median of Reps). Errors
// name the bad kernel, thread count or ISA, or a working set that does not
// fit in the memory this process may use (memlimit.Check), before
// anything is measured.
func Bandwidth(ctx context.Context, cfg BandwidthConfig) ([]results.Bandwidth, error) {
	if cfg.Reps == 0 {
		cfg.Reps = 7
	}
	if cfg.Reps < 5 {
		return nil, fmt.Errorf("--reps %d: must be at least 5", cfg.Reps)
	}
	if cfg.RepDuration == 0 {
		cfg.RepDuration = 20 * time.Millisecond
	}
	if cfg.Roots == (topology.Roots{}) {
		cfg.Roots = topology.LiveRoots()
	}
	var ks []memKernel
	for _, name := range cfg.Kernels {
		k, err := memKernelByName(name)
		if err != nil {
			return nil, fmt.Errorf("--kernel: %w", err)
		}
		ks = append(ks, k)
	}
	topo, err := topology.ReadTopology(cfg.Roots)
	if err != nil {
		return nil, err
	}
	order, err := cpuOrder(topo)
	if err != nil {
		return nil, err
	}
	for _, t := range cfg.Threads {
		if t < 1 || t > len(order) {
			return nil, fmt.Errorf("--threads %d: must be between 1 and %d", t, len(order))
		}
	}
	lim, _ := memlimit.Available()
	for _, ws := range cfg.WorkingSets {
		if ws < 4096 {
			return nil, fmt.Errorf("--ws %d: must be at least 4 KiB", ws)
		}
		if err := lim.Check(fmt.Sprintf("--ws %s: the working set's arrays", sizeText(ws)), memlimit.Of(uint64(ws))); err != nil {
			return nil, err
		}
	}
	r := &runner{cfg: Config{Reps: cfg.Reps, RepDuration: cfg.RepDuration}, topo: topo, prog: cfg.Progress}
	if r.prog == nil {
		r.prog = nopProgress{}
	}
	if cfg.ISA == "" {
		r.impl = kernels.BestMem()
	} else if r.impl, err = kernels.MemImplByISA(cfg.ISA); err != nil {
		return nil, fmt.Errorf("--isa %s: %w", cfg.ISA, err)
	}
	if prev := runtime.GOMAXPROCS(0); prev < len(order)+1 {
		runtime.GOMAXPROCS(len(order) + 1)
		defer runtime.GOMAXPROCS(prev)
	}
	r.pool = newPool(order)
	defer r.pool.close()
	r.prog.Start(len(ks) * len(cfg.WorkingSets) * len(cfg.Threads))
	defer r.prog.Finish()
	var out []results.Bandwidth
	for _, t := range cfg.Threads {
		for _, ws := range cfg.WorkingSets {
			for _, k := range ks {
				b, err := r.measureBandwidth(ctx, k, ws, t, -1)
				if err != nil {
					return nil, err
				}
				out = append(out, b)
				r.step(fmt.Sprintf("%s %s x%d", k.name, sizeText(ws), t))
			}
		}
	}
	return out, nil
}
