package opbench

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/affinity"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// testArch is a small GQA model: 4 query heads, 2 KV heads of 16.
var testArch = roofline.Arch{Name: "tiny", Dim: 64, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, Intermediate: 96, Vocab: 100}

func testCPUs(t *testing.T, n int) []int {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		cpus = []int{0}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = cpus[i%len(cpus)]
	}
	return out
}

// testMachine is a machine with cores, matrix and mixed targets.
func testMachine() *roofline.Machine {
	return &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "test", Targets: []roofline.Target{
		{Name: "cores", Kind: roofline.KindCores, CeilingsGFLOPS: map[string]float64{"fp32": 100, "bf16": 100}, BandwidthGBps: 20},
		{Name: "matrix", Kind: roofline.KindMatrix, CeilingsGFLOPS: map[string]float64{"fp32": 400, "bf16": 800}, BandwidthGBps: 20},
		{Name: "mixed", Kind: roofline.KindMixed, Components: []string{"matrix", "cores"}, CeilingsGFLOPS: map[string]float64{"fp32": 450, "bf16": 850}, BandwidthGBps: 20},
	}}
}

// testProfile has a fp32 GEMM ceiling and L2/DRAM roofs at 2 threads.
func testProfile() *results.Profile {
	return &results.Profile{
		Matrix: &results.Matrix{GEMM: []results.GEMMResult{{Backend: "x-fp32", DType: "fp32", M: 512, N: 64, K: 64, Threads: 2, GFLOPS: results.Stat{Median: 100}}}},
		Memory: &results.Memory{Levels: []results.LevelBandwidth{
			{Level: "L2", Threads: 2, WorkingSetBytes: 1 << 20, GBps: results.Stat{Median: 200}},
			{Level: "DRAM", Threads: 2, WorkingSetBytes: 1 << 30, GBps: results.Stat{Median: 20}},
		}},
	}
}

func TestRunAttention(t *testing.T) {
	// The matrix target named as the portable fp32 backend, so that every
	// placement applies (and mixed runs two cache layouts).
	named, err := ChooseBackends("", "go-fp32")
	if err != nil {
		t.Fatal(err)
	}
	chosen, err := ChooseBackends("", "")
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		b    Backends
		kv   bool
		bf16 bool
	}
	runs := []run{{named, false, false}, {named, true, false}, {named, false, true}}
	if chosen.Pair.Matrix.DType == "fp32" {
		runs = append(runs, run{chosen, false, false}) // sme-fp32 on a CPU with SME
	}
	for _, rn := range runs {
		b, kv := rn.b, rn.kv
		dt := map[bool]string{false: "fp32", true: "bf16"}[rn.bf16]
		t.Logf("cores %s, matrix %s, kv-packing %v, KV cache %s", b.CoresBackend, b.MatrixBackend, kv, dt)
		// A decode width one row past a job (the tile planner's rows, 48 at
		// group 2 on every backend here): a gemm job and a vector one.
		group := testArch.Heads / testArch.KVHeads
		wide := engine.AttentionRows(b.Pair.Cores, group) + 1
		if m := engine.AttentionRows(b.Pair.Matrix, group) + 1; m != wide || wide > 50 {
			t.Fatalf("job rows %d (cores), %d (matrix): want equal, below the decode context", wide-1, m-1)
		}
		c := AttentionConfig{Arch: testArch, Contexts: []int{40, 70}, DecodeContext: 50, Batches: []int{1, 3}, Widths: []int{2, wide},
			Placements: []string{PlaceCores, PlaceMatrix, PlaceMixed}, Backends: b, CPUs: testCPUs(t, 2), KVPackPerCall: kv, KVDType: dt,
			Timing: Timing{Reps: 1, RepDuration: time.Millisecond}, Machine: testMachine(), Profile: testProfile()}
		r, err := RunAttention(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		// Per placement: 2 contexts × (pipelined, serial) + 2 batches + 2 widths.
		if len(r.Points) != 3*8 || len(r.Skipped) != 0 {
			t.Fatalf("kv-packing %v: %d points, skipped %v", kv, len(r.Points), r.Skipped)
		}
		for _, p := range r.Points {
			if !(p.GFLOPS.Median > 0) || p.MaxRelError > maxAttentionError || !(p.PredictedSeconds > 0) || !(p.Fraction > 0) && (p.Phase == "prefill" || p.Width == 1) {
				t.Errorf("%+v", p)
			}
			eb := map[bool]float64{false: 4, true: 2}[rn.bf16]
			if p.Phase == "decode" && p.KVBytes != 2*eb*50*2*16*float64(p.Batch) || p.Axis == "width" && p.FLOPs != 4*16*4*float64(p.Width*(50-p.Width)+p.Width*(p.Width+1)/2) {
				t.Errorf("decode batch %d: KV bytes %g", p.Batch, p.KVBytes)
			}
			if want := b.CoresBackend + "+" + b.MatrixBackend; p.Placement == PlaceMixed && p.Backends != want && b.CoresBackend != b.MatrixBackend {
				t.Errorf("mixed backends %q", p.Backends)
			}
			if p.Noise == nil || p.Noise.CV != p.Seconds.CV || p.Noise.Attempts != 1 {
				t.Errorf("%s %s context %d batch %d: noise %+v (cv of the seconds %v)", p.Phase, p.Placement, p.Context, p.Batch, p.Noise, p.Seconds.CV)
			}
		}
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "noise: ") }) {
			t.Errorf("notes %q: want the noise line", r.Notes)
		}
		if s := r.Series("context"); len(s) != 12 || !s[1].Predicted || len(s[0].X) != 2 || !strings.Contains(s[0].Label, "pipelined") || !strings.Contains(s[2].Label, "serial") {
			t.Errorf("prefill series: %+v", s)
		}
		for _, p := range r.Points {
			if p.Phase == "prefill" && (p.Schedule != SchedulePipelined && p.Schedule != ScheduleSerial || !(p.PredictedMatrixSeconds > 0) || !(p.PredictedVectorSeconds > 0)) ||
				p.Phase == "decode" && p.Schedule != ScheduleSerial ||
				p.Phase == "decode" && p.Width == 2 && p.Kernels != "vector" || p.Phase == "decode" && p.Width == wide && p.Kernels != "gemm+vector" ||
				p.Phase == "decode" && p.Width == 1 && p.Kernels != "vector" || p.Phase == "prefill" && p.Kernels != "gemm" {
				t.Errorf("%s %s context %d width %d: schedule %q, kernels %q, predicted stages %g, %g", p.Phase, p.Placement, p.Context, p.Width, p.Schedule, p.Kernels, p.PredictedMatrixSeconds, p.PredictedVectorSeconds)
			}
		}
		if l := r.PipelineLines(); len(l) != 3*2 || !strings.Contains(l[0], "pipeline speedup") || !strings.Contains(l[0], "predicted pipelined") {
			t.Errorf("pipeline lines: %q", l)
		}
		if s := r.Series("width"); len(s) != 6 || s[0].X[1] != float64(wide) {
			t.Errorf("width series: %+v", s)
		}
		h, rows, _ := r.Table()
		if len(rows) != len(r.Points) || len(rows[0]) != len(h) {
			t.Errorf("table: %d rows of %d, header %d", len(rows), len(rows[0]), len(h))
		}
	}
}

// TestAttentionRoofNow: with RoofNow, a decode step of one token gets the
// fraction of the read kernel measured right before and after it over
// the same bytes, the two figures kept; wider steps measure none. With
// ColdKVBytes (--kv-state cold) the step and the read are both timed after the
// eviction, and the point and its fraction say so.
func TestAttentionRoofNow(t *testing.T) {
	b, err := ChooseBackends("", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, cold := range []int64{0, 1 << 20} {
		c := AttentionConfig{Arch: testArch, DecodeContext: 50, Batches: []int{2}, Widths: []int{2}, Placements: []string{PlaceCores}, Backends: b,
			CPUs: testCPUs(t, 2), RoofNow: true, ColdKVBytes: cold, Timing: Timing{Reps: 1, RepDuration: time.Millisecond}, Machine: testMachine(), Profile: testProfile()}
		if err := c.CheckMemory(); err != nil {
			t.Fatal(err)
		}
		r, err := RunAttention(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Points {
			now := p.RoofNowBeforeGBps > 0 && p.RoofNowAfterGBps > 0 && p.RoofNowGBps == (p.RoofNowBeforeGBps+p.RoofNowAfterGBps)/2
			switch {
			case p.Width == 1 && (!now || math.Abs(p.Fraction-p.KVGBps/p.RoofNowGBps) > 1e-12 || !strings.Contains(p.FractionOf, "read kernel over the same")):
				t.Errorf("cold %d batch %d: roof now %v (%v, %v), fraction %v of %q", cold, p.Batch, p.RoofNowGBps, p.RoofNowBeforeGBps, p.RoofNowAfterGBps, p.Fraction, p.FractionOf)
			case p.Width > 1 && p.RoofNowGBps != 0:
				t.Errorf("cold %d width %d: roof now %v", cold, p.Width, p.RoofNowGBps)
			case p.KVCold != (cold > 0) || (p.Width == 1 && strings.Contains(p.FractionOf, "both cold") != (cold > 0)):
				t.Errorf("cold %d batch %d width %d: kv_cold %v, fraction of %q", cold, p.Batch, p.Width, p.KVCold, p.FractionOf)
			}
		}
		if _, rows, _ := r.Table(); cold > 0 && len(rows) > 0 && rows[0][0] != "decode (KV cold)" {
			t.Errorf("cold: table phase %q", rows[0][0])
		}
	}
}

func TestAttentionPlacementsApply(t *testing.T) {
	b, err := ChooseBackends("", "")
	if err != nil {
		t.Fatal(err)
	}
	b.Pair.Matrix.DType = "bf16"
	if _, why := attentionWorkers(PlaceMatrix, b, 2, false); !strings.Contains(why, "does not apply") {
		t.Errorf("bf16 matrix: %q", why)
	}
	b.Pair.Matrix.DType = "fp32"
	if _, why := attentionWorkers(PlaceMixed, b, 1, false); !strings.Contains(why, "1 thread") {
		t.Errorf("mixed on 1 thread: %q", why)
	}
	ws, why := attentionWorkers(PlaceMixed, b, 3, false)
	if why != "" || len(ws) != 3 || ws[0].Name != b.Pair.Cores.Name || ws[2].Name != b.Pair.Matrix.Name {
		t.Errorf("mixed on 3: %v %q", ws, why)
	}
}

func TestAttentionValidate(t *testing.T) {
	ok := AttentionConfig{Arch: testArch, Contexts: []int{8}, DecodeContext: 8, Batches: []int{1}, Placements: []string{PlaceCores},
		CPUs: []int{0}, Timing: Timing{Reps: 1, RepDuration: time.Millisecond}}
	for name, mod := range map[string]func(*AttentionConfig){
		"context 0":  func(c *AttentionConfig) { c.Contexts = []int{0} },
		"context -1": func(c *AttentionConfig) { c.Contexts = []int{-1} },
		"decode":     func(c *AttentionConfig) { c.DecodeContext = 0 },
		"batch":      func(c *AttentionConfig) { c.Batches = []int{0} },
		"width":      func(c *AttentionConfig) { c.Widths = []int{9} },
		"nothing":    func(c *AttentionConfig) { c.Contexts, c.Batches, c.Widths = nil, nil, nil },
		"reps":       func(c *AttentionConfig) { c.Timing.Reps = 0 },
		"gqa":        func(c *AttentionConfig) { c.Arch.KVHeads = 3 },
	} {
		c := ok
		mod(&c)
		if err := c.Validate(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	if _, err := ParsePlacements("cores,gpu"); err == nil || !strings.Contains(err.Error(), `"gpu"`) {
		t.Errorf("unknown placement: %v", err)
	}
	if _, err := ChooseBackends("nosuch-fp32", ""); err == nil {
		t.Error("unknown backend accepted")
	}
}

func TestFractions(t *testing.T) {
	p := testProfile()
	if g, of := GEMMCeiling(p, "x-fp32", 2); g != 100 || !strings.Contains(of, "x-fp32") {
		t.Errorf("GEMM ceiling %g %q", g, of)
	}
	if g, of := GEMMCeiling(p, "x-fp32", 1); g != 0 || !strings.Contains(of, "not computed") {
		t.Errorf("GEMM ceiling at 1 thread %g %q", g, of)
	}
	if g, of := BandwidthRoof(p, 1e5, 2); g != 200 || !strings.Contains(of, "L2") {
		t.Errorf("roof for 100 kB: %g %q", g, of)
	}
	if g, of := BandwidthRoof(p, 1e8, 2); g != 20 || !strings.Contains(of, "DRAM") {
		t.Errorf("roof for 100 MB: %g %q", g, of)
	}
	if g, _ := BandwidthRoof(nil, 1, 2); g != 0 {
		t.Error("no profile gave a roof")
	}
}

func TestRunGEMMSweep(t *testing.T) {
	b, err := ChooseBackends("", "")
	if err != nil {
		t.Fatal(err)
	}
	c := GEMMSweepConfig{Arch: testArch, Lengths: []int{8, 32}, Batches: []int{1, 2}, Placements: []string{PlaceCores, PlaceMatrix, PlaceMixed},
		Backends: b, CPUs: testCPUs(t, 2), Timing: Timing{Reps: 1, RepDuration: time.Millisecond}, Machine: testMachine(), Profile: testProfile()}
	r, err := RunGEMMSweep(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * 4 * 3
	if b.Pair.Cores.Name == b.Pair.Matrix.Name {
		want = 2 * 4 * 2
	}
	if len(r.Points) != want {
		t.Fatalf("%d points, want %d (skipped %v)", len(r.Points), want, r.Skipped)
	}
	for _, p := range r.Points {
		if !(p.GFLOPS.Median > 0) || !(p.PredictedSeconds > 0) {
			t.Errorf("%+v", p)
		}
		if p.Op == "down_proj" && (p.N != 64 || p.K != 96) {
			t.Errorf("down_proj shape %d×%d", p.N, p.K)
		}
	}
	if ops := r.Ops(); len(ops) != 2 {
		t.Errorf("ops %v", ops)
	}
	if s := r.Series("down_proj", "decode"); len(s) < 4 || !s[1].Predicted {
		t.Errorf("series %+v", s)
	}
	c.Lengths, c.Batches = []int{0}, nil
	if _, err := RunGEMMSweep(context.Background(), c); err == nil || !strings.Contains(err.Error(), "--lengths 0") {
		t.Errorf("length 0: %v", err)
	}
}

// TestSecondsPerColdCall: the eviction runs before every timed call, on
// every worker of the group, and the figure is per call.
func TestSecondsPerColdCall(t *testing.T) {
	p, err := kpool.New(kpool.Options{CPUs: []int{-1, -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	all := p.All()
	ev := Evictor(all, 1<<20)
	var evictions, calls, ran int
	var mu sync.Mutex
	evict := func(m *kpool.Master) error {
		if evictions != calls {
			t.Errorf("eviction %d before call %d", evictions+1, calls+1)
		}
		evictions++
		if err := ev(m); err != nil {
			return err
		}
		return m.Run(all, func(local, n int) error {
			mu.Lock()
			ran++
			mu.Unlock()
			return nil
		})
	}
	call := func(m *kpool.Master) error {
		calls++
		time.Sleep(100 * time.Microsecond)
		return nil
	}
	st, err := Timing{Reps: 2, RepDuration: 2 * time.Millisecond}.SecondsPerColdCall(context.Background(), p, evict, call)
	if err != nil {
		t.Fatal(err)
	}
	if evictions != calls || calls < 3 || ran != 2*evictions {
		t.Errorf("%d evictions, %d calls, %d worker runs", evictions, calls, ran)
	}
	if len(st.Samples) != 2 || !(st.Median >= 100e-6) {
		t.Errorf("figure %+v: want 2 samples of at least 100 µs a call", st)
	}
}

// TestThreadsMachine: a figure on fewer threads than the profile's cores
// workers is predicted on that many (ceilings scaled, with a note); one
// on the profile's workers on the machine itself; a matrix unit's figure
// on the machine's targets, with a note saying so.
func TestThreadsMachine(t *testing.T) {
	m := testMachine()
	m.Targets[0].Workers = 4
	if got, note := threadsMachine(m, 4, PlaceCores); got != m || note != "" {
		t.Errorf("4 of 4 threads: %p (want %p), note %q", got, m, note)
	}
	got, note := threadsMachine(m, 1, PlaceCores)
	if c, _ := got.Target(PlaceCores); c.CeilingsGFLOPS["fp32"] != 25 || c.Workers != 1 || !strings.Contains(note, "1 of the profile's 4") {
		t.Errorf("1 of 4 threads on the cores: ceiling %v on %d workers, note %q; want 25 on 1", c.CeilingsGFLOPS["fp32"], c.Workers, note)
	}
	if got, note := threadsMachine(m, 1, PlaceMatrix); got != m || !strings.Contains(note, "not scaled by threads") {
		t.Errorf("1 of 4 threads on the matrix unit: %p (want %p), note %q", got, m, note)
	}
	if s := joinNotes("", "a", "", "b"); s != "a; b" {
		t.Errorf("joinNotes: %q", s)
	}
}
