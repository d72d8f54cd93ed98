package opbench

import (
	"fmt"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/results"
)

// The targets (issue 12 part 3): prefill attention at ≥ 70% of
// the probed fp32 GEMM ceiling, decode attention at ≥ 80% of the probed
// bandwidth roof for the KV bytes it reads.
const (
	PrefillTarget = 0.70
	DecodeTarget  = 0.80
)

// GEMMCeiling is the probed fp32 GEMM ceiling at threads from profile p:
// the matrix section's attained GEMM of backend (the kernel attention's
// tiles run on) at that thread count, else of any fp32 backend there
// (the fastest), else the compute section's best fp32 peak there. It
// returns GFLOP/s and what the figure is, or 0 and why there is none.
func GEMMCeiling(p *results.Profile, backend string, threads int) (float64, string) {
	if p == nil {
		return 0, "no profile: fraction not computed"
	}
	if p.Matrix != nil {
		var best *results.GEMMResult
		for i, g := range p.Matrix.GEMM {
			if g.DType != "fp32" || g.Threads != threads || !(g.GFLOPS.Median > 0) {
				continue
			}
			if g.Backend == backend {
				best = &p.Matrix.GEMM[i]
				break
			}
			if best == nil || g.GFLOPS.Median > best.GFLOPS.Median {
				best = &p.Matrix.GEMM[i]
			}
		}
		if best != nil {
			return best.GFLOPS.Median, fmt.Sprintf("probed fp32 GEMM ceiling: matrix section, %s M=%d N=%d K=%d, %d threads, %.1f GFLOP/s", best.Backend, best.M, best.N, best.K, threads, best.GFLOPS.Median)
		}
	}
	if p.Compute != nil {
		var best *results.ComputePeak
		for i, pk := range p.Compute.Peaks {
			if pk.Precision == "fp32" && pk.Threads == threads && pk.Rate.Median > 0 && (best == nil || pk.Rate.Median > best.Rate.Median) {
				best = &p.Compute.Peaks[i]
			}
		}
		if best != nil {
			return best.Rate.Median, fmt.Sprintf("probed fp32 compute peak (no fp32 GEMM at %d threads in the matrix section): %s, %.1f GFLOP/s", threads, best.Kernel, best.Rate.Median)
		}
	}
	return 0, fmt.Sprintf("no fp32 GEMM or fp32 compute ceiling at %d threads in the profile: fraction not computed", threads)
}

// BandwidthRoof is the probed read roof for a working set of bytes at
// threads from profile p: of the memory section's levels measured at that
// thread count (L1, L2, L3, DRAM), the first whose measured working set
// holds bytes, else DRAM (the KV cache then streams from memory). It
// returns GB/s and what the figure is, or 0 and why there is none.
func BandwidthRoof(p *results.Profile, bytes float64, threads int) (float64, string) {
	if p == nil {
		return 0, "no profile: fraction not computed"
	}
	if p.Memory == nil {
		return 0, "no memory section in the profile: fraction not computed"
	}
	byLevel := map[string]results.LevelBandwidth{}
	for _, l := range p.Memory.Levels {
		if l.Threads == threads && l.GBps.Median > 0 {
			byLevel[l.Level] = l
		}
	}
	for _, name := range []string{"L1", "L2", "L3", "DRAM"} {
		l, ok := byLevel[name]
		if !ok || (name != "DRAM" && float64(l.WorkingSetBytes) < bytes) {
			continue
		}
		return l.GBps.Median, fmt.Sprintf("probed %s read roof (memory section, %s working set, %d threads): %.1f GB/s", name, memlimit.FormatBytes(float64(l.WorkingSetBytes)), threads, l.GBps.Median)
	}
	return 0, fmt.Sprintf("no read roof at %d threads in the profile's memory levels: fraction not computed", threads)
}
