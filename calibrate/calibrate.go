package calibrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/opbench"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// Target is the goal for the held-out relative error's p90
// (issue #16: ≤ 15%).
const Target = 0.15

// Config is one calibration run.
type Config struct {
	// Profile is the probe profile whose roofline is calibrated (its own
	// calibration section, if any, is ignored: the fit is against the
	// uncalibrated model); ProfileName names it in messages.
	Profile     *results.Profile
	ProfileName string
	// CPUs are the pinned workers' CPUs; the shapes run at 1 thread and
	// at len(CPUs) threads.
	CPUs []int
	// Quick is the small design (tests, --quick).
	Quick bool
	// Reps timed repetitions of at least RepDuration each per shape.
	Reps        int
	RepDuration time.Duration
	// Model gives the attention's shape (heads, KV heads, head dim;
	// default qwen3-0.6b).
	Model string
	// Backends are the fp32 cores backend of the GEMMs and attention
	// (opbench.ChooseBackends("", "") by default).
	Backends *opbench.Backends
	// Progress, when set, is told each shape as it is measured.
	Progress func(string)
	// PlacementWait bounds the time the run waits in all, before shapes
	// on 2 or more CPUs, for the host to put the CPUs where the profile's
	// placement had them (noise.PlacementGuard; 0: no waiting, such shapes
	// are checked and marked all the same).
	PlacementWait time.Duration

	// Arch is Model's shape (set by Run).
	Arch roofline.Arch
}

// Point is one measured shape.
type Point struct {
	Shape
	// Seconds is the measured time per call (median of the repetitions,
	// min, max, cv, noise record).
	Seconds results.Stat `json:"seconds"`
	// Predicted is the uncalibrated roofline time, Calibrated the time
	// with the fitted parameters of its class (= Predicted where the class
	// has none), in seconds.
	Predicted  float64 `json:"predicted_s"`
	Calibrated float64 `json:"calibrated_s"`
	// RoofNowGBps is, for a linear whose weights exceed the LLC, the DRAM
	// read roof re-measured before and after it (GB/s; 0: not measured or
	// moving): Seconds are then scaled to the profile's roof (× this / the
	// profile's memory.dram roof at the shape's threads).
	RoofNowGBps float64 `json:"roof_now_gbps,omitempty"`
	// GEMMRatio is, for a compute-bound shape (Level "compute…"), the
	// attained GEMM of the cores backend at the shape's threads
	// re-measured at most 15 s before it over the profile's (0: none):
	// Seconds are then scaled by it to the profile's compute rate.
	GEMMRatio float64 `json:"gemm_ratio,omitempty"`
	// CalibrationRows is what the class's per-row cost multiplies
	// (roofline.CalibrationRows: an attention's query rows over its
	// heads, a vector operator's rows; 0 for the linears).
	CalibrationRows int `json:"calibration_rows,omitempty"`
	// Level is what bounds the uncalibrated prediction (roofline's
	// Placed.Bound: "L1", "L2", "L3", "DRAM", or "compute/" and the
	// activations' level; an attention's, its QKᵀ's): the point's class
	// is fitted per level.
	Level string `json:"level"`
	// HeldOut is true for the held-out half (false: the fit half).
	HeldOut bool `json:"held_out"`
	// Counted is true for a held-out point counted in its class's error
	// (quiet, or noisy in a class with too few quiet shapes).
	Counted bool `json:"counted"`
}

// Noisy reports whether the point's measurement was marked noisy (it is
// then neither fitted nor counted in the errors).
func (p Point) Noisy() bool { return p.Seconds.Noisy() }

// CalibrationKey is the calibration key the point is fitted under: its class, the
// thread count that runs it and the level that bounds it.
func (p Point) CalibrationKey() roofline.CalibrationKey {
	return roofline.CalibrationKey{Class: p.Class, Threads: p.RunThreads(), Level: roofline.CalibrationLevel(p.Class, p.Level)}
}

// Name is the shape's one-line name with its level.
func (p Point) Name() string { return p.Shape.Key() + " @" + p.Level }

// Report is a calibration run's result.
type Report struct {
	Profile string  `json:"profile"`
	Threads []int   `json:"threads"`
	Points  []Point `json:"points"`
	// Classes are the fitted classes with their held-out errors, in the
	// order of ClassOrder.
	Classes []results.CalibrationClass `json:"classes"`
	// Before and After are every class's held-out errors together.
	Before results.ErrorSummary `json:"before"`
	After  results.ErrorSummary `json:"after"`
	Target float64              `json:"target_p90"`
	Notes  []string             `json:"notes,omitempty"`
}

// ClassOrder is the order classes are reported in.
var ClassOrder = []string{roofline.ClassGEMM, roofline.ClassGEMV, roofline.ClassAttention, roofline.ClassNorm,
	roofline.ClassResidual, roofline.ClassRoPE, roofline.ClassSoftmax, roofline.ClassSiLUMul,
	roofline.ClassKVWrite}

// validate checks c; errors are one line naming the value.
func (c *Config) validate() error {
	if c.Profile == nil {
		return errors.New("calibrate: no profile: give --profile (a probe profile.json)")
	}
	if len(c.CPUs) == 0 {
		return errors.New("calibrate: no CPU to run on")
	}
	if c.Reps < 1 {
		return fmt.Errorf("calibrate: --reps %d: must be ≥ 1", c.Reps)
	}
	if c.RepDuration <= 0 {
		return fmt.Errorf("calibrate: --rep-ms %v: must be > 0", c.RepDuration)
	}
	return nil
}

// Uncalibrated is the roofline machine of p without its calibration
// section, with the L3 found at the knee of its read bandwidth curves
// where its topology has none (probes.WithMeasuredLLC, as bench probe now
// records it), and the note saying what was found ("" when nothing was
// looked for).
func Uncalibrated(p *results.Profile, name string) (*roofline.Machine, string, error) {
	q, note := probes.WithMeasuredLLC(p)
	r := *q
	r.Calibration = nil
	m, err := roofline.FromProfile(&r, name)
	return m, note, err
}

// Run measures the designed shapes, fits each class on the fit half and
// reports the held-out errors before and after (see the package doc).
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	m, llcNote, err := Uncalibrated(c.Profile, c.ProfileName)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if c.Model == "" {
		c.Model = "qwen3-0.6b"
	}
	if c.Arch, err = modelArch(c.Model); err != nil {
		return nil, fmt.Errorf("calibrate: --model: %w", err)
	}
	bk := c.Backends
	if bk == nil {
		b, err := opbench.ChooseBackends("", "")
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		bk = &b
	}
	m.AttnPlan = opbench.AttentionPlan(bk.Pair.Cores, c.Arch)
	threads := []int{1}
	if len(c.CPUs) > 1 {
		threads = append(threads, len(c.CPUs))
	}
	b, err := probes.NewGEMMBench(c.CPUs, c.Reps, c.RepDuration)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer b.Close()
	// GEMMs write their outputs as the profile's attained-GEMM table did
	// (a ring of cold outputs since output_bytes), so that a linear's
	// fitted efficiency is over the rate the prediction starts from.
	if mx := c.Profile.Matrix; mx != nil {
		for _, g := range mx.GEMMShapes {
			b.OutputRing = max(b.OutputRing, g.OutputBytes)
		}
	}
	sz := Sizes{LLCBytes: m.LastLevelBytes(), KVBytesPerPos: int64(2 * c.Arch.KVHeads * c.Arch.HeadDim * 4)}
	ms := &measurer{cfg: &c, bench: b, pair: *bk, weight: map[[2]int][]*probes.GEMMWeights{}, llc: sz.LLCBytes,
		place: noise.NewPlacementGuard(c.Profile.Placement, c.PlacementWait, 0)}
	shapes := Design(threads, c.Quick, sz)
	r := &Report{Profile: c.ProfileName, Threads: threads, Target: Target}
	if llcNote != "" {
		r.Notes = append(r.Notes, llcNote)
	}
	keys := make([]roofline.CalibrationKey, len(shapes))
	for i, s := range shapes {
		pred, level, rows, err := predict(m, c.Arch, s)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", s.Key(), err)
		}
		r.Points = append(r.Points, Point{Shape: s, Predicted: pred, Calibrated: pred, Level: level, CalibrationRows: rows})
		keys[i] = r.Points[i].CalibrationKey()
	}
	for i, h := range Split(keys) {
		r.Points[i].HeldOut = h
	}
	canary := make([]map[int]float64, len(r.Points))
	for i := range r.Points {
		p := &r.Points[i]
		if c.Progress != nil {
			c.Progress(fmt.Sprintf("calibrate %d/%d: %s", i+1, len(shapes), p.Name()))
		}
		ms.roofNow = 0
		ratio := 0.0
		if strings.HasPrefix(p.Level, roofline.BoundCompute) {
			if ratio, err = ms.computeRatio(ctx, p.RunThreads()); err != nil {
				return nil, fmt.Errorf("calibrate: %s: %w", p.Shape.Key(), err)
			}
		}
		if p.Seconds, canary[i], err = ms.measure(ctx, p.Shape); err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", p.Shape.Key(), err)
		}
		p.RoofNowGBps = ms.roofNow
		if ratio > 0 {
			p.GEMMRatio = ratio
			p.Seconds = scaleStat(p.Seconds, ratio)
		}
	}
	// The reference loop's times judged again against the whole run's
	// best: a shape measured before the host's first fast phase was
	// compared only with the slower times seen until then.
	slow := 0
	for i := range r.Points {
		if n := r.Points[i].Seconds.Noise; n != nil {
			was := n.Noisy
			opbench.JudgeCanary(n, ms.canary.Ratio(canary[i]))
			if n.Noisy && !was {
				slow++
			}
		}
	}
	if w := ms.place.Waited(); w > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("placement: the host moved the CPUs away from the profile's placement (core-to-core round trips, profile.placement) during the run; shapes on more than one CPU waited %.1f s in all (at most %v) for them to come back", w.Seconds(), c.PlacementWait))
	}
	if slow > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d shapes marked noisy after the run: the reference loop beside them took more than %.2f× its best time in the whole run (a host slowdown)", slow, results.NoiseMaxCanary))
	}
	var ratios []float64
	for _, p := range r.Points {
		if p.GEMMRatio > 0 {
			ratios = append(ratios, p.GEMMRatio)
		}
	}
	if len(ratios) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d compute-bound shapes were scaled to the profile's compute rate: × the attained GEMM of %s re-measured at most %v before each (probes.CheckGEMM) over the profile's (%.2f–%.2f now), so that their class's efficiency is the kernel's, not the host's rate of the moment", len(ratios), ms.pair.Pair.Cores.Name, computeCheckEvery, slices.Min(ratios), slices.Max(ratios)))
	}
	var roofs []float64
	for _, p := range r.Points {
		if p.RoofNowGBps > 0 {
			roofs = append(roofs, p.RoofNowGBps)
		}
	}
	if len(roofs) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d DRAM-bound shapes (linears with weights over the LLC, timed in rotation; decode attention with its KV evicted before each call) were timed between two re-measurements of the profile's DRAM read roof (%.1f–%.1f GB/s now) and scaled to the profile's roof, so that their class's efficiency is the kernel's fraction of the roof the roofline predicts with", len(roofs), slices.Min(roofs), slices.Max(roofs)))
	}
	r.fit()
	if note := r.coverage(m, c.Arch, c.Model); note != "" {
		r.Notes = append(r.Notes, note)
	}
	return r, nil
}

// coverage says which of the model's operators, as `bench run` and
// scripts/fidelity.sh run it (prefill of 128, 512 and 2048 tokens, decode
// at batch 1 and 4 after those prompts, fp32 on the cores), fall under a
// calibration key with no fitted entry and stay uncalibrated ("" when
// every classified operator is covered).
func (r *Report) coverage(m *roofline.Machine, arch roofline.Arch, model string) string {
	fitted := map[roofline.CalibrationKey]bool{}
	for _, c := range r.Classes {
		fitted[roofline.CalibrationKey{Class: c.Class, Threads: c.Threads, Level: c.Level}] = true
	}
	var reqs []roofline.Request
	for _, t := range []int{128, 512, 2048} {
		reqs = append(reqs, roofline.Request{Phase: roofline.Prefill, Batch: 1, Tokens: t, Context: t})
		for _, b := range []int{1, 4} {
			reqs = append(reqs, roofline.Request{Phase: roofline.Decode, Batch: b, Tokens: 1, Context: t + 1})
		}
	}
	seen := map[string]bool{}
	var missing []string
	for _, q := range reqs {
		q.Weight, q.Act, q.KV, q.Routing = "fp32", "fp32", "fp32", roofline.Routing{Kind: "uniform"}
		a, err := roofline.Analyze(m, arch, q, "fp32")
		if err != nil {
			return fmt.Sprintf("coverage of %s's operators not checked: %v", model, err)
		}
		ops := slices.Clone(a.Head)
		for _, l := range a.Layers {
			ops = append(ops, l.Ops...)
		}
		attn := ""
		for _, p := range ops {
			class := roofline.ClassOf(p.Operator)
			level := p.Bound
			if p.Name == roofline.OpQK {
				attn = p.Bound
			}
			if (p.Name == roofline.OpSoftmax || p.Name == roofline.OpPV) && attn != "" {
				level = attn
			}
			k := roofline.CalibrationKey{Class: class, Threads: p.Threads, Level: roofline.CalibrationLevel(class, level)}
			if class == "" || fitted[k] || fitted[roofline.CalibrationKey{Class: class, Level: level}] {
				continue
			}
			name := fmt.Sprintf("%s %s (%s)", q.Phase, p.Name, keyText(k))
			if !seen[name] {
				seen[name] = true
				missing = append(missing, name)
			}
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("%s's operators (prefill 128/512/2048, decode batch 1 and 4, fp32 cores) with no fitted entry at their level, predicted uncalibrated: %s", model, strings.Join(missing, ", "))
}

// LevelOrder is the order levels are reported in.
var LevelOrder = []string{"L1", "L2", "L3", "DRAM", roofline.BoundCompute, roofline.BoundCompute + "/L1",
	roofline.BoundCompute + "/L2", roofline.BoundCompute + "/L3", roofline.BoundCompute + "/DRAM"}

// groups are the calibration keys (class, threads that run it, level) of
// points, in ClassOrder, then by thread count, then in LevelOrder.
func groups(points []Point) []roofline.CalibrationKey {
	seen := map[roofline.CalibrationKey]bool{}
	var out []roofline.CalibrationKey
	for _, p := range points {
		if k := p.CalibrationKey(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	slices.SortStableFunc(out, func(a, b roofline.CalibrationKey) int {
		if d := slices.Index(ClassOrder, a.Class) - slices.Index(ClassOrder, b.Class); d != 0 {
			return d
		}
		if a.Threads != b.Threads {
			return a.Threads - b.Threads
		}
		return slices.Index(LevelOrder, a.Level) - slices.Index(LevelOrder, b.Level)
	})
	return out
}

// keyText names a calibration key in notes.
func keyText(k roofline.CalibrationKey) string {
	return fmt.Sprintf("%s at %d threads bound by %s", k.Class, k.Threads, k.Level)
}

// fit fits every class at every thread count that runs it on its fit
// half's quiet points, sets the points'
// calibrated times and the held-out errors.
func (r *Report) fit() {
	r.Classes = nil
	var allB, allA []float64
	noisy := 0
	for _, p := range r.Points {
		if p.Noisy() {
			noisy++
		}
	}
	if noisy > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d shapes noisy after their repeats (cv > %.0f%%): neither fitted nor counted, unless a class has too few quiet ones", noisy, len(r.Points), 100*results.NoiseMaxCV))
	}
	var uncal []string
	for _, g := range groups(r.Points) {
		var pf, mf, ph, mh []float64
		var rf, rh []int
		var hi []int
		collect := func(noisyToo bool) {
			pf, mf, ph, mh, hi, rf, rh = nil, nil, nil, nil, nil, nil, nil
			for i, p := range r.Points {
				if p.CalibrationKey() != g || p.Noisy() && !noisyToo || !(p.Seconds.Median > 0) || !(p.Predicted > 0) {
					continue
				}
				if p.HeldOut {
					ph, mh = append(ph, p.Predicted), append(mh, p.Seconds.Median)
					rh = append(rh, p.CalibrationRows)
					hi = append(hi, i)
				} else {
					pf, mf = append(pf, p.Predicted), append(mf, p.Seconds.Median)
					rf = append(rf, p.CalibrationRows)
				}
			}
		}
		collect(false)
		if len(pf) < 2 || len(ph) == 0 {
			// Too few quiet shapes (a loaded machine): fit and count the
			// noisy ones too, and say so.
			collect(true)
			if len(pf) >= 2 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: fewer than 2 quiet fit shapes or no quiet held-out shape: its noisy shapes are fitted and counted too", keyText(g)))
			}
		}
		// A key left uncalibrated is predicted by the roofline alone, and
		// so its held-out shapes count at their uncalibrated error: the
		// held-out error is what a user of the calibrated profile gets.
		countUncalibrated := func() {
			e := RelErrors(ph, mh)
			allB, allA = append(allB, e...), append(allA, e...)
			for _, i := range hi {
				r.Points[i].Counted = true
			}
		}
		if len(pf) < 2 {
			// One shape fixes no line: the key stays uncalibrated.
			uncal = append(uncal, fmt.Sprintf("%s (%d shape(s))", keyText(g), len(pf)+len(ph)))
			countUncalibrated()
			continue
		}
		cc := results.CalibrationClass{Class: g.Class, Threads: g.Threads, Level: g.Level, FitShapes: len(pf), HeldOutShapes: len(ph)}
		fit := func() (roofline.ClassParams, error) { return FitRows(pf, rf, mf) }
		if g.Level == roofline.BoundColdLines {
			fit = func() (roofline.ClassParams, error) { return FitCold(pf, mf) }
		}
		params, err := fit()
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: not calibrated: %v", keyText(g), err))
			countUncalibrated()
			continue
		}
		cc.Efficiency, cc.FixedSeconds, cc.RowSeconds = params.Efficiency, params.FixedSeconds, params.RowSeconds
		cal := make([]float64, len(ph))
		for j, i := range hi {
			cal[j] = params.Apply(ph[j], rh[j], true)
			r.Points[i].Calibrated = cal[j]
			r.Points[i].Counted = true
		}
		for i := range r.Points {
			if p := &r.Points[i]; p.CalibrationKey() == g && !p.HeldOut && p.Predicted > 0 {
				p.Calibrated = params.Apply(p.Predicted, p.CalibrationRows, true)
			}
		}
		before, after := RelErrors(ph, mh), RelErrors(cal, mh)
		cc.Before, cc.After = Summarize(before), Summarize(after)
		allB, allA = append(allB, before...), append(allA, after...)
		r.Classes = append(r.Classes, cc)
	}
	if len(uncal) > 0 {
		r.Notes = append(r.Notes, "uncalibrated (fewer than 2 fit shapes; operators of these keys are predicted by the roofline alone, and their held-out shapes count at that error): "+strings.Join(uncal, ", "))
	}
	r.Notes = append(r.Notes, "classes are keyed by the level that bounds an operator's prediction (L1, L2, L3, DRAM: the memory level holding most of its bytes; compute/LEVEL: the FLOP ceiling or non-linear rate, with the level holding its activations): an operator whose class has no entry at its level is predicted uncalibrated")
	r.Before, r.After = Summarize(allB), Summarize(allA)
}

// Summarize is the p50, p90 (empirical quantiles, gonum stat.Quantile)
// and max of relative errors.
func Summarize(errs []float64) results.ErrorSummary {
	if len(errs) == 0 {
		return results.ErrorSummary{}
	}
	s := slices.Clone(errs)
	slices.Sort(s)
	return results.ErrorSummary{P50: stat.Quantile(0.5, stat.Empirical, s, nil), P90: stat.Quantile(0.9, stat.Empirical, s, nil),
		Max: s[len(s)-1], N: len(s)}
}

// Apply returns a copy of p with r's fitted classes as its calibration
// section (schema results.CalibrationSchemaV2), stamped now.
func Apply(p *results.Profile, r *Report, now time.Time) (*results.Profile, error) {
	if len(r.Classes) == 0 {
		return nil, errors.New("calibrate: no class was fitted: nothing to write")
	}
	// The L3 the calibration was keyed by (found at the knee where the
	// topology has none) goes with it.
	q, _ := probes.WithMeasuredLLC(p)
	qq := *q
	q = &qq
	q.Calibration = &results.Calibration{Schema: results.CalibrationSchemaV2, CreatedAt: now.UTC().Format(time.RFC3339),
		Precision: "fp32", Threads: r.Threads, Classes: slices.Clone(r.Classes), Notes: slices.Clone(r.Notes)}
	if err := q.Calibration.Validate(); err != nil {
		return nil, err
	}
	return q, nil
}

// Verdict is the target line: the held-out p90 after calibration against
// Target.
func (r *Report) Verdict() string {
	v := "meets"
	if !(r.After.P90 <= Target) {
		v = "misses"
	}
	return fmt.Sprintf("held-out relative error p90 %.1f%% after calibration (%.1f%% before, %d shapes): %s the target p90 ≤ %.0f%%",
		100*r.After.P90, 100*r.Before.P90, r.After.N, v, 100*Target)
}

// Replay re-predicts the points of a recorded calibration r (a
// calibration.json's Report) with the uncalibrated roofline of profile p
// as the code models it now, keeps their measured seconds and held-out
// split, and fits the classes again: a model change's effect on the
// held-out error without measuring anything (scripts/calreplay). model is
// the attention's model config (default qwen3-0.6b), as in Config.Model.
// Errors: the profile's machine, an unknown model, a point whose shape
// the roofline cannot predict.
func Replay(p *results.Profile, name string, r *Report, model string) (*Report, error) {
	m, _, err := Uncalibrated(p, name)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if model == "" {
		model = "qwen3-0.6b"
	}
	arch, err := modelArch(model)
	if err != nil {
		return nil, fmt.Errorf("calibrate: model: %w", err)
	}
	bk, err := opbench.ChooseBackends("", "")
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	m.AttnPlan = opbench.AttentionPlan(bk.Pair.Cores, arch)
	out := &Report{Profile: name, Threads: r.Threads, Target: Target, Notes: []string{"replayed: the seconds measured by " + r.Profile + ", predictions of the code now"}}
	for _, pt := range r.Points {
		pred, level, rows, err := predict(m, arch, pt.Shape)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", pt.Shape.Key(), err)
		}
		pt.Predicted, pt.Calibrated, pt.Level, pt.CalibrationRows = pred, pred, level, rows
		pt.Counted = false
		out.Points = append(out.Points, pt)
	}
	out.fit()
	return out, nil
}

// modelArch is the attention's shape of model config name (models.Load).
func modelArch(name string) (roofline.Arch, error) {
	mc, err := models.Load(name)
	if err != nil {
		return roofline.Arch{}, err
	}
	return mc.Arch()
}
