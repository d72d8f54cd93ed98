package probes

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/results"
)

// smallMatrix shrinks the section's shapes for the test (restored after).
func smallMatrix(t *testing.T) {
	t.Helper()
	old := matrixShapes
	matrixShapes = map[bool][3]int{false: {13, 96, 40}, true: {13, 96, 40}}
	oldTable := gemmShapeTable
	small := gemmShapeTable[true]
	small.Ms, small.NK = []int{3, 13}, [][2]int{{96, 40}, {32, 64}}
	gemmShapeTable = map[bool]struct {
		Ms        []int
		NK        [][2]int
		FewRowsMs []int
		FewRowsNK [][2]int
	}{false: small, true: small}
	t.Cleanup(func() { matrixShapes, gemmShapeTable = old, oldTable })
}

// The matrix section measures every measured backend at 1 thread and all
// cores, a GEMV per dtype, and (with ≥ 2 cores) one split; figures are
// positive with checksums, fractions refer to the sections given, and the
// progress steps match matrixSteps.
func TestMatrixSection(t *testing.T) {
	smallMatrix(t)
	r := newTestRunner(t, kernels.BestMem())
	r.plan.cores = len(r.pool.workers)
	r.plan.maxWS, r.plan.dramWS = 512<<10, 512<<10
	r.cfg.Quick = true
	prog := &countProgress{}
	r.prog = prog
	threads := r.computeThreads()
	// Ceilings far above anything attained, so every fraction is in (0, 1).
	compute := &results.Compute{FrequencyHz: 3e9, FrequencySource: "test"}
	memory := &results.Memory{}
	for _, th := range threads {
		compute.Peaks = append(compute.Peaks, results.ComputePeak{Kernel: "fake_fp32", Precision: "fp32", Unit: "GFLOP/s", Threads: th, Rate: results.Stat{Median: 1e6}})
		memory.Levels = append(memory.Levels, results.LevelBandwidth{Level: "DRAM", Kernel: "read", Threads: th, GBps: results.Stat{Median: 1e6}})
	}
	start := time.Now()
	m, err := r.matrixSection(context.Background(), compute, memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("matrix section (test shapes): %v", time.Since(start))
	if len(prog.steps) != r.matrixSteps() {
		t.Errorf("%d progress steps, matrixSteps says %d: %v", len(prog.steps), r.matrixSteps(), prog.steps)
	}
	// Quick: each dtype's best backend per unit, the GEMVs but int8's,
	// int2's and int1's (listed as not measured, with why).
	run, skipped := matrixBackends(r.cfg.Quick)
	noGEMV := len(matrixDTypes) + len(quant.KernelFormats()) - r.gemvFormats()
	if noGEMV != len(quickNoGEMV) {
		t.Errorf("quick measures %d GEMV formats, want all but %v", r.gemvFormats(), quickNoGEMV)
	}
	for _, b := range run {
		if best, err := gemm.BestOn(b.Unit, b.DType); err != nil || best.Name != b.Name {
			t.Errorf("quick measures %s, not the best %s backend on %s (%v)", b.Name, b.DType, b.Unit.Where(), err)
		}
	}
	if len(m.GEMM) != len(run)*len(threads) || len(m.GEMV) != r.gemvFormats()*len(threads) {
		t.Errorf("%d GEMM and %d GEMV figures for %d backends, %d threads", len(m.GEMM), len(m.GEMV), len(run), len(threads))
	}
	// The attained-GEMM table: every shape per table backend and thread
	// count, in order, with the table's repetitions.
	sh := gemmShapeTable[true]
	if want := len(gemmTableBackends()) * len(threads) * len(sh.NK) * len(sh.Ms); len(m.GEMMShapes) != want {
		t.Errorf("%d gemm_shapes figures, want %d", len(m.GEMMShapes), want)
	}
	for i, g := range m.GEMMShapes {
		nk := sh.NK[(i/len(sh.Ms))%len(sh.NK)]
		if g.M != sh.Ms[i%len(sh.Ms)] || g.N != nk[0] || g.K != nk[1] || !(g.GFLOPS.Median > 0) || g.GFLOPS.N != gemmTableReps || g.Checksum == 0 {
			t.Errorf("gemm_shapes[%d]: %+v", i, g)
		}
	}
	if len(m.Unavailable) != len(skipped)+noGEMV {
		t.Errorf("unavailable %v, want %v and %d GEMVs", m.Unavailable, skipped, noGEMV)
	}
	for _, g := range append(append([]results.GEMMResult{}, m.GEMM...), m.GEMV...) {
		if !(g.GFLOPS.Median > 0) || math.IsInf(g.GFLOPS.Median, 0) || g.GFLOPS.N != r.cfg.Reps || len(g.CPUs) != g.Threads ||
			g.Checksum == 0 || math.IsNaN(g.Checksum) || !(g.WeightGBps > 0) || g.PackSeconds <= 0 {
			t.Errorf("%s M=%d threads=%d: %+v", g.Backend, g.M, g.Threads, g)
		}
		if g.DType == "int8" && g.M > smallM {
			if g.FractionOf != "" {
				t.Errorf("int8 GEMM has a fraction of %q, but the compute section has no int8 ceiling", g.FractionOf)
			}
			continue
		}
		if !(g.Fraction > 0 && g.Fraction < 1) || g.FractionOf == "" {
			t.Errorf("%s M=%d threads=%d: fraction %v of %q", g.Backend, g.M, g.Threads, g.Fraction, g.FractionOf)
		}
	}
	for _, g := range m.GEMV {
		bytes := gemm.WeightBytes(gemm.DType(g.DType), g.N, g.K)
		if f, err := quant.ParseFormat(g.DType); err == nil {
			bytes = int64(f.BytesPerWeight() * float64(g.N*g.K))
		}
		if g.M != 1 || bytes < r.plan.maxWS/2 || !strings.Contains(g.FractionOf, "DRAM") {
			t.Errorf("GEMV %s: %d×%d, fraction of %q", g.Backend, g.N, g.K, g.FractionOf)
		}
	}
	// The effective-bandwidth model: γ from the marginal cost of the
	// up-convert loop between two panels, one point per thread count,
	// ebw = min(β, 32/γ), the measured GEMV joined (not on the formats
	// held as int2, which copy int2's γ).
	if len(m.QuantEBW) != len(quant.Formats()) {
		t.Fatalf("quant_ebw: %+v", m.QuantEBW)
	}
	for _, q := range m.QuantEBW {
		_, held := heldAs[quant.Format(q.Format)]
		if !(q.GammaCycles > 0) || q.UpconvertGBps.N != r.cfg.Reps || len(q.Points) != len(threads) ||
			q.MarginalGBps == nil || q.MarginalGBps.N < 1 || q.MarginalGBps.N > r.cfg.Reps || q.PerCallNs == nil || q.PerCallNs.N != q.MarginalGBps.N ||
			len(q.PanelBytes) != 2 || q.PanelBytes[1] <= q.PanelBytes[0] || !strings.Contains(q.GammaMethod, "marginal") ||
			math.Abs(q.GammaCycles-32*q.ClockHz/(q.MarginalGBps.Median*1e9)) > 1e-9*q.GammaCycles {
			t.Errorf("quant_ebw %s: %+v", q.Backend, q)
		}
		measured, _ := r.measuresGEMV(q.Format)
		for _, pt := range q.Points {
			up := 32 / q.GammaCycles
			if want := math.Min(pt.BetaBytesPerCycle, up); math.Abs(pt.EBWBytesPerCycle-want) > 1e-9*want || (pt.MeasuredGBps > 0) != (measured && !held) ||
				math.Abs(pt.EBWGBps-float64(pt.Threads)*want*q.ClockHz/1e9) > 1e-6*pt.EBWGBps || (pt.Limit == "memory") != (pt.BetaBytesPerCycle <= up) {
				t.Errorf("quant_ebw %s point %+v (32/γ = %v)", q.Backend, pt, up)
			}
		}
	}
	if pair, ok := matrixPair(); ok && r.plan.cores >= 2 {
		if len(m.Mixed) != 1 {
			t.Fatalf("mixed: %+v", m.Mixed)
		}
		s := m.Mixed[0]
		if s.Ratio <= 0 || s.IdealSeconds <= 0 || s.Makespan.N != r.cfg.Reps || s.AlphaIdeal <= 0 || s.AlphaIdeal >= 1 ||
			len(s.CPUsA)+len(s.CPUsB) != r.plan.cores || s.BackendA == s.BackendB {
			t.Errorf("mixed: %+v", s)
		}
		if s.BackendA != pair.Cores.Name || s.BackendB != pair.Matrix.Name || !strings.Contains(s.Targets, "B = matrix: "+pair.MatrixLabel()) {
			t.Errorf("mixed backends %s + %s (%q), want the placements' %s + %s", s.BackendA, s.BackendB, s.Targets, pair.Cores.Name, pair.Matrix.Name)
		}
	}
	if !strings.Contains(m.Method, "float64 reference") {
		t.Errorf("method %q", m.Method)
	}
}

func TestMatrixSectionInterrupted(t *testing.T) {
	smallMatrix(t)
	r := newTestRunner(t, kernels.BestMem())
	r.plan.cores = len(r.pool.workers)
	r.plan.maxWS, r.plan.dramWS = 256<<10, 256<<10
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.matrixSection(ctx, nil, nil); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err = %v", err)
	}
}

// GEMMFraction picks the DRAM roof for decode shapes and the compute
// ceiling of the dtype (bf16: fp32 when there is none) for large M, and
// says why when the profile has neither.
func TestGEMMFraction(t *testing.T) {
	c := &results.Compute{Peaks: []results.ComputePeak{
		{Kernel: "avx2_fma_fp32", Precision: "fp32", Unit: "GFLOP/s", Threads: 2, Rate: results.Stat{Median: 200}},
		{Kernel: "sse_mul_add_fp32", Precision: "fp32", Unit: "GFLOP/s", Threads: 2, Rate: results.Stat{Median: 50}},
		{Kernel: "avx2_fma_fp32", Precision: "fp32", Unit: "GFLOP/s", Threads: 1, Rate: results.Stat{Median: 100}},
	}}
	mem := &results.Memory{Levels: []results.LevelBandwidth{{Level: "DRAM", Threads: 1, GBps: results.Stat{Median: 20}}}}
	mat := &results.Matrix{GEMM: []results.GEMMResult{{Backend: "avx2-int8", Threads: 2, M: 512, N: 3072, K: 3072, GFLOPS: results.Stat{Median: 80}}}}
	cases := []struct {
		g          results.GEMMResult
		frac       float64
		of, whyNot string
	}{
		{results.GEMMResult{DType: "fp32", M: 512, Threads: 2, GFLOPS: results.Stat{Median: 100}}, 0.5, "avx2_fma_fp32, 2 threads", ""},
		{results.GEMMResult{DType: "bf16", M: 512, Threads: 1, GFLOPS: results.Stat{Median: 60}}, 0.6, "widened to fp32", ""},
		{results.GEMMResult{Backend: "avx2-int8", DType: "int8", M: 512, Threads: 2, GFLOPS: results.Stat{Median: 40}}, 0.5, "matrix section", ""},
		{results.GEMMResult{Backend: "avx2-int8", DType: "int8", M: 512, Threads: 1, GFLOPS: results.Stat{Median: 40}}, 0, "", "no int8 ceiling at 1 threads"},
		{results.GEMMResult{DType: "fp32", M: 1, Threads: 1, WeightGBps: 15}, 0.75, "DRAM read roof", ""},
		{results.GEMMResult{DType: "fp32", M: 16, Threads: 2, WeightGBps: 15}, 0, "", "no DRAM read roof at 2 threads"},
	}
	for i, cs := range cases {
		g := cs.g
		why := GEMMFraction(&g, c, mem, mat)
		if math.Abs(g.Fraction-cs.frac) > 1e-12 || !strings.Contains(g.FractionOf, cs.of) || (cs.whyNot == "") != (why == "") || !strings.Contains(why, cs.whyNot) {
			t.Errorf("case %d: fraction %v of %q, why not %q; want %v of %q / %q", i, g.Fraction, g.FractionOf, why, cs.frac, cs.of, cs.whyNot)
		}
	}
	g := results.GEMMResult{DType: "fp32", M: 1, Threads: 1}
	if why := GEMMFraction(&g, nil, nil, nil); !strings.Contains(why, "no memory section") {
		t.Errorf("no profile sections: %q", why)
	}
}

// smallGEMMBench is a one-worker bench (closed with the test), the best
// fp32 backend and a 40×24 weight matrix of it.
func smallGEMMBench(t *testing.T) (*GEMMBench, gemm.Backend, *GEMMWeights) {
	t.Helper()
	b, err := NewGEMMBench([]int{0}, 1, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewGEMMWeights(be, 40, 24, 1)
	if err != nil {
		t.Fatal(err)
	}
	return b, be, w
}

// A weight matrix computed by the wrong backend's numbers fails the
// measurement's check instead of being recorded.
func TestGEMMBenchCatchesWrongWeights(t *testing.T) {
	b, be, w := smallGEMMBench(t)
	if _, err := b.Measure(context.Background(), w, 5, 1, false); err != nil {
		t.Fatal(err)
	}
	other, _ := NewGEMMWeights(be, 40, 24, 9)
	w.Raw = other.Raw // the reference no longer matches the packed W
	if _, err := b.Measure(context.Background(), w, 5, 1, false); err == nil || !strings.Contains(err.Error(), "float64 reference") {
		t.Fatalf("err = %v", err)
	}
	if _, err := b.Measure(context.Background(), w, 5, 2, false); err == nil {
		t.Fatal("2 threads on a 1-worker pool accepted")
	}
}

// With an output ring, each call writes the next output; the last one is
// the one checked against the float64 reference, and the figure records
// the ring's bytes.
func TestGEMMBenchOutputRing(t *testing.T) {
	b, _, w := smallGEMMBench(t)
	b.OutputRing = 1 << 16
	g, err := b.Measure(context.Background(), w, 5, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if g.OutputBytes < 1<<16 || g.OutputBytes%(5*40*4) != 0 || !(g.GFLOPS.Median > 0) {
		t.Errorf("output ring %d bytes (want ≥ 65536, whole 5×40 outputs), %v GFLOP/s", g.OutputBytes, g.GFLOPS.Median)
	}
	if ColdOutputRing(32<<20) != 128<<20 || ColdOutputRing(0) != 128<<20 || ColdOutputRing(256<<20) != 1<<30 {
		t.Errorf("ColdOutputRing: %d %d %d", ColdOutputRing(32<<20), ColdOutputRing(0), ColdOutputRing(256<<20))
	}
}

// The table's DRAM class is sized per dtype so no cache holds its weights:
// 4096×4096 stays in fp32 (64 MiB against a 32 MiB LLC) and doubles its N
// in bf16; the model-sized classes and unknown dtypes stay as they are.
func TestGEMMTableClass(t *testing.T) {
	const llc = 32 << 20
	for _, c := range []struct {
		nk   [2]int
		dt   gemm.DType
		want [2]int
	}{
		{[2]int{4096, 4096}, gemm.FP32, [2]int{4096, 4096}},
		{[2]int{4096, 4096}, gemm.BF16, [2]int{8192, 4096}},
		{[2]int{4096, 4096}, gemm.Int8, [2]int{16384, 4096}},
		{[2]int{3072, 1024}, gemm.BF16, [2]int{3072, 1024}},
		{[2]int{4096, 4096}, gemm.DType("nope"), [2]int{4096, 4096}},
	} {
		if got := gemmTableClass(c.nk, c.dt, llc); got != c.want {
			t.Errorf("gemmTableClass(%v, %s, 32 MiB) = %v, want %v", c.nk, c.dt, got, c.want)
		}
		if got := gemmTableClass(c.nk, c.dt, 0); got != c.nk {
			t.Errorf("gemmTableClass(%v, %s, 0) = %v, want it unchanged", c.nk, c.dt, got)
		}
	}
}

// TestMatrixSectionTiming times the section at its real shapes with the
// probe's real plan (BENCH_MATRIX_TIMING=1; seconds, not for CI).
func TestMatrixSectionTiming(t *testing.T) {
	if os.Getenv("BENCH_MATRIX_TIMING") == "" {
		t.Skip("set BENCH_MATRIX_TIMING=1 to time the matrix section")
	}
	for _, quick := range []bool{false, true} {
		topo, err := topology.ReadTopology(topology.LiveRoots())
		if err != nil {
			t.Fatal(err)
		}
		order, err := cpuOrder(topo)
		if err != nil {
			t.Fatal(err)
		}
		r := newTestRunner(t, kernels.BestMem())
		r.topo, r.cfg.Quick = topo, quick
		r.cfg.Reps, r.cfg.RepDuration = 7, 20*time.Millisecond
		if quick {
			r.cfg.Reps, r.cfg.RepDuration = 5, 6*time.Millisecond
		}
		if err := r.makePlan(order); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		m, err := r.matrixSection(context.Background(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("quick=%v: %v, maxWS %s", quick, time.Since(start), sizeText(r.plan.maxWS))
		for _, g := range append(m.GEMM, m.GEMV...) {
			t.Logf("  %s M=%d N=%d K=%d threads=%d: %.1f GFLOP/s, %.1f GB/s, pack %.0f ms", g.Backend, g.M, g.N, g.K, g.Threads, g.GFLOPS.Median, g.WeightGBps, g.PackSeconds*1e3)
		}
		for _, s := range m.Mixed {
			t.Logf("  mixed %s+%s: α %.3f/%.3f ratio %.2f (%s)", s.BackendA, s.BackendB, s.AlphaIdeal, s.AlphaChosen, s.Ratio, s.Note)
		}
	}
}

// TestDRAMWorkingSet: a full probe of default working sets measures its
// DRAM roofs and GEMVs at dramMinBytes at least; --max-ws, quick mode, a larger maxWS and
// a memory limit below three such weights keep maxWS.
func TestDRAMWorkingSet(t *testing.T) {
	roomy := memlimit.Limit{Known: true, Bytes: 64 << 30}
	tight := memlimit.Limit{Known: true, Bytes: 1 << 30}
	for _, c := range []struct {
		maxWS        int64
		fixed, quick bool
		lim          memlimit.Limit
		want         int64
	}{
		{128 << 20, false, false, roomy, dramMinBytes},
		{128 << 20, false, false, memlimit.Limit{}, dramMinBytes},
		{128 << 20, true, false, roomy, 128 << 20},
		{128 << 20, false, true, roomy, 128 << 20},
		{2 << 30, false, false, roomy, 2 << 30},
		{128 << 20, false, false, tight, 128 << 20},
	} {
		if got := dramWorkingSet(c.maxWS, c.fixed, c.quick, c.lim); got != c.want {
			t.Errorf("dramWorkingSet(%d, fixed %v, quick %v, %+v) = %d, want %d", c.maxWS, c.fixed, c.quick, c.lim, got, c.want)
		}
	}
}
