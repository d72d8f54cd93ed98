package probes

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/cpubench/bench/results"
)

// roofNow measures, without a progress step, the DRAM read roof of the
// memory section's record at threads threads (its kernel and pages, the
// smallest of its working sets: the quickest, still ≥ 4× the LLC) and
// returns its median in GB/s, 0 where memory has no roof at threads. The
// matrix section measures it right before and right after each DRAM-sized
// GEMV (results.GEMMResult.RoofNowGBps): on a VM the host's bandwidth
// moves between the memory section and the matrix section by tens of
// percent, and the GEMV's fraction of the roof at the same moment is the
// kernel's property.
func (r *runner) roofNow(ctx context.Context, memory *results.Memory, threads int) (float64, error) {
	if memory == nil || r.pool == nil || threads < 1 || threads > len(r.pool.workers) {
		return 0, nil
	}
	i := slices.IndexFunc(memory.DRAM, func(d results.DRAMRoof) bool {
		return d.Threads == threads && d.GBps.Median > 0 && len(d.WorkingSets) > 0
	})
	if i < 0 {
		return 0, nil
	}
	d := memory.DRAM[i]
	pages := d.Pages
	if pages == pagesHuge && !hugePagesAllowed() {
		pages = pagesSmall
	}
	b, err := r.measureDRAM(ctx, dramCandidate{d.Kernel, pages}, slices.Min(d.WorkingSets), threads)
	// The roof's buffers go before the GEMV's weights are touched.
	for _, w := range r.pool.workers {
		w.free()
	}
	if err != nil {
		return 0, err
	}
	return b.GBps.Median, nil
}

// gemvRoofAttempts bounds the measurements of one DRAM-sized GEMV whose
// two DRAM roofs (before and after) disagree.
const gemvRoofAttempts = 3

// measureGEMVBeside runs measure (one DRAM-sized GEMV at threads threads)
// between two DRAM read roof measurements (roofNow). Where the two agree
// within results.NoiseMaxRoofDrift, the GEMV's RoofNowGBps is their mean
// and its fraction is of it; where they do not, the host's bandwidth moved
// during the GEMV, which is measured again (at most gemvRoofAttempts
// times) and, still moving, kept with its figure marked noisy (the roofs
// named) and no RoofNowGBps. Without a roof at threads in memory it is
// measure's result as is.
func (r *runner) measureGEMVBeside(ctx context.Context, memory *results.Memory, threads int, measure func() (results.GEMMResult, error)) (results.GEMMResult, error) {
	for a := 1; ; a++ {
		before, err := r.roofNow(ctx, memory, threads)
		if err != nil {
			return results.GEMMResult{}, err
		}
		g, err := measure()
		if err != nil {
			return results.GEMMResult{}, err
		}
		after, err := r.roofNow(ctx, memory, threads)
		if err != nil {
			return results.GEMMResult{}, err
		}
		if before <= 0 || after <= 0 {
			return g, nil
		}
		mean := (before + after) / 2
		if math.Abs(before-after)/mean <= results.NoiseMaxRoofDrift {
			g.RoofNowGBps = mean
			g.Fraction = g.WeightGBps / mean
			g.FractionOf = "the DRAM read roof at the same threads re-measured before and after the GEMV (roof_now_gbps)"
			return g, nil
		}
		if a >= gemvRoofAttempts {
			n := results.Noise{}
			if g.GFLOPS.Noise != nil {
				n = *g.GFLOPS.Noise
			}
			why := fmt.Sprintf("the DRAM read roof moved from %.1f to %.1f GB/s across the GEMV (%d attempts)", before, after, a)
			n.Noisy, n.Attempts = true, a
			if n.Why != "" {
				why = n.Why + ", " + why
			}
			n.Why = why
			g.GFLOPS.Noise = &n
			return g, nil
		}
	}
}
