// The operator-level sections of the sweep report: time breakdown, measured
// vs predicted (prediction error), regime map.

package reports

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/cpubench/bench/roofline"
)

// ErrorQuantiles returns the empirical median and 90th percentile (gonum
// stat.Empirical) of |measured/predicted − 1| over the pairs with both
// values > 0, and how many pairs that is. With none it returns n = 0.
func ErrorQuantiles(measured, predicted []float64) (median, p90 float64, n int) {
	var e []float64
	for i := range measured {
		if measured[i] > 0 && predicted[i] > 0 {
			e = append(e, math.Abs(measured[i]/predicted[i]-1))
		}
	}
	if len(e) == 0 {
		return 0, 0, 0
	}
	slices.Sort(e)
	return stat.Quantile(0.5, stat.Empirical, e, nil), stat.Quantile(0.9, stat.Empirical, e, nil), len(e)
}

// Operator groups of the breakdown, in stacking order (roofline.OpGroups).
var opGroups = func() []string {
	var gs []string
	for _, g := range roofline.OpGroups() {
		gs = append(gs, string(g))
	}
	return gs
}()

// OpGroup puts an operator in a breakdown group (roofline.Group: attention,
// projections, FFN, norms, LM head; other for embed, rope, residuals and
// names the vocabulary does not know).
func OpGroup(op string) string { return string(roofline.Group(op)) }

// isNonlinearOp reports the operators roofline's catalog marks non-linear
// (always on the cores, SMEPilot §3.2).
func isNonlinearOp(op string) bool { return roofline.Kind(op) == roofline.KindNonlinear }

// breakdownBar is one stacked bar: a cell's share of measured operator
// time per group in one phase.
type breakdownBar struct {
	label  string // multi-line plot label
	row    []string
	share  []float64 // per opGroups, fractions summing to 1
	totalS float64
}

// breakdownBars are, per panel at its largest batch, one bar per placement.
func (d *sweepData) breakdownBars(phase string) []breakdownBar {
	var out []breakdownBar
	for _, k := range d.panels() {
		gs := d.groups(k)
		g := gs[len(gs)-1]
		for _, p := range d.placements {
			c := d.cell(k, g, p)
			if c == nil {
				continue
			}
			sum := make([]float64, len(opGroups))
			tot := 0.0
			for _, op := range c.Ops {
				if op.Phase != phase || !(op.MeasuredS > 0) || !finite(op.MeasuredS) {
					continue
				}
				sum[slices.Index(opGroups, OpGroup(op.Op))] += op.MeasuredS
				tot += op.MeasuredS
			}
			if tot == 0 {
				continue
			}
			for i := range sum {
				sum[i] /= tot
			}
			lbl := d.panelLabel(k, "\n") + "\n" + d.groupLabel(g) + "\n" + p
			var row []string
			if len(d.srcs) > 1 {
				row = append(row, k.src)
			}
			row = append(row, k.model)
			row = append(row, k.workload, d.groupLabel(g), p)
			out = append(out, breakdownBar{label: lbl, row: row, share: sum, totalS: tot})
		}
	}
	return out
}

// breakdownSection: per-operator-group share of time, prefill and decode.
func (r *sweepReport) breakdownSection(b *bytes.Buffer) error {
	d := r.d
	b.WriteString("## Operator time breakdown\n\n")
	for _, phase := range []string{string(roofline.Prefill), string(roofline.Decode)} {
		bars := d.breakdownBars(phase)
		file := "breakdown_" + phase + ".png"
		fmt.Fprintf(b, "### %s\n\n", phase)
		if len(bars) == 0 {
			r.note(b, fmt.Sprintf("%s: no cell has measured %s operator times", file, phase))
			continue
		}
		if err := breakdownPNG(d, phase, bars, r.dir, file); err != nil {
			return err
		}
		r.figure(b, file, "Operator time breakdown, "+phase,
			fmt.Sprintf("Share of measured %s operator time (%%, summed over layers and calls) per operator group and placement, at the largest batch of each workload. Groups: attention = the fused attention (qk, softmax, pv); projections = q/k/v/o_proj; FFN = gate/up/down_proj, silu_mul, router, experts; norms; LM head; other = embed, rope, residuals.", phase))
		var header []string
		if len(d.srcs) > 1 {
			header = append(header, "machine")
		}
		header = append(header, "model, weights")
		header = append(header, "workload", "batch", "placement")
		for _, g := range opGroups {
			header = append(header, g+" (%)")
		}
		header = append(header, "operator time (s)")
		var rows [][]string
		for _, bar := range bars {
			row := slices.Clone(bar.row)
			for _, f := range bar.share {
				row = append(row, strconv.FormatFloat(100*f, 'f', 1, 64))
			}
			rows = append(rows, append(row, fmtSec(bar.totalS)))
		}
		if err := MarkdownTable(b, header, rows); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	return nil
}

// noisyBase counts the cells of the prediction error's set (d.base) that
// are marked noisy, which predPoints leaves out.
func (d *sweepData) noisyBase() int {
	n := 0
	for _, i := range d.base {
		if d.cells[i].Noisy() {
			n++
		}
	}
	return n
}

// predPoint is one operator's measured and predicted seconds in one cell.
type predPoint struct {
	phase, op, group    string
	measured, predicted float64
}

func (d *sweepData) predPoints() []predPoint {
	var out []predPoint
	for _, i := range d.base {
		if d.cells[i].Noisy() { // flagged, not counted (issue #16)
			continue
		}
		for _, op := range d.cells[i].Ops {
			m := op.Compared()
			if op.PredictedS == nil || !(*op.PredictedS > 0) || !(m > 0) || !finite(*op.PredictedS) || !finite(m) {
				continue
			}
			out = append(out, predPoint{op.Phase, op.Op, OpGroup(op.Op), m, *op.PredictedS})
		}
	}
	return out
}

// predictionError computes the summary's PredictionError.
func predictionError(pts []predPoint) *PredictionError {
	if len(pts) == 0 {
		return nil
	}
	var m, p []float64
	type key struct{ phase, op string }
	per := map[key][2][]float64{}
	var order []key
	for _, q := range pts {
		m, p = append(m, q.measured), append(p, q.predicted)
		k := key{q.phase, q.op}
		v, ok := per[k]
		if !ok {
			order = append(order, k)
		}
		per[k] = [2][]float64{append(v[0], q.measured), append(v[1], q.predicted)}
	}
	pe := &PredictionError{}
	pe.Median, pe.P90, pe.N = ErrorQuantiles(m, p)
	slices.SortStableFunc(order, func(a, b key) int { return phaseRank(a.phase) - phaseRank(b.phase) })
	for _, k := range order {
		v := per[k]
		o := OpPredictionError{Phase: k.phase, Op: k.op}
		o.Median, o.P90, o.N = ErrorQuantiles(v[0], v[1])
		ratios := make([]float64, len(v[0]))
		for i := range v[0] {
			ratios[i] = v[0][i] / v[1][i]
		}
		slices.Sort(ratios)
		o.MedianRatio = stat.Quantile(0.5, stat.Empirical, ratios, nil)
		pe.PerOp = append(pe.PerOp, o)
	}
	return pe
}

func phaseRank(p string) int {
	switch p {
	case string(roofline.Prefill):
		return 0
	case string(roofline.Decode):
		return 1
	}
	return 2
}

// predictionSection: scatter, error CDF, median and p90.
func (r *sweepReport) predictionSection(b *bytes.Buffer) error {
	b.WriteString("## Measured vs predicted operator time\n\n")
	if n := r.d.noisyBase(); n > 0 {
		fmt.Fprintf(b, "%d cell(s) marked NOISY (their threads got below 90%% of their CPUs: taken by other processes or stolen) are left out of the prediction error: flagged, not counted.\n\n", n)
	}
	pts := r.d.predPoints()
	pe := predictionError(pts)
	if pe == nil {
		if n := r.d.noisyBase(); n > 0 {
			r.note(b, fmt.Sprintf("pred_scatter.png, pred_error.png: no operator of a quiet cell carries a roofline prediction (%d NOISY cell(s) left out)", n))
			return nil
		}
		r.note(b, "pred_scatter.png, pred_error.png: no operator carries a roofline prediction (run the sweep with --profile)")
		return nil
	}
	r.s.PredError = pe
	fmt.Fprintf(b, "Prediction error |measured/predicted − 1| over %d operator samples (one per cell, phase and operator; cells without ablation): **median %.3f, p90 %.3f** (empirical quantiles).\n\n",
		pe.N, pe.Median, pe.P90)
	if err := predScatterPNG(r.d, pts, pe, r.dir, "pred_scatter.png"); err != nil {
		return err
	}
	r.figure(b, "pred_scatter.png", "Measured vs predicted operator time",
		"Measured vs roofline-predicted seconds per operator (summed over a cell's layers and calls), log-log; the solid line is measured = predicted, dashed lines 2× either way.")
	if err := predErrorPNG(r.d, pts, pe, r.dir, "pred_error.png"); err != nil {
		return err
	}
	r.figure(b, "pred_error.png", "Prediction error distribution",
		"Empirical CDF of the operator prediction error |measured/predicted − 1| (a fraction: 0.5 = 50 % off), median and p90 marked.")
	var rows [][]string
	for _, o := range pe.PerOp {
		rows = append(rows, []string{o.Phase, o.Op, strconv.Itoa(o.N), fmt.Sprintf("%.3f", o.Median), fmt.Sprintf("%.3f", o.P90), fmt.Sprintf("%.2f×", o.MedianRatio)})
	}
	rows = append(rows, []string{"**all**", "", strconv.Itoa(pe.N), fmt.Sprintf("**%.3f**", pe.Median), fmt.Sprintf("**%.3f**", pe.P90), ""})
	b.WriteString("Per operator: samples, median and p90 of the error |measured/predicted − 1|, and the median of measured/predicted (> 1: slower than the roofline bound).\n\n")
	if err := MarkdownTable(b, []string{"phase", "operator", "n", "median error", "p90 error", "median measured/predicted"}, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

// regimeCell is one operator × batch entry of the regime map: sums over the
// cells without ablation of one machine at that batch (all workloads and
// placements).
type regimeCell struct {
	measuredS    float64 // seconds
	predMeasured float64 // measured seconds (less interrupted calls' excess: SweepOp.Compared) of the samples with a prediction
	predictedS   float64
	flops, bytes float64
	phaseTotalS  float64 // all operators of the phase at this batch
	regime       roofline.Regime
}

func (c *regimeCell) ratio() float64 {
	if c.predictedS > 0 {
		return c.predMeasured / c.predictedS
	}
	return math.NaN()
}

func (c *regimeCell) intensity() float64 {
	if c.flops > 0 && c.bytes > 0 {
		return c.flops / c.bytes
	}
	return math.NaN()
}

func (c *regimeCell) share() float64 { return c.measuredS / c.phaseTotalS }

// regimeMap is one machine's operator × batch grid.
type regimeMap struct {
	src      string
	rows     [][2]string // phase, op
	batches  []int
	cells    map[[2]string]map[int]*regimeCell
	machine  bool   // regimes were classified
	why      string // why not, when not
	hasPred  bool
	hasInten bool
	idx      []int // cells used
}

func (d *sweepData) regimeMaps() []*regimeMap {
	var out []*regimeMap
	for _, src := range d.srcs {
		rm := &regimeMap{src: src, cells: map[[2]string]map[int]*regimeCell{}}
		totals := map[string]map[int]float64{}
		var machine *roofline.Machine
		for _, i := range d.base {
			if d.src[i] != src {
				continue
			}
			c := &d.cells[i]
			if machine == nil && d.o.Machines != nil {
				machine = d.o.Machines[SweepMachine(c)]
			}
			used := false
			for _, op := range c.Ops {
				if !(op.MeasuredS > 0) || !finite(op.MeasuredS) {
					continue
				}
				used = true
				k := [2]string{op.Phase, op.Op}
				if rm.cells[k] == nil {
					rm.cells[k] = map[int]*regimeCell{}
					rm.rows = append(rm.rows, k)
				}
				rc := rm.cells[k][c.Batch]
				if rc == nil {
					rc = &regimeCell{}
					rm.cells[k][c.Batch] = rc
				}
				rc.measuredS += op.MeasuredS
				if op.PredictedS != nil && *op.PredictedS > 0 && finite(*op.PredictedS) {
					rc.predMeasured += op.Compared()
					rc.predictedS += *op.PredictedS
					rm.hasPred = true
				}
				if op.FLOPs > 0 && op.Bytes > 0 && finite(op.FLOPs) && finite(op.Bytes) {
					rc.flops += op.FLOPs
					rc.bytes += op.Bytes
					rm.hasInten = true
				}
				if totals[op.Phase] == nil {
					totals[op.Phase] = map[int]float64{}
				}
				totals[op.Phase][c.Batch] += op.MeasuredS
				if !slices.Contains(rm.batches, c.Batch) {
					rm.batches = append(rm.batches, c.Batch)
				}
			}
			if used {
				rm.idx = append(rm.idx, i)
			}
		}
		if len(rm.rows) == 0 {
			continue
		}
		slices.Sort(rm.batches)
		slices.SortStableFunc(rm.rows, func(a, b [2]string) int { return phaseRank(a[0]) - phaseRank(b[0]) })
		classify := false
		switch {
		case machine == nil:
			rm.why = "no machine profile"
		case !slices.ContainsFunc(machine.Targets, func(t roofline.Target) bool { return t.Kind == roofline.KindCores }):
			rm.why = "the machine has no cores target"
		case !machine.HasCeilings(d.o.Precision):
			rm.why = "the machine profile has no " + d.o.Precision + " compute ceiling"
		case !rm.hasInten:
			rm.why = "no operator carries FLOPs and bytes"
		default:
			classify = true
		}
		for k, byBatch := range rm.cells {
			for bt, rc := range byBatch {
				rc.phaseTotalS = totals[k[0]][bt]
				switch {
				case !classify:
				case isNonlinearOp(k[1]):
					rc.regime = roofline.NonLinear
				case !math.IsNaN(rc.intensity()):
					rc.regime = roofline.Classify(machine, d.o.Precision, rc.intensity())
				}
				if rc.regime != "" {
					rm.machine = true
				}
			}
		}
		out = append(out, rm)
	}
	return out
}

var regimeShort = map[roofline.Regime]string{
	roofline.MemoryBound: "MB", roofline.RidgeCrossing: "RC", roofline.ComputeBound: "CB",
	roofline.NonLinear: "NL", roofline.NoCeiling: "NC", roofline.UpConvertBound: "UC",
}

// regimeSection: operator × batch map per machine.
func (r *sweepReport) regimeSection(b *bytes.Buffer) error {
	d := r.d
	b.WriteString("## Regime map (operator × batch)\n\n")
	maps := d.regimeMaps()
	if len(maps) == 0 {
		r.note(b, "regime.png: no cell has measured operator times")
		return nil
	}
	for _, rm := range maps {
		if rm.machine {
			continue
		}
		msg := fmt.Sprintf("regime map of %s: %s: regimes not classified", rm.src, rm.why)
		switch {
		case rm.hasPred:
			msg += ", measured/predicted shown instead"
		case rm.hasInten:
			msg += ", arithmetic intensity shown instead"
		default:
			msg += ", share of time shown instead"
		}
		r.s.Notes = append(r.s.Notes, msg)
		fmt.Fprintf(b, "> %s.\n\n", msg)
	}
	if err := regimePNG(d, maps, r.dir, "regime.png"); err != nil {
		return err
	}
	r.figure(b, "regime.png", "Regime map, operator × batch", regimeCaption(maps, d.o.Precision))
	for _, rm := range maps {
		if len(maps) > 1 {
			fmt.Fprintf(b, "### %s\n\n", rm.src)
		}
		header := []string{"phase", "operator"}
		for _, bt := range rm.batches {
			header = append(header, fmt.Sprintf("B=%d", bt))
		}
		var rows [][]string
		for _, k := range rm.rows {
			row := []string{k[0], k[1]}
			for _, bt := range rm.batches {
				rc := rm.cells[k][bt]
				if rc == nil {
					row = append(row, "—")
					continue
				}
				row = append(row, rc.text(" · ", true))
			}
			rows = append(rows, row)
		}
		b.WriteString("Each entry: measured/predicted time (×), arithmetic intensity I (FLOP/byte), regime (MB memory-bound, UC up-convert-bound, RC ridge-crossing, CB compute-bound, NL non-linear, NC no ceiling), share of the phase's measured operator time (%); sums over workloads and placements at that batch.\n\n")
		if err := MarkdownTable(b, header, rows); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	return nil
}

func regimeCaption(maps []*regimeMap, prec string) string {
	s := "Operators (rows, per phase) × batch size (columns), summed over workloads and placements, one panel per machine. Colour: "
	var keys []string
	for _, rm := range maps {
		k := rm.colourKey(prec)
		if len(maps) > 1 {
			k = rm.src + ": " + k
		}
		keys = append(keys, k)
	}
	return s + strings.Join(keys, "; ") + ". Text: measured/predicted (×), intensity I (FLOP/byte) or regime (MB memory-bound, UC up-convert-bound, RC ridge-crossing, CB compute-bound, NL non-linear, NC no ceiling), share of the phase's measured operator time (%)."
}

// colourKey says what the colour of the map's cells shows.
func (rm *regimeMap) colourKey(prec string) string {
	switch {
	case rm.machine:
		return "roofline regime of the arithmetic intensity vs the machine's " + prec + " ridge points"
	case rm.hasPred:
		return "log2(measured/predicted), blue faster, red slower than predicted (grey: no prediction)"
	case rm.hasInten:
		return "log10 arithmetic intensity (FLOP/byte), blue low, red high"
	}
	return "share of the phase's measured operator time, blue low, red high"
}

// text renders an entry: ratio, intensity, regime, share.
func (c *regimeCell) text(sep string, long bool) string {
	var parts []string
	if r := c.ratio(); !math.IsNaN(r) {
		parts = append(parts, fmt.Sprintf("%.2f×", r))
	}
	if in := c.intensity(); !math.IsNaN(in) {
		parts = append(parts, "I "+fmtSig(in))
	}
	if c.regime != "" {
		if long {
			parts = append(parts, string(c.regime))
		} else {
			parts = append(parts, regimeShort[c.regime])
		}
	}
	parts = append(parts, strconv.FormatFloat(100*c.share(), 'f', 0, 64)+"%")
	return strings.Join(parts, sep)
}
