// The cells of a sweep with the labels, orders and captions every section of
// the report shares.

package reports

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cpubench/bench/results"
)

// SweepMachine is the machine label of a cell: its profile's machine name,
// else its host.
func SweepMachine(c *results.SweepCell) string {
	if c.Machine != "" {
		return c.Machine
	}
	return c.Host
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
