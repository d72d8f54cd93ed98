package reports

// Tests for issue 18 part 3: each fails on the figures as they were drawn
// before (labels, titles, legend entries, positions and axis ranges read
// from what the figure draws, through the recorder canvas).

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// allSections is the fixture profile with every section (compute, matrix,
// nonlinear, numa, latency).
func allSections(t *testing.T) *results.Profile {
	t.Helper()
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core-all-sections.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newCapture() FigureOptions {
	return FigureOptions{capture: &figureCapture{figs: map[string]Figure{}}}
}

// profileFigures draws every probe figure of p without writing files.
func profileFigures(t *testing.T, p *results.Profile) map[string]Figure {
	t.Helper()
	o := newCapture()
	if _, err := ProfilePlots(p, t.TempDir(), o); err != nil {
		t.Fatal(err)
	}
	return o.capture.figs
}

// sweepFigures draws every sweep figure of cells without writing them.
func sweepFigures(t *testing.T, cells []results.SweepCell, so SweepOptions) map[string]Figure {
	t.Helper()
	so.Figures = newCapture()
	if _, err := Sweep(cells, t.TempDir(), so); err != nil {
		t.Fatal(err)
	}
	return so.Figures.capture.figs
}

func mustFig(t *testing.T, figs map[string]Figure, name string) *recording {
	t.Helper()
	f, ok := figs[name]
	if !ok {
		var have []string
		for k := range figs {
			have = append(have, k)
		}
		t.Fatalf("no figure %q (have %v)", name, have)
	}
	return record(t, f)
}

// The probe's roofline draws the ceiling bench roofline predicts with,
// says so, and draws the FMA peak apart; its y axis is in one unit.
func TestProbeRooflineCeilings(t *testing.T) {
	p := allSections(t)
	rec := mustFig(t, profileFigures(t, p), "roofline")
	m, err := roofline.FromProfile(p, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	used := m.Targets[0].Ceiling("fp32")
	want := fmt.Sprintf("fp32 attained GEMM %.0f GFLOP/s", used)
	got := rec.find(want)
	if len(got) != 1 || !strings.Contains(got[0].S, "used for predictions") {
		t.Errorf("no label %q marked used for predictions; texts:\n%s", want, rec.text())
	}
	fma := rec.find("fp32 FMA peak")
	if len(fma) != 1 || strings.Contains(fma[0].S, "used for predictions") {
		t.Errorf("want one fp32 FMA peak label, not used for predictions: %v", fma)
	}
	if strings.Contains(rec.text(), "GFLOP/s or GOP/s") {
		t.Error("y label mixes GFLOP/s and GOP/s")
	}
	if len(rec.find("attainable GFLOP/s")) != 1 {
		t.Errorf("y label: want attainable GFLOP/s; texts:\n%s", rec.text())
	}
	// One ceiling label per precision and kind (the SSE fp32 peak is not
	// drawn beside the AVX2 one).
	if n := len(rec.find("sse_mul_add_fp32")); n != 0 {
		t.Errorf("sse_mul_add_fp32 drawn (%d) besides the best fp32 peak", n)
	}
	if len(rec.find("int8 155 GOP/s")) != 1 {
		t.Errorf("the int8 ceiling is not named as left off the GFLOP/s axis:\n%s", rec.text())
	}
}

func TestLatencyCacheMarkers(t *testing.T) {
	rec := mustFig(t, profileFigures(t, allSections(t)), "latency-vs-working-set")
	for _, l := range []string{"L1 32 KiB", "L2 1 MiB"} {
		if len(rec.find(l)) == 0 {
			t.Errorf("no cache marker %q; texts:\n%s", l, rec.text())
		}
	}
	if len(rec.find("median of 7 repeats, bars min to max")) == 0 {
		t.Error("the latency figure does not say what its bars are")
	}
}

func TestNUMAColorBar(t *testing.T) {
	rec := mustFig(t, profileFigures(t, allSections(t)), "numa-read-bandwidth")
	if len(rec.find("read bandwidth (GB/s)")) != 1 {
		t.Errorf("no colour bar label; texts:\n%s", rec.text())
	}
	// The bar's ticks are GB/s values right of the heatmap's labels.
	cell := rec.find("32.4 GB/s")
	if len(cell) != 1 {
		t.Fatalf("cell label: %v", cell)
	}
	ticks := 0
	for _, tx := range rec.Texts {
		if _, err := fmt.Sscanf(tx.S, "%f", new(float64)); err == nil && tx.X > cell[0].X+100 {
			ticks++
		}
	}
	if ticks < 2 {
		t.Errorf("colour bar has %d tick labels", ticks)
	}
}

func TestNonlinearRatios(t *testing.T) {
	rec := mustFig(t, profileFigures(t, allSections(t)), "nonlinear-throughput")
	if len(rec.find("log scale")) < 2 {
		t.Errorf("want log axes; texts:\n%s", rec.text())
	}
	// avx2 over go for exp: 1.68/0.0465 ≈ 36×.
	ratios := 0
	for _, tx := range rec.Texts {
		if strings.HasSuffix(tx.S, "×") {
			ratios++
		}
	}
	if ratios < 10 {
		t.Errorf("%d ratio labels, want one per non-baseline bar and per ratio bar", ratios)
	}
	if len(rec.find("SMEPilot Fig. 4")) != 1 || len(rec.find("no matrix-unit backend")) != 1 {
		t.Errorf("no matrix-vs-cores ratio panel:\n%s", rec.text())
	}
}

func publishedAnalysis(t *testing.T, machine, model string, r roofline.Request, prec string) *roofline.Analysis {
	t.Helper()
	m, err := roofline.Published(machine)
	if err != nil {
		t.Fatal(err)
	}
	return analysis(t, m, model, r, prec)
}

func analysis(t *testing.T, m *roofline.Machine, model string, r roofline.Request, prec string) *roofline.Analysis {
	t.Helper()
	arch := roofline.Arch{Name: model, Dim: 1024, Intermediate: 3072, Layers: 28, Heads: 16, KVHeads: 8,
		HeadDim: 128, Vocab: 151936, QKNorm: true}
	a, err := roofline.Analyze(m, arch, r, prec)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var decode1 = roofline.Request{Phase: roofline.Decode, Batch: 1, Tokens: 1, Context: 1024, Weight: "fp16", Act: "fp16", KV: "fp16", Routing: roofline.Routing{Kind: "uniform"}}

// On the M4 Pro the cores' and the mixed target's memory roofs coincide:
// the later one is dashed and the legend says so.
func TestRooflineCoincidentRoofs(t *testing.T) {
	a := publishedAnalysis(t, "m4-pro", "qwen3-0.6b", decode1, "fp16")
	f, err := RooflineFigure(a)
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, f)
	if len(rec.find("same roof as cores")) != 1 {
		t.Errorf("legend does not say mixed's roof is the cores':\n%s", rec.text())
	}
	var mixed int
	for i, tg := range a.Targets {
		if tg.Name == "mixed" {
			mixed = i
		}
	}
	dashed := false
	for _, s := range rec.strokesOf(rooflineTargetColor[mixed%len(rooflineTargetColor)]) {
		dashed = dashed || (s.Dashed && len(s.Pts) > 10)
	}
	if !dashed {
		t.Error("mixed's roof is not dashed over the cores' roof")
	}
}

// Non-linear operators sit on a rug at the bottom, below every operator
// that has FLOP/s, and never share a label with a memory-bound one.
func TestRooflineNonlinearOps(t *testing.T) {
	a := publishedAnalysis(t, "m4-pro", "qwen3-0.6b", decode1, "fp16")
	f, err := RooflineFigure(a)
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, f)
	lowest := math.Inf(1)
	for _, tx := range rec.find("_residual") {
		lowest = math.Min(lowest, tx.Y)
	}
	if math.IsInf(lowest, 1) {
		t.Fatalf("no residual label:\n%s", rec.text())
	}
	for _, op := range []string{"softmax", "rope", "silu_mul"} {
		for _, tx := range rec.find(op) {
			if tx.Y >= lowest {
				t.Errorf("%q label at y %.0f, above the lowest memory-bound label (%.0f): drawn at a FLOP/s", tx.S, tx.Y, lowest)
			}
		}
	}
	for _, tx := range rec.Texts {
		if strings.Contains(tx.S, "norm") && strings.Contains(tx.S, "_proj") {
			t.Errorf("label %q groups non-linear and memory-bound operators", tx.S)
		}
	}
	if len(rec.find("intensity only (elements/s, no FLOP/s)")) != 1 {
		t.Error("the legend does not say how non-linear operators are drawn")
	}
	if len(rec.find("(28 layers)")) != 1 || len(rec.find("weights fp16, activations fp16")) != 1 {
		t.Errorf("title lacks layers or precisions:\n%s", rec.text())
	}
}

// Cache roofs are in the legend and tagged in bandwidth order.
func TestRooflineCacheRoofOrder(t *testing.T) {
	p := allSections(t)
	m, err := roofline.FromProfile(p, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	r := decode1
	r.Weight, r.Act = "fp32", "fp32"
	f, err := RooflineFigure(analysis(t, m, "qwen3-0.6b", r, "fp32"))
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, f)
	var tags, legend []drawnText
	for _, tx := range rec.Texts {
		switch {
		case tx.S == "L1" || tx.S == "L2" || tx.S == "L3":
			tags = append(tags, tx)
		case strings.HasPrefix(tx.S, "L") && strings.Contains(tx.S, " roof: β "):
			legend = append(legend, tx)
		}
	}
	if len(tags) != 3 || len(legend) != 3 {
		t.Fatalf("tags %v legend %v", tags, legend)
	}
	for i := 1; i < 3; i++ {
		if !(tags[i-1].Y > tags[i].Y) {
			t.Errorf("tag %s at y %.1f is not above %s at %.1f", tags[i-1].S, tags[i-1].Y, tags[i].S, tags[i].Y)
		}
		if !(legend[i-1].Y > legend[i].Y) || legend[i-1].S[:2] != tags[i-1].S {
			t.Errorf("legend out of order: %v", legend)
		}
	}
}

func TestRooflineSweepTitle(t *testing.T) {
	m, err := roofline.Published("m4-pro")
	if err != nil {
		t.Fatal(err)
	}
	arch := roofline.Arch{Name: "x", Dim: 1024, Intermediate: 3072, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 1000}
	s, err := roofline.Sweep(m, arch, decode1, "fp16", roofline.SweepBatch, []int{1, 2, 4, 8, 16, 32, 64})
	if err != nil {
		t.Fatal(err)
	}
	title := RooflineSweepTitle("x", 28, "m4-pro", decode1, s)
	if strings.Contains(title, "B=1") || !strings.Contains(title, "batch B = 1..64") || !strings.Contains(title, "(28 layers)") {
		t.Errorf("title %q", title)
	}
	f, err := RooflineSweepFigure(s, title)
	if err != nil {
		t.Fatal(err)
	}
	if rec := record(t, f); len(rec.find("batch B = 1..64")) != 1 {
		t.Errorf("figure title: %s", rec.text())
	}
}

// A figure without data says so.
func TestNoDataFigures(t *testing.T) {
	f, err := RooflineSweepFigure(&roofline.SweepResult{Var: roofline.SweepBatch, Values: []int{1, 2}}, "empty")
	if err != nil {
		t.Fatal(err)
	}
	if rec := record(t, f); len(rec.find("no data")) != 1 {
		t.Errorf("empty sweep figure: %s", rec.text())
	}
	f, err = RooflineFigure(&roofline.Analysis{ModelName: "m", Machine: "x", Request: decode1})
	if err != nil {
		t.Fatal(err)
	}
	if rec := record(t, f); len(rec.find("no data")) != 1 {
		t.Errorf("empty roofline figure: %s", rec.text())
	}
	cells := synthCells()
	for i := range cells {
		cells[i].Latency.Mean = math.NaN()
	}
	if rec := mustFig(t, sweepFigures(t, cells, SweepOptions{}), "latency"); len(rec.find("no data")) == 0 {
		t.Errorf("latency without means: %s", rec.text())
	}
	p := allSections(t)
	for i := range p.Nonlinear.Points {
		p.Nonlinear.Points[i].GElemsPerSec = results.Stat{}
	}
	if rec := mustFig(t, profileFigures(t, p), "nonlinear-throughput"); len(rec.find("no data")) != 1 {
		t.Errorf("empty non-linear figure: %s", rec.text())
	}
}

// withRequests gives each synthetic cell 4 requests around its mean
// latency, so the latency figure has a spread to draw.
func withRequests(cells []results.SweepCell) []results.SweepCell {
	for i := range cells {
		m := cells[i].Latency.Mean
		for j, f := range []float64{0.9, 1.0, 1.0, 1.1} {
			cells[i].Requests = append(cells[i].Requests, results.SweepRequest{ID: j, LatencyS: m * f})
		}
	}
	return cells
}

// The latency figure names model, layers, precision, backends and threads
// and draws the 95 % CI of each mean.
func TestSweepLatencyProvenance(t *testing.T) {
	rec := mustFig(t, sweepFigures(t, withRequests(synthCells()), SweepOptions{}), "latency")
	for _, s := range []string{"tiny (2 layers), weights fp32, activations fp32; 2 threads", "backends avx2-fp32; 4 requests per cell", "95% CI of the mean"} {
		if len(rec.find(s)) == 0 {
			t.Errorf("no %q; texts:\n%s", s, rec.text())
		}
	}
	// Error bars: short vertical black strokes with caps, one per bar.
	var vert int
	for _, s := range rec.strokesOf(colorBlack) {
		if len(s.Pts) == 2 && s.Pts[0].X == s.Pts[1].X && s.Pts[0].Y != s.Pts[1].Y {
			vert++
		}
	}
	if vert < 3*2*3 {
		t.Errorf("%d vertical black strokes, want an error bar per bar (18)", vert)
	}
}

// The breakdown's y axis ends at 100 %.
func TestBreakdownAxisEndsAt100(t *testing.T) {
	rec := mustFig(t, sweepFigures(t, synthCells(), SweepOptions{}), "breakdown_decode")
	var hundred []drawnText
	for _, tx := range rec.Texts {
		if tx.S == "100" {
			hundred = append(hundred, tx)
		}
	}
	if len(hundred) != 1 {
		t.Fatalf("tick 100: %v", hundred)
	}
	// The y axis line is the longest vertical black stroke.
	top, long := 0.0, 0.0
	for _, s := range rec.strokesOf(colorBlack) {
		if len(s.Pts) == 2 && s.Pts[0].X == s.Pts[1].X {
			if l := math.Abs(float64(s.Pts[1].Y - s.Pts[0].Y)); l > long {
				long, top = l, math.Max(float64(s.Pts[0].Y), float64(s.Pts[1].Y))
			}
		}
	}
	if math.Abs(top-hundred[0].Y) > 8 {
		t.Errorf("y axis ends at %.1f pt, the 100 %% tick is at %.1f pt", top, hundred[0].Y)
	}
}

// Regime map rows are at least 0.33 in apart with text of 9 pt.
func TestRegimeMapSpacing(t *testing.T) {
	rec := mustFig(t, sweepFigures(t, synthCells(), SweepOptions{}), "regime")
	a, b := rec.find("prefill attn_norm"), rec.find("prefill q_proj")
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("row labels missing:\n%s", rec.text())
	}
	if d := a[0].Y - b[0].Y; d < 0.33*72 {
		t.Errorf("rows %.1f pt apart, want ≥ %.1f", d, 0.33*72)
	}
	for _, tx := range rec.Texts {
		if strings.HasSuffix(tx.S, "%") && tx.Size < 9 {
			t.Errorf("cell label %q at %.1f pt", tx.S, tx.Size)
			break
		}
	}
}

// Every figure says what produced it (issue 18 part 2): probe figures the
// machine, date, threads and repeats; sweep figures the model with its
// layers, precision, backends, threads, machine and date.
func TestFiguresSayWhatProducedThem(t *testing.T) {
	figs := profileFigures(t, allSections(t))
	if len(figs) < 7 {
		t.Fatalf("%d probe figures", len(figs))
	}
	for name, f := range figs {
		txt := record(t, f).text()
		for _, want := range []string{"AMD EPYC (vm), 2026-11-21", "thread", "repeats"} {
			if !strings.Contains(txt, want) {
				t.Errorf("%s: no %q in\n%s", name, want, txt)
			}
		}
	}
	so := SweepOptions{Baseline: testBaseline(t)}
	figs = sweepFigures(t, withRequests(synthCells()), so)
	if len(figs) < 8 {
		t.Fatalf("%d sweep figures", len(figs))
	}
	for name, f := range figs {
		txt := record(t, f).text()
		for _, want := range []string{"tiny (2 layers), weights fp32, activations fp32", "2 threads", "backends avx2-fp32", "requests per cell", "2026-03-0"} {
			if !strings.Contains(txt, want) {
				t.Errorf("%s: no %q in\n%s", name, want, txt)
			}
		}
	}
}

func testBaseline(t *testing.T) *Baseline {
	t.Helper()
	data, err := os.ReadFile("testdata/llama-bench-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	bl, err := ParseLlamaBench(data, "testdata/llama-bench-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	return bl
}

// Issue 18 part 5: SMEPilot Fig. 3 (additivity) and ArcLight Table 1
// (NUMA bandwidth and latency heatmaps with values) from a probe profile.
func TestPaperFiguresFromProfile(t *testing.T) {
	figs := profileFigures(t, allSections(t))
	rec := mustFig(t, figs, "mixed-additivity")
	for _, s := range []string{"SMEPilot Fig. 3", "additivity 1.00", "additivity 0.64", "run alone (sum)", "run together", "avx2_fma_fp32 on CPUs [0]"} {
		if len(rec.find(s)) == 0 {
			t.Errorf("additivity figure: no %q in\n%s", s, rec.text())
		}
	}
	rec = mustFig(t, figs, "numa-read-bandwidth")
	for _, s := range []string{"32.4 GB/s", "192.9 ns", "latency (ns per dependent load)", "read bandwidth (GB/s)"} {
		if len(rec.find(s)) != 1 {
			t.Errorf("NUMA figure: no %q in\n%s", s, rec.text())
		}
	}
}

// The caption line names the weight precisions and backends that ran
// (from the cells' targets) and the activations: fp32, or int8 blocks
// where kernels/quant ran.
func TestSweepProducedFromTargets(t *testing.T) {
	cells := synthCells()[:2]
	cells[0].Targets = []results.SweepTarget{
		{Target: "cores", Library: "kernels/gemm", Backend: "avx2-fp32", Unit: "cores", Precision: "fp32", Calls: 10},
		{Target: "matrix", Library: "kernels/gemm", Backend: "avx2-bf16", Unit: "cores", Precision: "bf16", Calls: 10},
	}
	cells[1].Targets = []results.SweepTarget{{Target: "cores", Library: "kernels/quant", Backend: "avx2", Unit: "cores", Precision: "q4_0", Calls: 10}}
	cells[1].Layers, cells[1].ModelLayers = 1, 28
	d := newSweepData(cells, SweepOptions{Precision: "fp32"})
	got := d.produced([]int{0, 1})
	want := "tiny (1 of 28 layers), tiny (2 layers), weights bf16, fp32, q4_0, activations fp32, int8 per 32-element block; 2 threads\nbackends avx2, avx2-bf16, avx2-fp32; 4 requests per cell"
	if got != want {
		t.Errorf("produced:\n%s\nwant\n%s", got, want)
	}
}

// profile.md names the ceilings predictions use, as roofline.png does.
func TestProfileMarkdownCeilings(t *testing.T) {
	var b strings.Builder
	if err := ProfileMarkdown(&b, allSections(t), nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Ceilings `bench roofline` predicts with", "| fp32      | attained GEMM", "| fp64      | FMA peak"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("profile.md: no %q", s)
		}
	}
}

// Figures the probe's noise check marked are marked on the figure.
func TestNoisyMarked(t *testing.T) {
	p := allSections(t)
	p.Latency.Points[3].NS.Noise = &results.Noise{Noisy: true}
	p.NUMA.Pairs[0].ReadGBps.Noise = &results.Noise{Noisy: true}
	p.Nonlinear.Points[0].GElemsPerSec.Noise = &results.Noise{Noisy: true}
	figs := profileFigures(t, p)
	if rec := mustFig(t, figs, "latency-vs-working-set"); len(rec.find("NOISY (noise check")) != 1 {
		t.Errorf("latency: no NOISY legend entry:\n%s", rec.text())
	}
	if rec := mustFig(t, figs, "numa-read-bandwidth"); len(rec.find("1 of 1 NOISY")) != 1 || len(rec.find("NOISY")) < 2 {
		t.Errorf("NUMA: no NOISY mark:\n%s", rec.text())
	}
	if rec := mustFig(t, figs, "nonlinear-throughput"); len(rec.find("NOISY")) != 1 {
		t.Errorf("non-linear: no NOISY note:\n%s", rec.text())
	}
	if rec := mustFig(t, profileFigures(t, allSections(t)), "latency-vs-working-set"); len(rec.find("NOISY")) != 0 {
		t.Error("NOISY without a noisy figure")
	}
}

// SMEPilot Fig. 9: speedup bars over cores per placement, a 1× line, and
// error bars from both means' CIs.
func TestSpeedupFigure(t *testing.T) {
	figs := sweepFigures(t, withRequests(synthCells()), SweepOptions{})
	rec := mustFig(t, figs, "speedup")
	for _, s := range []string{"End-to-end speedup over cores: tiny fp32, m1", "2.00×", "4.00×", "cores (1×)", "error bars: from both means' 95% CIs"} {
		if len(rec.find(s)) == 0 {
			t.Errorf("no %q in\n%s", s, rec.text())
		}
	}
	var cores []results.SweepCell
	for _, c := range synthCells() {
		if c.Placement != "cores" {
			cores = append(cores, c)
		}
	}
	if _, ok := sweepFigures(t, cores, SweepOptions{})["speedup"]; ok {
		t.Error("a speedup figure without cores cells")
	}
}
