package calibrate

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/opbench"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

const fixture = "../results/testdata/profile-amd-epyc-2core-all-sections.json"

// TestFitSynthetic: on points made from known parameters (with a
// deterministic ±2% multiplicative error), Fit recovers them.
//
// TestFitRowsSynthetic: measurements made from known parameters with a
// per-row cost (the prefill attention's form: the roofline time grows as
// rows², the row cost as rows) and ±2% error are recovered by FitRows;
// with all rows equal, or a negative row cost, it is Fit's answer.
func TestFitRowsSynthetic(t *testing.T) {
	want := roofline.ClassParams{Efficiency: 0.85, FixedSeconds: 5e-6, RowSeconds: 3e-7}
	var pred, meas []float64
	var rows []int
	for i, n := range []int{64, 128, 256, 512, 1024, 2048, 0, 0} {
		p := 1e-9 * float64(n*n)
		if n == 0 {
			p = 1e-5 * float64(i)
		}
		pred, rows = append(pred, p), append(rows, n*16)
		meas = append(meas, want.Apply(p, n*16, true)*(1+0.02*math.Sin(float64(7*i))))
	}
	got, err := FitRows(pred, rows, meas)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Efficiency/want.Efficiency-1) > 0.05 || math.Abs(got.RowSeconds/want.RowSeconds-1) > 0.1 {
		t.Errorf("FitRows = %+v, want %+v", got, want)
	}
	flat := make([]int, len(rows))
	a, err1 := FitRows(pred, flat, meas)
	b, err2 := Fit(pred, meas)
	if err1 != nil || err2 != nil || a != b {
		t.Errorf("equal rows: FitRows %+v (%v), Fit %+v (%v)", a, err1, b, err2)
	}
	// Measurements that fall with the rows: no negative row cost.
	neg := []float64{3e-6, 5e-6, 8e-6} // 5 µs + pred − 10 ns per row
	c, err := FitRows([]float64{1e-6, 2e-6, 3e-6}, []int{300, 200, 0}, neg)
	if err != nil || c.RowSeconds != 0 {
		t.Errorf("falling measurements: %+v, %v", c, err)
	}
}

func TestFitSynthetic(t *testing.T) {
	for _, want := range []roofline.ClassParams{{Efficiency: 0.6, FixedSeconds: 2e-6}, {Efficiency: 1.7, FixedSeconds: 0}, {Efficiency: 0.25, FixedSeconds: 4e-5}} {
		var pred, meas []float64
		for i := range 20 {
			p := 1e-6 * math.Pow(1.6, float64(i))
			e := 1 + 0.02*math.Sin(float64(7*i))
			pred = append(pred, p)
			meas = append(meas, want.Apply(p, 0, true)*e)
		}
		got, err := Fit(pred, meas)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Efficiency/want.Efficiency-1) > 0.03 {
			t.Errorf("efficiency %v, want %v", got.Efficiency, want.Efficiency)
		}
		if math.Abs(got.FixedSeconds-want.FixedSeconds) > 0.1*want.FixedSeconds+2e-7 {
			t.Errorf("fixed %v, want %v", got.FixedSeconds, want.FixedSeconds)
		}
		if s := Summarize(RelErrors(applyAll(got, pred), meas)); s.P90 > 0.03 {
			t.Errorf("fit p90 error %v", s.P90)
		}
	}
	// Exact points: exact parameters.
	got, err := Fit([]float64{1, 2, 4}, []float64{3, 5, 9})
	if err != nil || math.Abs(got.Efficiency-0.5) > 1e-9 || math.Abs(got.FixedSeconds-1) > 1e-9 {
		t.Errorf("Fit exact = %+v, %v; want efficiency 0.5, fixed 1", got, err)
	}
	// A negative intercept is refitted through the origin.
	got, err = Fit([]float64{1, 2, 4}, []float64{1, 3, 7})
	if err != nil || got.FixedSeconds != 0 || !(got.Efficiency > 0) {
		t.Errorf("Fit with negative intercept = %+v, %v; want fixed 0", got, err)
	}
	// Predictions within MinFixedSpan of each other pin no fixed cost: the
	// same exact line over 1.5 ms–3 ms (two DRAM-sized GEMVs) gives the
	// efficiency alone, through the origin, and 100 µs of the class stays
	// within its points' spread of their ratio instead of gaining 500 µs.
	pred, meas := []float64{1.5e-3, 2e-3, 3e-3}, []float64{2.5e-3, 3e-3, 4e-3}
	got, err = Fit(pred, meas)
	if err != nil || got.FixedSeconds != 0 {
		t.Errorf("Fit over a 2x span = %+v, %v; want fixed 0", got, err)
	}
	if c := got.Apply(1e-4, 0, true); c > 1e-4*meas[0]/pred[0] || c < 1e-4*meas[2]/pred[2] {
		t.Errorf("Fit over a 2x span predicts 100 µs as %v s", c)
	}
	// One point: efficiency alone.
	got, err = Fit([]float64{2}, []float64{4})
	if err != nil || got.Efficiency != 0.5 || got.FixedSeconds != 0 {
		t.Errorf("Fit one point = %+v, %v", got, err)
	}
}

func applyAll(c roofline.ClassParams, p []float64) []float64 {
	out := make([]float64, len(p))
	for i, x := range p {
		out[i] = c.Apply(x, 0, true)
	}
	return out
}

// TestFitBadInput: one error line naming the value.
func TestFitBadInput(t *testing.T) {
	for _, c := range []struct {
		pred, meas []float64
		want       string
	}{
		{nil, nil, "no shape"},
		{[]float64{1}, []float64{1, 2}, "1 predictions for 2"},
		{[]float64{1, 0}, []float64{1, 2}, "point 1: predicted 0 s"},
		{[]float64{1, 2}, []float64{1, math.NaN()}, "measured NaN s"},
		{[]float64{1, 2, 3}, []float64{3, 2, 1}, "slope"},
	} {
		_, err := Fit(c.pred, c.meas)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Fit(%v, %v) = %v, want one line with %q", c.pred, c.meas, err, c.want)
		}
	}
}

// fixtureMachine is the fixture profile, its uncalibrated machine and
// qwen3-0.6b's attention shape.
func fixtureMachine(t *testing.T) (*results.Profile, *roofline.Machine, roofline.Arch) {
	t.Helper()
	p, err := results.ReadProfile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := Uncalibrated(p, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	mc, err := models.Load("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := mc.Arch()
	if err != nil {
		t.Fatal(err)
	}
	return p, m, arch
}

// TestSplit: the design and the split are deterministic, stratified per
// calibration key (both halves in every key with two shapes or more,
// sizes within one), and the full design reaches every level: GEMVs and
// vector operators bound by DRAM (≥ 4× the LLC) as well as by the caches.
func TestSplit(t *testing.T) {
	_, m, arch := fixtureMachine(t)
	sz := Sizes{LLCBytes: m.LastLevelBytes(), KVBytesPerPos: int64(2 * arch.KVHeads * arch.HeadDim * 4)}
	if sz.LLCBytes != 32<<20 {
		t.Fatalf("fixture LLC %d bytes, want its 32 MiB L3", sz.LLCBytes)
	}
	for _, quick := range []bool{false, true} {
		a := Design([]int{1, 2}, quick, sz)
		b := Design([]int{1, 2}, quick, sz)
		if !reflect.DeepEqual(a, b) {
			t.Fatal("Design is not deterministic")
		}
		keys := make([]roofline.CalibrationKey, len(a))
		for i, s := range a {
			_, level, _, err := predict(m, arch, s)
			if err != nil {
				t.Fatalf("%s: %v", s.Key(), err)
			}
			keys[i] = Point{Shape: s, Level: level}.CalibrationKey()
		}
		ha, hb := Split(keys), Split(slices.Clone(keys))
		if !reflect.DeepEqual(ha, hb) {
			t.Fatal("Split is not deterministic")
		}
		count := map[roofline.CalibrationKey][2]int{}
		classes := map[string]bool{}
		for i, k := range keys {
			classes[k.Class] = true
			c := count[k]
			if ha[i] {
				c[1]++
			} else {
				c[0]++
			}
			count[k] = c
		}
		for _, class := range ClassOrder {
			// kv_write is timed into a DRAM-sized cache: the full
			// design's only.
			if !classes[class] && !(quick && class == roofline.ClassKVWrite) {
				t.Errorf("quick %v: no %s shape", quick, class)
			}
		}
		for k, c := range count {
			if c[0]+c[1] >= 2 && (c[0] == 0 || c[1] == 0) || c[0]-c[1] > 1 || c[1]-c[0] > 1 {
				t.Errorf("quick %v: %s: %d fit, %d held out", quick, keyText(k), c[0], c[1])
			}
		}
		if !quick {
			for _, k := range []roofline.CalibrationKey{
				{Class: roofline.ClassGEMV, Threads: 2, Level: "DRAM"}, {Class: roofline.ClassGEMV, Threads: 1, Level: "DRAM"},
				{Class: roofline.ClassGEMV, Threads: 1, Level: "L2"}, {Class: roofline.ClassGEMV, Threads: 2, Level: "L3"},
				{Class: roofline.ClassResidual, Threads: 2, Level: "DRAM"}, {Class: roofline.ClassResidual, Threads: 1, Level: "L1"},
				{Class: roofline.ClassGEMM, Threads: 2, Level: roofline.BoundCompute + "/L3"},
				{Class: roofline.ClassAttention, Threads: 2, Level: "DRAM"},
			} {
				if c := count[k]; c[0] < 2 || c[1] < 1 {
					t.Errorf("full design: %s: %d fit, %d held out shapes, want ≥ 2 and ≥ 1", keyText(k), c[0], c[1])
				}
			}
		}
		// Every decode attention whose KV exceeds the LLC, and the cold
		// small contexts, are timed cold and keyed DRAM; each half of
		// the cold ones has both batches.
		batches := map[bool]map[int]bool{false: {}, true: {}}
		for i, s := range a {
			if s.Class != roofline.ClassAttention || s.Phase != "decode" || s.Threads != 2 {
				continue
			}
			if big := int64(s.Context)*sz.KVBytesPerPos > sz.LLCBytes; big && !s.Cold {
				t.Errorf("%s: KV over the LLC, not cold", s.Key())
			}
			if s.Cold {
				if keys[i].Level != "DRAM" || !strings.HasSuffix(s.Key(), " cold") {
					t.Errorf("%s: level %s", s.Key(), keys[i].Level)
				}
				batches[ha[i]][s.Batch] = true
			}
		}
		if !quick && (len(batches[false]) != 2 || len(batches[true]) != 2) {
			t.Errorf("cold decode batches: fit %v, held out %v; want 1 and 4 in each", batches[false], batches[true])
		}
		for _, s := range a {
			op, err := predictOp(s)
			if s.Class == roofline.ClassAttention {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := roofline.ClassOf(op); got != s.Class {
				t.Errorf("%s: ClassOf = %q", s.Key(), got)
			}
		}
	}
}

// TestApplyRoundTrip: a calibration written into a profile reads back
// equal through the schema, and roofline.FromProfile applies it to the
// classes it has, leaving the others unchanged.
func TestApplyRoundTrip(t *testing.T) {
	p, err := results.ReadProfile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Threads: []int{1, 2}, Classes: []results.CalibrationClass{
		{Class: roofline.ClassGEMM, Efficiency: 0.5, FixedSeconds: 3e-6, FitShapes: 4, HeldOutShapes: 4},
		{Class: roofline.ClassNorm, Efficiency: 0.25, FixedSeconds: 1e-6, FitShapes: 2, HeldOutShapes: 2},
		// A thread count's own parameters take precedence over the class's.
		{Class: roofline.ClassNorm, Threads: 2, Efficiency: 4, FixedSeconds: 0, FitShapes: 2, HeldOutShapes: 2},
		// Keyed by level: DRAM-bound GEMVs only.
		{Class: roofline.ClassGEMV, Level: "DRAM", Efficiency: 0.8, FixedSeconds: 1e-6, FitShapes: 2, HeldOutShapes: 2},
	}}
	q, err := Apply(p, r, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if p.Calibration != nil {
		t.Fatal("Apply changed its input")
	}
	data, err := results.MarshalProfile(q)
	if err != nil {
		t.Fatal(err)
	}
	back, err := results.ParseProfile(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Calibration, q.Calibration) {
		t.Fatalf("round trip: %+v != %+v", back.Calibration, q.Calibration)
	}
	base, err := roofline.FromProfile(p, "p")
	if err != nil {
		t.Fatal(err)
	}
	cal, err := roofline.FromProfile(back, "p")
	if err != nil {
		t.Fatal(err)
	}
	norm, _ := roofline.VectorOp(roofline.OpAttnNorm, 1, 1024)     // one row: one thread
	normPar, _ := roofline.VectorOp(roofline.OpAttnNorm, 64, 1024) // on both workers
	for _, c := range []struct {
		op              roofline.Operator
		eff, fixed      float64
		calibratedClass bool
	}{
		{roofline.LinearOp(roofline.OpQProj, 64, 1024, 1024), 0.5, 3e-6, true},
		{norm, 0.25, 1e-6, true},
		{normPar, 4, 0, true},
		{roofline.LinearOp(roofline.OpQProj, 1, 1024, 1024), 1, 0, false},     // gemv in the L3: no parameters
		{roofline.LinearOp(roofline.OpQProj, 1, 8192, 4096), 0.8, 1e-6, true}, // 128 MiB of weights: DRAM
	} {
		pb, err := roofline.Place(base, "fp32", []roofline.Operator{c.op})
		if err != nil {
			t.Fatal(err)
		}
		pc, err := roofline.Place(cal, "fp32", []roofline.Operator{c.op})
		if err != nil {
			t.Fatal(err)
		}
		want := pb[0].Time
		if c.calibratedClass {
			want = c.fixed + pb[0].Time/c.eff
		}
		if math.Abs(pc[0].Time-want) > 1e-12+1e-9*want {
			t.Errorf("%s %s: calibrated %v, want %v (uncalibrated %v)", c.op.Name, c.op.Shape, pc[0].Time, want, pb[0].Time)
		}
	}
	// Published profiles have no calibration.
	for _, n := range roofline.PublishedNames() {
		m, err := roofline.Published(n)
		if err != nil {
			t.Fatal(err)
		}
		if m.Calibration != nil {
			t.Errorf("published %s has a calibration", n)
		}
	}
	// Uncalibrated drops the section.
	u, _, err := Uncalibrated(back, "p")
	if err != nil || u.Calibration != nil {
		t.Errorf("Uncalibrated: %v, calibration %v", err, u.Calibration)
	}
}

// TestBadCalibration: a bad section is refused with one line naming the
// value.
func TestBadCalibration(t *testing.T) {
	p, err := results.ReadProfile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cal  results.Calibration
		want string
	}{
		{results.Calibration{Schema: "bench.calibration/v9"}, `calibration.schema "bench.calibration/v9" is not supported`},
		{results.Calibration{Schema: results.CalibrationSchemaV1, Classes: []results.CalibrationClass{{Class: "gemm", Efficiency: 0}}}, "efficiency 0: must be > 0"},
		{results.Calibration{Schema: results.CalibrationSchemaV1, Classes: []results.CalibrationClass{{Class: "gemm", Efficiency: 1, FixedSeconds: -1}}}, "fixed_seconds -1"},
		{results.Calibration{Schema: results.CalibrationSchemaV1, Classes: []results.CalibrationClass{{Class: "gemm", Efficiency: 1}, {Class: "gemm", Efficiency: 2}}}, `class "gemm" at threads 0, level "" appears twice`},
	} {
		q := *p
		q.Calibration = &c.cal
		data, err := results.MarshalProfile(&q)
		if err != nil {
			t.Fatal(err)
		}
		_, err = results.ParseProfile(data)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseProfile: %v, want one line with %q", err, c.want)
		}
		if _, err := roofline.FromProfile(&q, "p"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromProfile: %v, want %q", err, c.want)
		}
	}
	if _, err := Apply(p, &Report{}, time.Now()); err == nil {
		t.Error("Apply of a report with no class: no error")
	}
	if _, err := Run(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "no profile") {
		t.Errorf("Run without a profile: %v", err)
	}
	if _, err := Run(context.Background(), Config{Profile: p, CPUs: []int{0}, Reps: 0, RepDuration: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "--reps 0") {
		t.Errorf("Run with --reps 0: %v", err)
	}
}

// TestRunQuick runs the quick design on this machine against the fixture
// profile (another machine's: the errors mean nothing; no timing is
// asserted) and checks the report's shape.
func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("measures")
	}
	p, err := results.ReadProfile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Config{Profile: p, ProfileName: "fixture", CPUs: []int{-1}, Quick: true, Reps: 2, RepDuration: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != len(Design([]int{1}, true, Sizes{})) {
		t.Errorf("%d points", len(r.Points))
	}
	for _, pt := range r.Points {
		if !(pt.Seconds.Median > 0) || !(pt.Predicted > 0) || pt.Seconds.Noise == nil {
			t.Errorf("%s: measured %v, predicted %v, noise %v", pt.Key(), pt.Seconds.Median, pt.Predicted, pt.Seconds.Noise)
		}
	}
	if md := r.Markdown(); !strings.Contains(md, "| class |") || !strings.Contains(md, "target p90 ≤ 15%") {
		t.Errorf("markdown:\n%s", md)
	}
	png, err := r.PlotCDF()
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("PlotCDF: %d bytes, %v", len(png), err)
	}
}

// testMeasurer is a measurer of 2 quick repetitions on every CPU with the
// engine's backends and a 1 MiB LLC, closed when t ends (skipped without a
// backend).
func testMeasurer(t *testing.T) *measurer {
	t.Helper()
	bk, err := opbench.ChooseBackends("", "")
	if err != nil {
		t.Skip(err)
	}
	b, err := probes.NewGEMMBench(nil, 2, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	c := Config{Reps: 2, RepDuration: time.Millisecond}
	return &measurer{cfg: &c, bench: b, pair: bk, weight: map[[2]int][]*probes.GEMMWeights{}, llc: 1 << 20}
}

// TestLinearRotates: a linear whose weights exceed the LLC is measured on
// min(rotateBytes/size, maxCopies) copies in rotation, its result checked
// against the float64 reference; one within the LLC on a single matrix.
func TestLinearRotates(t *testing.T) {
	ms := testMeasurer(t)
	for _, s := range []struct {
		n, k, copies int
	}{{512, 1024, maxCopies}, {128, 256, 1}} {
		st, err := ms.linear(context.Background(), Shape{Class: roofline.ClassGEMV, Op: "q_proj", Threads: 1, M: 1, N: s.n, K: s.k})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(ms.weight[[2]int{s.n, s.k}]); got != s.copies || !(st.Median > 0) {
			t.Errorf("%d×%d: %d copies (want %d), %v s", s.n, s.k, got, s.copies, st.Median)
		}
	}
}

// TestReplay: a recorded report's points, re-predicted, keep their
// measured seconds and held-out half, and are fitted again; with the same
// profile and model the predictions are the recorded ones.
func TestReplay(t *testing.T) {
	p, m, arch := fixtureMachine(t)
	bk, err := opbench.ChooseBackends("", "")
	if err != nil {
		t.Fatal(err)
	}
	m.AttnPlan = opbench.AttentionPlan(bk.Pair.Cores, arch) // as Run and Replay
	rec := &Report{Profile: "recorded", Threads: []int{1, 2}}
	shapes := Design([]int{1, 2}, true, Sizes{})
	keys := make([]roofline.CalibrationKey, len(shapes))
	for i, s := range shapes {
		pred, level, rows, err := predict(m, arch, s)
		if err != nil {
			t.Fatal(err)
		}
		// "Measured" 1.3× the prediction plus 1 µs, quiet.
		st := results.Stat{Median: 1.3*pred + 1e-6, Min: pred, Max: 2 * pred, N: 3, Noise: &results.Noise{}}
		rec.Points = append(rec.Points, Point{Shape: s, Seconds: st, Predicted: pred, Level: level, CalibrationRows: rows})
		keys[i] = rec.Points[i].CalibrationKey()
	}
	for i, h := range Split(keys) {
		rec.Points[i].HeldOut = h
	}
	now, err := Replay(p, "fixture", rec, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Points) != len(rec.Points) || len(now.Classes) == 0 {
		t.Fatalf("%d points, %d classes", len(now.Points), len(now.Classes))
	}
	for i, pt := range now.Points {
		old := rec.Points[i]
		if pt.Predicted != old.Predicted || pt.Seconds.Median != old.Seconds.Median || pt.HeldOut != old.HeldOut || pt.Level != old.Level {
			t.Errorf("%s: predicted %v (recorded %v), measured %v (%v), held out %v (%v)", pt.Key(), pt.Predicted, old.Predicted, pt.Seconds.Median, old.Seconds.Median, pt.HeldOut, old.HeldOut)
		}
	}
	if !(now.After.P90 < now.Before.P90) {
		t.Errorf("held-out p90 %v after, %v before: the fit should follow 1.3×t + 1 µs", now.After.P90, now.Before.P90)
	}
	if _, err := Replay(p, "fixture", rec, "no-such-model"); err == nil {
		t.Error("unknown model accepted")
	}
}

// The full design has each vector class's cold decode shapes (Shape.Cold,
// keyed apart) at both thread counts, under the engine's serial
// threshold; with a cold-line cost they are predicted under the
// roofline's cold-lines bound.
func TestColdVectorShapes(t *testing.T) {
	p, m, arch := fixtureMachine(t)
	sz := Sizes{LLCBytes: m.LastLevelBytes(), KVBytesPerPos: int64(2 * arch.KVHeads * arch.HeadDim * 4)}
	shapes := Design([]int{1, 2}, false, sz)
	n := map[string]int{}
	for _, s := range shapes {
		if !s.Cold || s.Class == roofline.ClassAttention {
			continue
		}
		n[s.Class]++
		if s.Rows*s.Width >= 1<<14 || !strings.HasSuffix(s.Key(), " cold") {
			t.Errorf("%s: %d elements (want < 16384, the engine's serial operators), key %q", s.Key(), s.Rows*s.Width, s.Key())
		}
	}
	for class, rws := range coldVector {
		if n[class] != 2*len(rws) {
			t.Errorf("%s: %d cold shapes, want %d", class, n[class], 2*len(rws))
		}
	}
	// Predicted with a cold-line cost (the fixture has no dispatch
	// section: test values).
	q := *p
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	q.Dispatch = &results.Dispatch{
		Points: []results.DispatchPoint{
			{Threads: 1, CallSeconds: st(2e-8), WakeSeconds: st(1e-5)},
			{Threads: 2, CallSeconds: st(2.5e-7), WakeSeconds: st(1e-5)},
		},
		ColdVector: &results.ColdVector{SecondsPerLine: 10e-9, Seconds: st(2e-6)},
	}
	mq, _, err := Uncalibrated(&q, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	if f := mq.FixedCosts; f == nil || f.ColdLineSeconds != 10e-9 || f.ColdCallSeconds != 2e-6 {
		t.Errorf("fixed costs %+v: want the cold vector's 10 ns a line and 2 µs a call", f)
	}
	for _, rw := range coldVector[roofline.ClassRoPE] {
		s := Shape{Class: roofline.ClassRoPE, Op: roofline.OpRoPE, Threads: 1, Rows: rw[0], Width: rw[1], Cold: true}
		if _, level, _, err := predict(mq, arch, s); err != nil || level != roofline.BoundColdLines {
			t.Errorf("%s: level %q (%v), want %q", s.Key(), level, err, roofline.BoundColdLines)
		}
	}
	// kv_write as the engine runs it: a decode step's few positions on
	// the caller, cold; a prompt's on the workers, into the cache's DRAM
	// lines.
	for _, s := range shapes {
		if s.Class != roofline.ClassKVWrite {
			continue
		}
		want := roofline.BoundColdLines
		if !s.Cold {
			want = "DRAM"
		}
		if _, level, _, err := predict(mq, arch, s); err != nil || level != want {
			t.Errorf("%s: level %q (%v), want %q", s.Key(), level, err, want)
		}
	}
}

// TestMeasureKVWrite: the kv_write shapes are timed with the engine's
// cache write, cold (positions a panel apart) and not, on all workers.
func TestMeasureKVWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a 64 MiB cache")
	}
	ms := testMeasurer(t)
	threads := min(2, ms.bench.Pool.Size())
	for _, s := range []Shape{
		{Class: roofline.ClassKVWrite, Op: roofline.OpKVWrite, Threads: threads, Rows: 2, Width: 1024, Cold: true},
		{Class: roofline.ClassKVWrite, Op: roofline.OpKVWrite, Threads: threads, Rows: 64, Width: 1024},
	} {
		st, _, err := ms.measure(context.Background(), s)
		if err != nil || !(st.Median > 0) || st.Noise == nil {
			t.Errorf("%s: %+v, %v", s.Key(), st, err)
		}
	}
	if w := ms.kv[1024]; w == nil || w.MaxSeq() < 64<<20/(8*1024) || w.MaxSeq() < 2*2*kvPanelStride {
		t.Errorf("kv_write cache: %v, want at least 64 MiB of positions", w)
	}
}

// TestFitCold: two shapes of predictions 3× apart fix a fixed cost for a
// cold-lines class (FitCold), where Fit keeps the efficiency alone (the
// span is under MinFixedSpan).
func TestFitCold(t *testing.T) {
	pred := []float64{7e-6, 21e-6}
	meas := []float64{3.3e-6, 4.7e-6} // 2.6 µs + pred/10
	c, err := FitCold(pred, meas)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.FixedSeconds-2.6e-6) > 1e-9 || math.Abs(c.Efficiency-10) > 1e-6 {
		t.Errorf("FitCold: fixed %v s, efficiency %v; want 2.6 µs, 10", c.FixedSeconds, c.Efficiency)
	}
	if f, err := Fit(pred, meas); err != nil || f.FixedSeconds != 0 {
		t.Errorf("Fit: %+v, %v: want the efficiency alone", f, err)
	}
}

// A key with one fit shape stays uncalibrated, and its held-out shapes
// count at their uncalibrated error: the held-out error is what a user of
// the calibrated profile gets, not only that of the keys that were fitted.
func TestUncalibratedKeyCounted(t *testing.T) {
	quiet := func(s float64) results.Stat {
		return results.Stat{Median: s, Min: s, Max: s, N: 3, Noise: &results.Noise{}}
	}
	pt := func(class string, rows int, held bool, pred, meas float64) Point {
		return Point{Shape: Shape{Class: class, Op: roofline.OpAttnResidual, Threads: 1, Rows: rows, Width: 64}, Seconds: quiet(meas),
			Predicted: pred, Calibrated: pred, Level: "L2", HeldOut: held}
	}
	r := &Report{Threads: []int{1}, Points: []Point{
		// residual@L2: 3 fit, 1 held out, exactly 2× → calibrated exactly.
		pt(roofline.ClassResidual, 1, false, 1e-6, 2e-6), pt(roofline.ClassResidual, 2, false, 2e-6, 4e-6),
		pt(roofline.ClassResidual, 4, false, 4e-6, 8e-6), pt(roofline.ClassResidual, 8, true, 8e-6, 16e-6),
		// norm@L2: 1 fit, 1 held out at 1.5× its prediction: uncalibrated.
		pt(roofline.ClassNorm, 1, false, 1e-6, 1.5e-6), pt(roofline.ClassNorm, 2, true, 2e-6, 3e-6),
	}}
	r.fit()
	if r.After.N != 2 || !r.Points[5].Counted || r.Points[5].Calibrated != 2e-6 {
		t.Fatalf("after: %+v; norm's held-out point counted %v, calibrated %v", r.After, r.Points[5].Counted, r.Points[5].Calibrated)
	}
	if want := 1.0 / 3; math.Abs(r.After.Max-want) > 1e-9 || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "norm") && strings.Contains(n, "uncalibrated") }) {
		t.Errorf("after max %v (want %v: the uncalibrated norm's), notes %q", r.After.Max, want, r.Notes)
	}
}

// A compute check measured while the CPUs were away from the profile's
// placement scales nothing and is not kept for the next shapes; one
// without a table point to check against is kept (not tried again).
func TestComputeRatioPlacement(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 {
		t.Skip("needs 2 CPUs")
	}
	ms := testMeasurer(t)
	ms.cfg.CPUs = cpus[:2]
	ms.cfg.Profile = &results.Profile{}
	ref := &results.Placement{RoundTrips: []results.RoundTrip{{A: cpus[0], B: cpus[1], NS: results.Stat{Median: 1e7}}}}
	ms.place = noise.NewPlacementGuard(ref, 0, 0)
	r, err := ms.computeRatio(context.Background(), 2)
	if err != nil || r != 0 {
		t.Fatalf("ratio %v, %v", r, err)
	}
	if ms.place.Err() != nil {
		t.Skip("round trip not measured (CPUs busy with other work)")
	}
	if _, kept := ms.gemmNow[2]; kept {
		t.Error("a check measured away from the profile's placement was kept")
	}
	ms.place = nil // no placement to check: the profile's missing table point is kept
	if r, err := ms.computeRatio(context.Background(), 2); err != nil || r != 0 {
		t.Fatalf("ratio %v, %v", r, err)
	}
	if c, kept := ms.gemmNow[2]; !kept || time.Until(c.at) < 30*time.Minute {
		t.Errorf("check %+v: want kept, not tried again for an hour", c)
	}
}

// The vector shapes carry the buffers their calls move, as the engine's
// operators do: the residual add's write in place at distance 0, its
// reads at the distance that keeps a hot shape at the level of its whole
// footprint, +Inf when cold; a norm's weights marked as weights.
func TestVectorShapeOperands(t *testing.T) {
	const rows, width = 64, 1024
	e := float64(rows*width) * 4
	o, err := predictOp(Shape{Class: roofline.ClassResidual, Op: roofline.OpFFNResidual, Threads: 1, Rows: rows, Width: width})
	if err != nil {
		t.Fatal(err)
	}
	var reads, writes int
	for _, p := range o.Operands {
		switch {
		case p.Write:
			writes++
			if p.Distance != 0 || p.Buffer != "y" {
				t.Errorf("residual write %+v: want y in place (distance 0)", p)
			}
		default:
			reads++
			if want := 2*e/roofline.ReuseMargin - e; p.Distance != want || p.Bytes != e {
				t.Errorf("residual read %+v: want %v bytes at distance %v", p, e, want)
			}
		}
	}
	if reads != 2 || writes != 1 {
		t.Errorf("residual: %d reads, %d writes, want 2 and 1", reads, writes)
	}
	c, err := predictOp(Shape{Class: roofline.ClassNorm, Op: roofline.OpFFNNorm, Threads: 1, Rows: rows, Width: width, Cold: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Operands {
		if p.Weights {
			if p.Bytes != width*4 {
				t.Errorf("norm weights %+v: want %d bytes", p, width*4)
			}
			continue
		}
		if !math.IsInf(p.Distance, 1) {
			t.Errorf("cold norm operand %+v: want distance +Inf", p)
		}
	}
	if s, err := predictOp(Shape{Class: roofline.ClassSoftmax, Op: roofline.OpRouterTopK, Threads: 1, Rows: rows, Width: 128}); err != nil || len(s.Operands) != 0 {
		t.Errorf("softmax: operands %v (err %v), want none", s.Operands, err)
	}
}
