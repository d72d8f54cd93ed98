package roofline

import (
	"math"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// Synthetic table (test values only).
func testTable() *GEMMTable {
	return &GEMMTable{GEMM: []GEMMPoint{
		{Precision: "fp32", Backend: "b", Threads: 2, M: 16, N: 1024, K: 1024, GFLOPS: 100},
		{Precision: "fp32", Backend: "b", Threads: 2, M: 256, N: 1024, K: 1024, GFLOPS: 300},
		{Precision: "fp32", Backend: "b", Threads: 2, M: 2048, N: 1024, K: 1024, GFLOPS: 250},
		{Precision: "fp32", Backend: "b", Threads: 2, M: 256, N: 4096, K: 4096, GFLOPS: 400},
		{Precision: "fp32", Backend: "b", Threads: 1, M: 256, N: 1024, K: 1024, GFLOPS: 160},
		{Precision: "fp32", Backend: "b", Threads: 2, M: 256, N: 3072, K: 1024, GFLOPS: 500},
		{Precision: "fp32", Backend: "b", Threads: 2, M: 256, N: 1024, K: 3072, GFLOPS: 50},
	}, GEMV: []GEMMPoint{{Precision: "fp32", Backend: "b", Threads: 2, M: 1, N: 65536, K: 4096, GFLOPS: 60}}}
}

func TestAttainedGEMMRule(t *testing.T) {
	m := &Machine{GEMMTable: testTable()}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, c := range []struct {
		threads, M, N, K int
		want             float64
		ok               bool
	}{
		{2, 256, 1024, 1024, 300, true},
		{2, 64, 1024, 1024, 200, true},     // halfway in log M between 16 and 256
		{2, 4096, 1024, 1024, 250, true},   // clamped to the largest M
		{2, 8, 1024, 1024, 0, false},       // below the smallest M
		{2, 256, 1536, 1024, 300, true},    // nearer 1024² than 3072×1024 in log N·K
		{2, 256, 2048, 1024, 500, true},    // nearer 3072×1024 (log 1.5) than 1024² (log 2)
		{2, 256, 3072, 3072, 400, true},    // nearer 4096²
		{1, 256, 1024, 1024, 160, true},    // its own thread count
		{4, 256, 1024, 1024, 600, true},    // nearest below (2), scaled ×2
		{2, 256, 1024, 1024 * 0, 0, false}, // bad shape
		{2, 256, 3072, 1024, 500, true},    // the aspect breaks the N·K tie
		{2, 256, 1024, 3072, 50, true},
	} {
		r, used, ok := m.AttainedGEMM("fp32", c.threads, c.M, c.N, c.K)
		if ok != c.ok || (ok && !near(r, c.want)) {
			t.Errorf("%+v: got %v %v (%s)", c, r, ok, used)
		}
		if ok && !strings.Contains(used, "measured attained GEMM, this machine") {
			t.Errorf("%+v: used %q", c, used)
		}
	}
	if _, _, ok := m.AttainedGEMM("bf16", 2, 256, 1024, 1024); ok {
		t.Error("bf16 without bf16 points")
	}
	if g, _, ok := m.GEMVWeightGBps("fp32", 2); !ok || g != 60 {
		t.Errorf("GEMV: %v %v", g, ok)
	}
	if _, _, ok := (&Machine{}).AttainedGEMM("fp32", 2, 256, 1024, 1024); ok {
		t.Error("no table")
	}
}

// A profile's matrix.gemm_shapes set a linear's compute term; a profile
// without them keeps the single ceiling; published machines are unchanged.
func TestGEMMTableFromProfile(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	p.Compute = &results.Compute{Peaks: []results.ComputePeak{{Kernel: "avx2_fma_fp32", ISA: "avx2", Precision: "fp32", Threads: 2, Rate: st(160)}}}
	p.Matrix = &results.Matrix{GEMM: []results.GEMMResult{{Backend: "avx2-fp32", DType: "fp32", M: 512, N: 3072, K: 3072, Threads: 2, GFLOPS: st(150)}}}
	before, err := FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if before.GEMMTable != nil {
		t.Fatalf("table without gemm_shapes or gemv: %+v", before.GEMMTable)
	}
	op := LinearOp("q_proj", 2048, 1024, 1024)
	pb, err := Place(before, "fp32", []Operator{op})
	if err != nil {
		t.Fatal(err)
	}
	if pb[0].Rate != "" {
		t.Errorf("rate without table: %q", pb[0].Rate)
	}
	p.Matrix.GEMMShapes = []results.GEMMResult{
		{Backend: "avx2-fp32", DType: "fp32", M: 512, N: 1024, K: 1024, Threads: 2, GFLOPS: st(120)},
		{Backend: "avx2-fp32", DType: "fp32", M: 2048, N: 1024, K: 1024, Threads: 2, GFLOPS: st(60)},
	}
	after, err := FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	pa, err := Place(after, "fp32", []Operator{op})
	if err != nil {
		t.Fatal(err)
	}
	want := op.FLOPs / 60e9
	if !strings.Contains(pa[0].Rate, "60.0 GFLOP/s, measured attained GEMM, this machine") || pa[0].Time < want || pa[0].Time > want*1.01 {
		t.Errorf("with table: time %v (want ≈ %v), rate %q", pa[0].Time, want, pa[0].Rate)
	}
	if !strings.Contains(strings.Join(after.Notes, "\n"), "measured attained GEMM, this machine") {
		t.Errorf("notes: %v", after.Notes)
	}
	for _, name := range []string{"m4-pro", "kunpeng-920"} {
		m, err := Published(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.GEMMTable != nil {
			t.Errorf("%s: table", name)
		}
	}
}

// A GEMV measured beside a DRAM roof re-measurement streams at its
// fraction of that roof × the profile's roof at its threads; one without
// keeps its own figure.
func TestGEMVRoofNow(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	p.Memory.DRAM = []results.DRAMRoof{{Threads: 2, Kernel: "read", GBps: st(60)}}
	// 30 GB/s beside a roof of 24 is 125% of it: counted as 100%, 60 GB/s.
	for _, c := range []struct{ now, want float64 }{{40, 45}, {0, 30}, {24, 60}} {
		p.Matrix = &results.Matrix{GEMV: []results.GEMMResult{{Backend: "avx2-fp32", DType: "fp32", M: 1, N: 65536, K: 4096, Threads: 2, GFLOPS: st(15), WeightGBps: 30, RoofNowGBps: c.now}}}
		m, err := FromProfile(p, "p.json")
		if err != nil {
			t.Fatal(err)
		}
		if g, used, ok := m.GEMVWeightGBps("fp32", 2); !ok || math.Abs(g-c.want) > 1e-9 {
			t.Errorf("roof now %v: GEMV %v GB/s (%s), want %v", c.now, g, used, c.want)
		}
	}
}

// An operator whose weights a faster level holds than the nearest class's
// gets the class's highest rate (its compute plateau), not the small-M
// rate its class measured at its own, slower level; at the same or a
// slower level the rule is AttainedGEMMRule's.
func TestAttainedGEMMFasterLevel(t *testing.T) {
	m := &Machine{GEMMTable: testTable(), LevelRoofs: []LevelRoof{
		{Level: "L2", Threads: 2, GBps: 200, CapacityBytes: 2 << 20},
		{Level: "L3", Threads: 2, GBps: 100, CapacityBytes: 32 << 20},
		{Level: "DRAM", Threads: 2, GBps: 40},
	}}
	// 1024×1024 fp32 (4 MiB) is in L3: an L2-resident operator of that
	// class at M 64 gets the class's best, 300, not 200.
	if r, used, ok := m.attainedGEMM("fp32", 2, 64, 512, 512, "L2"); !ok || r != 300 || !strings.Contains(used, "highest of the class") {
		t.Errorf("L2 operator: %v %v %q", r, ok, used)
	}
	for _, lvl := range []string{"L3", "DRAM", ""} {
		if r, _, ok := m.attainedGEMM("fp32", 2, 64, 1024, 1024, lvl); !ok || math.Abs(r-200) > 1e-9 {
			t.Errorf("%q operator: %v %v, want the interpolated 200", lvl, r, ok)
		}
	}
	// Below the smallest measured M there is still no figure.
	if _, _, ok := m.attainedGEMM("fp32", 2, 8, 512, 512, "L2"); ok {
		t.Error("M below the table's smallest")
	}
}

// TestFewRowsWeightFactor: a batched decode's linear of M rows streams
// DRAM-resident weights at the table's DRAM-sized class's weight rate at M
// over its rate at M 1, else at the class's smallest M (interpolated in
// log M, at most 1), of the DRAM class whose K is nearest the linear's; 1
// for one row, beyond GEMVMaxRows, and without a DRAM-sized class. The M
// 1 points and a class measured at a few rows only are not compute rates
// for attainedGEMM beyond those rows.
func TestFewRowsWeightFactor(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-zen5-2core-knee.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromProfile(p, "knee")
	if err != nil {
		t.Fatal(err)
	}
	pt := func(mr, n, k int, gf float64) GEMMPoint {
		return GEMMPoint{Precision: "fp32", Backend: "b", Threads: 2, M: mr, N: n, K: k, GFLOPS: gf}
	}
	// 4096×4096 fp32 (64 MiB) is DRAM-sized; 1024×1024 (4 MiB) is not.
	m.GEMMTable = &GEMMTable{GEMM: []GEMMPoint{
		pt(2, 4096, 4096, 100), pt(4, 4096, 4096, 180), pt(8, 4096, 4096, 320),
		pt(2, 1024, 1024, 200), pt(4, 1024, 1024, 100),
	}}
	for _, c := range []struct {
		M    int
		want float64
	}{{1, 1}, {2, 1}, {4, 0.9}, {8, 0.8}, {16, 1}} {
		if got, _ := m.FewRowsWeightFactor("fp32", 2, c.M, 4096); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("M %d: factor %v, want %v", c.M, got, c.want)
		}
	}
	// M 3 between 2 (rate 50) and 4 (45), log-interpolated.
	want := 50 + math.Log(1.5)/math.Log(2)*(45-50)
	if got, _ := m.FewRowsWeightFactor("fp32", 2, 3, 4096); math.Abs(got-want/50) > 1e-12 {
		t.Errorf("M 3: factor %v, want %v", got, want/50)
	}
	// With M 1 measured the baseline is M 1's; a K-1024 DRAM class (the
	// probe's few-rows class, M ≤ 16) serves a linear of K 1024.
	m.GEMMTable.GEMM = append(m.GEMMTable.GEMM, pt(1, 4096, 4096, 60), pt(2048, 4096, 4096, 400),
		pt(1, 16384, 1024, 30), pt(2, 16384, 1024, 54), pt(4, 16384, 1024, 96), pt(8, 16384, 1024, 160), pt(16, 16384, 1024, 280))
	for _, c := range []struct {
		M, K int
		want float64
	}{{2, 4096, 50.0 / 60}, {4, 4096, 45.0 / 60}, {2, 1024, 27.0 / 30}, {4, 1024, 24.0 / 30}, {4, 3072, 45.0 / 60}} {
		if got, why := m.FewRowsWeightFactor("fp32", 2, c.M, c.K); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("M %d K %d: factor %v (%s), want %v", c.M, c.K, got, why, c.want)
		}
	}
	// attainedGEMM: M 1 is no compute rate; at M 8 the 16384×1024 class
	// (nearest in N·K and aspect) serves, at M 64 (beyond its 16) the
	// 4096×4096 class (between its M 8 and 2048, in log M).
	if _, _, ok := m.AttainedGEMM("fp32", 2, 1, 16384, 1024); ok {
		t.Error("AttainedGEMM at M 1: a rate from the M 1 points")
	}
	if r, used, ok := m.AttainedGEMM("fp32", 2, 8, 16384, 1024); !ok || r != 160 {
		t.Errorf("AttainedGEMM at M 8: %v (%s), want the few-rows class's 160", r, used)
	}
	if r, used, ok := m.AttainedGEMM("fp32", 2, 64, 16384, 1024); !ok || math.Abs(r-350) > 1e-9 {
		t.Errorf("AttainedGEMM at M 64: %v (%s), want 4096×4096's 350", r, used)
	}
	m.GEMMTable.GEMM = m.GEMMTable.GEMM[3:5]
	if got, why := m.FewRowsWeightFactor("fp32", 2, 4, 1024); got != 1 || why != "" {
		t.Errorf("no DRAM-sized class: factor %v (%q)", got, why)
	}
}
