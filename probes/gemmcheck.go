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
}

// gemmCheckMaxFlops bounds the FLOPs of one call of a checked point (2 GFLOP:
// about 6 ms at the 2-core VM's 350 GFLOP/s), gemmCheckPoints is how many
// points are checked (the largest within the bound): the check takes well
// under a second.
const (
	gemmCheckMaxFlops = 2e9
	gemmCheckPoints   = 3
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
// available here, threads beyond the allowed CPUs, ctx's error.
func CheckGEMM(ctx context.Context, p *results.Profile, backend string, threads int) (GEMMCheck, error) {
	var pts []results.GEMMResult
	if p != nil && p.Matrix != nil {
		for _, g := range p.Matrix.GEMMShapes {
			if g.Backend == backend && g.Threads == threads && g.GFLOPS.Median > 0 && gemm.Flops(g.M, g.N, g.K) <= gemmCheckMaxFlops {
				pts = append(pts, g)
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
	ratios := make([]float64, 0, len(pts))
	for _, pt := range pts {
		w, err := NewGEMMWeights(be, pt.N, pt.K, 3)
		if err != nil {
			return GEMMCheck{}, err
		}
		b.OutputRing = pt.OutputBytes // as the profile measured it
		g, err := b.Measure(ctx, w, pt.M, threads, false)
		if err != nil {
			return GEMMCheck{}, err
		}
		ck.Points = append(ck.Points, GEMMCheckPoint{M: pt.M, N: pt.N, K: pt.K, NowGFLOPS: g.GFLOPS.Median, ProfileGFLOPS: pt.GFLOPS.Median})
		ratios = append(ratios, g.GFLOPS.Median/pt.GFLOPS.Median)
	}
	ck.Ratio = results.Summarize(ratios).Median
	return ck, nil
}
