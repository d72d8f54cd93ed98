package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/cpubench/bench/engine"
)

// The NUMA flags of `bench run` (engine/numa.go; ArcLight §2.3–3.4).

func addNUMAFlags(f *pflag.FlagSet, o *runOptions) {
	f.StringVar(&o.NUMA, "numa", "os", "NUMA policy (ArcLight §2.3–3.4): os (memory by first touch), interleave (pages interleaved over the nodes of the threads), local (each thread's weight rows and activations bound to its node) or tp (cross-NUMA tensor parallelism, one thread group per node)")
	f.IntVar(&o.TPDegree, "tp", 0, "--numa tp: thread groups (0: one per NUMA node of the threads); must divide the query and KV heads")
	f.StringVar(&o.Sync, "sync", "", "--numa tp: a (global barrier per operator) or b (group-local barriers, global only at the Gathers; default)")
}

func (o *runOptions) validateNUMA() error {
	p, err := engine.ParseNUMAPolicy(o.NUMA)
	if err != nil {
		return fmt.Errorf("run: --numa: %w", err)
	}
	if _, err := engine.ParseSyncMode(o.Sync); err != nil {
		return fmt.Errorf("run: --sync: %w", err)
	}
	switch {
	case o.TPDegree < 0:
		return fmt.Errorf("run: --tp %d: must be ≥ 0 (0: one group per NUMA node)", o.TPDegree)
	case o.TPDegree > 0 && p != engine.NUMATP:
		return fmt.Errorf("run: --tp %d: only with --numa tp", o.TPDegree)
	case o.Sync != "" && p != engine.NUMATP:
		return fmt.Errorf("run: --sync %s: only with --numa tp", o.Sync)
	}
	return nil
}
