package probes

import (
	"context"
	"fmt"

	"github.com/cpubench/bench/results"
)

// sharedSpec is one shared-bandwidth experiment: both groups run kernel k,
// each over wsPerThread bytes per thread.
type sharedSpec struct {
	name        string
	k           memKernel
	wsPerThread int64
}

// sharedSection runs two pinned thread groups (the first and second half of
// the cores) alone and together, SMEPilot §3.1: a DRAM-resident read, whose
// bandwidth is shared, and a core-local (L2-resident) read, which adds up
// like compute.
func (r *runner) sharedSection(ctx context.Context) (*results.SharedBandwidth, error) {
	all := r.pool.workers[:r.plan.cores]
	if len(all) < 2 {
		return &results.SharedBandwidth{Unavailable: fmt.Sprintf("unavailable: needs at least 2 cores, have %d", len(all))}, nil
	}
	half := len(all) / 2
	groups := [][]*worker{all[:half], all[half:]}
	s := &results.SharedBandwidth{}
	d := 2 * r.cfg.RepDuration
	for _, spec := range r.plan.shared {
		exp := results.SharedExperiment{}
		alone := make([]results.Stat, 2)
		tasks := make([]task, 2)
		for gi, g := range groups {
			n := elemsPerArray(spec.wsPerThread*int64(len(g)), len(g), spec.k)
			tasks[gi] = memTask(r.impl, spec.k, n, -1)
			m, err := measureGroups(ctx, r.place, [][]*worker{g}, []task{tasks[gi]}, d, r.cfg.Reps)
			if err != nil {
				return nil, fmt.Errorf("shared %s group %d alone: %w", spec.name, gi, err)
			}
			alone[gi] = m.stat(0)
		}
		m, err := measureGroups(ctx, r.place, groups, tasks, d, r.cfg.Reps)
		if err != nil {
			return nil, fmt.Errorf("shared %s together: %w", spec.name, err)
		}
		for gi, g := range groups {
			tog := m.stat(gi)
			exp.Groups = append(exp.Groups, results.GroupRun{
				Name:            fmt.Sprintf("%s/%c", spec.name, 'A'+gi),
				Kernel:          spec.k.name,
				CPUs:            cpusOf(g),
				WorkingSetBytes: spec.wsPerThread * int64(len(g)),
				Alone:           alone[gi],
				Together:        tog,
			})
			exp.SumAloneGBps += alone[gi].Median
			exp.TogetherGBps += tog.Median
		}
		if exp.SumAloneGBps > 0 {
			exp.Additivity = exp.TogetherGBps / exp.SumAloneGBps
		}
		s.Experiments = append(s.Experiments, exp)
		r.step("shared " + spec.name)
	}
	return s, nil
}
