package probes

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cpubench/bench/internal/hugepage"
	"github.com/cpubench/bench/results"
)

// roofNow measures, without a progress step, the DRAM read roof of the
// memory section's record at threads threads (its kernel and pages, the
// largest of its working sets: a profile probed before dramMinWS may list
// smaller ones that were partly cache on a virtual machine) and
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
	if pages == pagesHuge && !hugepage.Allowed() {
		pages = pagesSmall
	}
	b, err := r.measureDRAM(ctx, dramCandidate{d.Kernel, pages}, slices.Max(d.WorkingSets), threads)
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
// between two DRAM read roof measurements (roofNow): gemvBeside.
func (r *runner) measureGEMVBeside(ctx context.Context, memory *results.Memory, threads int, measure func() (results.GEMMResult, error)) (results.GEMMResult, error) {
	return gemvBeside(func() (float64, error) { return r.roofNow(ctx, memory, threads) }, measure)
}

// MeasureBesideRoof runs measure (one GEMV at threads threads whose weights
// are DRAM-sized, DRAMSized) between two re-measurements of profile p's
// DRAM read roof at threads (CheckDRAMRoof: its kernel and pages, the
// largest of its working sets), as the probe measures its own GEMVs (gemvBeside): roof_now_gbps
// and the fraction of it where the two agree within 10%, else measured
// again (at most 3 times) and marked noisy. Errors: measure's, and
// CheckDRAMRoof's other than a profile without a roof at threads (then
// the figure is measure's as is).
func MeasureBesideRoof(ctx context.Context, p *results.Profile, threads int, measure func() (results.GEMMResult, error)) (results.GEMMResult, error) {
	roof := func() (float64, error) {
		ck, err := checkDRAMRoof(ctx, p, threads, true)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			if strings.Contains(err.Error(), "has no DRAM read roof") {
				return 0, nil
			}
			return 0, err
		}
		return ck.Now.Median, nil
	}
	return gemvBeside(roof, measure)
}

// DRAMSized reports whether bytes of weights stream from DRAM on profile
// p's machine: more than 4× its last-level cache (the topology's largest
// data cache, or the L3 found at the knee of the read bandwidth curves,
// WithMeasuredLLC), as the probe sizes its own GEMVs.
func DRAMSized(p *results.Profile, bytes int64) bool {
	q, _ := WithMeasuredLLC(p)
	llc := int64(0)
	if q != nil && q.Topology != nil {
		for _, c := range q.Topology.Caches {
			if c.Type != "Instruction" {
				llc = max(llc, c.SizeBytes)
			}
		}
	}
	return llc > 0 && bytes > 4*llc
}

// gemvBeside runs measure between two calls of roof (the DRAM read roof
// now, GB/s; 0: none to compare with). Where the two agree within
// results.NoiseMaxRoofDrift and the GEMV's weight GB/s is not above their
// mean by more than that, the figure's RoofNowGBps is their mean and its
// fraction is of it; where they do not, the host's bandwidth moved
// during the GEMV, which is measured again (at most gemvRoofAttempts times)
// and, still moving, kept with its figure marked noisy (the roofs named)
// and no RoofNowGBps. Without a roof it is measure's result as is.
func gemvBeside(roof func() (float64, error), measure func() (results.GEMMResult, error)) (results.GEMMResult, error) {
	for a := 1; ; a++ {
		before, err := roof()
		if err != nil {
			return results.GEMMResult{}, err
		}
		g, err := measure()
		if err != nil {
			return results.GEMMResult{}, err
		}
		if before <= 0 {
			return g, nil
		}
		after, err := roof()
		if err != nil {
			return results.GEMMResult{}, err
		}
		if after <= 0 {
			return g, nil
		}
		mean := (before + after) / 2
		agree := math.Abs(before-after)/mean <= results.NoiseMaxRoofDrift
		// A GEMV reads its weights once: faster than the read roof by
		// more than the threshold, the host moved between the roofs and
		// the GEMV although the two roofs agree (measured: 33.9 GB/s
		// between roofs of 24.5 and 24.0, 140%).
		over := g.WeightGBps > mean*(1+results.NoiseMaxRoofDrift)
		if agree && !over {
			g.RoofNowGBps = mean
			g.Fraction = g.WeightGBps / mean
			g.FractionOf = fmt.Sprintf("the DRAM read roof at %d threads re-measured before and after the GEMV (roof_now_gbps %.1f GB/s: %.1f, %.1f)", g.Threads, mean, before, after)
			return g, nil
		}
		if a >= gemvRoofAttempts {
			n := results.Noise{}
			if g.GFLOPS.Noise != nil {
				n = *g.GFLOPS.Noise
			}
			why := fmt.Sprintf("the DRAM read roof moved from %.1f to %.1f GB/s across the GEMV (%d attempts)", before, after, a)
			if agree {
				why = fmt.Sprintf("the GEMV read %.1f GB/s, above the DRAM read roof of %.1f and %.1f GB/s measured around it (%d attempts)", g.WeightGBps, before, after, a)
			}
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
