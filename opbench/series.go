package opbench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/results"
)

// Series is one line of a sweep's plot: a placement's medians with their
// min-max spread, or its roofline prediction (Predicted: drawn as a line
// without markers, no spread). Group is the placement, which keeps a
// measured series and its prediction the same colour.
type Series struct {
	Label     string
	Group     string
	Predicted bool
	X, Y      []float64
	Lo, Hi    []float64
}

// Series returns the plot lines of one sweep axis ("context": prefill
// vs context; "batch": decode vs batch; "width": decode vs token width),
// GFLOP/s, per placement in the order measured and, for prefill, per
// schedule (pipelined, then serial: SMEPilot §4.2 and its ablation side
// by side), each followed by its prediction where there is one.
func (r *AttentionReport) Series(axis string) []Series {
	var out []Series
	scheds := []string{""}
	if axis == "context" {
		scheds = []string{SchedulePipelined, ScheduleSerial}
	}
	for _, pl := range r.placements() {
		for _, sc := range scheds {
			out = append(out, r.series(axis, pl, sc)...)
		}
	}
	return out
}

// series is the measured and predicted lines of one placement and
// schedule ("": any) on an axis; none where nothing was measured.
func (r *AttentionReport) series(axis, pl, sched string) []Series {
	var out []Series
	{
		name := pl
		if sched != "" {
			name = pl + " " + sched
		}
		meas := Series{Label: name + " (" + r.backendsOf(pl) + ")", Group: name}
		pred := Series{Label: name + " roofline", Group: name, Predicted: true}
		for _, p := range r.Points {
			if p.Axis != axis || p.Placement != pl || sched != "" && p.Schedule != sched {
				continue
			}
			x := float64(p.Context)
			switch axis {
			case "batch":
				x = float64(p.Batch)
			case "width":
				x = float64(p.Width)
			}
			meas.X, meas.Y, meas.Lo, meas.Hi = append(meas.X, x), append(meas.Y, p.GFLOPS.Median), append(meas.Lo, p.GFLOPS.Min), append(meas.Hi, p.GFLOPS.Max)
			if p.PredictedGFLOPS > 0 {
				pred.X, pred.Y = append(pred.X, x), append(pred.Y, p.PredictedGFLOPS)
			}
		}
		if len(meas.X) > 0 {
			out = append(out, meas)
		}
		if len(pred.X) > 0 {
			out = append(out, pred)
		}
	}
	return out
}

func (r *AttentionReport) placements() []string {
	var out []string
	for _, p := range r.Points {
		if !slices.Contains(out, p.Placement) {
			out = append(out, p.Placement)
		}
	}
	return out
}

func (r *AttentionReport) backendsOf(pl string) string {
	for _, p := range r.Points {
		if p.Placement == pl {
			return p.Backends
		}
	}
	return ""
}

// pct prints a fraction as a percentage with the target's verdict.
func pct(f, target float64) string {
	if f <= 0 {
		return "—"
	}
	s := fmt.Sprintf("%.0f%%", 100*f)
	if target > 0 {
		if f >= target {
			s += " ≥ " + fmt.Sprintf("%.0f%%", 100*target)
		} else {
			s += " < " + fmt.Sprintf("%.0f%%", 100*target)
		}
	}
	return s
}

func ms(s float64) string {
	if s <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", s*1e3)
}

func f2(x float64) string {
	if x <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}

// Table is every point as a row, with the footnotes its fraction and
// prediction columns refer to ([n]).
func (r *AttentionReport) Table() (header []string, rows [][]string, notes []string) {
	ref := footnotes(&notes)
	header = []string{"phase", "placement", "schedule", "kernels", "backends", "threads", "context", "batch", "width", "ms median", "min", "max", "cv", "GFLOP/s", "KV GB/s", "predicted ms", "pred. matrix stage ms", "pred. vector stage ms", "measured/predicted", "fraction", "max rel. error", "noise"}
	for _, p := range r.Points {
		ratio := "— " + ref(p.PredictionNote)
		if p.PredictedSeconds > 0 {
			ratio = strings.TrimSpace(fmt.Sprintf("%.2f %s", p.Seconds.Median/p.PredictedSeconds, ref(p.PredictionNote)))
		}
		phase := p.Phase
		if p.KVCold {
			phase += " (KV cold)"
		}
		rows = append(rows, []string{phase, p.Placement, p.Schedule, p.Kernels, p.Backends, strconv.Itoa(p.Threads), strconv.Itoa(p.Context), strconv.Itoa(p.Batch), strconv.Itoa(p.Width),
			ms(p.Seconds.Median), ms(p.Seconds.Min), ms(p.Seconds.Max), fmt.Sprintf("%.1f%%", 100*p.Seconds.CV),
			f2(p.GFLOPS.Median), f2(p.KVGBps), ms(p.PredictedSeconds), ms(p.PredictedMatrixSeconds), ms(p.PredictedVectorSeconds), ratio, pct(p.Fraction, p.Target) + " " + ref(p.FractionOf),
			fmt.Sprintf("%.1e", p.MaxRelError), noiseCell(p.Noise, ref)})
	}
	return header, rows, notes
}

// noiseCell is a figure's noise column: "ok", "NOISY" with its reason as
// a note (ref), or "—" where it was not recorded.
func noiseCell(n *results.Noise, ref func(string) string) string {
	switch {
	case n == nil:
		return "—"
	case n.Noisy:
		return "NOISY " + ref(n.Why)
	}
	if n.RoundTripNs > 0 {
		return fmt.Sprintf("ok (round trip %.0f ns)", n.RoundTripNs)
	}
	return "ok"
}

// footnotes returns a function numbering distinct notes into *notes.
func footnotes(notes *[]string) func(string) string {
	return func(s string) string {
		if s == "" {
			return ""
		}
		for i, n := range *notes {
			if n == s {
				return fmt.Sprintf("[%d]", i+1)
			}
		}
		*notes = append(*notes, s)
		return fmt.Sprintf("[%d]", len(*notes))
	}
}

// Series returns the plot lines of one FFN shape (op) and phase
// ("prefill": x = length M; "decode": x = batch M), GFLOP/s, per
// placement, each followed by its prediction where there is one.
func (r *GEMMSweepReport) Series(op, phase string) []Series {
	var pls []string
	for _, p := range r.Points {
		if !slices.Contains(pls, p.Placement) {
			pls = append(pls, p.Placement)
		}
	}
	var out []Series
	for _, pl := range pls {
		meas := Series{Group: pl}
		pred := Series{Label: pl + " roofline", Group: pl, Predicted: true}
		for _, p := range r.Points {
			if p.Op != op || p.Phase != phase || p.Placement != pl {
				continue
			}
			meas.Label = pl + " (" + p.Backends + ")"
			x := float64(p.M)
			meas.X, meas.Y, meas.Lo, meas.Hi = append(meas.X, x), append(meas.Y, p.GFLOPS.Median), append(meas.Lo, p.GFLOPS.Min), append(meas.Hi, p.GFLOPS.Max)
			if p.PredictedGFLOPS > 0 {
				pred.X, pred.Y = append(pred.X, x), append(pred.Y, p.PredictedGFLOPS)
			}
		}
		if len(meas.X) > 0 {
			out = append(out, meas)
		}
		if len(pred.X) > 0 {
			out = append(out, pred)
		}
	}
	return out
}

// Ops lists the report's FFN shapes in the order measured.
func (r *GEMMSweepReport) Ops() []string {
	var out []string
	for _, p := range r.Points {
		if !slices.Contains(out, p.Op) {
			out = append(out, p.Op)
		}
	}
	return out
}

// Table is every point as a row, with its footnotes.
func (r *GEMMSweepReport) Table() (header []string, rows [][]string, notes []string) {
	ref := footnotes(&notes)
	header = []string{"op", "phase", "M", "N", "K", "placement", "backends", "dtype", "threads", "GFLOP/s median", "min", "max", "cv", "predicted GFLOP/s", "measured/predicted time", "fraction", "note", "noise"}
	for _, p := range r.Points {
		ratio := "— " + ref(p.PredictionNote)
		if p.PredictedSeconds > 0 && p.Seconds > 0 {
			ratio = strings.TrimSpace(fmt.Sprintf("%.2f %s", p.Seconds/p.PredictedSeconds, ref(p.PredictionNote)))
		}
		rows = append(rows, []string{p.Op, p.Phase, strconv.Itoa(p.M), strconv.Itoa(p.N), strconv.Itoa(p.K), p.Placement, p.Backends, p.DType, strconv.Itoa(p.Threads),
			f2(p.GFLOPS.Median), f2(p.GFLOPS.Min), f2(p.GFLOPS.Max), fmt.Sprintf("%.1f%%", 100*p.GFLOPS.CV),
			f2(p.PredictedGFLOPS), ratio, pct(p.Fraction, 0) + " " + ref(p.FractionOf), p.Note, noiseCell(p.Noise, ref)})
	}
	return header, rows, notes
}

// PipelineLines compares, per placement and prefill context measured
// both ways, the pipelined schedule with the serial one (SMEPilot §4.2
// and its ablation, Fig. 12): measured and predicted times and the
// speedup of the pipeline (serial time / pipelined time).
func (r *AttentionReport) PipelineLines() []string {
	type key struct {
		pl  string
		ctx int
	}
	byKey := map[key][2]*AttentionPoint{}
	var order []key
	for i := range r.Points {
		p := &r.Points[i]
		if p.Phase != "prefill" {
			continue
		}
		k := key{p.Placement, p.Context}
		v, seen := byKey[k]
		if !seen {
			order = append(order, k)
		}
		switch p.Schedule {
		case SchedulePipelined:
			v[0] = p
		case ScheduleSerial:
			v[1] = p
		}
		byKey[k] = v
	}
	var out []string
	for _, k := range order {
		v := byKey[k]
		pp, sp := v[0], v[1]
		if pp == nil || sp == nil {
			continue
		}
		l := fmt.Sprintf("prefill %s context %d: pipelined %s ms, serial %s ms measured (pipeline speedup %.2f×)", k.pl, k.ctx, ms(pp.Seconds.Median), ms(sp.Seconds.Median), sp.Seconds.Median/pp.Seconds.Median)
		if pp.PredictedSeconds > 0 && sp.PredictedSeconds > 0 {
			l += fmt.Sprintf("; predicted pipelined %s ms (max of matrix %s, vector %s), serial %s ms (their sum on every worker): %.2f×",
				ms(pp.PredictedSeconds), ms(pp.PredictedMatrixSeconds), ms(pp.PredictedVectorSeconds), ms(sp.PredictedSeconds), sp.PredictedSeconds/pp.PredictedSeconds)
		}
		out = append(out, l)
	}
	return out
}
