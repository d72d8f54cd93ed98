package reports

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// synthOps are one cell's operators: prefill and decode, each op's
// measured time scaled by the placement's speed; q_proj and down_proj carry
// a prediction off by the next error of errs (measured = predicted·(1+e)).
// FLOPs and bytes give the linear ops an intensity of about batch FLOP/byte.
func synthOps(batch int, speed float64, errs *[]float64, next *int) []results.SweepOp {
	var out []results.SweepOp
	for _, phase := range []string{"prefill", "decode"} {
		for i, op := range []string{"attn_norm", "q_proj", "k_proj", "v_proj", "rope", "qk", "softmax", "pv", "o_proj", "ffn_norm", "gate_proj", "up_proj", "silu_mul", "down_proj", "embed", "lm_head"} {
			m := float64(i+1) * 1e-3 * float64(batch) / speed
			o := results.SweepOp{Phase: phase, Op: op, Calls: 2, MeasuredS: m}
			if strings.HasSuffix(op, "_proj") || op == "lm_head" {
				o.FLOPs = 2e9 * float64(batch)
				o.Bytes = 1e9
			}
			if op == "q_proj" || op == "down_proj" {
				e := (*errs)[*next%len(*errs)]
				*next++
				p := m / (1 + e)
				o.PredictedS = &p
			}
			out = append(out, o)
		}
	}
	return out
}

// synthCells: machine m1 runs 2 workloads × 3 placements × 2 batches and one
// partition ablation; m2 runs the first workload only. Mean latency is
// 2 s × batch / speed with speeds cores 1, matrix 2, mixed 4 (m2 half as
// fast), so the speedups vs cores are 2 and 4.
func synthCells() []results.SweepCell {
	errs := []float64{0.05, 0.3, 0.1, 0.8, 0.2, 0.02, 0.5, 0.15, 1.2, 0.4, 0.25}
	next := 0
	speed := map[string]float64{"cores": 1, "matrix": 2, "mixed": 4}
	var cells []results.SweepCell
	add := func(machine, workload string, batch int, placement, ablation string, slow float64) {
		sp := speed[placement] / slow
		if ablation != "" {
			sp /= 1.5
		}
		lat := 2 * float64(batch) / sp
		c := results.SweepCell{
			Schema: results.SweepSchema, Key: strings.Join([]string{"tiny", workload, strconv.Itoa(batch), placement, ablation}, "/"),
			Model: "tiny", Weights: "synthetic", Layers: 2, ModelLayers: 2, Workload: workload, Batch: batch, Threads: 2,
			Placement: placement, Ablation: ablation, Backends: "avx2-fp32",
			Config: results.SweepConfig{Requests: 4, Arrival: "closed", SLOTTFTS: 1, SLOTPOTS: 0.1},
			Host:   machine + "-host", Machine: machine, Date: "2026-03-0" + map[string]string{"m1": "1", "m2": "2"}[machine] + "T10:00:00Z",
			TTFT:    results.Dist{Mean: lat / 4, P50: lat / 4, P90: lat / 3, P99: lat / 2, N: 4},
			TPOT:    results.Dist{Mean: 0.01, P50: 0.01, P90: 0.012, P99: 0.015, N: 4},
			Latency: results.Dist{Mean: lat, P50: lat, P90: lat * 1.2, P99: lat * 1.5, N: 4},
			WallS:   lat * 2, OutputTokS: 100 * float64(batch) * sp, SLOAttained: 0.75, GoodputReqS: 0.5,
			Ops:   synthOps(batch, sp, &errs, &next),
			Notes: []string{"synthetic cell"},
		}
		if ablation != "" {
			// Ablated runs are not part of the prediction error.
			for i := range c.Ops {
				c.Ops[i].PredictedS = nil
			}
		}
		cells = append(cells, c)
	}
	for _, w := range []string{"gsm8k", "longwriter"} {
		for _, b := range []int{1, 16} {
			for _, p := range []string{"cores", "matrix", "mixed"} {
				add("m1", w, b, p, "", 1)
				if w == "gsm8k" {
					add("m2", w, b, p, "", 2)
				}
			}
		}
	}
	add("m1", "gsm8k", 16, "mixed", "partition", 1)
	return cells
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
		t.Errorf("%s: %v: too small", filepath.Base(path), b)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 10_000 {
		t.Errorf("%s: %d bytes: too small to hold a plot", filepath.Base(path), st.Size())
	}
}

func TestSweepReport(t *testing.T) {
	cells := synthCells()
	m1 := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "m1", Targets: []roofline.Target{
		{Name: "cores", Kind: roofline.KindCores, CeilingsGFLOPS: map[string]float64{"fp32": 100}, BandwidthGBps: 10},
	}}
	dir := t.TempDir()
	s, err := Sweep(cells, dir, SweepOptions{Machines: map[string]*roofline.Machine{"m1": m1}, Sources: []string{"a/cells.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"latency.png", "speedup.png", "throughput.png", "breakdown_prefill.png", "breakdown_decode.png",
		"pred_scatter.png", "pred_error.png", "regime.png", "machines.png"}
	var got []string
	for _, p := range s.Plots {
		got = append(got, p.File)
	}
	if !slices.Equal(got, want) {
		t.Errorf("plots %v, want %v", got, want)
	}
	for _, f := range want {
		checkPNG(t, filepath.Join(dir, f))
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "regime map of m2: no machine profile") {
		t.Errorf("notes %q: want only the one on m2's unclassified regimes", s.Notes)
	}
	if !slices.Equal(s.Machines, []string{"m1", "m2"}) || !slices.Equal(s.Dates, []string{"2026-03-01", "2026-03-02"}) {
		t.Errorf("machines %v dates %v", s.Machines, s.Dates)
	}

	// Speedups: matrix 2×, mixed 4× on every group; cores 1×.
	if len(s.Speedups) != 18 {
		t.Errorf("%d speedups, want 18 (m1 12 + m2 6)", len(s.Speedups))
	}
	for _, sp := range s.Speedups {
		want := map[string]float64{"cores": 1, "matrix": 2, "mixed": 4}[sp.Placement]
		if math.Abs(sp.Speedup-want) > 1e-9 {
			t.Errorf("%+v: speedup %v, want %v", sp, sp.Speedup, want)
		}
	}

	// Prediction error by hand: every q_proj and down_proj sample of the
	// 18 baseline cells has measured/predicted − 1 = e.
	var e []float64
	for _, c := range cells {
		if c.Ablation != "" {
			continue
		}
		for _, op := range c.Ops {
			if op.PredictedS != nil {
				e = append(e, math.Abs(op.MeasuredS / *op.PredictedS - 1))
			}
		}
	}
	slices.Sort(e)
	if len(e) != 72 {
		t.Fatalf("%d samples, want 72", len(e))
	}
	// Empirical quantile: the smallest sample with CDF ≥ p, i.e. e[⌈p·n⌉−1].
	wantMed, wantP90 := e[36-1], e[65-1] // ⌈0.5·72⌉ = 36, ⌈0.9·72⌉ = 65
	pe := s.PredError
	if pe == nil || pe.N != 72 || math.Abs(pe.Median-wantMed) > 1e-12 || math.Abs(pe.P90-wantP90) > 1e-12 {
		t.Fatalf("prediction error %+v, want n 72, median %v, p90 %v", pe, wantMed, wantP90)
	}
	if len(pe.PerOp) != 4 || pe.PerOp[0].Phase != "prefill" || pe.PerOp[0].N != 18 {
		t.Errorf("per-op errors %+v", pe.PerOp)
	}

	mdb, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := squeeze(string(mdb))
	for _, w := range []string{
		"# bench sweep report", "Batches: 1, 16.",
		"machines m1, m2; dates 2026-03-01, 2026-03-02",
		"## End-to-end latency and speedup vs cores",
		"![End-to-end latency per placement](latency.png)",
		"| cores latency (s, speedup) |",
		"| m1 | tiny fp32 | gsm8k | 16 | 32 (1.00×) | 16 (2.00×) | 8 (4.00×) |",
		"**geomean speedup**",
		"| TTFT p50 (ms) | TTFT p90 (ms) | TPOT p50 (ms) | TPOT p90 (ms) | latency mean (s) | latency p50 (s) | latency p90 (s) | latency p99 (s) | output tok/s | SLO attained (%) | goodput (req/s) |",
		"TTFT ≤ 1000 ms and TPOT ≤ 100 ms",
		"breakdown_prefill.png", "| attention (%) | projections (%) | FFN (%) | norms (%) | LM head (%) | other (%) |",
		fmt.Sprintf("**median %.3f, p90 %.3f**", wantMed, wantP90),
		"| prefill | q_proj | 18 |",
		"## Regime map (operator × batch)",
		"memory-bound", "compute-bound", "non-linear",
		"## Ablations", "| partition |", "1.50×", "0.67×",
		"## Machines compared", "m1 latency (s)", "m2 tok/s",
		"## Notes from the cells", "- synthetic cell",
	} {
		if !strings.Contains(md, squeeze(w)) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", md)
	}
}

// TestSweepMissingData: one machine, one batch, no ops, no predictions, no
// cores baseline and no ablations: notes, not errors.
// squeeze collapses runs of spaces (table padding).
func squeeze(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

func TestSweepMissingData(t *testing.T) {
	var cells []results.SweepCell
	for _, p := range []string{"matrix", "mixed"} {
		cells = append(cells, results.SweepCell{Schema: results.SweepSchema, Key: "k/" + p, Model: "tiny", Workload: "gsm8k",
			Batch: 4, Threads: 1, Placement: p, Host: "h", Date: "2026-03-01T00:00:00Z",
			Latency: results.Dist{Mean: 1, P50: 1, P90: 1, P99: 1, N: 1}, OutputTokS: 10})
	}
	dir := t.TempDir()
	s, err := Sweep(cells, dir, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Plots) != 1 || s.Plots[0].File != "latency.png" {
		t.Errorf("plots %+v: want latency.png only", s.Plots)
	}
	checkPNG(t, filepath.Join(dir, "latency.png"))
	if s.PredError != nil || len(s.Speedups) != 0 {
		t.Errorf("pred error %+v, speedups %+v: want none", s.PredError, s.Speedups)
	}
	notes := strings.Join(s.Notes, "\n")
	for _, w := range []string{"no cells with placement cores", "throughput.png: every workload ran at a single batch size",
		"breakdown_prefill.png", "breakdown_decode.png", "pred_scatter.png", "regime.png", "no ablation cells"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "> Skipped: pred_scatter.png") || !strings.Contains(string(md), "## Notes") {
		t.Errorf("report.md lacks the skip notes:\n%s", md)
	}
	for _, f := range []string{"throughput.png", "pred_scatter.png", "machines.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written without data", f)
		}
	}
	if _, err := Sweep(nil, dir, SweepOptions{}); err == nil {
		t.Error("Sweep with no cells succeeded")
	}
	// Only ablations, with a NaN: notes, no panic.
	for i := range cells {
		cells[i].Ablation = "packing"
	}
	cells[0].Latency.Mean = math.NaN()
	s, err = Sweep(cells, t.TempDir(), SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Plots) != 0 || !strings.Contains(strings.Join(s.Notes, "\n"), "2 ablated cell(s) without a baseline cell") {
		t.Errorf("all-ablation sweep: plots %+v, notes %q", s.Plots, s.Notes)
	}
}

func TestErrorQuantiles(t *testing.T) {
	// e = 0, 0.1, ..., 0.9 (measured = predicted·(1+e)) plus pairs that
	// do not count (a zero on either side).
	var m, p []float64
	for i := range 10 {
		p = append(p, 2)
		m = append(m, 2*(1+float64(9-i)/10))
	}
	m, p = append(m, 0, 1), append(p, 1, 0)
	med, p90, n := ErrorQuantiles(m, p)
	// Sorted: 0, 0.1, ..., 0.9. Median: 5th (CDF 0.5) = 0.4; p90: 9th = 0.8.
	if n != 10 || math.Abs(med-0.4) > 1e-12 || math.Abs(p90-0.8) > 1e-12 {
		t.Fatalf("median %v p90 %v n %d, want 0.4 0.8 10", med, p90, n)
	}
	// Symmetric: measured below predicted.
	med, _, _ = ErrorQuantiles([]float64{1, 3}, []float64{2, 2})
	if med != 0.5 {
		t.Errorf("median %v, want 0.5", med)
	}
}

func TestOpGroup(t *testing.T) {
	for op, want := range map[string]string{
		"qk": "attention", "softmax": "attention", "pv": "attention", "attention": "attention",
		"q_proj": "projections", "o_proj": "projections",
		"gate_proj": "FFN", "down_proj": "FFN", "expert 3": "FFN", "router": "FFN", "silu_mul": "FFN",
		"attn_norm": "norms", "qk_norm": "norms", "final_norm": "norms",
		"embed": "other", "rope": "other", "lm_head": "LM head", "attn_residual": "other",
	} {
		if got := OpGroup(op); got != want {
			t.Errorf("OpGroup(%q) = %q, want %q", op, got, want)
		}
	}
}

// TestSweepReportTargets: the report names what ran each placement,
// generated from the cells' records: the legends ("matrix = avx2-bf16 on
// the cores, no matrix unit" on a machine without a matrix unit, "matrix =
// sme-fp32 on the matrix unit" on one with SME), the cells table and the
// figure captions (labels with the weight precision, per machine).
func TestSweepReportTargets(t *testing.T) {
	cells := synthCells()
	coresT := func(name string, calls int) results.SweepTarget {
		return results.SweepTarget{Target: "cores", Library: "kernels/gemm", Backend: name, Unit: "cores", Precision: "fp32", Calls: calls,
			Label: name + " (fp32 weights) on the cores"}
	}
	for i := range cells {
		c := &cells[i]
		cores, mat := coresT("avx2-fp32", 10), results.SweepTarget{Target: "matrix", Library: "kernels/gemm", Backend: "avx2-bf16", Unit: "cores",
			Precision: "bf16", Note: "no matrix unit", Calls: 10, Label: "avx2-bf16 (bf16 weights) on the cores, no matrix unit"}
		if c.Machine == "m2" {
			cores, mat = coresT("neon-fp32", 10), results.SweepTarget{Target: "matrix", Library: "kernels/gemm", Backend: "sme-fp32", Unit: "matrix",
				ISA: "sme", Precision: "fp32", Calls: 10, Label: "sme-fp32 (fp32 weights) on the matrix unit (sme)"}
		}
		switch c.Placement {
		case "cores":
			c.Targets = []results.SweepTarget{cores}
		case "matrix":
			cores.Calls = 0
			c.Targets = []results.SweepTarget{cores, mat}
		default:
			c.Targets = []results.SweepTarget{cores, mat}
		}
	}
	d := newSweepData(cells, SweepOptions{})
	for _, c := range []struct {
		machine, placement, want string
	}{
		{"m1", "matrix", "matrix = avx2-bf16 on the cores, no matrix unit"},
		{"m1", "mixed", "mixed = avx2-fp32 + avx2-bf16 on the cores, no matrix unit"},
		{"m1", "cores", "cores = avx2-fp32"},
		{"m2", "matrix", "matrix = sme-fp32 on the matrix unit"},
		{"m2", "mixed", "mixed = neon-fp32 + sme-fp32 on the matrix unit"},
	} {
		var k panelKey
		for _, p := range d.panels() {
			if p.src == c.machine {
				k = p
			}
		}
		if got := d.legend(c.placement, d.panelCells(k)); got != c.want {
			t.Errorf("%s %s legend %q, want %q", c.machine, c.placement, got, c.want)
		}
	}
	if got := d.legend("matrix", d.all()); got != "matrix" {
		t.Errorf("legend over both machines %q, want the placement name", got)
	}
	dir := t.TempDir()
	if _, err := Sweep(cells, dir, SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"Backends: m1: cores = avx2-fp32 (fp32 weights) on the cores; matrix = avx2-bf16 (bf16 weights) on the cores, no matrix unit | m2: cores = neon-fp32 (fp32 weights) on the cores; matrix = sme-fp32 (fp32 weights) on the matrix unit (sme).",
		"| matrix = avx2-bf16 on the cores, no matrix unit ",
		"| matrix = sme-fp32 on the matrix unit ",
	} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if n := strings.Count(string(md), "Backends: m1:"); n < 3 {
		t.Errorf("report.md names the backends %d times: want the header and every figure caption", n)
	}
}

// SweepContext renders into a temporary directory and moves the files in
// at the end: stopped, it leaves nothing (not even the directory it would
// have created); finished, no temporary directory remains.
func TestSweepContextStopped(t *testing.T) {
	cells := []results.SweepCell{{Schema: results.SweepSchema, Key: "k/cores", Model: "tiny", Workload: "gsm8k",
		Batch: 4, Threads: 1, Placement: "cores", Host: "h", Date: "2026-03-01T00:00:00Z",
		Latency: results.Dist{Mean: 1, P50: 1, P90: 1, P99: 1, N: 1}, OutputTokS: 10}}
	out := filepath.Join(t.TempDir(), "new", "report")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SweepContext(ctx, cells, out, SweepOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped report: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(out)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stopped report left %s: %v", filepath.Dir(out), err)
	}
	if _, err := SweepContext(context.Background(), cells, out, SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Contains(names, "report.md") || !slices.Contains(names, "latency.png") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") }) {
		t.Errorf("files in the report directory: %v", names)
	}
}

// TestSweepNoisyCells (issue #16): a cell marked noisy is flagged in the
// per-cell table and left out of the prediction error.
func TestSweepNoisyCells(t *testing.T) {
	cells := synthCells()
	var noisy int
	for i := range cells {
		if cells[i].Ablation == "" && noisy < 2 {
			cells[i].Noise = &results.Noise{Noisy: true, Why: "cv 30.0% > 10%", Attempts: 1}
			noisy++
		}
	}
	dir := t.TempDir()
	s, err := Sweep(cells, dir, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two of the 18 baseline cells out, 4 samples each: 64 of 72.
	if s.PredError == nil || s.PredError.N != 64 {
		t.Fatalf("prediction error %+v, want 64 samples (2 noisy cells of 4 left out)", s.PredError)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), " NOISY |") || !strings.Contains(string(md), "2 cell(s) marked NOISY") {
		t.Errorf("report.md does not flag the noisy cells")
	}
}
