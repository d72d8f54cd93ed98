package reports

// Golden-image tests (issue 18 part 4): every plot kind is drawn from fixed
// inputs (the fixture profile, synthetic sweep cells, published machines;
// no clock, no host name) as SVG without embedded fonts, its numbers
// rounded to 0.1 pt, and compared with testdata/golden/KIND.svg, numbers
// within 0.15 pt (floating-point differences between machines, e.g. fused
// multiply-adds on arm64) and everything else exactly. A change to a
// figure is then a reviewed diff of the SVG text:
//
//	go test ./reports -update

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/cpubench/bench/internal/perfcount"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

var update = flag.Bool("update", false, "rewrite the golden figures in testdata/golden")

// goldenTol is how far a number may move (points, or the SVG's other
// numeric attributes) before a figure differs from its golden file.
const goldenTol = 0.15

// svgNumber matches the numbers of gonum's SVG output.
var svgNumber = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?`)

// goldenSVG draws f at its native size as SVG (fonts not embedded) with
// every number rounded to one decimal.
func goldenSVG(t *testing.T, f Figure) []byte {
	t.Helper()
	c := vgsvg.NewWith(vgsvg.UseWH(f.W, f.H))
	f.draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "<?xml") {
			continue
		}
		geom, text := splitText(l)
		lines[i] = svgNumber.ReplaceAllStringFunc(geom, func(m string) string {
			v, err := strconv.ParseFloat(m, 64)
			if err != nil {
				return m
			}
			r := math.Round(v*10) / 10
			if r == 0 {
				r = 0 // no "-0"
			}
			return strconv.FormatFloat(r, 'f', -1, 64)
		}) + text
	}
	return []byte(strings.Join(lines, "\n"))
}

// splitText splits an SVG line into its geometry (tags, attributes, path
// data) and the text content of a <text> element ("" for other lines),
// which is compared exactly.
func splitText(l string) (geom, text string) {
	i := strings.Index(l, "<text")
	if i < 0 {
		return l, ""
	}
	j := strings.Index(l[i:], ">")
	if j < 0 {
		return l, ""
	}
	return l[:i+j+1], l[i+j+1:]
}

// svgDiff compares two golden SVGs: the text between numbers must match,
// the numbers within goldenTol. It returns "" or the first difference with
// its line.
func svgDiff(got, want []byte) string {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		if i >= len(gl) || i >= len(wl) {
			return fmt.Sprintf("line %d: %d lines, want %d", i+1, len(gl), len(wl))
		}
		g, w := gl[i], wl[i]
		if g == w {
			continue
		}
		if _, gt := splitText(g); true {
			if _, wt := splitText(w); gt != wt {
				return fmt.Sprintf("line %d: text differs:\n got  %s\n want %s", i+1, clip(g), clip(w))
			}
		}
		gs, ws := svgNumber.Split(g, -1), svgNumber.Split(w, -1)
		gn, wn := svgNumber.FindAllString(g, -1), svgNumber.FindAllString(w, -1)
		if !slices.Equal(gs, ws) || len(gn) != len(wn) {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, clip(g), clip(w))
		}
		for k := range gn {
			a, _ := strconv.ParseFloat(gn[k], 64)
			b, _ := strconv.ParseFloat(wn[k], 64)
			if math.Abs(a-b) > goldenTol {
				return fmt.Sprintf("line %d, number %d: %s, want %s:\n got  %s\n want %s", i+1, k+1, gn[k], wn[k], clip(g), clip(w))
			}
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// goldenFigures draws one figure of every plot kind from fixed inputs.
func goldenFigures(t *testing.T) map[string]Figure {
	t.Helper()
	out := map[string]Figure{}
	p := allSections(t)
	// One thread count of the bandwidth sweep keeps the file small.
	for name, f := range profileFigures(t, p) {
		if name != "bandwidth-vs-working-set-2t" {
			out["probe-"+name] = f
		}
	}
	cells := withRequests(synthCells())
	for i := range cells {
		cells[i].PrefillTokS = 50
	}
	m1, err := roofline.Published("m4-pro")
	if err != nil {
		t.Fatal(err)
	}
	so := SweepOptions{Baseline: testBaseline(t), Machines: map[string]*roofline.Machine{"m1": m1}}
	for name, f := range sweepFigures(t, cells, so) {
		if name != "breakdown_prefill" { // the same kind as breakdown_decode
			out["sweep-"+name] = f
		}
	}
	// Serving curves of a rate sweep (Sandwich Figs. 9, 12).
	for name, f := range sweepFigures(t, rateSweepCells(), SweepOptions{}) {
		if strings.HasPrefix(name, "serving-") {
			out["sweep-"+name] = f
		}
	}
	a := publishedAnalysis(t, "m4-pro", "qwen3-0.6b", decode1, "fp16")
	if out["roofline-m4-pro"], err = RooflineFigure(a); err != nil {
		t.Fatal(err)
	}
	pm, err := roofline.FromProfile(p, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	r := decode1
	r.Weight, r.Act = "fp32", "fp32"
	if out["roofline-profile"], err = RooflineFigure(analysis(t, pm, "qwen3-0.6b", r, "fp32")); err != nil {
		t.Fatal(err)
	}
	arch := roofline.Arch{Name: "llama-3.2-1b", Dim: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, Vocab: 128256}
	s, err := roofline.Sweep(m1, arch, decode1, "fp16", roofline.SweepBatch, []int{1, 2, 4, 8, 16, 32, 64})
	if err != nil {
		t.Fatal(err)
	}
	if out["roofline-sweep"], err = RooflineSweepFigure(s, RooflineSweepTitle(arch.Name, arch.Layers, m1.Name, decode1, s)); err != nil {
		t.Fatal(err)
	}
	lnl, err := roofline.Published("lnl")
	if err != nil {
		t.Fatal(err)
	}
	if out["ebw-lnl"], err = EBWFigure(lnl); err != nil {
		t.Fatal(err)
	}
	var gemv []results.GEMMResult
	for _, g := range p.Matrix.GEMV {
		if g.M == 1 {
			gemv = append(gemv, g)
		}
	}
	if len(gemv) == 0 {
		t.Fatal("fixture has no M = 1 GEMV")
	}
	if out["gemv"], err = GEMVBandwidthFigure("Attained GEMV bandwidth (fixture)", gemv, []GEMVRoof{{Label: "DRAM read 30.6 GB/s", GBps: 30.6}}); err != nil {
		t.Fatal(err)
	}
	// bench attention and bench gemm --sweep (SMEPilot Figs. 10, 11).
	if out["opsweep"], err = OpSweepFigure([]OpPanel{
		{Title: "prefill attention", XLabel: "context", YLabel: "GFLOP/s", LogX: true, Series: []OpSeries{
			{Label: "cores (avx512-fp32)", Group: "cores", X: []float64{256, 512, 1024}, Y: []float64{40, 70, 90}, Lo: []float64{38, 66, 85}, Hi: []float64{42, 73, 93}},
			{Label: "cores roofline", Group: "cores", Predicted: true, X: []float64{256, 512, 1024}, Y: []float64{160, 160, 160}},
		}},
		{Title: "decode attention", XLabel: "batch", YLabel: "GB/s of KV", LogX: true, Series: []OpSeries{
			{Label: "cores (avx512-fp32)", Group: "cores", X: []float64{1, 4, 16}, Y: []float64{30, 28, 26}},
			{Label: "cores roofline", Group: "cores", Predicted: true, X: []float64{1, 4, 16}, Y: []float64{23, 23, 23}},
		}},
	}, 2, "model qwen3-0.6b, fp32; threads 2; cores = avx512-fp32; fixture machine, 2026-01-01"); err != nil {
		t.Fatal(err)
	}
	// bench layout (PIM-SHERPA Figs. 4/9, 10, 11).
	tiny := roofline.Arch{Name: "tiny", Dim: 64, Intermediate: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 100}
	c1, err := roofline.LayoutCapacityOf(tiny, 2)
	if err != nil {
		t.Fatal(err)
	}
	tiny.Name, tiny.Layers = "tiny-8", 8
	c2, err := roofline.LayoutCapacityOf(tiny, 2)
	if err != nil {
		t.Fatal(err)
	}
	if out["layout-capacity"], err = LayoutCapacityFigure([]roofline.LayoutCapacity{c1, c2}, "bf16"); err != nil {
		t.Fatal(err)
	}
	if out["layout-ttft"], err = LayoutTTFTFigure([]LayoutTTFT{{"duplicate", 8, 0.01, 0.009, 0.0095, 0.011}, {"duplicate", 64, 0.05, 0.04, 0.0475, 0.055},
		{"owr", 8, 0.03, 0.02, 0.0285, 0.033}, {"owr", 64, 0.08, 0.07, 0.076, 0.088}, {"ddb", 8, 0.02, 0.02, 0.019, 0.022}, {"ddb", 64, 0.06, 0.05, 0.057, 0.066}}, 20, "TTFT vs input length (fixture)"); err != nil {
		t.Fatal(err)
	}
	if out["layout-timeline"], err = LayoutGanttFigure([]LayoutSpan{{"compute 0", "preload", "", 0, 0, 0.001}, {"compute 0", "gemm", "q_proj", 0, 0.001, 0.002},
		{"copy 0", "copy", "layer 1", 1, 0.001, 0.003}, {"compute 1", "gemm", "q_proj", 0, 0.001, 0.0021}}, "per-thread timeline (fixture)"); err != nil {
		t.Fatal(err)
	}
	// bench topo --measure (Sandwich Fig. 3): core location, made-up ratios.
	if out["core-location"], err = CoreLocationFigure([]CoreLocationBar{{"all cores", 1, 1, 1, 1}, {"idle-per-node", 0.94, 0.93, 0.78, 0.67},
		{"numa-rm", 0.64, 0.84, 0.78, 0.67}}, "Core location (fixture)"); err != nil {
		t.Fatal(err)
	}
	// bench run --counters-plot (Sandwich Fig. 1): prefill vs decode
	// counters, from a made-up report (this VM has no PMU).
	mk := func(name string, cyc, ins, llc, miss float64) perfcount.Phase {
		c := perfcount.Counts{Values: map[string]float64{"cycles": cyc, "instructions": ins, "LLC-loads": llc, "LLC-load-misses": miss},
			RunningFraction: map[string]float64{"cycles": 1, "instructions": 1, "LLC-loads": 0.5, "LLC-load-misses": 0.5}}
		return perfcount.Phase{Name: name, Counts: c, Metrics: c.Metrics()}
	}
	rep := &perfcount.Report{Scope: "fixture", Phases: []perfcount.Phase{mk("prefill", 1e9, 2.5e9, 1e6, 1e5), mk("decode", 1e9, 0.6e9, 8e6, 4e6)}}
	out["counters"] = plotFigure(rep.Plot(), 6*vg.Inch, 4*vg.Inch)
	return out
}

func TestGoldenFigures(t *testing.T) {
	figs := goldenFigures(t)
	svgs := make(map[string][]byte, len(figs))
	for name, f := range figs {
		svgs[name] = goldenSVG(t, f)
	}
	checkGolden(t, svgs, "svg", "TestGoldenFigures", svgDiff)
}

// checkGolden compares each rendering in got with testdata/golden/NAME.ext
// (diff: "" when they match, else the first difference), and that no
// golden file is left without a rendering. Under -update it rewrites the
// directory's *.ext files from got instead. test names the test in the
// messages' -update hint.
func checkGolden(t *testing.T, got map[string][]byte, ext, test string, diff func(got, want []byte) string) {
	t.Helper()
	dir := filepath.Join("testdata", "golden")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(dir, "*."+ext))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		path := filepath.Join(dir, name+"."+ext)
		if *update {
			if err := os.WriteFile(path, got[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (go test ./reports -run %s -update writes it)", name, err, test)
			continue
		}
		if d := diff(got[name], want); d != "" {
			gotPath := filepath.Join(t.TempDir(), name+"."+ext)
			_ = os.WriteFile(gotPath, got[name], 0o644)
			t.Errorf("%s differs from %s (new rendering in %s; go test ./reports -run %s -update to accept): %s", name, path, gotPath, test, d)
		}
	}
	if !*update {
		// No golden file without a rendering.
		files, _ := filepath.Glob(filepath.Join(dir, "*."+ext))
		for _, f := range files {
			if _, ok := got[strings.TrimSuffix(filepath.Base(f), "."+ext)]; !ok {
				t.Errorf("%s: no such rendering any more (-update removes it)", f)
			}
		}
	}
}

// Drawing a figure twice gives the same SVG (no map order, clock or
// host in what is drawn).
func TestGoldenDeterministic(t *testing.T) {
	a, b := goldenFigures(t), goldenFigures(t)
	for name := range a {
		if !bytes.Equal(goldenSVG(t, a[name]), goldenSVG(t, b[name])) {
			t.Errorf("%s: two drawings differ", name)
		}
	}
}

// svgDiff accepts numbers within the tolerance and nothing else.
func TestSVGDiff(t *testing.T) {
	want := []byte("<path d=\"M10.1 20\"/>\n<text>a 1</text>")
	for _, c := range []struct {
		got  string
		same bool
	}{
		{"<path d=\"M10.1 20\"/>\n<text>a 1</text>", true},
		{"<path d=\"M10.2 19.9\"/>\n<text>a 1</text>", true},
		{"<path d=\"M10.5 20\"/>\n<text>a 1</text>", false},
		{"<path d=\"M10.1 20\"/>\n<text>b 1</text>", false},
		{"<path d=\"M10.1 20\"/>", false},
		{"<path d=\"M10.1 20\"/>\n<text>a 1.1</text>", false},
	} {
		if d := svgDiff([]byte(c.got), want); (d == "") != c.same {
			t.Errorf("%q: diff %q", c.got, d)
		}
	}
}
