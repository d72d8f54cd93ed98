package probes

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/kernels"
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
		pt, err := measureDispatch(ctx, r.place, cpusOf(workers[:t]))
		if err != nil {
			return nil, fmt.Errorf("dispatch threads=%d: %w", t, err)
		}
		out.Points = append(out.Points, pt)
		r.step(fmt.Sprintf("dispatch threads=%d", t))
	}
	evict := int64(64 << 20)
	if llc := r.caches.size[3]; llc > 0 {
		evict = max(evict, 4*llc)
	}
	cv, err := measureColdVector(ctx, workers[0].cpu, evict, coldEvictions(evict, r.plan.maxWS, r.cfg.Quick))
	if err != nil {
		return nil, fmt.Errorf("dispatch cold vector: %w", err)
	}
	out.ColdVector = &cv
	if r.plan.cores >= 2 {
		call := 0.0
		for _, pt := range out.Points {
			if pt.Threads == r.plan.cores {
				call = pt.CallSeconds.Median
			}
		}
		cc, err := measureCoreToCore(ctx, r.place, cpusOf(workers), coreToCoreBytes, call)
		if err != nil {
			return nil, fmt.Errorf("dispatch core to core: %w", err)
		}
		out.CoreToCore = &cc
		r.step("dispatch core to core")
	}
	return out, nil
}

// Core-to-core reads: each worker's buffer (an activation slice of a
// prefill operator's share: a 1024-wide model's 64 rows) and the samples
// of each figure.
const (
	coreToCoreBytes   = 256 << 10
	coreToCoreSamples = 31
)

// measureCoreToCore measures results.CoreToCore on a kernels/pool pinned
// to cpus (at least two): per sample, every worker writes its own buffer
// of bytes (the best memory kernel's regular stores), then, in one timed
// fork-join, reads its neighbour's buffer (the read kernel); and the same
// with each reading its own. call (the fork-join's hot cost at these
// threads, seconds) is subtracted from each sample. guard (nil: none)
// records the round trips before and after: the figure is core-to-core
// traffic. Errors: the pool's or ctx's.
func measureCoreToCore(ctx context.Context, guard *noise.PlacementGuard, cpus []int, bytes int64, call float64) (results.CoreToCore, error) {
	n := len(cpus)
	mem := kernels.BestMem()
	cc := results.CoreToCore{Threads: n, CPUs: cpus, Bytes: bytes,
		Method: fmt.Sprintf("kernels/pool over %d pinned workers: each writes its own %s (%s stores), then all read their neighbour's (worker k reads worker k+1's, cyclically; %s read kernel) in one fork-join, timed; local: each reads its own instead; GB/s = %d × %s / (the fork-join's time − its hot cost, %.2f µs); median of %d samples each after a warm-up",
			n, sizeText(bytes), mem.ISA, mem.ISA, n, sizeText(bytes), call*1e6, coreToCoreSamples)}
	if n < 2 {
		return cc, fmt.Errorf("core to core: %d CPU(s): needs 2", n)
	}
	placeBefore, err := guard.Before(ctx, cpus)
	if err != nil {
		return cc, err
	}
	p, err := kpool.New(kpool.Options{CPUs: cpus})
	if err != nil {
		return cc, err
	}
	defer p.Close()
	bufs := make([][]float64, n)
	for i := range bufs {
		bufs[i] = make([]float64, bytes/8)
	}
	runtime.GC() // as measureColdVector: no mark workers beside the samples
	sums := [2][]float64{make([]float64, n), make([]float64, n)}
	secs := [2][]float64{}
	g := p.All()
	err = p.Do(func(ms *kpool.Master) error {
		for s := -1; s < coreToCoreSamples; s++ {
			for k, shift := range []int{1, 0} {
				if err := ctx.Err(); err != nil {
					return err
				}
				v := float64(s + k)
				if err := ms.Run(g, func(local, _ int) error { mem.Write(bufs[local], v); return nil }); err != nil {
					return err
				}
				st := time.Now()
				if err := ms.Run(g, func(local, n int) error {
					sums[k][local] += mem.Read(bufs[(local+shift)%n])
					return nil
				}); err != nil {
					return err
				}
				el := time.Since(st).Seconds()
				d := el - call
				if d <= 0 { // a sample shorter than the fork-join's median
					d = el
				}
				if s >= 0 {
					secs[k] = append(secs[k], float64(n)*float64(bytes)/d/1e9)
				}
			}
		}
		return nil
	})
	if err != nil {
		return cc, err
	}
	for _, s := range sums {
		for _, x := range s {
			coldSink += uint64(x)
		}
	}
	placeAfter, err := guard.After(ctx, cpus)
	if err != nil {
		return cc, err
	}
	cc.GBps = dispatchStat(secs[0], guard, placeBefore, placeAfter)
	cc.LocalGBps = dispatchStat(secs[1], guard, placeBefore, placeAfter)
	return cc, nil
}

// Cold vector call: a residual add of coldElems floats (a small model's
// hidden size), coldSamples times, each after an eviction read; at the
// other eviction sizes (coldEvictions) coldSamplesOther times.
const (
	coldElems        = 1024
	coldSamples      = 41
	coldSamplesOther = 21
)

// coldEvictions are the eviction sizes of the cold vector call besides the
// main one, evict: 16 MiB, 256 MiB and 1 GiB (quick: 4× evict alone),
// each at most maxWS (the largest working set this probe may allocate) and
// none equal to evict. A decode step streams between two calls of one
// operator one layer's weights (tens of MB to GB) or, before the first
// layer, the LM head's as well: the call's time grows with what streamed.
func coldEvictions(evict, maxWS int64, quick bool) []int64 {
	sizes := []int64{16 << 20, 256 << 20, 1 << 30}
	if quick {
		sizes = []int64{4 * evict}
	}
	var out []int64
	for _, s := range sizes {
		if s != evict && s <= maxWS {
			out = append(out, s)
		}
	}
	return out
}

// measureColdVector times one residual add (kernels.AxpyRows, acc += v) of
// coldElems floats on a kernels/pool worker pinned to cpu, each sample
// right after reading evict bytes of other memory (one load per 64-byte
// line), so that acc and v come from DRAM as in a decode step; the
// clock's own cost (two reads back to back, median) is subtracted. It
// times the same call after reads of each of others' sizes too (Points,
// ascending, evict's included).
func measureColdVector(ctx context.Context, cpu int, evict int64, others []int64) (results.ColdVector, error) {
	sizes := slices.Sorted(slices.Values(append([]int64{evict}, others...)))
	sizes = slices.Compact(sizes)
	cv := results.ColdVector{Elems: coldElems, Bytes: 3 * 4 * coldElems, EvictBytes: evict,
		Method: fmt.Sprintf("one residual add (acc += v, kernels.AxpyRows) of %d fp32 elements on a pinned kernels/pool worker, after reading %s of other memory (one load per line) before each of %d samples; the clock's own cost subtracted",
			coldElems, sizeText(evict), coldSamples)}
	if len(sizes) > 1 {
		var txt []string
		for _, s := range sizes {
			txt = append(txt, sizeText(s))
		}
		cv.Method += fmt.Sprintf("; points: the same after reads of %s (%d samples each but the main one's)", strings.Join(txt, ", "), coldSamplesOther)
	}
	p, err := kpool.New(kpool.Options{CPUs: []int{cpu}})
	if err != nil {
		return cv, err
	}
	defer p.Close()
	secs := make([][]float64, len(sizes))
	var sink uint64
	err = p.Do(func(*kpool.Master) error {
		buf := make([]uint64, sizes[len(sizes)-1]/8)
		for i := range buf {
			buf[i] = uint64(i)
		}
		acc, v, one := make([]float32, coldElems), make([]float32, coldElems), []float32{1}
		for i := range acc {
			acc[i], v[i] = float32(i%7), float32(i%5)
		}
		// The buffer's allocation may have started a garbage collection,
		// whose mark workers (on the other CPUs, over the probe's whole
		// heap) would share the caches and memory with the timed calls:
		// finish it first (measured here with a 400 MB heap of pointers:
		// 6.6 and 5.7 µs after 256 MiB and 1 GiB while it ran, 2.5–2.9
		// after). The samples below allocate too little to start another.
		runtime.GC()
		var clock []float64
		for range coldSamples {
			st := time.Now()
			clock = append(clock, time.Since(st).Seconds())
		}
		c0 := results.Summarize(clock).Median
		for k, size := range sizes {
			n := coldSamplesOther
			if size == evict {
				n = coldSamples
			}
			ev := buf[:size/8]
			for s := -1; s < n; s++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				for i := 0; i < len(ev); i += 8 {
					sink += ev[i]
				}
				st := time.Now()
				kernels.AxpyRows(acc, one, v, 0)
				if d := time.Since(st).Seconds() - c0; s >= 0 {
					secs[k] = append(secs[k], max(d, 0))
				}
			}
		}
		return nil
	})
	if err != nil {
		return cv, err
	}
	coldSink += sink
	for k, size := range sizes {
		st := dispatchStat(secs[k], nil, nil, nil)
		if size == evict {
			cv.Seconds = st
		}
		if len(sizes) > 1 {
			cv.Points = append(cv.Points, results.ColdVectorPoint{EvictBytes: size, Seconds: st})
		}
	}
	cv.SecondsPerLine = cv.Seconds.Median / float64(cv.Bytes/64)
	return cv, nil
}

// coldSink keeps the eviction reads' sum alive.
var coldSink uint64

// MeasureDispatch measures one thread count's fixed costs on a fresh
// kernels/pool pinned to cpus (see the dispatch section); `bench probe
// --only dispatch` runs it per thread count. Errors: the pool's (no CPU,
// closed) or ctx's.
func MeasureDispatch(ctx context.Context, cpus []int) (results.DispatchPoint, error) {
	return measureDispatch(ctx, nil, cpus)
}

// guard (nil: none) waits for the placement the probe began with and
// records the round trips before and after in both figures' noise: the
// fork-join's cost is core-to-core traffic.
func measureDispatch(ctx context.Context, guard *noise.PlacementGuard, cpus []int) (results.DispatchPoint, error) {
	if len(cpus) == 0 {
		return results.DispatchPoint{}, fmt.Errorf("no CPU to run on")
	}
	placeBefore, err := guard.Before(ctx, cpus)
	if err != nil {
		return results.DispatchPoint{}, err
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
	placeAfter, err := guard.After(ctx, cpus)
	if err != nil {
		return results.DispatchPoint{}, err
	}
	pt.CallSeconds = dispatchStat(call, guard, placeBefore, placeAfter)
	pt.WakeSeconds = dispatchStat(wake, guard, placeBefore, placeAfter)
	return pt, nil
}

// dispatchStat summarizes fixed-cost samples with a noise record (cv and
// load; no CPU fraction: the pool's workers park between calls), with the
// round trips measured before and after them (guard.record; nil: none).
func dispatchStat(s []float64, guard *noise.PlacementGuard, before, after *results.Placement) results.Stat {
	st := results.Summarize(s)
	n := results.Noise{CV: st.CV, LoadAvg1: noise.LoadAvg1(), Attempts: 1}
	guard.Record(&n, before, after)
	noise.Judge(&n, false)
	st.Noise = &n
	return st
}
