package roofline

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cpubench/bench/results"
)

// The measured attained GEMM table (issue #16). The single compute
// ceiling π is one shape's attained rate (the probe's matrix.gemm, M 512 ×
// N 3072 × K 3072); the GEMM kernel's rate at the engine's shapes differs
// from it (on this project's 2-core VM 232–381 GFLOP/s at 2 threads
// against 372 at the probe's shape, worst at M 2048 where the activation
// panels leave the caches). With a profile's matrix.gemm_shapes the compute
// term of a linear operator on the cores is F / r, r read from the table by
// AttainedGEMM's rule ("measured attained GEMM, this machine"); the
// single ceiling stays for every other use (ridges, regimes, splits).
//
// A GEMV-shaped linear (M = 1) whose weights stream from DRAM moves them at
// the profile's matrix.gemv weight GB/s (the kernel's own streaming rate at
// that precision and thread count, W ≥ 4× the LLC) instead of the read
// kernel's DRAM roof, which on the same VM is 33.9 GB/s at 2 threads
// against the fp32 GEMV's 63.6 (GEMVWeightGBps).

// GEMMPoint is one measured attained GEMM: Y[M×N] = X[M×K]·Wᵀ on backend
// at Threads threads, GFLOPS = 2·M·N·K / seconds / 1e9 (median).
type GEMMPoint struct {
	Precision string  `json:"precision"`
	Backend   string  `json:"backend"`
	Threads   int     `json:"threads"`
	M         int     `json:"m"`
	N         int     `json:"n"`
	K         int     `json:"k"`
	GFLOPS    float64 `json:"gflops"`
}

// GEMMTable is the attained GEMM at several shapes (GEMM points) and the
// attained GEMV weight bandwidth (GEMV points: M 1, DRAM-sized W; GFLOPS
// there is the weight GB/s) of one machine.
type GEMMTable struct {
	GEMM   []GEMMPoint `json:"gemm"`
	GEMV   []GEMMPoint `json:"gemv,omitempty"`
	Source string      `json:"source"`
}

// AttainedGEMMRule is how AttainedGEMM reads the table.
const AttainedGEMMRule = "measured attained GEMM, this machine: the points of the precision at the measured thread count nearest below the operator's (scaled by the thread ratio when not equal), the (N, K) class nearest in log(N·K) (ties: nearest in log(N/K)), then linear interpolation in log M between the measured M bracketing the operator's (clamped to the largest; none below the smallest)"

// AttainedGEMM returns the attained GEMM rate in GFLOP/s for a linear
// operator of M rows and an N×K weight in precision prec on threads
// threads, by AttainedGEMMRule, with a one-line description of the points
// used; ok is false without table, without points of prec, or for M
// below the smallest measured M (a GEMV-like shape the table does not
// cover).
func (m *Machine) AttainedGEMM(prec string, threads, M, N, K int) (gflops float64, used string, ok bool) {
	return m.attainedGEMM(prec, threads, M, N, K, "")
}

// attainedGEMM is AttainedGEMM for an operator whose weights the memory
// model reads from level weightsLevel ("" for unknown). A measured class
// whose N×K weights a slower level holds than weightsLevel (at the class's
// thread count) gives, at small M, the rate of that level's bandwidth, not
// the kernel's: 1×2048 fp32 rows of a 1024×1024 weight (4 MiB, L3) ran at
// 89 GFLOP/s on this project's KVM guest where a 512×256 weight (512 KiB,
// L2) ran at 152. Such an operator gets the class's highest measured rate
// (the kernel's compute plateau over M) instead; its memory time, at its
// own level, is the memory model's.
func (m *Machine) attainedGEMM(prec string, threads, M, N, K int, weightsLevel string) (gflops float64, used string, ok bool) {
	if m.GEMMTable == nil || M < 1 || N < 1 || K < 1 {
		return 0, "", false
	}
	var pts []GEMMPoint
	var have []int
	for _, p := range m.GEMMTable.GEMM {
		// M 1 points (the DRAM classes' GEMVs) are FewRowsWeightFactor's
		// baseline, a weight stream, not a compute rate.
		if p.Precision == prec && p.GFLOPS > 0 && p.M > 1 && p.N > 0 && p.K > 0 && p.Threads > 0 {
			pts = append(pts, p)
			have = append(have, p.Threads)
		}
	}
	if len(pts) == 0 {
		return 0, "", false
	}
	nt := nearestThreads(have, threads)
	// A class measured at a few rows only (the probe's few-rows DRAM
	// classes) is a candidate for M up to its largest measured M, or up to
	// the table's largest M at nt where M is beyond every class's.
	topM, classTop := 0, map[[2]int]int{}
	for _, p := range pts {
		if p.Threads == nt {
			topM = max(topM, p.M)
			classTop[[2]int{p.N, p.K}] = max(classTop[[2]int{p.N, p.K}], p.M)
		}
	}
	nk := math.Log(float64(N) * float64(K))
	aspect := math.Log(float64(N) / float64(K))
	bestD, bestA, class := math.Inf(1), math.Inf(1), [2]int{}
	for _, p := range pts {
		if p.Threads != nt || classTop[[2]int{p.N, p.K}] < min(M, topM) {
			continue
		}
		d := math.Abs(math.Log(float64(p.N)*float64(p.K)) - nk)
		a := math.Abs(math.Log(float64(p.N)/float64(p.K)) - aspect)
		// Ties in N·K: the nearest aspect N/K (gate 3072×1024 is not
		// down 1024×3072), then the larger class.
		if d < bestD-1e-9 || (math.Abs(d-bestD) <= 1e-9 && (a < bestA-1e-9 || (math.Abs(a-bestA) <= 1e-9 && p.N*p.K > class[0]*class[1]))) {
			bestD, bestA, class = d, a, [2]int{p.N, p.K}
		}
	}
	// The best backend's rate at each M of the class.
	byM := map[int]GEMMPoint{}
	for _, p := range pts {
		if p.Threads == nt && p.N == class[0] && p.K == class[1] {
			if cur, ok := byM[p.M]; !ok || p.GFLOPS > cur.GFLOPS {
				byM[p.M] = p
			}
		}
	}
	ms := make([]int, 0, len(byM))
	for k := range byM {
		ms = append(ms, k)
	}
	sort.Ints(ms)
	if M < ms[0] {
		return 0, "", false
	}
	var r float64
	var at string
	if eb, err := DTypeBytes(prec); err == nil && weightsLevel != "" {
		if lv, ok := m.holding(float64(class[0])*float64(class[1])*eb, nt); ok && levelOrder[lv.Level] > levelOrder[weightsLevel] {
			for _, k := range ms {
				if p := byM[k]; p.GFLOPS > r {
					r, at = p.GFLOPS, fmt.Sprintf("M %d %.1f, the highest of the class, whose weights %s holds against the operator's %s", p.M, p.GFLOPS, lv.Level, weightsLevel)
				}
			}
			return m.scaledGEMM(r, at, threads, nt, prec, byM[ms[0]].Backend, class)
		}
	}
	switch {
	case M >= ms[len(ms)-1]:
		p := byM[ms[len(ms)-1]]
		r, at = p.GFLOPS, fmt.Sprintf("M %d %.1f", p.M, p.GFLOPS)
	default:
		i := sort.SearchInts(ms, M) // ms[i] ≥ M > ms[i-1], or ms[i] == M
		if ms[i] == M {
			p := byM[M]
			r, at = p.GFLOPS, fmt.Sprintf("M %d %.1f", p.M, p.GFLOPS)
			break
		}
		lo, hi := byM[ms[i-1]], byM[ms[i]]
		f := (math.Log(float64(M)) - math.Log(float64(lo.M))) / (math.Log(float64(hi.M)) - math.Log(float64(lo.M)))
		r = lo.GFLOPS + f*(hi.GFLOPS-lo.GFLOPS)
		at = fmt.Sprintf("M %d %.1f–M %d %.1f", lo.M, lo.GFLOPS, hi.M, hi.GFLOPS)
	}
	return m.scaledGEMM(r, at, threads, nt, prec, byM[ms[0]].Backend, class)
}

// scaledGEMM is attainedGEMM's result: rate r (GFLOP/s) measured at nt
// threads scaled to threads, and its description.
func (m *Machine) scaledGEMM(r float64, at string, threads, nt int, prec, backend string, class [2]int) (float64, string, bool) {
	if nt != threads {
		r *= float64(threads) / float64(nt)
	}
	return r, fmt.Sprintf("%.1f GFLOP/s, measured attained GEMM, this machine (%s %s N×K %d×%d at %d threads: %s)", r, prec, backend, class[0], class[1], nt, at), true
}

// GEMVWeightGBps returns the attained GEMV weight bandwidth in GB/s of
// precision prec on threads threads (the measured thread count nearest
// below, scaled by the thread ratio when not equal), and what it is; ok is
// false without such a point.
func (m *Machine) GEMVWeightGBps(prec string, threads int) (gbps float64, used string, ok bool) {
	if m.GEMMTable == nil {
		return 0, "", false
	}
	var have []int
	for _, p := range m.GEMMTable.GEMV {
		if p.Precision == prec && p.GFLOPS > 0 && p.Threads > 0 {
			have = append(have, p.Threads)
		}
	}
	if len(have) == 0 {
		return 0, "", false
	}
	nt := nearestThreads(have, threads)
	for _, p := range m.GEMMTable.GEMV {
		if p.Precision == prec && p.Threads == nt && p.GFLOPS > gbps {
			gbps, used = p.GFLOPS, fmt.Sprintf("%s %s GEMV %d×%d at %d threads", prec, p.Backend, p.N, p.K, nt)
		}
	}
	if nt != threads {
		gbps *= float64(threads) / float64(nt)
	}
	return gbps, fmt.Sprintf("%.1f GB/s, measured attained GEMV weight bandwidth, this machine (%s)", gbps, used), true
}

// dramRoof is profile p's DRAM read roof at threads threads (memory.dram's
// median), 0 where it has none.
func dramRoof(p *results.Profile, threads int) float64 {
	if p.Memory == nil {
		return 0
	}
	for _, d := range p.Memory.DRAM {
		if d.Threads == threads && d.GBps.Median > 0 {
			return d.GBps.Median
		}
	}
	return 0
}

// gemvDTypes are the GEMV dtypes whose weight bandwidth stands for the
// roofline precision of the same name (float formats; the quantized ones
// have the effective-bandwidth model).
var gemvDTypes = map[string]bool{"fp32": true, "bf16": true, "fp16": true}

// addGEMMTable copies the profile's matrix.gemm_shapes (and, with them,
// matrix.gemv's float formats) into m.GEMMTable. Profiles without
// gemm_shapes (older probes, published profiles) get no table and keep the
// single ceiling.
func addGEMMTable(m *Machine, p *results.Profile, name string) {
	mx := p.Matrix
	if mx == nil {
		return
	}
	t := &GEMMTable{}
	for _, g := range mx.GEMMShapes {
		if g.GFLOPS.Median > 0 && g.M > 0 && g.N > 0 && g.K > 0 && g.Threads > 0 {
			t.GEMM = append(t.GEMM, GEMMPoint{Precision: g.DType, Backend: g.Backend, Threads: g.Threads, M: g.M, N: g.N, K: g.K, GFLOPS: g.GFLOPS.Median})
		}
	}
	scaled := 0
	for _, g := range mx.GEMV {
		if gemvDTypes[g.DType] && g.M == 1 && g.WeightGBps > 0 && g.Threads > 0 {
			gbps := g.WeightGBps
			if r := dramRoof(p, g.Threads); g.RoofNowGBps > 0 && r > 0 {
				// No kernel streams its weights faster than the read
				// roof: a fraction above 1 (the host moved between the
				// roofs and the GEMV; profiles before the probe re-measured
				// such GEMVs recorded up to 140%) counts as 1.
				gbps = min(gbps/g.RoofNowGBps, 1) * r
				scaled++
			}
			t.GEMV = append(t.GEMV, GEMMPoint{Precision: g.DType, Backend: g.Backend, Threads: g.Threads, M: 1, N: g.N, K: g.K, GFLOPS: gbps})
		}
	}
	if scaled > 0 {
		m.Notes = append(m.Notes, "a GEMV's weight bandwidth is its fraction of the DRAM read roof re-measured beside it (matrix.gemv roof_now_gbps) (at most 1) × the profile's DRAM read roof at its threads (memory.dram): the host's bandwidth moves within a probe, the kernel's fraction of it much less")
	}
	if len(t.GEMM) == 0 && len(t.GEMV) == 0 {
		return
	}
	t.Source = name + ": matrix.gemm_shapes (medians) and matrix.gemv's float formats (weight GB/s)"
	m.GEMMTable = t
	if len(t.GEMM) == 0 {
		m.Notes = append(m.Notes, "a GEMV-shaped linear (M 1) streams DRAM-resident weights at the measured GEMV weight bandwidth of its precision (matrix.gemv), not the read kernel's DRAM roof; no matrix.gemm_shapes: linear operators' compute term is the single ceiling")
		return
	}
	var dts []string
	seen := map[string]bool{}
	for _, g := range t.GEMM {
		if !seen[g.Precision] {
			seen[g.Precision] = true
			dts = append(dts, g.Precision)
		}
	}
	m.Notes = append(m.Notes, fmt.Sprintf("linear operators' compute term on the cores: %s (%d points, %s), not the single ceiling; a GEMV-shaped linear (M 1) streams DRAM-resident weights at the measured GEMV weight bandwidth of its precision where measured", AttainedGEMMRule, len(t.GEMM), strings.Join(dts, ", ")))
}

// weightsIn reports whether linear o's weights are held in precision prec
// (N·K elements of its size): the GEMV rate of prec then applies.
func weightsIn(o Operator, prec string) bool {
	b, err := DTypeBytes(prec)
	if err != nil || b <= 0 {
		return false
	}
	want := float64(o.N) * float64(o.K) * b
	return math.Abs(o.Bytes.Weights-want) <= 1e-9*want
}

// FewRowsWeightFactor is the fraction of the GEMV's weight bandwidth a
// GEMM of M rows and reduction depth K (2 ≤ M ≤ GEMVMaxRows: a batched
// decode step's linear; more rows reuse each weight enough that the
// compute term bounds them) streams DRAM-resident weights at, on threads
// threads: the attained GEMM table's weight rate (GFLOP/s / 2M per
// weight) at M over its rate at M 1 (else at the class's smallest M),
// both of a DRAM-sized class of precision prec (one whose weights no
// cache level holds; of several, the one whose K is nearest K, in log,
// then the largest), interpolated in log M; at most 1, and 1 for M at or
// below the baseline's M, above GEMVMaxRows or without such a class.
// Measured on 2026-11-27's Zen 5 VM (2 threads, `bench gemm --m 1,2,4,8
// --dtype bf16`), bf16 weight GB/s at M 1, 2, 4, 8: 56.6, 52.1, 48.6,
// 40.4 at N×K 65536×1024 and 56.3, 53.4, 51.3, 46.0 at 16384×4096: M 4
// streams 0.86 of M 1 at K 1024 and 0.91 at K 4096, and the lm_head
// (151936×1024) in the engine's batch-4 decode 0.83–0.87 of its M 1,
// while the table's ratio of M 4 to M 2 at 4096×4096 (0.93) had
// predicted the batch-4 bf16 decode linears 15–35% fast.
func (m *Machine) FewRowsWeightFactor(prec string, threads, M, K int) (float64, string) {
	if m.GEMMTable == nil || M < 2 || M > GEMVMaxRows {
		return 1, ""
	}
	eb, err := DTypeBytes(prec)
	if err != nil {
		return 1, ""
	}
	var have []int
	for _, p := range m.GEMMTable.GEMM {
		if p.Precision == prec && p.GFLOPS > 0 && p.M > 0 && p.Threads > 0 {
			have = append(have, p.Threads)
		}
	}
	if len(have) == 0 {
		return 1, ""
	}
	nt := nearestThreads(have, threads)
	class, bestK := [2]int{}, math.Inf(1)
	for _, p := range m.GEMMTable.GEMM {
		if p.Precision != prec || p.Threads != nt || p.GFLOPS <= 0 || p.K <= 0 {
			continue
		}
		lv, ok := m.holding(float64(p.N)*float64(p.K)*eb, nt)
		if !ok || lv.Level != "DRAM" {
			continue
		}
		dk := math.Abs(math.Log(float64(p.K)) - math.Log(float64(max(K, 1))))
		if dk < bestK-1e-9 || (math.Abs(dk-bestK) <= 1e-9 && p.N*p.K > class[0]*class[1]) {
			class, bestK = [2]int{p.N, p.K}, dk
		}
	}
	if class[0] == 0 {
		return 1, ""
	}
	rate := map[int]float64{} // weights per second ∝ GFLOP/s / M, the best backend's
	for _, p := range m.GEMMTable.GEMM {
		if p.Precision == prec && p.Threads == nt && p.N == class[0] && p.K == class[1] && p.GFLOPS > 0 && p.M > 0 {
			rate[p.M] = max(rate[p.M], p.GFLOPS/float64(p.M))
		}
	}
	ms := make([]int, 0, len(rate))
	for k := range rate {
		ms = append(ms, k)
	}
	sort.Ints(ms)
	if M <= ms[0] {
		return 1, ""
	}
	r := rate[ms[len(ms)-1]]
	if M < ms[len(ms)-1] {
		i := sort.SearchInts(ms, M)
		if ms[i] == M {
			r = rate[M]
		} else {
			lo, hi := ms[i-1], ms[i]
			f := (math.Log(float64(M)) - math.Log(float64(lo))) / (math.Log(float64(hi)) - math.Log(float64(lo)))
			r = rate[lo] + f*(rate[hi]-rate[lo])
		}
	}
	f := min(1, r/rate[ms[0]])
	return f, fmt.Sprintf("× %.2f for %d rows (attained GEMM %s N×K %d×%d at %d threads: weight rate at M %d over M %d)", f, M, prec, class[0], class[1], nt, M, ms[0])
}
