package probes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cpubench/bench/kernels/peak"
	"github.com/cpubench/bench/results"
)

// Preference lists for the mixed compute experiment, best first.
var (
	// mixedMatrix are the matrix-unit kernels (SMEPilot's "SME workers").
	mixedMatrix = []string{"amx_bf16", "sme_fmopa_bf16", "sme_fmopa_fp32", "amx_int8", "sme_smopa_int8"}
	// mixedVector are the vector-core FP32 FMA kernels ("CPU-core workers").
	mixedVector = []string{"avx512_fma_fp32", "sve_fma_fp32", "avx2_fma_fp32", "neon_fma_fp32", "sse_mul_add_fp32"}
	// mixedSecond is the second backend without a matrix unit: another
	// precision or ISA extension of the vector unit.
	mixedSecond = []string{"avx512_bf16_dp", "avx512_fp16_fma", "neon_bfdot", "neon_fma_fp16",
		"avx512_vnni_int8", "avx_vnni_int8", "neon_sdot",
		"avx512_fma_fp64", "avx2_fma_fp64", "neon_fma_fp64", "sse_mul_add_fp64"}
)

// pickMixed chooses the two backends of the mixed compute experiment from
// the available kernels: the matrix unit beside the best vector FP32 FMA
// where the CPU has one (SMEPilot Fig. 3), else the best vector FP32 FMA
// beside the best other vector kernel (a narrower-precision dot product, or
// FP64). ok is false when fewer than two distinct kernels are available.
func pickMixed(ks []peak.Kernel) (a, b peak.Kernel, ok bool) {
	first := func(names []string, not string) (peak.Kernel, bool) {
		for _, n := range names {
			for _, k := range ks {
				if k.Name == n && k.Name != not && k.Unavailable == "" {
					return k, true
				}
			}
		}
		return peak.Kernel{}, false
	}
	vec, okVec := first(mixedVector, "")
	if mat, okMat := first(mixedMatrix, ""); okMat {
		// Prefer the vector kernel of the matrix kernel's precision, so the
		// pair can share one operator (SMEPilot Fig. 3 runs FP16 work on both)
		// and the sum is a mixed ceiling of that precision.
		for _, name := range append(slices.Clone(mixedVector), mixedSecond...) {
			for _, k := range ks {
				if k.Name == name && k.Unavailable == "" && k.Precision == mat.Precision && k.ISA != mat.ISA {
					return mat, k, true
				}
			}
		}
		if okVec {
			return mat, vec, true
		}
		if b, okB := first(mixedSecond, ""); okB {
			return mat, b, true
		}
		return peak.Kernel{}, peak.Kernel{}, false
	}
	if !okVec {
		return peak.Kernel{}, peak.Kernel{}, false
	}
	b, okB := first(mixedSecond, vec.Name)
	return vec, b, okB
}

// mixedSteps is the number of progress steps of the mixed section.
func (r *runner) mixedSteps() int {
	if r.plan.cores < 2 {
		return 0
	}
	return 2
}

// mixedSection is SMEPilot §3.1 / Fig. 3 generalized: two backends on
// disjoint pinned thread sets (the first and second half of the cores), each
// alone, then both together. Compute: the matrix unit (AMX, SME) beside
// vector-core FMA workers where the CPU has one, else two vector kernels
// (see pickMixed); near-additive throughput means the two can share an
// operator. Read bandwidth: both halves stream a DRAM-sized working set
// (r.plan.maxWS per group), whose sum does not add up when the memory
// system is the limit.
func (r *runner) mixedSection(ctx context.Context) (*results.Mixed, error) {
	all := r.pool.workers[:r.plan.cores]
	if len(all) < 2 {
		return &results.Mixed{Unavailable: fmt.Sprintf("unavailable: needs at least 2 cores, have %d", len(all))}, nil
	}
	half := len(all) / 2
	groups := [][]*worker{all[:half], all[half:]}
	m := &results.Mixed{}

	if ka, kb, ok := pickMixed(peak.Kernels()); ok {
		exp, err := r.mixedPair(ctx, "compute", groups,
			[]task{computeTask(ka), computeTask(kb)},
			[]string{ka.Name, kb.Name}, []string{ka.Unit, kb.Unit}, r.cfg.RepDuration)
		if err != nil {
			return nil, err
		}
		m.Experiments = append(m.Experiments, exp)
	}
	r.step("mixed compute")

	tasks := make([]task, 2)
	for gi, g := range groups {
		tasks[gi] = memTask(r.impl, kRead, elemsPerArray(r.plan.maxWS, len(g), kRead), -1)
	}
	exp, err := r.mixedPair(ctx, "read_bandwidth", groups, tasks,
		[]string{"read", "read"}, []string{"GB/s", "GB/s"}, 2*r.cfg.RepDuration)
	if err != nil {
		return nil, err
	}
	m.Experiments = append(m.Experiments, exp)
	r.step("mixed read bandwidth")
	return m, nil
}

// mixedPair runs tasks[i] on groups[i] alone (each in turn), then both
// together, and summarizes.
//
// Together and SumAlone are sums of the groups' medians when both groups
// report in the same unit. When the units differ (GFLOP/s beside GOP/s),
// a sum of the raw figures would mean nothing, so each group's figure is
// first divided by its own alone median: SumAlone is then 2 (each group at
// 100% of itself), Together the sum of the fractions each kept while sharing
// the machine, and Unit is "fraction". Additivity = Together / SumAlone in
// both cases: 1 means the backends add up, 0.5 (for equal groups) that they
// share one resource.
func (r *runner) mixedPair(ctx context.Context, kind string, groups [][]*worker, tasks []task, kernels, units []string, d time.Duration) (results.MixedExperiment, error) {
	exp := results.MixedExperiment{Kind: kind}
	alone := make([]results.Stat, len(groups))
	for gi, g := range groups {
		m, err := measureGroups(ctx, r.place, [][]*worker{g}, []task{tasks[gi]}, d, r.cfg.Reps)
		if err != nil {
			return exp, fmt.Errorf("mixed %s %s alone: %w", kind, kernels[gi], err)
		}
		alone[gi] = m.stat(0)
	}
	m, err := measureGroups(ctx, r.place, groups, tasks, d, r.cfg.Reps)
	if err != nil {
		return exp, fmt.Errorf("mixed %s together: %w", kind, err)
	}
	sameUnit := !slices.ContainsFunc(units, func(u string) bool { return u != units[0] })
	exp.Unit = units[0]
	if !sameUnit {
		exp.Unit = "fraction"
	}
	for gi, g := range groups {
		tog := m.stat(gi)
		name := kernels[gi]
		if kind != "compute" {
			name = fmt.Sprintf("%s/%c", kernels[gi], 'A'+gi)
		}
		exp.Groups = append(exp.Groups, results.MixedGroup{
			Name: name, Kernel: kernels[gi], CPUs: cpusOf(g), Unit: units[gi],
			Alone: alone[gi], Together: tog,
		})
		if sameUnit {
			exp.SumAlone += alone[gi].Median
			exp.Together += tog.Median
		} else if alone[gi].Median > 0 {
			exp.SumAlone++
			exp.Together += tog.Median / alone[gi].Median
		}
	}
	if exp.SumAlone > 0 {
		exp.Additivity = exp.Together / exp.SumAlone
	}
	return exp, nil
}
