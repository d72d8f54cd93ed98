package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/sweep"
)

// runAmdahl is the low-bit GEMV paper's Eq. 4 (§IV-D) measured on this
// run: the same decode steps (same prompts, batch, contexts and threads)
// decoded a second time with bf16 weights, so that α, the GEMV speedup x
// and the end-to-end speedup are all measured, none assumed.
type runAmdahl struct {
	// Reference names the bf16 run: weights, gemm backend, threads.
	Reference string `json:"reference"`
	// DecodeBF16S and DecodeS are the wall-clock seconds of the G decode
	// steps with bf16 weights and with this run's weights; GEMVBF16S and
	// GEMVS the linear operators' timers over the same steps
	// (engine.LinearSeconds).
	DecodeBF16S float64 `json:"decode_bf16_s"`
	DecodeS     float64 `json:"decode_s"`
	GEMVBF16S   float64 `json:"gemv_bf16_s"`
	GEMVS       float64 `json:"gemv_s"`
	// Alpha is α = GEMVBF16S / DecodeBF16S, the 16-bit run's GEMV share
	// (as the paper defines it); AlphaQuant the same share in this run.
	Alpha      float64 `json:"alpha"`
	AlphaQuant float64 `json:"alpha_quant"`
	// X is the measured GEMV speedup GEMVBF16S / GEMVS; Bound = 1 / ((1 −
	// α) + α/x) (Eq. 4); Measured the end-to-end decode speedup
	// DecodeBF16S / DecodeS.
	X        float64 `json:"x"`
	Bound    float64 `json:"bound"`
	Measured float64 `json:"measured"`
}

// decodeTimed prefills every sequence of prompts (untimed), then times G
// greedy decode steps of all of them together after one untimed warm-up
// request, and returns the decode wall seconds and the operator timings of
// those steps.
func decodeTimed(m *engine.Model, prompts [][]int, G int) (float64, []engine.Timing, error) {
	B, T := len(prompts), len(prompts[0])
	b, err := m.NewBatch(B, T+G)
	if err != nil {
		return 0, nil, err
	}
	if wt, err := b.PrefillNext(0, prompts[0], nil); err != nil {
		return 0, nil, err
	} else if err := b.DecodeNext([]int{0}, []int{wt}, []int{0}, nil); err != nil {
		return 0, nil, err
	}
	b.Reset(0)
	slots, toks := make([]int, B), make([]int, B)
	for i := range B {
		slots[i] = i
		if toks[i], err = b.PrefillNext(i, prompts[i], nil); err != nil {
			return 0, nil, err
		}
	}
	b.ResetTimings()
	var decode float64
	// As the run's loop: the argmax inside the step, on every worker
	// (DecodeNext), the loop on worker 0 (Hold).
	err = m.Hold(func() error {
		for range G {
			start := time.Now()
			if err := b.DecodeNext(slots, toks, toks, nil); err != nil {
				return err
			}
			decode += time.Since(start).Seconds()
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return decode, b.Timings(), nil
}

// measureAmdahl decodes the run's steps again with synthetic bf16 weights
// at the same shapes (cfg, its instantiated layers), the best BF16 gemm
// backend on the same number of threads, and fills Eq. 4 from the two
// runs. decode and ts are this run's decode wall seconds and timings.
func measureAmdahl(ctx context.Context, cfg engine.Config, seed uint64, threads int, prompts [][]int, G int, decode float64, ts []engine.Timing) (*runAmdahl, error) {
	if err := sweep.CheckMemory(cfg, cfg.Layers, string(engine.PlaceMatrix), engine.FormatFP32); err != nil {
		return nil, fmt.Errorf("bf16 reference: %w", err)
	}
	bf, err := gemm.Best(gemm.BF16)
	if err != nil {
		return nil, fmt.Errorf("bf16 reference: %w", err)
	}
	w, err := engine.SyntheticAs(cfg, cfg.Layers, seed, engine.FormatFP32)
	if err != nil {
		return nil, fmt.Errorf("bf16 reference: %w", err)
	}
	m, err := engine.New(w, engine.Options{Context: ctx, Threads: threads, Placement: engine.PlaceMatrix, MatrixBackend: bf.Name})
	if err != nil {
		return nil, fmt.Errorf("bf16 reference: %w", err)
	}
	defer m.Close()
	dBF, tsBF, err := decodeTimed(m, prompts, G)
	if err != nil {
		return nil, fmt.Errorf("bf16 reference: %w", err)
	}
	a := &runAmdahl{
		Reference:   fmt.Sprintf("synthetic bf16 weights, gemm backend %s (placement matrix), %d threads", m.Backends(), m.Threads),
		DecodeBF16S: dBF, DecodeS: decode,
		GEMVBF16S: engine.LinearSeconds(tsBF, roofline.Decode), GEMVS: engine.LinearSeconds(ts, roofline.Decode),
	}
	if !(a.DecodeBF16S > 0 && a.DecodeS > 0 && a.GEMVBF16S > 0 && a.GEMVS > 0) {
		return nil, fmt.Errorf("bf16 reference: no decode time measured (bf16 %.3g s, GEMV %.3g s; this run %.3g s, GEMV %.3g s)", a.DecodeBF16S, a.GEMVBF16S, a.DecodeS, a.GEMVS)
	}
	a.Alpha, a.AlphaQuant = a.GEMVBF16S/a.DecodeBF16S, a.GEMVS/a.DecodeS
	a.X = a.GEMVBF16S / a.GEMVS
	a.Bound = roofline.AmdahlSpeedup(a.Alpha, a.X)
	a.Measured = a.DecodeBF16S / a.DecodeS
	return a, nil
}

// writeAmdahl prints Eq. 4 as measured, one line each for α, x and the
// bound with the measured speedup.
func writeAmdahl(w io.Writer, a *runAmdahl, format string, G, B int) {
	fmt.Fprintf(w, "\nAmdahl bound (low-bit GEMV paper Eq. 4), measured: the same %d decode steps of %d sequence(s) decoded again with %s after this run\n", G, B, a.Reference)
	fmt.Fprintf(w, "- α = %.3f: share of bf16 decode time in GEMV (linear operators' timers %s of %s wall); %.3f in this %s run\n",
		a.Alpha, fmtTime(a.GEMVBF16S), fmtTime(a.DecodeBF16S), a.AlphaQuant, format)
	fmt.Fprintf(w, "- x = %.3f: measured GEMV speedup of %s over bf16 weights (Σ linear timers over the decode steps, bf16 %s / %s %s)\n",
		a.X, format, fmtTime(a.GEMVBF16S), format, fmtTime(a.GEMVS))
	fmt.Fprintf(w, "- bound s = 1/((1−α) + α/x) = %.3f; measured end-to-end decode speedup %.3f (bf16 decode %s / %s decode %s)\n",
		a.Bound, a.Measured, fmtTime(a.DecodeBF16S), format, fmtTime(a.DecodeS))
}
