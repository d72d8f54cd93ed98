package probes

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/noise"
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
// memory speed), timing it as PackSeconds. The packed bytes lie on pages
// advised for transparent huge pages (kernels/quant), as the memory
// section's DRAM read roof's buffers do.
func NewQuantWeights(b quant.Backend, f quant.Format, n, k int, seed uint64) (*QuantWeights, error) {
	if n <= 0 || k <= 0 || k%quant.BlockLen != 0 {
		return nil, fmt.Errorf("gemm: %s weights %d×%d: N and K must be positive and K a multiple of %d", f, n, k, quant.BlockLen)
	}
	t0 := time.Now()
	m, err := quant.Random(f, n, k, seed)
	if err != nil {
		return nil, fmt.Errorf("gemm: %w", err)
	}
	// The layout the backend's kernels read (column order for q8_0, q4_0,
	// int2, int1, q4_k and q6_k on avx512vnni and avx512bw:
	// Backend.ColumnFormats), as the engine repacks at load.
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
	rates, err := b.timeCalls(ctx, g, call)
	if err != nil {
		return results.GEMMResult{}, fmt.Errorf("gemm %s M=%d threads=%d: %w", w.Name(), m, threads, err)
	}
	sum, err := quant.CheckSample(w.W, x, y, m, gemmSamples)
	if err != nil {
		return results.GEMMResult{}, fmt.Errorf("gemm %s M=%d threads=%d: %w", w.Name(), m, threads, err)
	}
	return b.result(g, rates, w.Name(), string(w.Format), m, w.N, w.K, w.W.Bytes(), w.PackSeconds, sum), nil
}

// upconvertBytes is the size of the up-convert measurement's smaller weight
// panel (one tile of rows: 4 rows in lane order): 8 KiB of packed quants,
// so K is 2048 (q8_0), 4096 (q4_0, q4_k), 8192 (int2) or 16384 (int1), and
// with the K bytes of int8 activations the loop stays in a 32 KiB L1. A
// column-order layout (Backend.ColumnFormats: q8_0, q4_0, int2, int1, q4_k
// and q6_k on avx512vnni and avx512bw) is measured on one
// group of quant.ColRows rows of the same bytes (K 512, 1024, 2048 or
// 4096; q4_k 1024, q6_k 640, padded to whole super-blocks), so γ and
// ebw follow the kernels Mul runs on the Repacked weights. The larger panel
// has upconvertScale times its K (the same rows: L2-resident), so both calls
// pay the same per-call costs (the call, the tile's setup and horizontal
// sums, the epilogue) and their difference is the up-convert-and-compute
// loop alone.
const upconvertBytes = 8 << 10

// upconvertScale is the larger up-convert panel's K over the smaller one's.
const upconvertScale = 4

// upconvertRows is the panel's row count for backend be and format f: one
// whole tile of the layout be's kernels read.
func upconvertRows(be quant.Backend, f quant.Format) int {
	if slices.Contains(be.ColumnFormats(), f) {
		return quant.ColRows
	}
	return quant.PanelRows
}

// upconvertK is the smaller panel's reduction depth for format f on rows
// rows.
func upconvertK(f quant.Format, rows int) int {
	return int(float64(upconvertBytes)/float64(rows)/(f.BytesPerWeight()-2.0/quant.BlockLen)) / quant.BlockLen * quant.BlockLen
}

// UpconvertCost is the up-convert-and-compute measurement of one GEMV
// kernel (UpconvertCosts), 1 thread, activations quantized once outside
// the loop.
type UpconvertCost struct {
	// Rows is the panels' row count (one tile); K the two reduction depths
	// and Bytes the two panels' packed weight bytes (quants and scales),
	// smaller first.
	Rows  int
	K     [2]int
	Bytes [2]int64
	// PanelGBps is the smaller panel's whole-call throughput: packed bytes
	// per second (GB/s = 1e9 B/s) of one call, per-call costs included.
	PanelGBps results.Stat
	// MarginalGBps is the steady-state throughput of the loop, ΔBytes /
	// Δseconds between the two panels (MarginalCost), GB/s: B/γ in bytes
	// per second, the low-bit GEMV paper's Eq. 1 term.
	MarginalGBps results.Stat
	// PerCallNs is the intercept of the same line, nanoseconds per call:
	// what a call costs beyond its bytes (may come out ≤ 0 within noise).
	PerCallNs results.Stat
}

// Method says in words how the figures were measured.
func (c UpconvertCost) Method() string {
	return fmt.Sprintf("marginal: Δtime/Δbytes between one-tile panels of %d and %d B of packed weights (%d rows, K %d and %d), 1 thread, activations quantized outside the loop; per-call cost = the intercept",
		c.Bytes[0], c.Bytes[1], c.Rows, c.K[0], c.K[1])
}

// MarginalCost fits seconds = intercept + bytes / rate through two panel
// sizes, one pair of repetitions at a time: secs0[i] and secs1[i] are the
// seconds of one call on bytes0 and bytes1 (> bytes0) packed bytes. It
// returns per pair the marginal rate in GB/s (1e9 B/s: Δbytes / Δseconds)
// and the intercept in nanoseconds (the per-call cost; negative when the
// larger panel streams slower per byte than the line through the origin
// would have it). A pair whose larger panel did not take longer (a
// repetition of the smaller one slowed down by something else) has no
// finite positive rate: it is left out, and dropped counts it. Errors:
// bytes not 0 < bytes0 < bytes1, no pairs or unequal counts, a time that is
// not positive and finite, or every pair left out.
func MarginalCost(bytes0, bytes1 int64, secs0, secs1 []float64) (gbps, perCallNs []float64, dropped int, err error) {
	if bytes0 <= 0 || bytes1 <= bytes0 {
		return nil, nil, 0, fmt.Errorf("marginal cost: panel bytes %d and %d: want 0 < first < second", bytes0, bytes1)
	}
	if len(secs0) == 0 || len(secs0) != len(secs1) {
		return nil, nil, 0, fmt.Errorf("marginal cost: %d and %d repetitions: want the same number, at least 1", len(secs0), len(secs1))
	}
	db := float64(bytes1 - bytes0)
	for i := range secs0 {
		t0, t1 := secs0[i], secs1[i]
		if !(t0 > 0) || !(t1 > 0) || math.IsInf(t0, 0) || math.IsInf(t1, 0) {
			return nil, nil, 0, fmt.Errorf("marginal cost: repetition %d: times %g s and %g s: want positive and finite", i, t0, t1)
		}
		if !(t1 > t0) {
			dropped++
			continue
		}
		perByte := (t1 - t0) / db
		gbps = append(gbps, 1/perByte/1e9)
		perCallNs = append(perCallNs, (t0-perByte*float64(bytes0))*1e9)
	}
	if len(gbps) == 0 {
		return nil, nil, dropped, fmt.Errorf("marginal cost: in all %d repetitions %d B took no longer than %d B (e.g. %.4g ns against %.4g ns)", len(secs0), bytes1, bytes0, secs1[0]*1e9, secs0[0]*1e9)
	}
	return gbps, perCallNs, dropped, nil
}

// UpconvertCosts times the GEMV kernel of backend be and format f on two
// cache-resident one-tile weight panels of the same rows (K and
// upconvertScale·K; upconvertBytes) with activations quantized once,
// outside the loop, on worker 0: the low-bit GEMV paper's γ measurement
// (§III-F), as the marginal cost of the up-convert-and-compute sequence
// (MarginalCost), with the per-call cost apart. The two panels are timed
// alternately within each repetition (both see the same load), and the
// repetitions are paired by rank, fastest with fastest; a pair whose
// larger panel was not slower, a marginal rate
// whose cv is over results.NoiseMaxCV, or a loop whose thread got less than
// results.NoiseMinCPUFraction of its CPU (thread CPU time over wall time:
// on a shared machine a loop can run at half speed with a small cv) is
// measured again (at most noiseRetries more times) and, if no attempt
// passes, the least noisy one is kept marked noisy.
func (b *GEMMBench) UpconvertCosts(ctx context.Context, be quant.Backend, f quant.Format) (UpconvertCost, error) {
	rows := upconvertRows(be, f)
	k0 := upconvertK(f, rows)
	c := UpconvertCost{Rows: rows, K: [2]int{k0, upconvertScale * k0}}
	var calls [2]func(*kpool.Master) error
	const inner = 64 // calls per timed call: keeps the loop's clock reads off the figure
	name := QuantName(be, f)
	for i, k := range c.K {
		w, err := NewQuantWeights(be, f, rows, k, 3)
		if err != nil {
			return UpconvertCost{}, err
		}
		act := new(quant.Activations)
		if err := act.Quantize(f, b.input(1, k), 1, k); err != nil {
			return UpconvertCost{}, err
		}
		c.Bytes[i] = w.W.Bytes()
		y := make([]float32, rows)
		calls[i] = func(*kpool.Master) error {
			for range inner {
				if err := quant.Mul(be, w.W, act, y, rows, 0, rows); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var best *UpconvertCost
	var bestNoise results.Noise
	var lastErr error
	attempts := 0
	for attempt := 1; attempt <= 1+noiseRetries; attempt++ {
		attempts = attempt
		var secs [2][]float64
		var cpu, wall float64
		cpuOK := true
		cpus := b.Pool.CPUs()
		steal0, total0, ticksOK := noise.CPUTicks(cpus)
		for rep := 0; rep <= b.Reps; rep++ {
			for i := range calls {
				sp, err := b.timeSpan(ctx, calls[i], rep == 0)
				if err != nil {
					return UpconvertCost{}, fmt.Errorf("up-convert %s: %w", name, err)
				}
				if rep > 0 {
					secs[i] = append(secs[i], sp.wall/float64(sp.calls*inner))
					cpu, wall, cpuOK = cpu+sp.cpu, wall+sp.wall, cpuOK && sp.cpuOK
				}
			}
		}
		panel := make([]float64, len(secs[0])) // in the order measured
		for i, s := range secs[0] {
			panel[i] = float64(c.Bytes[0]) / s / 1e9
		}
		// Paired by rank, fastest with fastest: load only slows a
		// repetition down, so the least disturbed ones of each panel
		// make the pairs, whatever the order they came in.
		slices.Sort(secs[0])
		slices.Sort(secs[1])
		gbps, ns, dropped, err := MarginalCost(c.Bytes[0], c.Bytes[1], secs[0], secs[1])
		if err != nil {
			lastErr = err
			continue
		}
		var nz results.Noise
		if steal1, total1, ok := noise.CPUTicks(cpus); ok && ticksOK && total1 > total0 {
			nz.StealFraction = float64(steal1-steal0) / float64(total1-total0)
		}
		if cpuOK && wall > 0 {
			nz.CPUFraction = cpu / wall
		}
		nz.LoadAvg1 = noise.LoadAvg1()
		nz.CV = results.Summarize(gbps).CV
		noise.Judge(&nz, cpuOK && wall > 0)
		if dropped > 0 {
			why := fmt.Sprintf("%d of %d repetitions left out (the larger panel not slower)", dropped, len(secs[0]))
			nz.Noisy, nz.Why = true, strings.TrimPrefix(nz.Why+", "+why, ", ")
		}
		if best == nil || noisier(bestNoise, nz) {
			cur := c
			cur.PanelGBps, cur.MarginalGBps, cur.PerCallNs = results.Summarize(panel), results.Summarize(gbps), results.Summarize(ns)
			best, bestNoise = &cur, nz
		}
		if !bestNoise.Noisy {
			break
		}
	}
	if best == nil {
		return UpconvertCost{}, fmt.Errorf("up-convert %s: %w", name, lastErr)
	}
	bestNoise.Attempts = attempts
	for _, st := range []*results.Stat{&best.PanelGBps, &best.MarginalGBps, &best.PerCallNs} {
		n := bestNoise
		st.Noise = &n
	}
	return *best, nil
}

// span is one timed repetition of timeSpan: calls calls in wall seconds,
// during which the timing thread ran cpu seconds (cpuOK: its thread clock
// was read).
type span struct {
	calls     int
	wall, cpu float64
	cpuOK     bool
}

// timeSpan runs call back to back inside Pool.Do on worker 0 for
// b.RepDuration (half of it when warm) and returns the calls, the wall
// seconds and worker 0's thread CPU seconds: the loop runs on that thread
// alone, so cpu/wall is the share of its CPU it got (a loop that shared its
// core with another process runs at that fraction of its speed, which its
// cv does not show).
func (b *GEMMBench) timeSpan(ctx context.Context, call func(m *kpool.Master) error, warm bool) (span, error) {
	if err := ctx.Err(); err != nil {
		return span{}, err
	}
	d := b.RepDuration
	if warm {
		d /= 2
	}
	var sp span
	err := b.Pool.Do(func(m *kpool.Master) error {
		c0, ok := noise.ThreadCPU()
		t0 := time.Now()
		for n := 1; ; n++ {
			if err := call(m); err != nil {
				return err
			}
			if el := time.Since(t0); el >= d {
				sp.calls, sp.wall = n, el.Seconds()
				break
			}
		}
		if c1, ok1 := noise.ThreadCPU(); ok && ok1 {
			sp.cpu, sp.cpuOK = c1-c0, true
		}
		return nil
	})
	return sp, err
}

// heldAs maps the formats without kernels of their own (quant.Formats
// less quant.KernelFormats) to the format whose packed layout and GEMV
// kernels they run: the ternary formats are held as int2 (kernels/quant).
var heldAs = map[quant.Format]quant.Format{quant.TQ2_0: quant.Int2, quant.TQ1_0: quant.Int2}

// heldEBW returns the effective-bandwidth records of the formats held as
// q's format (heldAs), on backend be: q's γ, β and ebw at the same bytes per
// weight (the bytes the kernels read), without q's measured GEMV (that
// ran on q's format's weights), and a GammaMethod naming where γ came from.
func heldEBW(q results.QuantEBW, be quant.Backend) []results.QuantEBW {
	var out []results.QuantEBW
	for _, f := range quant.Formats() {
		if k, ok := heldAs[f]; !ok || string(k) != q.Format {
			continue
		}
		h := q
		h.Format, h.Backend = string(f), QuantName(be, f)
		h.BytesPerWeight = f.BytesPerWeight()
		h.GammaMethod = fmt.Sprintf("%s's kernel (%s is held in %s's layout): %s", q.Format, f, q.Format, q.GammaMethod)
		h.Points = slices.Clone(q.Points)
		for i := range h.Points {
			h.Points[i].MeasuredGBps, h.Points[i].Ratio = 0, 0
		}
		out = append(out, h)
	}
	return out
}

// quantEBW builds the effective-bandwidth model of one format from its
// up-convert costs (γ from the marginal rate), the clock and the memory
// section's DRAM read roofs (low-bit GEMV paper §III-F: Eq. 2 β ≤ B/γ,
// Eq. 3 ebw = min(β, B/γ) per core), and joins the measured GEMV
// bandwidths gemv (matrix section rows of the same backend).
func quantEBW(name string, f quant.Format, up UpconvertCost, clockHz float64, clockSrc string, mem *results.Memory, threads []int, gemv []results.GEMMResult) results.QuantEBW {
	const B = 32.0 // bytes per 256-bit vector of packed weights
	q := results.QuantEBW{Format: string(f), Backend: name, BytesPerWeight: f.BytesPerWeight(), UpconvertGBps: up.PanelGBps,
		MarginalGBps: &up.MarginalGBps, PerCallNs: &up.PerCallNs, PanelBytes: up.Bytes[:], GammaMethod: up.Method(), ClockHz: clockHz, ClockSource: clockSrc}
	if clockHz <= 0 || up.MarginalGBps.Median <= 0 {
		return q
	}
	upBPC := up.MarginalGBps.Median * 1e9 / clockHz // B/γ, bytes per cycle
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

// MeasureQuantEBW measures backend be's up-convert cost for format f now
// (UpconvertCosts: the low-bit GEMV paper's γ, §III-F) and returns its
// effective-bandwidth record (Eq. 3) at threads on profile p's clock (a
// matrix.quant_ebw record's: the same machine) and DRAM read roofs: for a
// backend that p has no record of (bench gemm --backend naming one that is
// not the probe's best). Its GammaMethod says it was measured by the
// caller, not by the probe. Errors: ctx's and UpconvertCosts'; a profile
// without a clock (no quant_ebw record with one).
func (b *GEMMBench) MeasureQuantEBW(ctx context.Context, p *results.Profile, be quant.Backend, f quant.Format, threads []int) (results.QuantEBW, error) {
	var clock float64
	var clockSrc string
	if p != nil && p.Matrix != nil {
		for _, q := range p.Matrix.QuantEBW {
			if q.ClockHz > 0 {
				clock, clockSrc = q.ClockHz, q.ClockSource
				break
			}
		}
	}
	if clock <= 0 {
		return results.QuantEBW{}, fmt.Errorf("%s: the profile has no clock (no matrix.quant_ebw record with one) to count γ in cycles", QuantName(be, f))
	}
	up, err := b.UpconvertCosts(ctx, be, f)
	if err != nil {
		return results.QuantEBW{}, err
	}
	q := quantEBW(QuantName(be, f), f, up, clock, clockSrc, p.Memory, threads, nil)
	q.GammaMethod = "measured beside the figures by this command (the profile has no γ of this backend): " + q.GammaMethod
	return q, nil
}
