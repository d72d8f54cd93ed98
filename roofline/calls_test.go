package roofline

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// callMachine is a synthetic two-worker machine with level roofs and
// fixed costs (round test values, not measurements): L1 32 KiB/100 GB/s,
// L2 1 MiB/50 GB/s, DRAM 10 GB/s at 1 thread; doubled capacity and
// bandwidth at 2 threads; a parallel call costs 2 µs at 2 threads, waking
// parked workers 100 µs.
func callMachine() *Machine {
	return &Machine{Schema: MachineSchemaV3, Name: "calls",
		Targets: []Target{{Name: "cores", Kind: KindCores, Workers: 2, BandwidthGBps: 20, CeilingsGFLOPS: map[string]float64{"fp32": 100}}},
		LevelRoofs: []LevelRoof{
			{Level: "L1", Threads: 1, GBps: 100, CapacityBytes: 32 << 10},
			{Level: "L2", Threads: 1, GBps: 50, CapacityBytes: 1 << 20},
			{Level: "DRAM", Threads: 1, GBps: 10},
			{Level: "L1", Threads: 2, GBps: 200, CapacityBytes: 64 << 10},
			{Level: "L2", Threads: 2, GBps: 100, CapacityBytes: 2 << 20},
			{Level: "DRAM", Threads: 2, GBps: 20},
		},
		FixedCosts: &FixedCosts{Points: []FixedCost{{Threads: 1, CallSeconds: 0}, {Threads: 2, CallSeconds: 2e-6, WakeSeconds: 100e-6}}},
	}
}

func nearRel(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestOpThreadsFollowsEngine checks the engine's rule (engine/batch.go
// par): one row or fewer than SerialVectorElems elements run on the
// caller alone; the embedding always; linear operators on every worker.
func TestOpThreadsFollowsEngine(t *testing.T) {
	for _, c := range []struct {
		o              Operator
		threads, calls int
	}{
		{vector(OpAttnNorm, KindNonlinear, 1, 1<<16, 4, 1, 4), 1, 0},
		{vector(OpAttnNorm, KindNonlinear, 4, 1024, 4, 1, 4), 1, 0},
		{vector(OpAttnNorm, KindNonlinear, 16, 1024, 4, 1, 4), 2, 1},
		{vector(OpQKNorm, KindNonlinear, 256, 128, 4, 1, 4), 2, 2},
		{vector(OpFFNResidual, KindElementwise, 16, 1024, 1, 2, 4), 2, 1},
		{Operator{Name: OpEmbed, Kind: KindElementwise}, 1, 0},
		{linear(OpQProj, 1, 2048, 1024, 4, 4), 2, 1},
		{Operator{Name: ExpertOp(3), Kind: KindLinear}, 2, 3},
		{Operator{Name: OpSoftmax, Kind: KindNonlinear}, 2, 0},
	} {
		n, k := OpThreads(c.o, 2)
		if n != c.threads || k != c.calls {
			t.Errorf("%s %s: %d threads, %d calls; want %d, %d", c.o.Name, c.o.Shape, n, k, c.threads, c.calls)
		}
	}
	if n, k := OpThreads(vector(OpAttnNorm, KindNonlinear, 64, 1024, 4, 1, 4), 1); n != 1 || k != 0 {
		t.Errorf("one worker: %d threads, %d calls", n, k)
	}
}

// TestCallTermsEach shows each term of the per-call model on the
// synthetic machine: the fixed cost of a pool call, the cache roof for
// bytes that fit a level, the one-thread roof for a serial operator, and
// DRAM for weights that do not stay resident.
func TestCallTermsEach(t *testing.T) {
	m := callMachine()
	// A serial residual add (1×1024 fp32: 12 KiB of activations, fits L1
	// at 1 thread): no fixed cost, L1 at one thread's 100 GB/s.
	res := vector(OpAttnResidual, KindElementwise, 1, 1024, 1, 2, 4)
	ps, err := PlaceCall(m, "fp32", []Operator{res}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.Threads != 1 || p.Calls != 0 || p.FixedSeconds != 0 || p.Roof != "L1" || !nearRel(p.Time, 12288/100e9) {
		t.Errorf("serial residual: threads %d calls %d fixed %v roof %s time %v; want 1, 0, 0, L1, %v", p.Threads, p.Calls, p.FixedSeconds, p.Roof, p.Time, 12288/100e9)
	}
	// The same add on 64 rows (768 KiB): parallel, L1 of two threads too
	// small, L2 at 2 threads; plus one call's 2 µs.
	res64 := vector(OpAttnResidual, KindElementwise, 64, 1024, 1, 2, 4)
	ps, _ = PlaceCall(m, "fp32", []Operator{res64}, 1<<30)
	p = ps[0]
	want := 2e-6 + res64.Bytes.Total()/100e9
	if p.Threads != 2 || p.Calls != 1 || p.Roof != "L2" || !nearRel(p.FixedSeconds, 2e-6) || !nearRel(p.Time, want) {
		t.Errorf("parallel residual: threads %d calls %d fixed %v roof %s time %v; want 2, 1, 2µs, L2, %v", p.Threads, p.Calls, p.FixedSeconds, p.Roof, p.Time, want)
	}
	// A GEMV whose weights (8 MiB) are part of a call's 1 GiB: weights
	// from DRAM at 2 threads, activations from L1; plus the fixed cost.
	q := linear(OpQProj, 1, 2048, 1024, 4, 4)
	ps, _ = PlaceCall(m, "fp32", []Operator{q}, 1<<30)
	p = ps[0]
	want = 2e-6 + q.Bytes.Weights/20e9 + (q.Bytes.ActIn+q.Bytes.ActOut)/200e9
	if p.Roof != "DRAM" || !nearRel(p.Time, want) || !nearRel(p.Times["cores"], want) {
		t.Errorf("GEMV: roof %s time %v; want DRAM, %v", p.Roof, p.Time, want)
	}
	// The same GEMV alone, repeated (Place: its own weights are the
	// footprint, 8 MiB, over the 2 MiB L2): still DRAM; a small one
	// (256 KiB of weights) stays in L2.
	small := linear(OpQProj, 1, 256, 256, 4, 4)
	ps, _ = Place(m, "fp32", []Operator{small})
	p = ps[0]
	want = 2e-6 + small.Bytes.Weights/100e9 + (small.Bytes.ActIn+small.Bytes.ActOut)/200e9
	if p.Roof != "L2" || !nearRel(p.Time, want) {
		t.Errorf("L2-resident GEMV: roof %s time %v; want L2, %v", p.Roof, p.Time, want)
	}
	// With a cold-line cost, the serial residual between GEMVs of a call
	// whose weights stream from DRAM takes its 192 lines × 10 ns and then
	// its time at the roofs (a call this short stalls, then computes);
	// with the weights resident in L2 the roofs alone time it.
	m.FixedCosts.ColdLineSeconds = 10e-9
	roof := 12288 / 100e9
	ps, _ = PlaceCall(m, "fp32", []Operator{res}, 1<<30)
	if p := ps[0]; p.Bound != "cold lines" || !nearRel(p.Time, 192*10e-9+roof) {
		t.Errorf("cold residual: bound %s time %v; want cold lines, %v", p.Bound, p.Time, 192*10e-9+roof)
	}
	// A whole cold call's time is its floor, however few of its lines
	// are cold (its code and translations were evicted too).
	m.FixedCosts.ColdCallSeconds = 3e-6
	ps, _ = PlaceCall(m, "fp32", []Operator{res}, 1<<30)
	if p := ps[0]; p.Bound != BoundColdLines || !nearRel(p.Time, 3e-6+roof) {
		t.Errorf("cold residual, a 3 µs cold call: bound %s time %v; want cold lines, 3 µs + the roof's %v", p.Bound, p.Time, roof)
	}
	m.FixedCosts.ColdCallSeconds = 0
	// Its bound stays "cold lines" (the calibration's cold key) when the
	// cold lines cost less than the roofs: a tiny cold-line cost leaves
	// the roof's time but not its label.
	m.FixedCosts.ColdLineSeconds = 1e-15
	ps, _ = PlaceCall(m, "fp32", []Operator{res}, 1<<30)
	if p := ps[0]; p.Bound != BoundColdLines || !nearRel(p.Time, roof+192e-15) {
		t.Errorf("cold residual, cheap lines: bound %s time %v; want cold lines, the roof's %v", p.Bound, p.Time, roof)
	}
	// A calibration's cold-lines class is keyed by the workers whose
	// streams evicted the lines (2 here), not the one thread running it.
	m.FixedCosts.ColdLineSeconds = 10e-9
	m.Calibration = &Calibration{Params: map[CalibrationKey]ClassParams{
		{Class: ClassResidual, Threads: 2, Level: BoundColdLines}: {Efficiency: 1, FixedSeconds: 1e-6},
		{Class: ClassResidual, Threads: 1, Level: BoundColdLines}: {Efficiency: 1, FixedSeconds: 5e-6},
	}}
	ps, _ = PlaceCall(m, "fp32", []Operator{res}, 1<<30)
	if p := ps[0]; !nearRel(p.Time, 1e-6+192*10e-9+roof) {
		t.Errorf("calibrated cold residual on 2 workers: time %v; want the 2-worker key's 1 µs + %v", p.Time, 192*10e-9+roof)
	}
	m.Calibration = nil
	ps, _ = PlaceCall(m, "fp32", []Operator{res}, 1<<20)
	if p := ps[0]; p.Bound == "cold lines" || !nearRel(p.Time, 12288/100e9) {
		t.Errorf("residual, L2-resident weights: bound %s time %v; want the L1 roof, %v", p.Bound, p.Time, 12288/100e9)
	}
	// On one worker a prefill-sized residual (512 rows) runs on the
	// caller too, but its activations were just written: no cold lines.
	one := m.AtThreads(1)
	big := vector(OpAttnResidual, KindElementwise, 512, 1024, residualFLOPs, 2, 4)
	ps, _ = PlaceCall(one, "fp32", []Operator{big}, 1<<30)
	if p := ps[0]; p.Bound == "cold lines" || p.Threads != 1 {
		t.Errorf("prefill residual on one worker: bound %s, %d threads; want no cold lines, 1 thread", p.Bound, p.Threads)
	}
	m.FixedCosts.ColdLineSeconds = 0
	// A serial non-linear operator gets half the two-worker non-linear
	// rate (the rate is measured per thread and scaled by the workers).
	m.Nonlinear = &Nonlinear{GElemsPerS: 0.2}
	norm := vector(OpAttnNorm, KindNonlinear, 1, 1024, 4, 1, 4)
	ps, _ = PlaceCall(m, "fp32", []Operator{norm}, 1<<30)
	if want := 1024 / 0.1e9; !nearRel(ps[0].Time, want) {
		t.Errorf("serial norm: %v, want %v (elems at one thread's non-linear rate)", ps[0].Time, want)
	}
}

// TestCallTermsWakeUpOncePerCall checks the wake-up term: paid once per
// forward call by the first operator that calls the pool (the first
// norm of a batch-1 decode runs on the caller, so q_proj), added to the
// model's totals, not to the per-layer operators.
func TestCallTermsWakeUpOncePerCall(t *testing.T) {
	m := callMachine()
	arch := Arch{Name: "t", Dim: 1024, Intermediate: 3072, Layers: 2, Heads: 16, KVHeads: 8, HeadDim: 64, Vocab: 1000}
	r := Request{Phase: Decode, Batch: 1, Tokens: 1, Context: 64, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
	a, err := Analyze(m, arch, r, "fp32")
	if err != nil {
		t.Fatal(err)
	}
	if a.WakeUp == nil || a.WakeUp.Operator != OpQProj || !nearRel(a.WakeUp.Seconds, 98e-6) {
		t.Fatalf("wake-up %+v; want q_proj, 98 µs (wake less one hot call)", a.WakeUp)
	}
	sum := a.HeadTotals.Time
	for _, l := range a.Layers {
		sum += float64(l.Count) * l.Totals.Time
	}
	if !nearRel(a.Model.Time, sum+a.WakeUp.Seconds) {
		t.Errorf("model %v, want layers+head %v + wake-up %v", a.Model.Time, sum, a.WakeUp.Seconds)
	}
}

// TestCallTermsAbsentKeepPublished checks that a machine without level
// roofs and fixed costs (every published profile) is timed as before:
// max(F/π, Q/β), no threads, no wake-up.
func TestCallTermsAbsentKeepPublished(t *testing.T) {
	for _, name := range PublishedNames() {
		m, err := Published(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.callModel() {
			t.Fatalf("%s: published profile has per-call terms", name)
		}
		prec := "fp32"
		if ps := m.Precisions(); len(ps) > 0 {
			prec = ps[0]
		}
		q := linear(OpQProj, 1, 2048, 1024, 2, 2)
		ps, err := Place(m, prec, []Operator{q})
		if err != nil {
			t.Fatal(err)
		}
		cores := m.byKind(KindCores)[0]
		if ps[0].Threads != 0 || ps[0].FixedSeconds != 0 || !nearRel(ps[0].Times[cores.Name], cores.Time(prec, q.FLOPs, q.Bytes.Total())) {
			t.Errorf("%s: %+v", name, ps[0])
		}
	}
}

// TestMachineV3Keys checks the schema rule: level_roofs and fixed_costs
// need bench.machine/v3, and bad values are refused naming the key.
func TestMachineV3Keys(t *testing.T) {
	m := callMachine()
	data, _ := json.Marshal(m)
	if _, err := ParseMachine(data, "v3.json"); err != nil {
		t.Fatalf("v3 round trip: %v", err)
	}
	old := strings.Replace(string(data), MachineSchemaV3, MachineSchemaV2, 1)
	if _, err := ParseMachine([]byte(old), "v2.json"); err == nil || !strings.Contains(err.Error(), MachineSchemaV3) {
		t.Errorf("v2 with v3 keys: %v", err)
	}
	bad := *m
	bad.LevelRoofs = []LevelRoof{{Level: "L2", Threads: 1, GBps: 50}}
	if err := bad.Validate("bad"); err == nil || !strings.Contains(err.Error(), "capacity_bytes") {
		t.Errorf("cache level without capacity: %v", err)
	}
	bad.LevelRoofs = []LevelRoof{{Level: "L4", Threads: 1, GBps: 50, CapacityBytes: 1}}
	if err := bad.Validate("bad"); err == nil || !strings.Contains(err.Error(), "L4") {
		t.Errorf("unknown level: %v", err)
	}
	bad.LevelRoofs = nil
	bad.FixedCosts = &FixedCosts{Points: []FixedCost{{Threads: 0, CallSeconds: 1e-6}}}
	if err := bad.Validate("bad"); err == nil || !strings.Contains(err.Error(), "fixed_costs") {
		t.Errorf("threads 0: %v", err)
	}
}

// TestFromProfileCallTerms checks that FromProfile loads the level roofs
// at every thread count with the capacities of topology.caches, and the
// dispatch section as fixed costs.
func TestFromProfileCallTerms(t *testing.T) {
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	p.Dispatch = &results.Dispatch{Points: []results.DispatchPoint{
		{Threads: 1, CallSeconds: st(30e-9), WakeSeconds: st(300e-6)},
		{Threads: 2, CallSeconds: st(1.5e-6), WakeSeconds: st(500e-6)},
	}}
	m, err := FromProfile(p, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if m.Schema != MachineSchemaV3 {
		t.Errorf("schema %q", m.Schema)
	}
	caps := map[string]int64{}
	for _, r := range m.LevelRoofs {
		caps[r.Level+"x"+string(rune('0'+r.Threads))] = r.CapacityBytes
	}
	// The test profile: L2 1 MiB per core (2 instances), L3 32 MiB shared.
	want := map[string]int64{"L1x1": 32 << 10, "L1x2": 64 << 10, "L2x1": 1 << 20, "L2x2": 2 << 20, "L3x1": 32 << 20, "L3x2": 32 << 20, "DRAMx1": 0, "DRAMx2": 0}
	for k, v := range want {
		if got, ok := caps[k]; !ok || got != v {
			t.Errorf("level roof %s: capacity %d (present %v), want %d", k, got, ok, v)
		}
	}
	if c, w := m.FixedCall(2); c != 1.5e-6 || w != 500e-6 {
		t.Errorf("fixed call at 2 threads: %v, %v", c, w)
	}
	if c, _ := m.FixedCall(8); c != 1.5e-6 {
		t.Errorf("fixed call at 8 threads (nearest measured below: 2): %v", c)
	}
	if m.FixedCosts.CoreToCoreGBps != 0 || m.coreToCoreGBps(2) != 0 {
		t.Errorf("core-to-core rate %v without dispatch.core_to_core", m.FixedCosts.CoreToCoreGBps)
	}
	p.Dispatch.CoreToCore = &results.CoreToCore{Threads: 2, CPUs: []int{0, 1}, Bytes: 256 << 10, GBps: st(60), LocalGBps: st(290)}
	if m, err = FromProfile(p, "p.json"); err != nil {
		t.Fatal(err)
	}
	if g := m.coreToCoreGBps(2); g != 60 || m.coreToCoreGBps(4) != 120 || m.FixedCosts.CoreToCoreThreads != 2 {
		t.Errorf("core-to-core rate at 2 threads %v (want 60), at 4 %v (want 120: each reader's rate held)", g, m.coreToCoreGBps(4))
	}
}

// TestCoreToCoreOperands: the operands of a prefill's parallel vector
// operators name their producer's split (a GEMM of fewer rows than output
// columns by columns, the row-wise operators by rows), and with a
// core-to-core rate a residual add pays it for the half of the GEMM's
// output the other worker wrote — and only that: the norms, whose input a
// residual add split by rows as they are, keep their time.
func TestCoreToCoreOperands(t *testing.T) {
	arch := Arch{Name: "t", Dim: 1024, Intermediate: 3072, Layers: 4, Heads: 16, KVHeads: 8, HeadDim: 64, Vocab: 32000}
	r := Request{Phase: Prefill, Batch: 1, Tokens: 64, Context: 64, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
	c, err := BuildCatalog(arch, r)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]Operator{}
	for _, o := range c.Layers[0].Ops {
		ops[o.Name] = o
	}
	producer := func(op, buf string) string {
		for _, p := range ops[op].Operands {
			if p.Buffer == buf && !p.Write {
				return p.Producer
			}
		}
		t.Fatalf("%s reads no %s", op, buf)
		return ""
	}
	for _, c := range []struct{ op, buf, want string }{
		{OpAttnResidual, "ob", SplitCols}, {OpAttnResidual, "x", SplitRows}, {OpFFNNorm, "x", SplitRows},
		{OpAttnNorm, "x", SplitRows}, {OpSiLUMul, "gate", SplitCols}, {OpFFNResidual, "ob", SplitCols},
	} {
		if got := producer(c.op, c.buf); got != c.want {
			t.Errorf("%s's %s: producer split %q, want %q", c.op, c.buf, got, c.want)
		}
	}
	if s := WorkSplit(Operator{Name: OpOProj, Kind: KindLinear, M: 2048, N: 1024}); s != SplitRows {
		t.Errorf("a GEMM of 2048 rows and 1024 columns split %q, want rows (kernels/pool.SplitDim)", s)
	}
	if s := WorkSplit(Operator{Name: OpQK, Kind: KindAttention}); s != SplitHeads {
		t.Errorf("qk split %q, want heads", s)
	}
	times := func(m *Machine) map[string]float64 {
		a, err := Analyze(m, arch, r, "fp32")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, o := range a.Layers[0].Ops {
			out[o.Name] = o.Time
		}
		return out
	}
	m0, m1 := callMachine(), callMachine()
	m1.FixedCosts.CoreToCoreGBps, m1.FixedCosts.CoreToCoreThreads = 5, 2
	t0, t1 := times(m0), times(m1)
	for _, op := range []string{OpAttnNorm, OpFFNNorm, OpRoPE} {
		if !nearRel(t0[op], t1[op]) {
			t.Errorf("%s: %v s with the core-to-core rate, %v without: want the same", op, t1[op], t0[op])
		}
	}
	// The residual reads ob (64×1024 fp32, 256 KiB) from the L2 at 2
	// threads (100 GB/s); half of it now at 5 GB/s.
	ob := 64 * 1024 * 4.0
	if want := t0[OpAttnResidual] + ob/2*(1/5e9-1/100e9); !nearRel(t1[OpAttnResidual], want) {
		t.Errorf("attn_residual: %v s with the core-to-core rate, want %v (%v without)", t1[OpAttnResidual], want, t0[OpAttnResidual])
	}
}

// HoldingRoof picks the smallest level whose capacity at the thread count
// holds the bytes, DRAM past every cache, and nothing without level roofs.
func TestHoldingRoof(t *testing.T) {
	m := &Machine{LevelRoofs: []LevelRoof{
		{Level: "DRAM", Threads: 2, GBps: 50},
		{Level: "L3", Threads: 2, GBps: 180, CapacityBytes: 32 << 20},
		{Level: "L2", Threads: 2, GBps: 400, CapacityBytes: 2 << 20},
	}}
	for _, c := range []struct {
		bytes float64
		want  string
	}{{1 << 20, "L2"}, {4 << 20, "L3"}, {64 << 20, "DRAM"}} {
		r, ok := m.HoldingRoof(c.bytes, 2)
		if !ok || r.Level != c.want {
			t.Errorf("HoldingRoof(%g) = %+v, %v; want %s", c.bytes, r, ok, c.want)
		}
	}
	if _, ok := (&Machine{}).HoldingRoof(1, 1); ok {
		t.Error("HoldingRoof without level roofs: ok")
	}
}

// streamGBps interpolates the time per byte of the read curve in log
// working set between the points around it, at the nearest measured
// thread count (scaled), and says nothing outside the measured sets.
func TestStreamGBps(t *testing.T) {
	m := &Machine{ReadCurve: []CurvePoint{
		{Threads: 1, Bytes: 16 << 20, GBps: 100},
		{Threads: 1, Bytes: 64 << 20, GBps: 25},
		{Threads: 1, Bytes: 32 << 20, GBps: 50},
	}}
	for _, c := range []struct {
		bytes   float64
		threads int
		want    float64
		ok      bool
	}{
		{16 << 20, 1, 100, true},
		{32 << 20, 1, 50, true},
		{math.Sqrt(32*64) * (1 << 20), 1, 1 / (0.5/50 + 0.5/25), true}, // halfway in log bytes: the mean time per byte
		{64 << 20, 2, 50, true}, // 1 thread's curve, scaled ×2
		{8 << 20, 1, 0, false},
		{128 << 20, 1, 0, false},
		{0, 1, 0, false},
	} {
		g, ok := m.streamGBps(c.bytes, c.threads)
		if ok != c.ok || (ok && math.Abs(g-c.want) > 1e-9*c.want) {
			t.Errorf("%v B at %d threads: %v %v, want %v %v", c.bytes, c.threads, g, ok, c.want, c.ok)
		}
	}
	if _, ok := (&Machine{}).streamGBps(1<<20, 1); ok {
		t.Error("no curve")
	}
}

// TestColdCallAt: the cold call interpolated in log bytes between the
// probe's points, held beyond them; the main figure where what streamed
// is not known or there are no points.
func TestColdCallAt(t *testing.T) {
	f := &FixedCosts{ColdCallSeconds: 1.5e-6, ColdCalls: []ColdCall{{16e6, 1e-6}, {64e6, 2e-6}, {256e6, 4e-6}}}
	for _, c := range []struct{ streamed, want float64 }{
		{0, 1.5e-6}, {-1, 1.5e-6}, {1e6, 1e-6}, {16e6, 1e-6}, {32e6, 1.5e-6}, {64e6, 2e-6}, {128e6, 3e-6}, {1e9, 4e-6},
	} {
		if got := f.ColdCallAt(c.streamed); !nearRel(got, c.want) {
			t.Errorf("ColdCallAt(%g) = %g; want %g", c.streamed, got, c.want)
		}
	}
	if got := (&FixedCosts{ColdCallSeconds: 1.5e-6}).ColdCallAt(1e9); got != 1.5e-6 {
		t.Errorf("no points: %g; want the main 1.5 µs", got)
	}
}

// TestColdCallStreamed: in decode, a per-layer operator on the caller
// between GEMVs pays the cold call at a layer's streamed bytes (every
// layer alike), the final norm and the embedding a layer's; the
// embedding (a gather: its cold lines are its memory time) takes the
// larger of its roofs' time and the cold call, not their sum.
func TestColdCallStreamed(t *testing.T) {
	m := callMachine()
	m.FixedCosts.ColdLineSeconds = 1e-15
	m.FixedCosts.ColdCallSeconds = 5e-6
	m.FixedCosts.ColdCalls = []ColdCall{{1e6, 1e-6}, {1e9, 4e-6}}
	arch := Arch{Name: "t", Dim: 1024, Intermediate: 3072, Layers: 4, Heads: 16, KVHeads: 8, HeadDim: 64, Vocab: 32000}
	r := Request{Phase: Decode, Batch: 1, Tokens: 1, Context: 64, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
	a, err := Analyze(m, arch, r, "fp32")
	if err != nil {
		t.Fatal(err)
	}
	c, err := BuildCatalog(arch, r)
	if err != nil {
		t.Fatal(err)
	}
	layer := streamedBytes(c.Layers[0].Ops)
	var norm, fin *Placed
	for i := range a.Layers[0].Ops {
		if a.Layers[0].Ops[i].Name == OpAttnNorm {
			norm = &a.Layers[0].Ops[i]
		}
	}
	for i := range a.Head {
		if a.Head[i].Name == OpFinalNorm {
			fin = &a.Head[i]
		}
	}
	if norm == nil || fin == nil || norm.Bound != BoundColdLines || fin.Bound != BoundColdLines {
		t.Fatalf("attn_norm %+v, final_norm %+v: want both bound by cold lines", norm, fin)
	}
	// The roofs' times alone: the same analysis with a free cold call.
	m0 := callMachine()
	m0.FixedCosts.ColdLineSeconds = 1e-15
	a0, err := Analyze(m0, arch, r, "fp32")
	if err != nil {
		t.Fatal(err)
	}
	roof := map[string]float64{}
	for _, o := range append(a0.Layers[0].Ops, a0.Head...) {
		roof[o.Name] = o.Time
	}
	f := m.FixedCosts
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	// The first layer's attn_norm (the layer's first operator) after the
	// LM head's bytes too: the mean over the 4 layers.
	head := streamedBytes(c.Head)
	if want := roof[OpAttnNorm] + (3*f.ColdCallAt(layer)+f.ColdCallAt(layer+head))/4; !near(norm.Time, want) {
		t.Errorf("attn_norm %v s; want its roof time + the mean of 3 cold calls after a layer's %g bytes and one after the LM head's %g more: %v", norm.Time, layer, head, want)
	}
	for _, o := range a.Layers[0].Ops {
		if o.Name == OpFFNNorm && o.Bound == BoundColdLines {
			if want := roof[OpFFNNorm] + f.ColdCallAt(layer); !near(o.Time, want) {
				t.Errorf("ffn_norm %v s; want its roof time + the cold call after a layer's bytes (every layer): %v", o.Time, want)
			}
		}
	}
	if !strings.Contains(strings.Join(a.Notes, "\n"), "the first layer's attn_norm") {
		t.Errorf("notes %q: want the first layer's attn_norm named", a.Notes)
	}
	if want := roof[OpFinalNorm] + f.ColdCallAt(layer); !near(fin.Time, want) {
		t.Errorf("final_norm %v s; want its roof time + a layer's cold call: %v", fin.Time, want)
	}
	embed := false
	for _, o := range a.Head {
		if o.Name == OpEmbed {
			embed = true
			if want := max(roof[OpEmbed], f.ColdCallAt(layer)); o.Bound != BoundColdLines || !near(o.Time, want) {
				t.Errorf("embed %v s, bound %q; want the larger of its roof time and a layer's cold call: %v", o.Time, o.Bound, want)
			}
		}
	}
	if !embed {
		t.Fatal("no embed in the head")
	}
}
