package opbench

import (
	"context"
	"fmt"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/kernels/gemm"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
)

// Timing is how a sweep times one figure: Reps ≥ 1 repetitions of at
// least RepDuration (at least one call each) after one warm-up of
// RepDuration/2, on worker 0 of the pool (kpool.Pool.Do).
type Timing struct {
	Reps        int
	RepDuration time.Duration
}

func (t Timing) validate() error {
	if t.Reps < 1 {
		return fmt.Errorf("--reps %d: must be ≥ 1", t.Reps)
	}
	if t.RepDuration <= 0 {
		return fmt.Errorf("--rep-ms %v: must be > 0", t.RepDuration)
	}
	return nil
}

// SecondsPerCall runs a warm-up and t.Reps timed repetitions of call
// inside p.Do and returns the seconds per call of each repetition
// (summarized). ctx is checked between repetitions.
func (t Timing) SecondsPerCall(ctx context.Context, p *kpool.Pool, call func(m *kpool.Master) error) (results.Stat, error) {
	return t.repeat(ctx, p, func(m *kpool.Master, d time.Duration) (float64, error) {
		t0 := time.Now()
		for n := 1; ; n++ {
			if err := call(m); err != nil {
				return 0, err
			}
			if el := time.Since(t0); el >= d {
				return el.Seconds() / float64(n), nil
			}
		}
	})
}

// SecondsPerColdCall is SecondsPerCall with evict run before every call,
// outside the timer: each call is timed alone, and a repetition's figure
// is the mean of its calls' times (a repetition ends once RepDuration of
// wall time, evictions included, has passed). For a figure of data that
// the engine finds evicted at each call: a decode step's KV cache after
// the step's weights streamed through every cache.
func (t Timing) SecondsPerColdCall(ctx context.Context, p *kpool.Pool, evict, call func(m *kpool.Master) error) (results.Stat, error) {
	return t.repeat(ctx, p, func(m *kpool.Master, d time.Duration) (float64, error) {
		w0 := time.Now()
		var in time.Duration
		for n := 1; ; n++ {
			if err := evict(m); err != nil {
				return 0, err
			}
			t0 := time.Now()
			if err := call(m); err != nil {
				return 0, err
			}
			in += time.Since(t0)
			if time.Since(w0) >= d {
				return in.Seconds() / float64(n), nil
			}
		}
	})
}

// repeat runs rep, which returns seconds per call over at least d, as a
// warm-up of RepDuration/2 and t.Reps repetitions of RepDuration, each
// inside p.Do, and summarizes the repetitions' figures.
func (t Timing) repeat(ctx context.Context, p *kpool.Pool, rep func(m *kpool.Master, d time.Duration) (float64, error)) (results.Stat, error) {
	var secs []float64
	for r := 0; r <= t.Reps; r++ {
		if err := ctx.Err(); err != nil {
			return results.Stat{}, err
		}
		d := t.RepDuration
		if r == 0 {
			d /= 2
		}
		var s float64
		err := p.Do(func(m *kpool.Master) error {
			var err error
			s, err = rep(m, d)
			return err
		})
		if err != nil {
			return results.Stat{}, err
		}
		if r > 0 {
			secs = append(secs, s)
		}
	}
	return results.Summarize(secs), nil
}

// Evictor returns an eviction for SecondsPerColdCall: every worker of g
// reads its share of bytes of memory of its own (one load per 64-byte
// line), so that each core's private caches and the shared ones hold none
// of what the timed call reads; bytes should be several times the
// last-level cache (the probe's cold-line figure uses max(64 MiB, 4×LLC)).
// The buffer is allocated and written once, here.
func Evictor(g *kpool.Group, bytes int64) func(m *kpool.Master) error {
	buf := make([]uint64, max(bytes/8, 8))
	for i := range buf {
		buf[i] = uint64(i)
	}
	sinks := make([]uint64, 8*max(g.Size(), 1)) // one line per worker
	return func(m *kpool.Master) error {
		return m.Run(g, func(local, n int) error {
			lo, hi := len(buf)*local/n, len(buf)*(local+1)/n
			var s uint64
			for i := lo; i < hi; i += 8 {
				s += buf[i]
			}
			sinks[8*local] = s // keeps the loads
			return nil
		})
	}
}

// rates turns a Stat of seconds per call into one of work/seconds·scale
// (GFLOP/s from FLOPs with scale 1e-9): the min and max swap, the cv is
// recomputed from the samples.
func rates(sec results.Stat, work, scale float64) results.Stat {
	vals := make([]float64, 0, len(sec.Samples))
	for _, s := range sec.Samples {
		vals = append(vals, work/s*scale)
	}
	if len(vals) == 0 {
		return results.Stat{}
	}
	return results.Summarize(vals)
}

// KVWriter is engine.KVWriter, for the packages that time the engine's
// operators through this one (bench calibrate).
type KVWriter = engine.KVWriter

// NewKVWriter is engine.NewKVWriter: a writer of one layer's
// producer-packed fp32 KV cache on backend be, for timing the engine's
// kv_write alone (bench calibrate).
func NewKVWriter(be gemm.Backend, kvHeads, headDim, maxSeq int) (*KVWriter, error) {
	return engine.NewKVWriter(be, kvHeads, headDim, maxSeq)
}
