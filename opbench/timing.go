package opbench

import (
	"context"
	"fmt"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
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

// ColdEvictBytes is the other memory a cold figure's workers read before
// each call (Evictor) so that its data comes from DRAM: 4× the last
// cache level (llc bytes), at least 64 MiB.
func ColdEvictBytes(llc int64) int64 {
	return max(64<<20, 4*llc)
}

// LLCBytes is the last cache level's capacity in bytes: m's level roofs'
// (roofline.Machine.LastLevelBytes) where m has them, else this host's
// (internal/topology); 0 where neither says.
func LLCBytes(m *roofline.Machine) int64 {
	if m != nil {
		if n := m.LastLevelBytes(); n > 0 {
			return n
		}
	}
	if t, err := topology.ReadTopology(topology.LiveRoots()); err == nil {
		return t.LLCBytes
	}
	return 0
}

// coldRead is the read kernels of the probe's DRAM roof (the memory
// section's read, kernels.BestMem().Read, and kernels.ReadPF, its loads
// with software prefetch ahead of them) over a buffer of a figure's bytes
// cut into one contiguous share per thread: the roof of a cold figure,
// timed as it is.
type coldRead struct {
	buf     []float64
	threads int
	sinks   []float64
}

// newColdRead allocates and touches a buffer of bytes (whole 64-byte
// lines, at least one per thread) read by threads workers.
func newColdRead(bytes float64, threads int) *coldRead {
	threads = max(threads, 1)
	n := max(int(bytes)/64, threads) * 8
	r := &coldRead{buf: make([]float64, n), threads: threads, sinks: make([]float64, 8*threads)}
	for i := range r.buf {
		r.buf[i] = 1
	}
	return r
}

// gbps times the read of the whole buffer by the first r.threads workers
// of g with each of the DRAM roof's read kernels, each call after evict
// (Timing.SecondsPerColdCall), and returns the faster kernel's bytes over
// its median seconds per call, in GB/s (1e9 B/s), as the probe takes the
// best of its kernels for the DRAM roof.
func (r *coldRead) gbps(ctx context.Context, t Timing, p *kpool.Pool, g *kpool.Group, evict func(*kpool.Master) error) (float64, error) {
	if g.Size() < r.threads {
		return 0, fmt.Errorf("cold read on %d threads: the pool has %d", r.threads, g.Size())
	}
	best := 0.0
	for _, read := range []func([]float64) float64{kernels.BestMem().Read, kernels.ReadPF} {
		call := func(m *kpool.Master) error {
			return m.Run(g, func(local, _ int) error {
				if local < r.threads {
					lines := len(r.buf) / 8
					lo, hi := lines*local/r.threads*8, lines*(local+1)/r.threads*8
					r.sinks[8*local] = read(r.buf[lo:hi])
				}
				return nil
			})
		}
		st, err := t.SecondsPerColdCall(ctx, p, evict, call)
		if err != nil {
			return 0, err
		}
		if st.Median > 0 {
			best = max(best, float64(8*len(r.buf))/st.Median/1e9)
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("cold read over %s: no time measured", memlimit.FormatBytes(float64(8*len(r.buf))))
	}
	return best, nil
}
