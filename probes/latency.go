package probes

import (
	"context"
	"fmt"
	"time"

	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// LatencyMethod is recorded in the latency section.
const LatencyMethod = "dependent pointer chase over a random cyclic permutation (Sattolo) of the working set's cache lines, one 8-byte index per line; ns per load = time / loads; one pinned thread; median of repetitions after a warm-up"

// chaseLine is the spacing of chased elements in bytes.
const chaseLine = 64

// measureLatency chases pointers over ws bytes from worker w, with the buffer
// bound to node (-1: first touch). Each repetition follows whole cycles of
// the permutation, so the final index must equal the start (the checksum).
func (r *runner) measureLatency(ctx context.Context, w *worker, ws int64, node int) (results.LatencyPoint, error) {
	lines := int(ws / chaseLine)
	if lines < 2 {
		return results.LatencyPoint{}, fmt.Errorf("latency: working set %d bytes is smaller than two lines", ws)
	}
	key := fmt.Sprintf("chase/%d/%d", ws, node)
	var start uint64
	t := task{
		setup: func(w *worker) error {
			if w.layout == key {
				return nil
			}
			// A fresh mapping of exactly ws bytes: reusing the (larger)
			// bandwidth arena measured L1 hits at about 4x their latency
			// on an EPYC KVM guest, for reasons not established.
			w.free()
			if err := w.ensure(int(ws), node); err != nil {
				return err
			}
			w.u64 = numa.Uint64s(w.arena[:ws])
			w.chase = kernels.BuildChase(w.u64, chaseLine, 0x5eed^uint64(ws))
			w.layout = key
			return nil
		},
	}
	t.run = func(w *worker) (int64, float64) {
		// One "pass" is a full cycle over all lines.
		end := kernels.Chase(w.u64, w.chase, lines)
		w.steps += lines
		return int64(lines), float64(end)
	}
	t.check = func(w *worker, sum float64) error {
		if uint64(sum) != w.chase {
			return fmt.Errorf("latency: chase over %d lines ended at %d, want the start %d", lines, uint64(sum), w.chase)
		}
		start = w.chase
		return nil
	}
	// Measure loads per second with the group machinery ("bytes" = loads).
	d := r.cfg.RepDuration
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	m, err := measureGroups(ctx, r.place, [][]*worker{{w}}, []task{t}, d, r.cfg.Reps)
	if err != nil {
		return results.LatencyPoint{}, err
	}
	ns := make([]float64, len(m.samples[0]))
	for i, s := range m.samples[0] {
		// s is loads/s/1e9 = loads per ns.
		ns[i] = 1 / s
	}
	return results.LatencyPoint{WorkingSetBytes: ws, CPU: w.cpu, NS: m.statOf(ns), Checksum: start}, nil
}

func (r *runner) latencySection(ctx context.Context) (*results.Latency, error) {
	l := &results.Latency{Method: LatencyMethod}
	w := r.pool.workers[0]
	for _, ws := range r.plan.latWS {
		p, err := r.measureLatency(ctx, w, ws, -1)
		if err != nil {
			return nil, err
		}
		l.Points = append(l.Points, p)
		r.step("latency " + sizeText(ws))
	}
	return l, nil
}
