package probes

import (
	"context"
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

// gemvRoofNow sets g.RoofNowGBps to the mean of the DRAM read roofs
// measured before (before) and after the GEMV (roofNow), and its fraction
// to one of that roof, where both were measured.
func (r *runner) gemvRoofNow(ctx context.Context, memory *results.Memory, g *results.GEMMResult, before float64) error {
	after, err := r.roofNow(ctx, memory, g.Threads)
	if err != nil || before <= 0 || after <= 0 {
		return err
	}
	g.RoofNowGBps = (before + after) / 2
	g.Fraction = g.WeightGBps / g.RoofNowGBps
	g.FractionOf = "the DRAM read roof at the same threads re-measured before and after the GEMV (roof_now_gbps)"
	return nil
}
