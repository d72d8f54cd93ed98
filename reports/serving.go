package reports

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/results"
)

// Serving curves (Sandwich §8.1, §8.3, Figs. 9 and 12): from sweep cells
// that differ only in their arrival process.
//
//   - SLO attainment is the fraction of a cell's requests whose TTFT and
//     TPOT are within the SLO targets (a target ≤ 0 is not checked; a
//     request with one output token has no TPOT and meets any TPOT
//     target), as workloads.SLO.Met.
//   - SLO scale s multiplies both targets: attainment at s counts
//     TTFT ≤ s·SLO_TTFT and TPOT ≤ s·SLO_TPOT. A lower scale is a more
//     stringent SLO (§8.3); the tightest scale keeping ≥ 90% attainment is
//     the figure Fig. 9 compares.
//   - Goodput is Sandwich's rate-based goodput (§8.1, after DistServe): the
//     highest Poisson arrival rate of a rate sweep whose replay keeps SLO
//     attainment ≥ 90%. It is bounded by the rates measured: "≥ R" when
//     every rate met the goal, "< R" when none did (R the lowest).

// servingGoal is the SLO attainment goal (Sandwich §8.1: 90%, i.e. P90).
const servingGoal = 0.9

// servingScales are the SLO scales of the attainment-vs-scale curves: 0.1×
// to 10×, log-spaced.
var servingScales = func() []float64 {
	var s []float64
	for i := -10; i <= 10; i++ {
		switch i {
		case -10, 0, 10: // exact, so the axis ticks land on them
			s = append(s, math.Pow10(i/10))
		default:
			s = append(s, math.Pow(10, float64(i)/10))
		}
	}
	return s
}()

// ServingConfig is one serving configuration of a rate sweep: a cell's
// coordinates without its arrival process.
type ServingConfig struct {
	Machine, Model, Workload string
	Batch, Threads           int
	Placement, Ablation      string
}

// Label names the configuration in legends ("cores, batch 4, 2 threads").
func (c ServingConfig) Label() string {
	s := fmt.Sprintf("%s, batch %d, %d threads", c.Placement, c.Batch, c.Threads)
	if c.Ablation != "" {
		s += ", ablate " + c.Ablation
	}
	return s
}

// ServingPoint is one cell of a configuration: its arrival rate
// (requests/s; 0 closed loop) and what its replay measured.
type ServingPoint struct {
	Cell        int     // index in the report's cells
	Arrival     string  // "closed" or "poisson:RATE"
	RateReqS    float64 // 0 for closed
	Requests    int
	Attainment  float64 // SLO attainment at scale 1
	P90TTFTS    float64 // seconds
	P90TPOTS    float64 // seconds
	CompletedS  float64 // requests meeting the SLO per second of wall time
	TightestSLO float64 // the smallest servingScales value with attainment ≥ 90% (NaN: none)
}

// ServingCurve is one configuration's points, Poisson rates ascending
// (a closed-loop cell first), and its rate-based goodput.
type ServingCurve struct {
	Config ServingConfig
	Points []ServingPoint
	// GoodputReqS is the highest Poisson rate with attainment ≥ 90%
	// (0 with none); GoodputText says it with its bounds ("1.5 req/s",
	// "≥ 4 req/s: every rate met the goal", "< 0.5 req/s").
	GoodputReqS float64
	GoodputText string
}

// arrivalRate is the rate of "poisson:RATE" (0 for "closed"; false for
// anything else).
func arrivalRate(a string) (float64, bool) {
	if a == "closed" || a == "" {
		return 0, true
	}
	r, ok := strings.CutPrefix(a, "poisson:")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(r, 64)
	if err != nil || !(v > 0) {
		return 0, false
	}
	return v, true
}

// attainment is the fraction of c's requests within s× its SLO targets.
func attainment(c *results.SweepCell, s float64) float64 {
	if len(c.Requests) == 0 {
		return math.NaN()
	}
	tt, tp := s*c.Config.SLOTTFTS, s*c.Config.SLOTPOTS
	met := 0
	for _, r := range c.Requests {
		if (c.Config.SLOTTFTS <= 0 || r.TTFTS <= tt) && (c.Config.SLOTPOTS <= 0 || r.OutputTokens < 2 || r.TPOTS <= tp) {
			met++
		}
	}
	return float64(met) / float64(len(c.Requests))
}

// ServingCurves groups cells by configuration and returns the curves of
// those with at least two arrival processes, ordered by machine, model,
// workload, placement, batch, threads and ablation. machine labels each
// cell (the report's disambiguated machine names). Cells whose arrival
// string is not closed/poisson:RATE are left out.
func ServingCurves(cells []results.SweepCell, machine []string) []ServingCurve {
	at := map[ServingConfig]int{}
	var curves []ServingCurve
	for i := range cells {
		c := &cells[i]
		rate, ok := arrivalRate(c.Config.Arrival)
		if !ok {
			continue
		}
		k := ServingConfig{Machine: machine[i], Model: ModelLabel(c), Workload: c.Workload, Batch: c.Batch, Threads: c.Threads,
			Placement: c.Placement, Ablation: c.Ablation}
		j, seen := at[k]
		if !seen {
			j = len(curves)
			at[k] = j
			curves = append(curves, ServingCurve{Config: k})
		}
		p := ServingPoint{Cell: i, Arrival: c.Config.Arrival, RateReqS: rate, Requests: len(c.Requests),
			Attainment: attainment(c, 1), P90TTFTS: c.TTFT.P90, P90TPOTS: c.TPOT.P90, CompletedS: c.GoodputReqS, TightestSLO: math.NaN()}
		for _, s := range servingScales {
			if attainment(c, s) >= servingGoal {
				p.TightestSLO = s
				break
			}
		}
		curves[j].Points = append(curves[j].Points, p)
	}
	out := curves[:0]
	for _, cv := range curves {
		if len(cv.Points) < 2 {
			continue
		}
		slices.SortStableFunc(cv.Points, func(a, b ServingPoint) int { return cmp.Compare(a.RateReqS, b.RateReqS) })
		cv.GoodputReqS, cv.GoodputText = rateGoodput(cv.Points)
		out = append(out, cv)
	}
	slices.SortStableFunc(out, func(a, b ServingCurve) int {
		x, y := a.Config, b.Config
		if c := cmpStrings(x.Machine, y.Machine, x.Model, y.Model, x.Workload, y.Workload); c != 0 {
			return c
		}
		if c := comparePlacement(x.Placement, y.Placement); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.Batch, y.Batch), cmp.Compare(x.Threads, y.Threads), cmp.Compare(x.Ablation, y.Ablation))
	})
	return out
}

// rateGoodput is Sandwich's goodput of a rate sweep (points ascending by
// rate): the highest Poisson rate meeting the goal, with its bounds.
func rateGoodput(pts []ServingPoint) (float64, string) {
	var rates []float64
	best := 0.0
	for _, p := range pts {
		if p.RateReqS <= 0 {
			continue
		}
		rates = append(rates, p.RateReqS)
		if p.Attainment >= servingGoal {
			best = p.RateReqS
		}
	}
	switch {
	case len(rates) == 0:
		return 0, "— (no Poisson rate)"
	case best == 0:
		return 0, fmt.Sprintf("< %s req/s: no rate met %.0f%%", fmtSig(rates[0]), 100*servingGoal)
	case best == rates[len(rates)-1]:
		return best, fmt.Sprintf("≥ %s req/s: every rate up to the highest met %.0f%%", fmtSig(best), 100*servingGoal)
	}
	return best, fmtSig(best) + " req/s"
}

// servingSection writes the serving curves of the cells that form rate
// sweeps: a table per configuration and rate, the goodput per
// configuration, and three figures (attainment, P90 TTFT and P90 TPOT vs
// rate; attainment vs SLO scale; latency CDF).
func (r *sweepReport) servingSection(b *bytes.Buffer) error {
	curves := ServingCurves(r.d.cells, r.d.src)
	if len(curves) == 0 {
		return nil
	}
	b.WriteString("## Serving: SLO attainment, P90 latency and goodput vs request rate (Sandwich §8, Figs. 9, 12)\n\n")
	var slo []string
	for _, cv := range curves {
		c := &r.d.cells[cv.Points[0].Cell]
		addUnique(&slo, fmt.Sprintf("TTFT %s s, TPOT %s s", fmtSig(c.Config.SLOTTFTS), fmtSig(c.Config.SLOTPOTS)))
	}
	fmt.Fprintf(b, "SLO targets: %s (0: not checked). Goodput is the highest Poisson rate whose replay keeps SLO attainment ≥ %.0f%% (Sandwich §8.1); "+
		"the tightest SLO scale is the smallest multiple of both targets (0.1× to 10×) that keeps %.0f%%. One replay per cell: no repeats, so no spread.\n\n",
		strings.Join(slo, "; "), 100*servingGoal, 100*servingGoal)
	var body [][]string
	for _, cv := range curves {
		for _, p := range cv.Points {
			tight := "> 10×"
			if !math.IsNaN(p.TightestSLO) {
				tight = fmtSig(p.TightestSLO) + "×"
			}
			body = append(body, []string{cv.Config.Machine, cv.Config.Model, cv.Config.Workload, cv.Config.Label(), p.Arrival, strconv.Itoa(p.Requests),
				fmt.Sprintf("%.0f%%", 100*p.Attainment), fmtMS(p.P90TTFTS), fmtMS(p.P90TPOTS), fmtSig(p.CompletedS), tight})
		}
	}
	if err := MarkdownTable(b, []string{"machine", "model", "workload", "configuration", "arrival", "requests", "SLO attainment", "P90 TTFT ms", "P90 TPOT ms",
		"SLO-meeting req/s", "tightest SLO scale"}, body); err != nil {
		return err
	}
	b.WriteString("\n")
	body = body[:0]
	for _, cv := range curves {
		body = append(body, []string{cv.Config.Machine, cv.Config.Model, cv.Config.Workload, cv.Config.Label(), cv.GoodputText})
	}
	if err := MarkdownTable(b, []string{"machine", "model", "workload", "configuration", "goodput (highest rate with ≥ 90% SLO attainment)"}, body); err != nil {
		return err
	}
	b.WriteString("\n")
	var idx []int
	for _, cv := range curves {
		for _, p := range cv.Points {
			idx = append(idx, p.Cell)
		}
	}
	header := r.d.produced(idx)
	if servingRates(curves) {
		if err := servingRatePNG(r.d, curves, r.dir, "serving-rate.png", header); err != nil {
			return err
		}
		r.figure(b, "serving-rate.png", "SLO attainment, P90 TTFT, P90 TPOT and SLO-meeting throughput vs request rate",
			"Per configuration, over the Poisson rates of the sweep: SLO attainment (the 90% goal dashed), P90 TTFT and P90 TPOT (the SLO targets dashed) and the requests/s that met the SLO, four panels per workload (Sandwich Fig. 12).")
	} else {
		r.note(b, "serving-rate.png: no configuration ran at two or more Poisson rates")
	}
	if err := servingScalePNG(r.d, curves, r.dir, "serving-slo-scale.png", header); err != nil {
		return err
	}
	r.figure(b, "serving-slo-scale.png", "SLO attainment vs SLO scale",
		"SLO attainment when both targets are scaled 0.1× to 10× (lower is more stringent), one line per configuration and arrival process, the 90% goal dashed (Sandwich Fig. 9).")
	if err := latencyCDFPNG(r.d, curves, r.dir, "serving-latency-cdf.png", header); err != nil {
		return err
	}
	r.figure(b, "serving-latency-cdf.png", "End-to-end latency CDF",
		"Empirical CDF of request latency (arrival to last token), one line per configuration and arrival process, one panel per workload.")
	return nil
}

// servingRates says whether some curve has two or more Poisson rates.
func servingRates(curves []ServingCurve) bool {
	for _, cv := range curves {
		n := 0
		for _, p := range cv.Points {
			if p.RateReqS > 0 {
				n++
			}
		}
		if n >= 2 {
			return true
		}
	}
	return false
}

// servingPanels groups curves by machine, model and workload (one panel
// each), in curve order.
func servingPanels(curves []ServingCurve) (keys []panelKey, by map[panelKey][]int) {
	by = map[panelKey][]int{}
	for i, cv := range curves {
		k := panelKey{cv.Config.Machine, cv.Config.Model, cv.Config.Workload}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], i)
	}
	return keys, by
}

// servingLine adds a line with points of colour i's to pl, labelled,
// with dash pattern dash (0 solid, 1 dashed, 2 dotted, ...).
func servingLine(pl *plot.Plot, xys plotter.XYs, i, dash int, label string) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	col := okabeIto[i%len(okabeIto)]
	l.Color, l.Width = col, vg.Points(1.5)
	l.Dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}}[dash%3]
	pts.Color, pts.Shape, pts.Radius = col, draw.CircleGlyph{}, vg.Points(2.5)
	pl.Add(l, pts)
	if label != "" {
		pl.Legend.Add(label, l, pts)
	}
	return nil
}

// hline is a dashed grey horizontal line at y over [x0, x1].
func hline(pl *plot.Plot, x0, x1, y float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	l.Color, l.Dashes = greyColor, []vg.Length{vg.Points(4), vg.Points(3)}
	pl.Add(l)
	return nil
}

var greyColor = placementColors["cores"]

// servingRatePNG: per workload four panels: attainment, P90 TTFT, P90
// TPOT and SLO-meeting requests/s vs Poisson rate, one line per
// configuration.
func servingRatePNG(d *sweepData, curves []ServingCurve, dir, name, header string) error {
	keys, by := servingPanels(curves)
	var ps []*plot.Plot
	for _, k := range keys {
		lo, hi := math.Inf(1), 0.0
		for _, ci := range by[k] {
			for _, p := range curves[ci].Points {
				if p.RateReqS > 0 {
					lo, hi = min(lo, p.RateReqS), max(hi, p.RateReqS)
				}
			}
		}
		if hi == 0 {
			continue
		}
		label := d.panelLabel(k, ", ")
		type metric struct {
			title, yl string
			v         func(ServingPoint) float64
			target    func(c *results.SweepCell) float64
		}
		ms := []metric{
			{"SLO attainment", "SLO attainment (%)", func(p ServingPoint) float64 { return 100 * p.Attainment }, func(*results.SweepCell) float64 { return 100 * servingGoal }},
			{"P90 TTFT", "P90 TTFT (ms)", func(p ServingPoint) float64 { return 1e3 * p.P90TTFTS }, func(c *results.SweepCell) float64 { return 1e3 * c.Config.SLOTTFTS }},
			{"P90 TPOT", "P90 TPOT (ms)", func(p ServingPoint) float64 { return 1e3 * p.P90TPOTS }, func(c *results.SweepCell) float64 { return 1e3 * c.Config.SLOTPOTS }},
			{"SLO-meeting throughput", "requests/s meeting the SLO", func(p ServingPoint) float64 { return p.CompletedS }, func(*results.SweepCell) float64 { return 0 }},
		}
		for mi, m := range ms {
			pl := sweepPlot(m.title+": "+label, d.cellsCaption(servingCells(curves, by[k])), "request rate (requests/s, Poisson)", m.yl, fullGrid)
			if hi >= 8*lo {
				pl.X.Scale, pl.X.Tick.Marker = plot.LogScale{}, rateTicks(curves, by[k])
			}
			// Attainment falls and latency rises with the rate: the
			// legend goes where the lines are not.
			pl.Legend.Top, pl.Legend.Left = mi > 0, true
			targets := map[float64]bool{}
			for j, ci := range by[k] {
				var xys plotter.XYs
				for _, p := range curves[ci].Points {
					if v := m.v(p); p.RateReqS > 0 && finite(v) {
						xys = append(xys, plotter.XY{X: p.RateReqS, Y: v})
					}
				}
				if len(xys) == 0 {
					continue
				}
				if err := servingLine(pl, xys, j, 0, curves[ci].Config.Label()); err != nil {
					return err
				}
				if t := m.target(&d.cells[curves[ci].Points[0].Cell]); t > 0 {
					targets[t] = true
				}
			}
			for t := range targets {
				if err := hline(pl, lo, hi, t); err != nil {
					return err
				}
			}
			pl.Y.Min = 0
			if mi == 0 {
				pl.Y.Max = 105
			}
			ps = append(ps, pl)
		}
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, 5*vg.Inch, 3.8*vg.Inch, dir, name, header+"\none replay per cell and rate (no repeats, so no spread)")
}

// rateTicks labels the Poisson rates of the curves ci on a log axis.
func rateTicks(curves []ServingCurve, ci []int) plot.ConstantTicks {
	var rates []float64
	for _, i := range ci {
		for _, p := range curves[i].Points {
			if p.RateReqS > 0 && !slices.Contains(rates, p.RateReqS) {
				rates = append(rates, p.RateReqS)
			}
		}
	}
	slices.Sort(rates)
	ticks := make(plot.ConstantTicks, len(rates))
	for i, r := range rates {
		ticks[i] = plot.Tick{Value: r, Label: fmtSig(r)}
	}
	return ticks
}

// servingCells is the cells of the curves ci.
func servingCells(curves []ServingCurve, ci []int) []int {
	var idx []int
	for _, i := range ci {
		for _, p := range curves[i].Points {
			idx = append(idx, p.Cell)
		}
	}
	return idx
}

// servingScalePNG: attainment vs SLO scale per configuration and arrival
// process, one panel per workload.
func servingScalePNG(d *sweepData, curves []ServingCurve, dir, name, header string) error {
	keys, by := servingPanels(curves)
	var ps []*plot.Plot
	for _, k := range keys {
		pl := sweepPlot("SLO attainment vs SLO scale: "+d.panelLabel(k, ", "), d.cellsCaption(servingCells(curves, by[k])),
			"SLO scale (× both targets; lower is more stringent)", "SLO attainment (%)", fullGrid)
		pl.X.Scale, pl.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		pl.Legend.Top, pl.Legend.Left = false, false
		line := 0 // colour per line, dash pattern per configuration
		for j, ci := range by[k] {
			for _, p := range curves[ci].Points {
				c := &d.cells[p.Cell]
				var xys plotter.XYs
				for _, s := range servingScales {
					xys = append(xys, plotter.XY{X: s, Y: 100 * attainment(c, s)})
				}
				if err := servingLine(pl, xys, line, j, curves[ci].Config.Label()+", "+p.Arrival); err != nil {
					return err
				}
				line++
			}
		}
		if err := hline(pl, servingScales[0], servingScales[len(servingScales)-1], 100*servingGoal); err != nil {
			return err
		}
		pl.Y.Min, pl.Y.Max = 0, 105
		ps = append(ps, pl)
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, 5.5*vg.Inch, sweepPanelH, dir, name, header+"\nattainment recomputed from each request's TTFT and TPOT at each scale")
}

// latencyCDFPNG: the empirical CDF of request latency per configuration
// and arrival process, one panel per workload.
func latencyCDFPNG(d *sweepData, curves []ServingCurve, dir, name, header string) error {
	keys, by := servingPanels(curves)
	var ps []*plot.Plot
	for _, k := range keys {
		pl := sweepPlot("Request latency CDF: "+d.panelLabel(k, ", "), d.cellsCaption(servingCells(curves, by[k])),
			"end-to-end latency (s, arrival to last token)", "fraction of requests", fullGrid)
		pl.Legend.Top, pl.Legend.Left = false, false
		line := 0 // colour per line, dash pattern per configuration
		for j, ci := range by[k] {
			for _, p := range curves[ci].Points {
				c := &d.cells[p.Cell]
				lat := make([]float64, 0, len(c.Requests))
				for _, r := range c.Requests {
					if finite(r.LatencyS) {
						lat = append(lat, r.LatencyS)
					}
				}
				if len(lat) == 0 {
					continue
				}
				slices.Sort(lat)
				xys := make(plotter.XYs, len(lat))
				for i, v := range lat {
					xys[i] = plotter.XY{X: v, Y: float64(i+1) / float64(len(lat))}
				}
				if err := servingLine(pl, xys, line, j, curves[ci].Config.Label()+", "+p.Arrival); err != nil {
					return err
				}
				line++
			}
		}
		pl.Y.Min, pl.Y.Max = 0, 1.02
		ps = append(ps, pl)
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, 5.5*vg.Inch, sweepPanelH, dir, name, header)
}
