package reports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// SweepOptions tune Sweep. The zero value is valid.
type SweepOptions struct {
	// Machines maps a machine name (SweepMachine of a cell) to its roofline
	// model. With one, an operator's arithmetic intensity (SweepOp FLOPs /
	// Bytes, FLOP/byte) is classified against the machine's ridge points
	// (roofline.Classify) in the regime map; without, the map shows the
	// intensity only.
	Machines map[string]*roofline.Machine
	// Precision selects the compute ceilings the ridges use: "fp32"
	// (default, the engine's precision), "bf16", ...
	Precision string
	// Title heads report.md (default "bench sweep report").
	Title string
	// Sources are the files the cells were read from, listed in report.md.
	Sources []string
	// Baseline is a peer's figures (llama-bench, ParseLlamaBench) drawn
	// beside the placements; nil for none.
	Baseline *Baseline
	// Figures are the plots' formats and width (zero value: PNG at each
	// plot's native size); report.md embeds the primary format.
	Figures FigureOptions
	// Command is the command line that regenerates the report (e.g.
	// "bench report results/sweep-x --out report"), given in every
	// figure's caption; "" for none.
	Command string
}

// SweepSummary is what Sweep found and wrote.
type SweepSummary struct {
	Cells    int      // cells rendered
	Machines []string // machine labels, as in the plots and tables
	Dates    []string // distinct cell dates, YYYY-MM-DD, ascending
	Plots    []Plot   // figures written, in report order (base names in the output directory, primary format)
	// Notes say what was skipped and why (missing data), one line each.
	Notes []string
	// Speedups are, per cell without ablation, the end-to-end speedup of
	// its placement over the cores placement of the same machine, model,
	// workload, batch and thread count (mean latency of cores / mean
	// latency of the placement).
	Speedups []Speedup
	// PredError is the roofline prediction error over every operator
	// with a prediction; nil when no cell carries predictions.
	PredError *PredictionError
}

// Speedup is one bar of the latency figure (SMEPilot Fig. 9 style).
type Speedup struct {
	Machine, Model, Workload string
	Batch, Threads           int
	Placement                string
	LatencyS                 float64 // mean end-to-end latency of the placement, seconds
	CoresLatencyS            float64 // same for the cores placement, seconds
	Speedup                  float64 // CoresLatencyS / LatencyS
}

// PredictionError summarizes e = |measured/predicted − 1| (a fraction: 0.25
// means 25 % off) over operators: one sample per cell, phase and operator
// with both times > 0, cells without ablation only. Quantiles are empirical
// (gonum stat.Empirical: the smallest sample with CDF ≥ p).
type PredictionError struct {
	N      int
	Median float64
	P90    float64
	// PerOp is the same per phase and operator.
	PerOp []OpPredictionError
}

// OpPredictionError is the prediction error of one operator in one phase.
type OpPredictionError struct {
	Phase, Op   string
	N           int
	Median, P90 float64 // of |measured/predicted − 1|
	MedianRatio float64 // median of measured/predicted (> 1: slower than the roofline)
}

// Sweep renders a sweep's cells into outDir (created if needed): report.md
// with the tables and, where the data allows, latency.png (mean end-to-end
// latency per placement, one panel per workload, bars grouped by batch,
// speedup vs cores on each bar), speedup.png (the speedup over cores per
// placement with error bars: SMEPilot Fig. 9), throughput.png (output
// tokens/s vs batch), breakdown_prefill.png and breakdown_decode.png
// (per-operator-group share of measured time), pred_scatter.png and
// pred_error.png (measured vs roofline-predicted operator seconds and the
// CDF of |measured/predicted − 1|), regime.png (operator × batch) and,
// with cells from several machines, machines.png. A plot whose data is
// absent is skipped with a note in report.md and SweepSummary.Notes; only
// an empty cell list or a write failure is an error.
func Sweep(cells []results.SweepCell, outDir string, o SweepOptions) (*SweepSummary, error) {
	return SweepContext(context.Background(), cells, outDir, o)
}

// SweepContext is Sweep, stopped with ctx's error when ctx is done (checked
// before each section). The files are rendered into a
// temporary directory inside outDir and moved into outDir (report.md
// last) only once all are written, so a report that fails or is stopped
// leaves outDir as it was: no new or partial file, and no outDir if this
// call created it.
func SweepContext(ctx context.Context, cells []results.SweepCell, outDir string, o SweepOptions) (_ *SweepSummary, err error) {
	if len(cells) == 0 {
		return nil, errors.New("report: no cells to render")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Precision == "" {
		o.Precision = "fp32"
	}
	if o.Title == "" {
		o.Title = "bench sweep report"
	}
	undo, err := results.MkdirAll(outDir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	stage, err := os.MkdirTemp(outDir, ".report-tmp-*")
	if err != nil {
		undo()
		return nil, fmt.Errorf("report: %w", err)
	}
	defer func() {
		os.RemoveAll(stage)
		if err != nil {
			undo()
		}
	}()
	d := newSweepData(cells, o)
	d.ctx = ctx
	s := &SweepSummary{Cells: len(cells), Machines: d.srcs, Dates: d.dates, Notes: d.notes}
	r := &sweepReport{d: d, s: s, dir: stage}
	var body bytes.Buffer
	for _, sec := range []func(*bytes.Buffer) error{
		r.latencySection, r.baselineSection, r.cellsSection, r.throughputSection, r.servingSection, r.breakdownSection,
		r.predictionSection, r.regimeSection, r.ablationSection, r.machinesSection, r.cellNotesSection,
	} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := sec(&body); err != nil {
			return nil, err
		}
	}
	var md bytes.Buffer
	fmt.Fprintf(&md, "# %s\n\n", o.Title)
	fmt.Fprintf(&md, "%d cell(s) (schema `%s`) from %s; %s.\n\n", len(cells), results.SweepSchema, plural("machine", d.srcs), plural("date", d.dateRange()))
	fmt.Fprintf(&md, "Models: %s. Workloads: %s. Batches: %s. Placements: %s.", strings.Join(d.models, ", "),
		strings.Join(d.workloads, ", "), strings.ReplaceAll(intsJoin(d.batches), " ", ", "), strings.Join(d.placements, ", "))
	if len(d.ablations) > 0 {
		fmt.Fprintf(&md, " Ablations: %s.", strings.Join(d.ablations, ", "))
	}
	if t := d.targetsCaption(d.all()); t != "" {
		fmt.Fprintf(&md, " %s.", t)
	}
	md.WriteString("\n\n")
	if len(o.Sources) > 0 {
		md.WriteString("Sources: ")
		for i, src := range o.Sources {
			if i > 0 {
				md.WriteString(", ")
			}
			fmt.Fprintf(&md, "`%s`", src)
		}
		md.WriteString(".\n\n")
	}
	md.WriteString("Times are seconds (s) or milliseconds (ms) as the column says; rates per second. " +
		"Latency is end to end, from a request's arrival to its last token.\n\n")
	if len(s.Notes) > 0 {
		md.WriteString("## Notes\n\n")
		for _, n := range s.Notes {
			fmt.Fprintf(&md, "- %s\n", n)
		}
		md.WriteString("\n")
	}
	md.Write(body.Bytes())
	if err := results.WriteFileAtomic(filepath.Join(stage, "report.md"), md.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := moveFiles(stage, outDir, "report.md"); err != nil {
		return nil, err
	}
	return s, nil
}

// moveFiles renames every file of dir src into dst, last the one named
// last (renames of one file system: no copy, nothing to interrupt).
func moveFiles(src, dst, last string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	slices.SortStableFunc(ents, func(a, b os.DirEntry) int {
		switch {
		case a.Name() == last:
			return 1
		case b.Name() == last:
			return -1
		}
		return 0
	})
	for _, e := range ents {
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

func plural(what string, vs []string) string {
	if len(vs) == 1 {
		return what + " " + vs[0]
	}
	return what + "s " + strings.Join(vs, ", ")
}

// sweepReport writes the sections of report.md and the PNGs.
type sweepReport struct {
	d   *sweepData
	s   *SweepSummary
	dir string
	fig int
}

// note records a skipped plot or table in the summary and in the section.
func (r *sweepReport) note(b *bytes.Buffer, msg string) {
	r.s.Notes = append(r.s.Notes, msg)
	fmt.Fprintf(b, "> Skipped: %s\n\n", msg)
}

// figure embeds a written figure (file's extension replaced by the primary
// format's) with a numbered caption (units, machines, dates).
func (r *sweepReport) figure(b *bytes.Buffer, file, title, caption string) {
	file = withExt(file, r.d.o.Figures.Primary())
	r.fig++
	r.s.Plots = append(r.s.Plots, Plot{Title: title, File: file})
	fmt.Fprintf(b, "![%s](%s)\n\n*Figure %d. %s %s.", title, file, r.fig, caption, r.d.caption())
	if t := r.d.targetsCaption(r.d.all()); t != "" {
		fmt.Fprintf(b, " %s.", t)
	}
	b.WriteString("*")
	if c := r.d.o.Command; c != "" {
		fmt.Fprintf(b, " Regenerate: `%s`.", c)
	}
	b.WriteString("\n\n")
}

// cellNotesSection lists the distinct notes the cells carry.
func (r *sweepReport) cellNotesSection(b *bytes.Buffer) error {
	var notes []string
	for i := range r.d.cells {
		for _, n := range r.d.cells[i].Notes {
			addUnique(&notes, n)
		}
	}
	if len(notes) == 0 {
		return nil
	}
	b.WriteString("## Notes from the cells\n\n")
	for _, n := range notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	b.WriteString("\n")
	return nil
}
