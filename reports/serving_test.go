package reports

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// rateSweepCells is a rate sweep: two placements at closed loop and three
// Poisson rates. A request's TTFT grows with the rate (queueing); cores is
// twice as slow as mixed. SLO: TTFT 1 s, TPOT 0.1 s.
func rateSweepCells() []results.SweepCell {
	var cells []results.SweepCell
	for _, p := range []string{"cores", "mixed"} {
		slow := map[string]float64{"cores": 2, "mixed": 1}[p]
		for _, arr := range []string{"closed", "poisson:0.5", "poisson:1", "poisson:2"} {
			rate, _ := arrivalRate(arr)
			c := results.SweepCell{Schema: results.SweepSchema, Key: p + "/" + arr, Model: "tiny", Weights: "synthetic", Layers: 2, ModelLayers: 2,
				Workload: "gsm8k", Batch: 2, Threads: 2, Placement: p, Backends: "avx2-fp32",
				Config: results.SweepConfig{Requests: 10, Arrival: arr, SLOTTFTS: 1, SLOTPOTS: 0.1},
				Host:   "m1-host", Machine: "m1", Date: "2026-03-01T10:00:00Z", GoodputReqS: rate}
			var ttft []float64
			for i := range 10 {
				// TTFT: 0.1 s … 1.0 s at rate 0.5 for mixed, times slow, times rate/0.5
				t := 0.1 * float64(i+1) * slow * max(rate, 0.25) / 0.5
				ttft = append(ttft, t)
				c.Requests = append(c.Requests, results.SweepRequest{ID: i, PromptTokens: 10, OutputTokens: 5, TTFTS: t, TPOTS: 0.05 * slow, LatencyS: t + 0.2*slow})
			}
			c.TTFT = results.Dist{P50: ttft[4], P90: ttft[8], N: 10}
			c.TPOT = results.Dist{P50: 0.05 * slow, P90: 0.05 * slow, N: 10}
			cells = append(cells, c)
		}
	}
	return cells
}

func TestServingCurves(t *testing.T) {
	cells := rateSweepCells()
	src := make([]string, len(cells))
	for i := range src {
		src[i] = "m1"
	}
	curves := ServingCurves(cells, src)
	if len(curves) != 2 || curves[0].Config.Placement != "cores" || curves[1].Config.Placement != "mixed" {
		t.Fatalf("curves %+v", curves)
	}
	mixed := curves[1]
	if len(mixed.Points) != 4 || mixed.Points[0].Arrival != "closed" || mixed.Points[3].RateReqS != 2 {
		t.Fatalf("mixed points %+v", mixed.Points)
	}
	// mixed at 0.5 req/s: TTFT 0.1…1.0 s, all within 1 s; at 1 req/s
	// 0.2…2.0 s: 5 of 10; at 2 req/s 0.4…4.0: 2 of 10.
	for i, want := range []float64{1, 1, 0.5, 0.2} {
		if got := mixed.Points[i].Attainment; math.Abs(got-want) > 1e-12 {
			t.Errorf("mixed %s attainment %v, want %v", mixed.Points[i].Arrival, got, want)
		}
	}
	if mixed.GoodputReqS != 0.5 || !strings.HasPrefix(mixed.GoodputText, "0.5 req/s") {
		t.Errorf("mixed goodput %v %q, want 0.5", mixed.GoodputReqS, mixed.GoodputText)
	}
	// cores at 0.5 req/s: 0.2…2.0 s: 50%: no rate met 90%.
	if c := curves[0]; c.GoodputReqS != 0 || !strings.HasPrefix(c.GoodputText, "< 0.5 req/s") {
		t.Errorf("cores goodput %v %q", c.GoodputReqS, c.GoodputText)
	}
	// Tightest SLO scale at mixed 0.5 req/s: TTFT up to 1.0 s against
	// s·1 s: 90% needs 0.9 s, the first scale ≥ 0.9 is 10^-0.0 = 1 (10^-0.1
	// = 0.794 gives 7 of 10).
	if s := mixed.Points[1].TightestSLO; math.Abs(s-1) > 1e-9 {
		t.Errorf("mixed 0.5 req/s tightest scale %v, want 1", s)
	}
	if s := mixed.Points[3].TightestSLO; s < 3 || s > 4 {
		t.Errorf("mixed 2 req/s tightest scale %v, want 10^0.6 ≈ 3.98", s)
	}
	// A configuration at one arrival process has no curve.
	if cs := ServingCurves(cells[:1], src[:1]); len(cs) != 0 {
		t.Errorf("one cell: %d curves", len(cs))
	}
	pts := []ServingPoint{{RateReqS: 1, Attainment: 1}, {RateReqS: 2, Attainment: 0.95}}
	if g, txt := rateGoodput(pts); g != 2 || !strings.HasPrefix(txt, "≥ 2 req/s") {
		t.Errorf("every rate met: %v %q", g, txt)
	}
}

// TestSweepReportServing: a rate sweep gets the serving section, its
// tables and three figures; the other sections note the arrival axis.
func TestSweepReportServing(t *testing.T) {
	dir := t.TempDir()
	s, err := Sweep(rateSweepCells(), dir, SweepOptions{Sources: []string{"a/cells.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range s.Plots {
		files = append(files, p.File)
	}
	for _, f := range []string{"serving-rate.png", "serving-slo-scale.png", "serving-latency-cdf.png"} {
		if !slices.Contains(files, f) {
			t.Errorf("no %s in %v", f, files)
			continue
		}
		checkPNG(t, filepath.Join(dir, f))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Serving: SLO attainment", "| mixed, batch 2, 2 threads", "0.5 req/s", "< 0.5 req/s: no rate met 90%", "a rate sweep"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(string(md), "have the same machine, model, workload") {
		t.Errorf("arrival-only differences reported as duplicates")
	}
}
