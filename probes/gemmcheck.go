package probes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/results"
)

// GEMMCheckPoint is one attained-GEMM table point measured again.
type GEMMCheckPoint struct {
	M, N, K int
	// NowGFLOPS and ProfileGFLOPS are the re-measured median and the
	// profile's (matrix.gemm_shapes), GFLOP/s = 2·M·N·K / s / 1e9.
	NowGFLOPS, ProfileGFLOPS float64
}

// GEMMCheck is one re-measurement of a profile's attained-GEMM table at one
// backend and thread count.
type GEMMCheck struct {
	Backend string
	Threads int
	Points  []GEMMCheckPoint
	// Ratio is the median over Points of NowGFLOPS / ProfileGFLOPS: how
	// far the host's compute rate has moved since the probe.
	Ratio float64
	// Rows (CheckGEMM with rows beyond every point of Points) is the table
	// point at the run's rows measured again: its largest M ≤ rows, of
	// the class with the most FLOPs up to gemmCheckMaxRowsFlops; nil
	// where none applies. A long prefill's GEMM keeps its activations and
	// outputs in the last-level cache, whose share the host's other
	// guests move, which the small points' rate does not show: the
	// 2048-row fp32 GEMM of 3072×1024 ran at 297–316 GFLOP/s in probes
	// and some runs and at 424 in others on the 2-core VM, within the
	// same hour, while the small points moved by 5%.
	Rows *GEMMCheckPoint
}

// RowsRatio is Rows' NowGFLOPS / ProfileGFLOPS (0 without Rows).
func (c GEMMCheck) RowsRatio() float64 {
	if c.Rows == nil || !(c.Rows.ProfileGFLOPS > 0) {
		return 0
	}
	return c.Rows.NowGFLOPS / c.Rows.ProfileGFLOPS
}

// gemmCheckMaxFlops bounds the FLOPs of one call of a checked point (2 GFLOP:
// about 6 ms at the 2-core VM's 350 GFLOP/s), gemmCheckPoints is how many
// points are checked (the largest within the bound): the check takes well
// under a second.
const (
	gemmCheckMaxFlops = 2e9
	gemmCheckPoints   = 3
	// gemmCheckMaxRowsFlops bounds the FLOPs of one call of the Rows point
	// (16 GFLOP: about 50 ms at 300 GFLOP/s; the check's 7 calls about
	// 0.3 s): 2048×3072×1024 on the qwen3-0.6b table, not 4096×4096.
	gemmCheckMaxRowsFlops = 16e9
)

// CheckGEMM re-measures the attained-GEMM table of profile p
// (matrix.gemm_shapes) for backend at threads threads, the way the probe
// measured it (probes.GEMMBench.Measure: the profile's CPU order, pinned
// workers, packed weights, the point's ring of cold outputs where it
// records one (output_bytes), a warm-up then 5 repetitions of at least
// 20 ms, median): the gemmCheckPoints table points of that backend and thread
// count with the most FLOPs per call up to gemmCheckMaxFlops. It is the
// compute twin of CheckDRAMRoof (issue #16 part 3): a guest's compute rate
// moves with its host's other guests by 25% within an hour on the 2-core
// VM, which neither steal time nor the run's own spread shows. Errors: p
// has no table point for backend at threads (which says so), backend not
// available here, threads beyond the allowed CPUs, ctx's error. With rows
// > 0 (a run's longest prefill, in rows of its linears) beyond every
// checked point's M, the table point at those rows is measured too
// (GEMMCheck.Rows).
func CheckGEMM(ctx context.Context, p *results.Profile, backend string, threads, rows int) (GEMMCheck, error) {
	var pts, all []results.GEMMResult
	if p != nil && p.Matrix != nil {
		for _, g := range p.Matrix.GEMMShapes {
			if g.Backend == backend && g.Threads == threads && g.GFLOPS.Median > 0 {
				all = append(all, g)
				if gemm.Flops(g.M, g.N, g.K) <= gemmCheckMaxFlops {
					pts = append(pts, g)
				}
			}
		}
	}
	if len(pts) == 0 {
		return GEMMCheck{}, fmt.Errorf("the profile's attained-GEMM table (matrix.gemm_shapes) has no %s point at %d threads", backend, threads)
	}
	slices.SortStableFunc(pts, func(a, b results.GEMMResult) int {
		fa, fb := gemm.Flops(a.M, a.N, a.K), gemm.Flops(b.M, b.N, b.K)
		switch {
		case fa > fb:
			return -1
		case fa < fb:
			return 1
		}
		return 0
	})
	pts = pts[:min(len(pts), gemmCheckPoints)]
	var rowsPt *results.GEMMResult
	if topM := slices.MaxFunc(pts, func(a, b results.GEMMResult) int { return a.M - b.M }).M; rows > topM {
		atM := 0
		for _, g := range all {
			if g.M <= rows && g.M > atM {
				atM = g.M
			}
		}
		for i, g := range all {
			f := gemm.Flops(g.M, g.N, g.K)
			if g.M == atM && atM > topM && f <= gemmCheckMaxRowsFlops && (rowsPt == nil || f > gemm.Flops(rowsPt.M, rowsPt.N, rowsPt.K)) {
				rowsPt = &all[i]
			}
		}
	}
	be, err := gemm.BackendByName(backend)
	if err != nil {
		return GEMMCheck{}, err
	}
	cpus, err := GEMMCPUs()
	if err != nil {
		return GEMMCheck{}, err
	}
	if threads < 1 || threads > len(cpus) {
		return GEMMCheck{}, fmt.Errorf("GEMM check at %d threads: this process may run on %d CPUs", threads, len(cpus))
	}
	b, err := NewGEMMBench(cpus[:threads], 5, 20*time.Millisecond)
	if err != nil {
		return GEMMCheck{}, err
	}
	defer b.Close()
	ck := GEMMCheck{Backend: backend, Threads: threads}
	measure := func(pt results.GEMMResult) (GEMMCheckPoint, error) {
		w, err := NewGEMMWeights(be, pt.N, pt.K, 3)
		if err != nil {
			return GEMMCheckPoint{}, err
		}
		b.OutputRing = pt.OutputBytes // as the profile measured it
		g, err := b.Measure(ctx, w, pt.M, threads, false)
		if err != nil {
			return GEMMCheckPoint{}, err
		}
		return GEMMCheckPoint{M: pt.M, N: pt.N, K: pt.K, NowGFLOPS: g.GFLOPS.Median, ProfileGFLOPS: pt.GFLOPS.Median}, nil
	}
	ratios := make([]float64, 0, len(pts))
	for _, pt := range pts {
		q, err := measure(pt)
		if err != nil {
			return GEMMCheck{}, err
		}
		ck.Points = append(ck.Points, q)
		ratios = append(ratios, q.NowGFLOPS/q.ProfileGFLOPS)
	}
	ck.Ratio = results.Summarize(ratios).Median
	if rowsPt != nil {
		q, err := measure(*rowsPt)
		if err != nil {
			return GEMMCheck{}, err
		}
		ck.Rows = &q
	}
	return ck, nil
}
