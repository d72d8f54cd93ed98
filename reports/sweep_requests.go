// The request-level sections of the sweep report: latency and speedup,
// per-cell results, throughput, ablations, machines compared.

package reports

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/results"
)

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
		pl := c.PlacementLabel()
		if c.Noisy() {
			pl += " NOISY"
		}
		row = append(row, pl)
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

// ablationSection: SMEPilot §5.4 — what each technique is worth.
func (r *sweepReport) ablationSection(b *bytes.Buffer) error {
	d := r.d
	b.WriteString("## Ablations\n\n")
	if len(d.ablations) == 0 {
		r.note(b, "ablation table: no ablation cells (run the sweep with --ablate partition,packing,kv-packing,pipeline)")
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
	b.WriteString("Each ablated cell beside the same cell with the technique on (SMEPilot §5.4): `partition` runs each GEMM of a mixed placement on one group (no tile partitioning), `packing` packs the weights on every call, `kv-packing` keeps the KV cache row-major and packs each K/V tile inside attention (SMEPilot §4.3), `pipeline` runs prefill attention's QKᵀ, softmax and P·V serially per job instead of pipelined over a matrix and a vector worker (SMEPilot §4.2, Fig. 6). Latency is the mean end to end (s); a latency ratio above 1 (or a tokens/s ratio below 1) is what the technique is worth.\n\n")
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
