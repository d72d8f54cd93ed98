package probes

import (
	"context"
	"fmt"
	"slices"
	"time"

	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/results"
)

// QuantWeights is one block-quantized weight matrix of a GEMV/GEMM
// measurement (kernels/quant).
type QuantWeights struct {
	Backend quant.Backend
	Format  quant.Format
	N, K    int
	W       *quant.Matrix
	// PackSeconds is the time of the one Quantize call (not on the per-call
	// path).
	PackSeconds float64
}

// Name is the figure's backend label, "<backend>-<format>", e.g.
// "avx512vnni-q8_0".
func (w *QuantWeights) Name() string { return QuantName(w.Backend, w.Format) }

// QuantName is "<backend>-<format>".
func QuantName(b quant.Backend, f quant.Format) string { return b.Name + "-" + string(f) }

// NewQuantWeights makes a synthetic N×K weight matrix in format f directly
// in packed form (quant.Random: uniform stored values, scales for weights
// in about ±0.05; no float32 copy, so DRAM-sized int1 weights build at
// memory speed), timing it as PackSeconds.
func NewQuantWeights(b quant.Backend, f quant.Format, n, k int, seed uint64) (*QuantWeights, error) {
	if n <= 0 || k <= 0 || k%quant.BlockLen != 0 {
		return nil, fmt.Errorf("gemm: %s weights %d×%d: N and K must be positive and K a multiple of %d", f, n, k, quant.BlockLen)
	}
	t0 := time.Now()
	m, err := quant.Random(f, n, k, seed)
	if err != nil {
		return nil, fmt.Errorf("gemm: %w", err)
	}
	// The layout the backend's kernels read (column order for q8_0 and
	// q4_0 on avx512vnni and avx512bw, int2 and int1 on avx512vnni), as
	// the engine repacks at load.
	m.Repack(b)
	return &QuantWeights{Backend: b, Format: f, N: n, K: k, W: m, PackSeconds: time.Since(t0).Seconds()}, nil
}

// MeasureQuant times Y = X·Wᵀ at M rows with quantized weights on the first
// threads workers. One call quantizes X per 32-element block to int8 (on
// worker 0, as llama.cpp quantizes activations before a quantized matmul,
// and inside the timed call) and then runs quant.Mul on each worker's share
// of W's rows, cut at whole panels. GFLOP/s counts 2·M·N·K; weight GB/s is
// the packed bytes read per call (quants, fp16 scales, panel padding) over
// the seconds. Y is spot-checked against a float64 reference
// (quant.CheckSample).
func (b *GEMMBench) MeasureQuant(ctx context.Context, w *QuantWeights, m, threads int) (results.GEMMResult, error) {
	g, x, y, err := b.operands(m, threads, w.N, w.K)
	if err != nil {
		return results.GEMMResult{}, err
	}
	var act quant.Activations
	tile := w.W.RowTile()
	panels := (w.N + tile - 1) / tile
	call := func(mm *kpool.Master) error {
		if err := act.Quantize(w.Format, x, m, w.K); err != nil {
			return err
		}
		return mm.Run(g, func(local, n int) error {
			p0, p1 := panels*local/n, panels*(local+1)/n
			n0, n1 := min(p0*tile, w.N), min(p1*tile, w.N)
			return quant.Mul(w.Backend, w.W, &act, y, w.N, n0, n1)
		})
	}
	rates, err := b.timeCalls(ctx, call)
	if err != nil {
		return results.GEMMResult{}, fmt.Errorf("gemm %s M=%d threads=%d: %w", w.Name(), m, threads, err)
	}
	sum, err := quant.CheckSample(w.W, x, y, m, gemmSamples)
	if err != nil {
		return results.GEMMResult{}, fmt.Errorf("gemm %s M=%d threads=%d: %w", w.Name(), m, threads, err)
	}
	return b.result(g, rates, w.Name(), string(w.Format), m, w.N, w.K, w.W.Bytes(), w.PackSeconds, sum), nil
}

// upconvertBytes is the size of the up-convert measurement's weight panel
// (4 rows in lane order): 8 KiB of packed quants, so K is 2048 (q8_0), 4096
// (q4_0), 8192 (int2) or 16384 (int1), and with the K bytes of int8
// activations the loop stays in a 32 KiB L1; the longer rows of the narrow
// formats keep the per-call overhead (the tile's horizontal sums, the call)
// small. A column-order layout (q8_0, q4_0 on avx512vnni and avx512bw;
// int2, int1 on avx512vnni: Backend.ColumnFormats) is measured on one group
// of quant.ColRows rows of the same bytes (K 512, 1024, 2048 or 4096), so
// γ and ebw follow the kernels Mul runs on the Repacked weights.
const upconvertBytes = 8 << 10

// upconvertRows is the panel's row count for backend be and format f: one
// whole tile of the layout be's kernels read.
func upconvertRows(be quant.Backend, f quant.Format) int {
	if slices.Contains(be.ColumnFormats(), f) {
		return quant.ColRows
	}
	return quant.PanelRows
}

// upconvertK is the panel's reduction depth for format f on rows rows.
func upconvertK(f quant.Format, rows int) int {
	return int(float64(upconvertBytes)/float64(rows)/(f.BytesPerWeight()-2.0/quant.BlockLen)) / quant.BlockLen * quant.BlockLen
}

// UpconvertGBps times the GEMV kernel of backend be and format f on one
// L1-resident weight panel with activations quantized once, outside the
// loop (the up-convert-and-compute sequence alone, the low-bit GEMV paper's
// γ measurement, §III-F), on worker 0: packed weight bytes per second per
// repetition (GB/s = 1e9 B/s).
func (b *GEMMBench) UpconvertGBps(ctx context.Context, be quant.Backend, f quant.Format) (results.Stat, error) {
	rows := upconvertRows(be, f)
	k := upconvertK(f, rows)
	w, err := NewQuantWeights(be, f, rows, k, 3)
	if err != nil {
		return results.Stat{}, err
	}
	var act quant.Activations
	if err := act.Quantize(f, b.input(1, k), 1, k); err != nil {
		return results.Stat{}, err
	}
	y := make([]float32, rows)
	const inner = 64 // calls per timed call: keeps the loop's clock reads off the figure
	rates, err := b.timeCalls(ctx, func(*kpool.Master) error {
		for range inner {
			if err := quant.Mul(be, w.W, &act, y, rows, 0, rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return results.Stat{}, fmt.Errorf("up-convert %s: %w", w.Name(), err)
	}
	gb := make([]float64, len(rates.rates))
	for i, r := range rates.rates {
		gb[i] = r * inner * float64(w.W.Bytes()) / 1e9
	}
	return rates.stat(gb), nil
}

// quantEBW builds the effective-bandwidth model of one format from its
// up-convert throughput, the clock and the memory section's DRAM read roofs
// (low-bit GEMV paper §III-F: Eq. 2 β ≤ B/γ, Eq. 3 ebw = min(β, B/γ) per
// core), and joins the measured GEMV bandwidths gemv (matrix section rows of
// the same backend).
func quantEBW(name string, f quant.Format, up results.Stat, clockHz float64, clockSrc string, mem *results.Memory, threads []int, gemv []results.GEMMResult) results.QuantEBW {
	const B = 32.0 // bytes per 256-bit vector of packed weights
	q := results.QuantEBW{Format: string(f), Backend: name, BytesPerWeight: f.BytesPerWeight(), UpconvertGBps: up, ClockHz: clockHz, ClockSource: clockSrc}
	if clockHz <= 0 || up.Median <= 0 {
		return q
	}
	upBPC := up.Median * 1e9 / clockHz // B/γ, bytes per cycle
	q.GammaCycles = B / upBPC
	for _, t := range threads {
		var roof float64
		if mem != nil {
			for _, l := range mem.Levels {
				if l.Level == "DRAM" && l.Threads == t {
					roof = l.GBps.Median
				}
			}
		}
		if roof <= 0 {
			continue
		}
		pt := results.QuantEBWPoint{Threads: t, BetaBytesPerCycle: roof * 1e9 / float64(t) / clockHz}
		pt.EBWBytesPerCycle, pt.Limit = pt.BetaBytesPerCycle, results.LimitMemory
		if upBPC < pt.BetaBytesPerCycle {
			pt.EBWBytesPerCycle, pt.Limit = upBPC, results.LimitUpConvert
		}
		pt.EBWGBps = float64(t) * pt.EBWBytesPerCycle * clockHz / 1e9
		for _, g := range gemv {
			if g.Backend == name && g.Threads == t && g.M == 1 {
				pt.MeasuredGBps = g.WeightGBps
				pt.Ratio = g.WeightGBps / pt.EBWGBps
			}
		}
		q.Points = append(q.Points, pt)
	}
	return q
}
