package reports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

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

// SweepMachine is the machine label of a cell: its profile's machine name,
// else its host.
func SweepMachine(c *results.SweepCell) string {
	if c.Machine != "" {
		return c.Machine
	}
	return c.Host
}

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

// cellCoord is a cell's place in the grid, with its (disambiguated) machine.
type cellCoord struct {
	src, model, workload string
	batch, threads       int
	placement, ablation  string
}

// panelKey is one panel of the per-workload figures.
type panelKey struct{ src, model, workload string }

// sweepData is the cells with the labels and orders every section shares.
type sweepData struct {
	ctx   context.Context // stops the figures' drawing and encoding
	o     SweepOptions
	cells []results.SweepCell
	src   []string // per cell: machine label, with host and date added where keys collide
	model []string // per cell: model and weight format (ModelLabel)
	coord []cellCoord
	base  []int // cells without ablation
	at    map[cellCoord]int

	srcs, models, workloads, placements, ablations, dates []string
	batches                                               []int
	threadsVary                                           bool
	notes                                                 []string
}

func newSweepData(cells []results.SweepCell, o SweepOptions) *sweepData {
	d := &sweepData{ctx: context.Background(), o: o, cells: cells, at: map[cellCoord]int{}}
	d.src = sweepSources(cells)
	var threads []int
	var ptrs []*results.SweepCell
	for i := range cells {
		ptrs = append(ptrs, &cells[i])
	}
	arrivalNoted := false
	for i, c := range ptrs {
		d.model = append(d.model, ModelLabel(c))
		k := cellCoord{d.src[i], d.model[i], c.Workload, c.Batch, c.Threads, c.Placement, c.Ablation}
		d.coord = append(d.coord, k)
		addUnique(&d.srcs, d.src[i])
		addUnique(&d.models, d.model[i])
		addUnique(&d.workloads, c.Workload)
		addUnique(&d.placements, c.Placement)
		if c.Ablation != "" {
			addUnique(&d.ablations, c.Ablation)
		}
		addUnique(&d.dates, cellDate(c.Date))
		if !slices.Contains(d.batches, c.Batch) {
			d.batches = append(d.batches, c.Batch)
		}
		if !slices.Contains(threads, c.Threads) {
			threads = append(threads, c.Threads)
		}
		if j, dup := d.at[k]; dup {
			if cells[j].Config.Arrival != c.Config.Arrival {
				// A rate sweep: the serving section compares the arrival
				// processes; the other sections show the first.
				if !arrivalNoted {
					arrivalNoted = true
					d.notes = append(d.notes, "cells differ in arrival process (a rate sweep): the serving section compares them; the other sections show each configuration's first cell ("+cells[j].Config.Arrival+")")
				}
				continue
			}
			d.notes = append(d.notes, fmt.Sprintf("cells %q and %q have the same machine, model, workload, batch, threads, placement and ablation; the plots show the first", cells[j].Key, c.Key))
			continue
		}
		d.at[k] = i
		if c.Ablation == "" {
			d.base = append(d.base, i)
		}
	}
	slices.Sort(d.srcs)
	slices.Sort(d.models)
	slices.Sort(d.workloads)
	slices.SortFunc(d.placements, comparePlacement)
	slices.Sort(d.ablations)
	slices.Sort(d.dates)
	slices.Sort(d.batches)
	d.threadsVary = len(threads) > 1
	return d
}

func addUnique(s *[]string, v string) {
	if !slices.Contains(*s, v) {
		*s = append(*s, v)
	}
}

// sweepSources labels each cell with its machine; where two cells share a
// key and a label (the same grid cell measured twice), the host and then
// the date are added so both are shown apart.
func sweepSources(cells []results.SweepCell) []string {
	levels := []func(c *results.SweepCell) string{
		func(c *results.SweepCell) string { return SweepMachine(c) },
		func(c *results.SweepCell) string {
			if c.Machine != "" && c.Host != "" && c.Host != c.Machine {
				return c.Machine + "@" + c.Host
			}
			return SweepMachine(c)
		},
		func(c *results.SweepCell) string {
			if c.Machine != "" && c.Host != "" && c.Host != c.Machine {
				return c.Machine + "@" + c.Host + " " + c.Date
			}
			return SweepMachine(c) + " " + c.Date
		},
	}
	out := make([]string, len(cells))
	for li, lbl := range levels {
		seen := map[[2]string]bool{}
		unique := true
		for i := range cells {
			out[i] = lbl(&cells[i])
			k := [2]string{cells[i].Key, out[i]}
			if seen[k] {
				unique = false
			}
			seen[k] = true
		}
		if unique || li == len(levels)-1 {
			break
		}
	}
	return out
}

// cellDate is the YYYY-MM-DD part of an RFC 3339 date ("?" when empty).
func cellDate(s string) string {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.Format("2006-01-02")
	}
	if len(s) >= 10 {
		return s[:10]
	}
	if s == "" {
		return "?"
	}
	return s
}

// keyHeader is the leading columns that identify a cell in a table: the
// machine and model when several, workload, batch, and threads when they
// vary.
func (d *sweepData) keyHeader() []string {
	var header []string
	if len(d.srcs) > 1 {
		header = append(header, "machine")
	}
	header = append(header, "model, weights")
	header = append(header, "workload", "batch")
	if d.threadsVary {
		header = append(header, "threads")
	}
	return header
}

// keyRow is cell i's values for the keyHeader columns.
func (d *sweepData) keyRow(i int) []string {
	c := &d.cells[i]
	var row []string
	if len(d.srcs) > 1 {
		row = append(row, d.src[i])
	}
	row = append(row, d.model[i])
	row = append(row, c.Workload, strconv.Itoa(c.Batch))
	if d.threadsVary {
		row = append(row, strconv.Itoa(c.Threads))
	}
	return row
}

func (d *sweepData) dateRange() []string {
	if len(d.dates) <= 2 {
		return d.dates
	}
	return []string{d.dates[0] + " to " + d.dates[len(d.dates)-1]}
}

// caption is the second title line of every plot: machines and dates.
func (d *sweepData) caption() string {
	return plural("machine", d.srcs) + "; " + plural("date", d.dateRange())
}

// cellsCaption is the caption for a subset of the cells.
func (d *sweepData) cellsCaption(idx []int) string {
	var srcs, dates []string
	for _, i := range idx {
		addUnique(&srcs, d.src[i])
		addUnique(&dates, cellDate(d.cells[i].Date))
	}
	slices.Sort(srcs)
	slices.Sort(dates)
	if len(dates) > 2 {
		dates = []string{dates[0] + " to " + dates[len(dates)-1]}
	}
	return plural("machine", srcs) + "; " + plural("date", dates)
}

// fullCaption is cellsCaption and, on the next lines, produced: the
// caption of a single-plot figure.
func (d *sweepData) fullCaption(idx []int) string {
	return d.cellsCaption(idx) + "\n" + d.produced(idx)
}

// produced says what produced the cells idx, for a figure's caption
// line: models with the layers instantiated, the weight precisions that
// ran (the cells' targets; else the weight format), the activations
// (fp32, or int8 per 32-element block where kernels/quant ran), threads,
// and on a second line the backends that ran and the requests per cell
// ("qwen3-0.6b (1 of 28 layers), weights bf16, fp32, activations fp32;
// 1 thread" / "backends avx512-bf16, avx512-fp32; 3 requests per cell").
func (d *sweepData) produced(idx []int) string {
	var models, weights, acts, backends, threads, reqs []string
	for _, i := range idx {
		c := &d.cells[i]
		m := fmt.Sprintf("%s (%d of %d layers)", c.Model, c.Layers, c.ModelLayers)
		if c.ModelLayers == 0 || c.ModelLayers == c.Layers {
			m = fmt.Sprintf("%s (%d layers)", c.Model, c.Layers)
		}
		addUnique(&models, m)
		ran := false
		for _, t := range c.Targets {
			if t.Calls > 0 || len(c.Targets) == 1 {
				ran = true
				addUnique(&backends, t.Backend)
				if t.Precision != "" {
					addUnique(&weights, t.Precision)
				}
				if t.Library == "kernels/quant" {
					addUnique(&acts, "int8 per 32-element block")
				} else {
					addUnique(&acts, "fp32")
				}
			}
		}
		if !ran {
			for _, b := range strings.Split(c.Backends, "+") {
				if b != "" {
					addUnique(&backends, b)
				}
			}
			w := strings.TrimPrefix(d.model[i], c.Model+" ")
			addUnique(&weights, w)
			switch {
			case w == "fp32" || w == "bf16" || w == "fp16":
				addUnique(&acts, "fp32")
			case strings.HasPrefix(w, "q") || strings.HasPrefix(w, "int") || strings.HasPrefix(w, "tq"):
				addUnique(&acts, "int8 per 32-element block")
			}
		}
		addUnique(&threads, strconv.Itoa(c.Threads))
		addUnique(&reqs, strconv.Itoa(c.Config.Requests))
	}
	slices.Sort(models)
	slices.Sort(weights)
	slices.Sort(acts)
	slices.Sort(backends)
	slices.SortFunc(threads, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	slices.SortFunc(reqs, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	th := strings.Join(threads, ", ") + " threads"
	if len(threads) == 1 && threads[0] == "1" {
		th = "1 thread"
	}
	s := strings.Join(models, ", ") + ", weights " + strings.Join(weights, ", ")
	if len(acts) > 0 {
		s += ", activations " + strings.Join(acts, ", ")
	}
	s += "; " + th + "\n"
	if len(backends) > 0 {
		s += "backends " + strings.Join(backends, ", ") + "; "
	}
	return s + strings.Join(reqs, ", ") + " requests per cell"
}

var placementRank = map[string]int{"cores": 0, "matrix": 1, "mixed": 2, "auto": 3}

func comparePlacement(a, b string) int {
	ra, oka := placementRank[a]
	rb, okb := placementRank[b]
	switch {
	case oka && okb:
		return ra - rb
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// panels are the (machine, model, workload) combinations of the cells
// without ablation, in label order.
func (d *sweepData) panels() []panelKey {
	var out []panelKey
	for _, i := range d.base {
		k := panelKey{d.src[i], d.model[i], d.cells[i].Workload}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b panelKey) int {
		return cmpStrings(a.workload, b.workload, a.model, b.model, a.src, b.src)
	})
	return out
}

func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}

// ModelLabel names a cell's model with its linear weights' format
// ("qwen3-0.6b q8_0"): the cell's weight_dtype; for "" (as loaded) fp32
// when the weights are synthetic (the engine's default), else "as stored"
// (the file's own formats).
func ModelLabel(c *results.SweepCell) string {
	f := c.WeightDType
	if f == "" {
		f = "fp32"
		if c.Weights != "" && c.Weights != "synthetic" {
			f = "as stored"
		}
	}
	return c.Model + " " + f
}

// panelLabel names a panel by its workload, its model and weight format,
// and its machine when several.
func (d *sweepData) panelLabel(k panelKey, sep string) string {
	parts := []string{k.workload, k.model}
	if len(d.srcs) > 1 {
		parts = append(parts, k.src)
	}
	return strings.Join(parts, sep)
}

// batchGroup is one group of bars in a panel: a batch size and, when the
// sweep varies threads, a thread count.
type batchGroup struct{ batch, threads int }

func (d *sweepData) groupLabel(g batchGroup) string {
	if d.threadsVary {
		return fmt.Sprintf("B=%d T=%d", g.batch, g.threads)
	}
	return fmt.Sprintf("B=%d", g.batch)
}

// groups are the batch groups of a panel's cells without ablation.
func (d *sweepData) groups(k panelKey) []batchGroup {
	var out []batchGroup
	for _, i := range d.base {
		c := &d.cells[i]
		if d.src[i] == k.src && d.model[i] == k.model && c.Workload == k.workload {
			g := batchGroup{c.Batch, c.Threads}
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	slices.SortFunc(out, func(a, b batchGroup) int {
		if a.batch != b.batch {
			return a.batch - b.batch
		}
		return a.threads - b.threads
	})
	return out
}

// cell returns the cell at a coordinate (no ablation) or nil.
func (d *sweepData) cell(k panelKey, g batchGroup, placement string) *results.SweepCell {
	i, ok := d.at[cellCoord{k.src, k.model, k.workload, g.batch, g.threads, placement, ""}]
	if !ok {
		return nil
	}
	return &d.cells[i]
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

// all is every cell's index.
func (d *sweepData) all() []int {
	idx := make([]int, len(d.cells))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// legend is how a plot legend names placement p for the cells idx: their
// PlacementLabel, generated from what ran ("matrix = avx2-bf16 on the
// cores, no matrix unit", "mixed = neon-fp32 + sme-fp32 on the matrix
// unit") where every cell of p among idx agrees, else p.
func (d *sweepData) legend(p string, idx []int) string {
	lbl := ""
	for _, i := range idx {
		c := &d.cells[i]
		if c.Placement != p {
			continue
		}
		l := c.PlacementLabel()
		if lbl != "" && l != lbl {
			return p
		}
		lbl = l
	}
	if lbl == "" {
		return p
	}
	return lbl
}

// targetsCaption says what ran each placement target in the cells idx,
// from their records (results.SweepTarget.Label), per machine where
// several (machines apart by " | "): "Backends: cores = avx2-fp32 (fp32
// weights) on the cores; matrix = avx2-bf16 (bf16 weights) on the cores,
// no matrix unit". ""
// when no cell records them (files written before they were).
func (d *sweepData) targetsCaption(idx []int) string {
	var srcs []string
	per := map[string][]string{}
	for _, i := range idx {
		for _, t := range d.cells[i].Targets {
			if t.Label == "" {
				continue
			}
			addUnique(&srcs, d.src[i])
			l := per[d.src[i]]
			addUnique(&l, t.Target+" = "+t.Label)
			per[d.src[i]] = l
		}
	}
	if len(srcs) == 0 {
		return ""
	}
	slices.Sort(srcs)
	var parts []string
	for _, src := range srcs {
		l := per[src]
		slices.SortStableFunc(l, func(a, b string) int {
			return comparePlacement(strings.SplitN(a, " ", 2)[0], strings.SplitN(b, " ", 2)[0])
		})
		if len(srcs) > 1 {
			parts = append(parts, src+": "+strings.Join(l, "; "))
		} else {
			parts = append(parts, strings.Join(l, "; "))
		}
	}
	return "Backends: " + strings.Join(parts, " | ")
}

// latencySection: SMEPilot Fig. 9 bars and the speedup table.
func (r *sweepReport) latencySection(b *bytes.Buffer) error {
	d := r.d
	b.WriteString("## End-to-end latency and speedup vs cores\n\n")
	panels := d.panels()
	if len(panels) == 0 {
		r.note(b, "latency.png: every cell is an ablation; no baseline cells to plot")
		return nil
	}
	hasCores := slices.Contains(d.placements, "cores")
	var rows [][]string
	geo := map[string][]float64{}
	for _, k := range panels {
		for _, g := range d.groups(k) {
			var row []string
			if len(d.srcs) > 1 {
				row = append(row, k.src)
			}
			row = append(row, k.model)
			row = append(row, k.workload, strconv.Itoa(g.batch))
			if d.threadsVary {
				row = append(row, strconv.Itoa(g.threads))
			}
			base := d.cell(k, g, "cores")
			for _, p := range d.placements {
				c := d.cell(k, g, p)
				if c == nil {
					row = append(row, "—")
					continue
				}
				txt := fmtSec(c.Latency.Mean)
				if base != nil && base.Latency.Mean > 0 && c.Latency.Mean > 0 {
					sp := base.Latency.Mean / c.Latency.Mean
					txt += fmt.Sprintf(" (%.2f×)", sp)
					geo[p] = append(geo[p], sp)
					r.s.Speedups = append(r.s.Speedups, Speedup{Machine: k.src, Model: k.model, Workload: k.workload,
						Batch: g.batch, Threads: g.threads, Placement: p, LatencyS: c.Latency.Mean,
						CoresLatencyS: base.Latency.Mean, Speedup: sp})
				}
				row = append(row, txt)
			}
			rows = append(rows, row)
		}
	}
	if err := latencyPNG(d, r.dir, "latency.png"); err != nil {
		return err
	}
	r.figure(b, "latency.png", "End-to-end latency per placement",
		"Mean end-to-end latency per request (s, arrival to last token) per placement, one panel per workload, bars grouped by batch size (B); the label on each bar is its speedup over the cores placement (mean latency of cores / mean latency), SMEPilot Fig. 9 style.")
	if !hasCores {
		r.s.Notes = append(r.s.Notes, "no cells with placement cores: no speedups")
		b.WriteString("> No cells with placement `cores`: speedups are not shown.\n\n")
	} else if len(r.s.Speedups) > 0 && len(d.placements) > 1 {
		if err := speedupPNG(d, r.dir, "speedup.png"); err != nil {
			return err
		}
		r.figure(b, "speedup.png", "End-to-end speedup over cores",
			"End-to-end speedup of each placement over the cores placement (mean latency of cores / mean latency), one panel per machine and model, bars grouped by workload and batch size, the dashed line at 1×; error bars combine both means' 95 % confidence intervals over the requests (SMEPilot Fig. 9; llama.cpp beside bench in the baseline figure when --baseline is given).")
	}
	header := d.keyHeader()
	for _, p := range d.placements {
		header = append(header, p+" latency (s, speedup)")
	}
	if hasCores {
		row := make([]string, len(header)-len(d.placements))
		row[0] = "**geomean speedup**"
		for _, p := range d.placements {
			if len(geo[p]) == 0 {
				row = append(row, "—")
				continue
			}
			row = append(row, fmt.Sprintf("**%.2f×**", geomean(geo[p])))
		}
		rows = append(rows, row)
	}
	b.WriteString("Mean end-to-end latency (s) per placement, with the speedup over `cores` in parentheses; the last row is the geometric mean of the speedups.\n\n")
	if err := MarkdownTable(b, header, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

func geomean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(v)))
}

// fmtSig formats v with 3 significant digits, without an exponent from
// 0.001 to 1e6.
func fmtSig(v float64) string {
	a := math.Abs(v)
	if a >= 100 && a < 1e6 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// fmtSec formats seconds with 3 significant digits.
func fmtSec(s float64) string { return fmtSig(s) }

// fmtMS formats seconds as milliseconds with 3 significant digits.
func fmtMS(s float64) string { return fmtSig(s * 1e3) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// cellsSection: one row per cell with the request-level metrics.
func (r *sweepReport) cellsSection(b *bytes.Buffer) error {
	d := r.d
	b.WriteString("## Per-cell results\n\n")
	idx := make([]int, len(d.cells))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		a, c := d.coord[i], d.coord[j]
		if x := cmpStrings(a.src, c.src, a.model, c.model, a.workload, c.workload); x != 0 {
			return x
		}
		if a.batch != c.batch {
			return a.batch - c.batch
		}
		if a.threads != c.threads {
			return a.threads - c.threads
		}
		if x := comparePlacement(a.placement, c.placement); x != 0 {
			return x
		}
		return strings.Compare(a.ablation, c.ablation)
	})
	header := d.keyHeader()
	header = append(header, "placement")
	if len(d.ablations) > 0 {
		header = append(header, "ablation")
	}
	header = append(header, "TTFT p50 (ms)", "TTFT p90 (ms)", "TPOT p50 (ms)", "TPOT p90 (ms)",
		"latency mean (s)", "latency p50 (s)", "latency p90 (s)", "latency p99 (s)",
		"output tok/s", "SLO attained (%)", "goodput (req/s)")
	var rows [][]string
	var slos []string
	for _, i := range idx {
		c := &d.cells[i]
		row := d.keyRow(i)
		row = append(row, c.PlacementLabel())
		if len(d.ablations) > 0 {
			row = append(row, orDash(c.Ablation))
		}
		row = append(row, fmtMS(c.TTFT.P50), fmtMS(c.TTFT.P90), fmtMS(c.TPOT.P50), fmtMS(c.TPOT.P90),
			fmtSec(c.Latency.Mean), fmtSec(c.Latency.P50), fmtSec(c.Latency.P90), fmtSec(c.Latency.P99),
			strconv.FormatFloat(c.OutputTokS, 'f', 1, 64), strconv.FormatFloat(100*c.SLOAttained, 'f', 1, 64),
			fmtSig(c.GoodputReqS))
		rows = append(rows, row)
		var slo []string
		if c.Config.SLOTTFTS > 0 {
			slo = append(slo, "TTFT ≤ "+fmtMS(c.Config.SLOTTFTS)+" ms")
		}
		if c.Config.SLOTPOTS > 0 {
			slo = append(slo, "TPOT ≤ "+fmtMS(c.Config.SLOTPOTS)+" ms")
		}
		if len(slo) == 0 {
			slo = append(slo, "no stated target")
		}
		addUnique(&slos, strings.Join(slo, " and "))
	}
	fmt.Fprintf(b, "Per request: TTFT (time to first token) and TPOT (mean time per output token after the first) percentiles in ms, end-to-end latency in s; output tokens/s over the cell's replay wall time; SLO attainment is the share of requests meeting %s (Sandwich §8); goodput is such requests per second of wall time. %s.\n\n",
		strings.Join(slos, ", or "), d.caption())
	if err := MarkdownTable(b, header, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// throughputSection: output tokens/s vs batch.
func (r *sweepReport) throughputSection(b *bytes.Buffer) error {
	b.WriteString("## Throughput vs batch\n\n")
	ok := false
	for _, k := range r.d.panels() {
		if len(batchesOf(r.d.groups(k))) > 1 {
			ok = true
		}
	}
	if !ok {
		r.note(b, "throughput.png: every workload ran at a single batch size")
		return nil
	}
	if err := throughputPNG(r.d, r.dir, "throughput.png"); err != nil {
		return err
	}
	r.figure(b, "throughput.png", "Output throughput vs batch",
		"Output tokens/s (over each cell's replay wall time) vs batch size, one line per placement, one panel per workload.")
	return nil
}

func batchesOf(gs []batchGroup) []int {
	var out []int
	for _, g := range gs {
		if !slices.Contains(out, g.batch) {
			out = append(out, g.batch)
		}
	}
	return out
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

// predPoint is one operator's measured and predicted seconds in one cell.
type predPoint struct {
	phase, op, group    string
	measured, predicted float64
}

func (d *sweepData) predPoints() []predPoint {
	var out []predPoint
	for _, i := range d.base {
		for _, op := range d.cells[i].Ops {
			if op.PredictedS == nil || !(*op.PredictedS > 0) || !(op.MeasuredS > 0) || !finite(*op.PredictedS) || !finite(op.MeasuredS) {
				continue
			}
			out = append(out, predPoint{op.Phase, op.Op, OpGroup(op.Op), op.MeasuredS, *op.PredictedS})
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
	pts := r.d.predPoints()
	pe := predictionError(pts)
	if pe == nil {
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
	predMeasured float64 // measured seconds of the samples with a prediction
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
					rc.predMeasured += op.MeasuredS
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

// ablationSection: SMEPilot §5.4 — what each technique is worth.
func (r *sweepReport) ablationSection(b *bytes.Buffer) error {
	d := r.d
	b.WriteString("## Ablations\n\n")
	if len(d.ablations) == 0 {
		r.note(b, "ablation table: no ablation cells (run the sweep with --ablate partition,packing,kv-packing)")
		return nil
	}
	header := d.keyHeader()
	header = append(header, "placement", "ablation", "latency (s)", "ablated latency (s)", "latency ratio", "output tok/s", "ablated tok/s", "tok/s ratio")
	var rows [][]string
	var missing []string
	for i, c := range d.cells {
		if c.Ablation == "" {
			continue
		}
		k := d.coord[i]
		k.ablation = ""
		row := d.keyRow(i)
		row = append(row, c.Placement, c.Ablation)
		j, ok := d.at[k]
		if !ok {
			missing = append(missing, c.Key)
			row = append(row, "—", fmtSec(c.Latency.Mean), "—", "—", strconv.FormatFloat(c.OutputTokS, 'f', 1, 64), "—")
			rows = append(rows, row)
			continue
		}
		bc := &d.cells[j]
		row = append(row, fmtSec(bc.Latency.Mean), fmtSec(c.Latency.Mean), ratioText(c.Latency.Mean, bc.Latency.Mean),
			strconv.FormatFloat(bc.OutputTokS, 'f', 1, 64), strconv.FormatFloat(c.OutputTokS, 'f', 1, 64), ratioText(c.OutputTokS, bc.OutputTokS))
		rows = append(rows, row)
	}
	b.WriteString("Each ablated cell beside the same cell with the technique on (SMEPilot §5.4): `partition` runs each GEMM of a mixed placement on one group (no tile partitioning), `packing` packs the weights on every call, `kv-packing` keeps the KV cache row-major and packs each K/V tile inside attention (SMEPilot §4.3). Latency is the mean end to end (s); a latency ratio above 1 (or a tokens/s ratio below 1) is what the technique is worth.\n\n")
	if err := MarkdownTable(b, header, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	if len(missing) > 0 {
		msg := fmt.Sprintf("ablation table: %d ablated cell(s) without a baseline cell (e.g. %s)", len(missing), missing[0])
		r.s.Notes = append(r.s.Notes, msg)
		fmt.Fprintf(b, "> %s.\n\n", msg)
	}
	return nil
}

func ratioText(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// machinePanel is one (model, workload) panel of the machine comparison.
type machinePanel struct {
	model, workload string
	batch           map[string]int // per machine label, the batch compared
	common          bool           // the batch is the same on every machine
}

func (d *sweepData) machinePanels() []machinePanel {
	var out []machinePanel
	for _, m := range d.models {
		for _, w := range d.workloads {
			per := map[string][]int{}
			for _, i := range d.base {
				c := &d.cells[i]
				if d.model[i] == m && c.Workload == w && !slices.Contains(per[d.src[i]], c.Batch) {
					per[d.src[i]] = append(per[d.src[i]], c.Batch)
				}
			}
			if len(per) < 2 {
				continue
			}
			mp := machinePanel{model: m, workload: w, batch: map[string]int{}}
			best := -1
			for _, bt := range d.batches {
				all := true
				for _, src := range d.srcs {
					if !slices.Contains(per[src], bt) {
						all = false
					}
				}
				if all {
					best = bt
				}
			}
			mp.common = best >= 0
			for src, bs := range per {
				if mp.common {
					mp.batch[src] = best
				} else {
					mp.batch[src] = slices.Max(bs)
				}
			}
			out = append(out, mp)
		}
	}
	return out
}

// machineCell is the cell a machine ran for a panel and placement (the
// smallest thread count if several), or nil.
func (d *sweepData) machineCell(mp machinePanel, src, placement string) *results.SweepCell {
	bt, ok := mp.batch[src]
	if !ok {
		return nil
	}
	var best *results.SweepCell
	for _, i := range d.base {
		c := &d.cells[i]
		if d.src[i] == src && d.model[i] == mp.model && c.Workload == mp.workload && c.Batch == bt && c.Placement == placement {
			if best == nil || c.Threads < best.Threads {
				best = c
			}
		}
	}
	return best
}

// machinesSection: several machines side by side.
func (r *sweepReport) machinesSection(b *bytes.Buffer) error {
	d := r.d
	if len(d.srcs) < 2 {
		return nil
	}
	b.WriteString("## Machines compared\n\n")
	mps := d.machinePanels()
	if len(mps) == 0 {
		r.note(b, "machines.png: no model and workload ran on more than one machine")
		return nil
	}
	if err := machinesPNG(d, mps, r.dir, "machines.png"); err != nil {
		return err
	}
	r.figure(b, "machines.png", "Machines compared",
		fmt.Sprintf("Mean end-to-end latency per request (s) per machine and placement, one panel per workload, at the largest batch every machine ran; the label on each bar is its speedup over %s (its mean latency / the bar's).", d.srcs[0]))
	header := []string{}
	header = append(header, "model, weights")
	header = append(header, "workload", "batch", "placement")
	for _, src := range d.srcs {
		header = append(header, src+" latency (s)", src+" tok/s")
	}
	var rows [][]string
	for _, mp := range mps {
		for _, p := range d.placements {
			var row []string
			row = append(row, mp.model)
			bt := ""
			if mp.common {
				bt = strconv.Itoa(mp.batch[d.srcs[0]])
			} else {
				var bs []string
				for _, src := range d.srcs {
					if v, ok := mp.batch[src]; ok {
						bs = append(bs, strconv.Itoa(v))
					} else {
						bs = append(bs, "—")
					}
				}
				bt = strings.Join(bs, " / ")
			}
			row = append(row, mp.workload, bt, p)
			found := false
			for _, src := range d.srcs {
				c := d.machineCell(mp, src, p)
				if c == nil {
					row = append(row, "—", "—")
					continue
				}
				found = true
				row = append(row, fmtSec(c.Latency.Mean), strconv.FormatFloat(c.OutputTokS, 'f', 1, 64))
			}
			if found {
				rows = append(rows, row)
			}
		}
	}
	b.WriteString("Mean end-to-end latency (s) and output tokens/s per machine at the compared batch (per machine, in machine order, where no batch ran on all of them).\n\n")
	if err := MarkdownTable(b, header, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
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
