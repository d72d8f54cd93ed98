package probes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cpubench/bench/results"
)

// KneeSource is the source of a cache level found from a knee of the read
// bandwidth curve (results.Cache.Source), not from CPUID or sysfs.
const KneeSource = "measured knee"

// KneeRule is the rule DetectKnee applies, recorded in the profile.
const KneeRule = "read bandwidth vs working set at one thread count, past twice the last cache level known (its capacity at those threads): " +
	"DRAM = the median of the points at ≥ 1/4 of the largest working set; plateau = the highest point between; " +
	"a level exists when plateau ≥ 1.5 × DRAM; its size is the largest working set, after the plateau's point, " +
	"whose bandwidth is still ≥ (plateau + DRAM)/2 before two points in a row fall below it; " +
	"the level's size is the smallest such knee over the thread counts measured"

// kneeMinRatio is how much faster than DRAM a plateau must be to count as
// a cache level (a hidden L3 on the VMs measured: 3–6×).
const kneeMinRatio = 1.5

// DetectKnee finds the knee of the read bandwidth curve at threads threads
// beyond above bytes (the capacity of the last cache level known at those
// threads, 0 when none) by KneeRule, from pts (memory.working_set: the
// read kernel's points at that thread count are used, in any order). ok is
// false when the curve shows no level between above and DRAM (too few
// points, or no plateau kneeMinRatio × the DRAM figure).
func DetectKnee(pts []results.Bandwidth, threads int, above int64) (results.CacheKnee, bool) {
	var rs []results.Bandwidth
	for _, p := range pts {
		if p.Kernel == "read" && p.Threads == threads && p.GBps.Median > 0 && p.WorkingSetBytes > 0 {
			rs = append(rs, p)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].WorkingSetBytes < rs[j].WorkingSetBytes })
	if len(rs) < 4 {
		return results.CacheKnee{}, false
	}
	maxWS := rs[len(rs)-1].WorkingSetBytes
	var tail []float64
	lo, hi := -1, -1 // the region between the known level and the tail
	for i, p := range rs {
		switch {
		case p.WorkingSetBytes >= maxWS/4:
			tail = append(tail, p.GBps.Median)
		case p.WorkingSetBytes > 2*above:
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 || hi-lo < 1 || len(tail) == 0 {
		return results.CacheKnee{}, false
	}
	dram := results.Summarize(tail).Median
	peak := lo
	for i := lo; i <= hi; i++ {
		if rs[i].GBps.Median > rs[peak].GBps.Median {
			peak = i
		}
	}
	plateau := rs[peak].GBps.Median
	if plateau < kneeMinRatio*dram {
		return results.CacheKnee{}, false
	}
	thr := (plateau + dram) / 2
	below := func(i int) bool { return i >= len(rs) || rs[i].GBps.Median < thr }
	for j := peak + 1; j < len(rs); j++ {
		if below(j) && below(j+1) {
			return results.CacheKnee{Threads: threads, SizeBytes: rs[j-1].WorkingSetBytes, AboveBytes: above,
				PlateauGBps: plateau, DRAMGBps: dram, ThresholdGBps: thr, FirstBelowBytes: rs[j].WorkingSetBytes}, true
		}
	}
	return results.CacheKnee{}, false
}

// cacheSizesOf is the per-level data cache sizes of a topology (the
// largest of each level 1–3, instruction caches excluded).
func cacheSizesOf(t *results.Topology) cacheSizes {
	var c cacheSizes
	for _, k := range t.Caches {
		if k.Level >= 1 && k.Level <= 3 && k.Type != "Instruction" && k.SizeBytes > c.size[k.Level] {
			c.size[k.Level] = k.SizeBytes
			c.sharers[k.Level] = max(1, k.SharedBy)
			c.instances[k.Level] = max(1, k.Instances)
		}
	}
	return c
}

// WithMeasuredLLC returns p with a last-level cache found from the knee of
// its read bandwidth curves (DetectKnee at every thread count of
// memory.working_set) where the topology reports no L3 (a VM whose CPUID
// and sysfs hide it): a copy of p whose topology.caches gain an L3 entry
// of source KneeSource (size: the smallest knee over the thread counts;
// one instance shared by every CPU, assumed), whose topology.cache_knees
// record each knee and the rule, and whose memory.levels gain the L3 read
// roof at each thread count (picked as the probe picks the others). The
// note says what was found and why, or why nothing was ("" when p has an
// L3 already or lacks the sections). p itself is never modified; it is
// returned as is when nothing is added.
func WithMeasuredLLC(p *results.Profile) (*results.Profile, string) {
	if p == nil || p.Topology == nil || p.Memory == nil || len(p.Memory.WorkingSet) == 0 {
		return p, ""
	}
	t := p.Topology
	for _, c := range t.Caches {
		if c.Level >= 3 && c.Type != "Instruction" {
			return p, ""
		}
	}
	cs := cacheSizesOf(t)
	last := 0
	for lvl := 1; lvl <= 2; lvl++ {
		if cs.size[lvl] > 0 {
			last = lvl
		}
	}
	cores := max(t.Cores, 1)
	var threads []int
	for _, b := range p.Memory.WorkingSet {
		if b.Kernel == "read" && !slices.Contains(threads, b.Threads) {
			threads = append(threads, b.Threads)
		}
	}
	slices.Sort(threads)
	var knees []results.CacheKnee
	var why []string
	for _, n := range threads {
		above := int64(0)
		if last > 0 {
			inst := max(1, cs.instances[last])
			used := min(inst, max(1, (n*inst+cores-1)/cores))
			above = cs.size[last] * int64(used)
		}
		k, ok := DetectKnee(p.Memory.WorkingSet, n, above)
		if !ok {
			why = append(why, fmt.Sprintf("%d threads: no plateau ≥ %.1f× DRAM past %s", n, kneeMinRatio, sizeText(2*above)))
			continue
		}
		knees = append(knees, k)
	}
	if len(knees) == 0 {
		return p, "no L3 in CPUID or sysfs, and no knee in the read bandwidth curves (" + strings.Join(why, "; ") + "): bytes beyond the last level known are timed at the DRAM roof"
	}
	size := knees[0].SizeBytes
	var parts []string
	for _, k := range knees {
		size = min(size, k.SizeBytes)
		parts = append(parts, fmt.Sprintf("%d threads %s (plateau %.0f GB/s, DRAM %.0f GB/s, below %.0f GB/s from %s)",
			k.Threads, sizeText(k.SizeBytes), k.PlateauGBps, k.DRAMGBps, k.ThresholdGBps, sizeText(k.FirstBelowBytes)))
	}
	q := *p
	nt := *t
	line := t.LineBytes
	for _, c := range t.Caches {
		if c.Level == last && c.LineBytes > 0 {
			line = c.LineBytes
		}
	}
	nt.Caches = append(slices.Clone(t.Caches), results.Cache{Level: 3, Type: "Unified", SizeBytes: size, LineBytes: line,
		Instances: 1, SharedBy: max(len(t.OnlineCPUs), t.Threads, 1), Source: KneeSource})
	nt.LLCBytes = size
	nt.CacheKnees = knees
	nt.KneeRule = KneeRule
	note := fmt.Sprintf("L3 %s from the knee of the read bandwidth vs working set (%s; the smallest taken, one instance shared by all CPUs assumed), not from CPUID or sysfs", sizeText(size), strings.Join(parts, "; "))
	if nt.CacheNote != "" {
		nt.CacheNote += "; " + note
	} else {
		nt.CacheNote = note
	}
	q.Topology = &nt
	nm := *p.Memory
	nm.Levels = addL3Levels(p.Memory.Levels, pickLevels(p.Memory.WorkingSet, cacheSizesOf(&nt)))
	q.Memory = &nm
	return &q, note
}

// addL3Levels returns levels with the L3 entries of picked inserted
// before each thread count's DRAM entry (the others are kept as they
// were: their pick does not depend on the L3).
func addL3Levels(levels, picked []results.LevelBandwidth) []results.LevelBandwidth {
	out := slices.Clone(levels)
	for _, l3 := range picked {
		if l3.Level != "L3" {
			continue
		}
		at := len(out)
		for i, l := range out {
			if l.Threads == l3.Threads && l.Level == "DRAM" {
				at = i
				break
			}
		}
		out = slices.Insert(out, at, l3)
	}
	return out
}
