package probes

import (
	"context"
	"fmt"
	"time"

	"github.com/cpubench/bench/internal/noise"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
)

// Dispatch-section sizes: the hot fork-join is timed in batches of
// dispatchBatch calls (a sample is the batch's mean, so the clock's own
// cost is amortized), dispatchSamples batches per thread count; the wake-up
// is timed one call at a time, wakeSamples of them, each after an idle gap
// of wakeGapFactor × the pool's spin so that every worker has parked.
const (
	dispatchBatch   = 200
	dispatchSamples = 25
	wakeSamples     = 15
	wakeGapFactor   = 5
)

// dispatchThreads are the thread counts of the dispatch section: 1, 2, 4,
// … and all cores (quick: 1 and all cores).
func (r *runner) dispatchThreads() []int {
	return defaultThreads(r.plan.cores, r.cfg.Quick)
}

// dispatchSection measures the fixed cost of one parallel call on
// kernels/pool, the engine's worker pool, at each thread count (issue #16
// part 1): the fork-join of an empty task on spinning workers (dispatch +
// barrier; back-to-back operators) and one Pool.Do with such a fork-join
// after every worker parked (the first operator of a forward call after
// the caller ran alone). The pool is created here over the probe's first
// cores CPUs, like the matrix section's; the probe's own workers are idle
// meanwhile.
func (r *runner) dispatchSection(ctx context.Context) (*results.Dispatch, error) {
	workers := r.pool.workers[:r.plan.cores]
	out := &results.Dispatch{SpinSeconds: kpool.DefaultSpin.Seconds(),
		Method: fmt.Sprintf("kernels/pool with its default spin (%v) over pinned workers, the caller's loop on worker 0 (Pool.Do): "+
			"call = one Master.Run of an empty task over the first N workers, spinning (median of %d batches of %d back-to-back calls, each sample a batch's mean); "+
			"wake = one Pool.Do running one such call after an idle gap of %d× the spin, so every worker parked (median of %d)",
			kpool.DefaultSpin, dispatchSamples, dispatchBatch, wakeGapFactor, wakeSamples)}
	for _, t := range r.dispatchThreads() {
		pt, err := measureDispatch(ctx, cpusOf(workers[:t]))
		if err != nil {
			return nil, fmt.Errorf("dispatch threads=%d: %w", t, err)
		}
		out.Points = append(out.Points, pt)
		r.step(fmt.Sprintf("dispatch threads=%d", t))
	}
	return out, nil
}

// MeasureDispatch measures one thread count's fixed costs on a fresh
// kernels/pool pinned to cpus (see the dispatch section); `bench probe
// --only dispatch` runs it per thread count. Errors: the pool's (no CPU,
// closed) or ctx's.
func MeasureDispatch(ctx context.Context, cpus []int) (results.DispatchPoint, error) {
	return measureDispatch(ctx, cpus)
}

func measureDispatch(ctx context.Context, cpus []int) (results.DispatchPoint, error) {
	if len(cpus) == 0 {
		return results.DispatchPoint{}, fmt.Errorf("no CPU to run on")
	}
	p, err := kpool.New(kpool.Options{CPUs: cpus})
	if err != nil {
		return results.DispatchPoint{}, err
	}
	defer p.Close()
	pt := results.DispatchPoint{Threads: len(cpus), CPUs: cpus, Pinned: p.PinErr() == nil}
	g := p.All()
	empty := func(local, n int) error { return nil }

	// Hot: back-to-back calls inside one Do (warm-up batch first).
	var call []float64
	err = p.Do(func(ms *kpool.Master) error {
		for s := -1; s < dispatchSamples; s++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			st := time.Now()
			for range dispatchBatch {
				if err := ms.Run(g, empty); err != nil {
					return err
				}
			}
			if s >= 0 {
				call = append(call, time.Since(st).Seconds()/dispatchBatch)
			}
		}
		return nil
	})
	if err != nil {
		return results.DispatchPoint{}, err
	}

	// Cold: one Do + Run after the workers parked.
	gap := wakeGapFactor * kpool.DefaultSpin
	var wake []float64
	for s := -1; s < wakeSamples; s++ {
		if err := ctx.Err(); err != nil {
			return results.DispatchPoint{}, err
		}
		time.Sleep(gap)
		st := time.Now()
		err := p.Do(func(ms *kpool.Master) error { return ms.Run(g, empty) })
		if err != nil {
			return results.DispatchPoint{}, err
		}
		if s >= 0 {
			wake = append(wake, time.Since(st).Seconds())
		}
	}
	pt.CallSeconds = dispatchStat(call)
	pt.WakeSeconds = dispatchStat(wake)
	return pt, nil
}

// dispatchStat summarizes fixed-cost samples with a noise record (cv and
// load; no CPU fraction: the pool's workers park between calls).
func dispatchStat(s []float64) results.Stat {
	st := results.Summarize(s)
	n := results.Noise{CV: st.CV, LoadAvg1: noise.LoadAvg1(), Attempts: 1}
	noise.Judge(&n, false)
	st.Noise = &n
	return st
}
