package reports

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/cpubench/bench/results"
)

// Okabe–Ito colours (readable in grey and by colour-blind readers).
var (
	okabeIto = []color.Color{
		color.RGBA{0, 114, 178, 255},   // blue
		color.RGBA{230, 159, 0, 255},   // orange
		color.RGBA{0, 158, 115, 255},   // bluish green
		color.RGBA{213, 94, 0, 255},    // vermilion
		color.RGBA{86, 180, 233, 255},  // sky blue
		color.RGBA{204, 121, 167, 255}, // reddish purple
		color.RGBA{240, 228, 66, 255},  // yellow
		color.RGBA{0, 0, 0, 255},       // black
	}
	placementColors = map[string]color.Color{
		"cores":  color.RGBA{150, 150, 150, 255},
		"matrix": okabeIto[0],
		"mixed":  okabeIto[1],
		"auto":   okabeIto[2],
	}
	opGroupColors = map[string]color.Color{
		"attention":   okabeIto[3],
		"projections": okabeIto[0],
		"FFN":         okabeIto[1],
		"norms":       okabeIto[2],
		"LM head":     okabeIto[5],
		"other":       color.RGBA{170, 170, 170, 255},
	}
)

// placementColor is the fixed colour of a known placement, else the i-th
// of the remaining palette.
func placementColor(p string, i int) color.Color {
	if c, ok := placementColors[p]; ok {
		return c
	}
	return okabeIto[3+i%5]
}

// sweepPanelH is the height of one panel of a sweep figure (96 dpi).
const sweepPanelH = 5 * vg.Inch

// sweepPlot is a panel with a title, the caption line (machines, dates)
// and axis labels with units, and grid lines as asked.
func sweepPlot(title, caption, xl, yl string, grid gridLines) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = title + "\n" + caption
	pl.Title.TextStyle.Font.Size = vg.Points(11)
	pl.X.Label.Text = xl
	pl.Y.Label.Text = yl
	pl.Legend.Top = true
	pl.Legend.TextStyle.Font.Size = vg.Points(9)
	if grid != noGrid {
		g := plotter.NewGrid()
		if grid == horizontalGrid {
			g.Vertical.Color = nil
		}
		pl.Add(g)
	}
	return pl
}

type gridLines int

const (
	noGrid gridLines = iota
	horizontalGrid
	fullGrid
)

// barWidthFor is the bar width that fills about 75 % of a panel pw wide
// with groups × series bars, between 8 and 28 points.
func barWidthFor(pw vg.Length, groups, series int) vg.Length {
	w := (pw - 1.3*vg.Inch) * 0.75 / vg.Length(max(1, groups*series))
	return min(vg.Points(28), max(vg.Points(8), w))
}

// savePanels draws plots in a grid of at most cols columns, each pw × ph,
// aligned (plot.Align), and writes it atomically to dir/name in o's formats
// and width, stopped with ctx's error when ctx is done.
func savePanels(ctx context.Context, o FigureOptions, ps []*plot.Plot, cols int, pw, ph vg.Length, dir, name, header string) error {
	return o.save(ctx, panelsFigureHeader(ctx, ps, cols, pw, ph, header), dir, name)
}

// panelsFigure is plots in a grid of at most cols columns, each pw × ph,
// aligned (plot.Align); drawing stops between panels once ctx is done.
func panelsFigure(ctx context.Context, ps []*plot.Plot, cols int, pw, ph vg.Length) Figure {
	return panelsFigureHeader(ctx, ps, cols, pw, ph, "")
}

// panelsFigureHeader is panelsFigure under a header: what produced every
// panel, in 10 pt across the whole width ("" for none).
func panelsFigureHeader(ctx context.Context, ps []*plot.Plot, cols int, pw, ph vg.Length, header string) Figure {
	cols = max(1, min(cols, len(ps)))
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for c := range cols {
			if i := r*cols + c; i < len(ps) {
				grid[r][c] = ps[i]
			}
		}
	}
	titles := make([]string, len(ps))
	for i, p := range ps {
		titles[i] = p.Title.Text
	}
	hsty := plot.New().Title.TextStyle
	hsty.Font.Size = vg.Points(10)
	hsty.XAlign, hsty.YAlign = draw.XCenter, draw.YTop
	headerH := vg.Length(0)
	if header != "" {
		headerH = hsty.Height(header) + 4*vg.Millimeter
	}
	return Figure{W: pw * vg.Length(cols), H: ph*vg.Length(rows) + headerH, draw: func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		if header != "" {
			// The header: what produced every panel, wrapped to the width.
			h := wrapLines(header, dc.Max.X-dc.Min.X-8*vg.Millimeter, hsty.Width)
			dc.FillText(hsty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - 2*vg.Millimeter}, h)
			dc.Max.Y -= hsty.Height(h) + 4*vg.Millimeter
		}
		// Titles wrapped to the panel width this drawing gives them.
		panelW := (dc.Max.X-dc.Min.X)/vg.Length(cols) - 10*vg.Millimeter
		for i, p := range ps {
			p.Title.Text = wrapLines(titles[i], panelW, func(s string) vg.Length { return p.Title.TextStyle.Width(s) })
		}
		t := draw.Tiles{Rows: rows, Cols: cols,
			PadX: 8 * vg.Millimeter, PadY: 6 * vg.Millimeter,
			PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 3 * vg.Millimeter}
		cs := plot.Align(grid, t, dc)
		for r := range grid {
			for c := range grid[r] {
				if ctx.Err() != nil {
					return
				}
				if grid[r][c] != nil {
					grid[r][c].Draw(cs[r][c])
				}
			}
		}
	}}
}

// addGroupedBars adds one bar series per name at x = 0..len(vals[s])-1,
// side by side, each labeled above its top with labels[s][g] ("" for
// none). It returns the largest value.
func addGroupedBars(pl *plot.Plot, names []string, colors []color.Color, vals [][]float64, labels [][]string, w vg.Length) (float64, error) {
	return addGroupedBarsCI(pl, names, colors, vals, nil, labels, w)
}

// addGroupedBarsCI is addGroupedBars with ± cis[s][g] error bars (nil for
// none), each label above its error bar; it returns the highest bar or
// error-bar end.
func addGroupedBarsCI(pl *plot.Plot, names []string, colors []color.Color, vals, cis [][]float64, labels [][]string, w vg.Length) (float64, error) {
	top := 0.0
	rotate := w < vg.Points(24)
	for s := range names {
		for g, v := range vals[s] {
			if !finite(v) || v < 0 {
				vals[s][g] = 0 // not drawn
			}
		}
		bars, err := plotter.NewBarChart(plotter.Values(vals[s]), w)
		if err != nil {
			return 0, err
		}
		bars.Color = colors[s]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(s)-float64(len(names)-1)/2)
		pl.Add(bars)
		pl.Legend.Add(names[s], bars)
		var xys plotter.XYs
		var txt []string
		for g, v := range vals[s] {
			top = max(top, v)
			if v > 0 && labels[s][g] != "" {
				y := v
				if cis != nil && cis[s][g] > 0 {
					y += cis[s][g]
				}
				xys = append(xys, plotter.XY{X: float64(g), Y: y})
				txt = append(txt, labels[s][g])
			}
		}
		if len(xys) == 0 {
			continue
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: txt})
		if err != nil {
			return 0, err
		}
		lb.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(7)
			if rotate {
				lb.TextStyle[i].Rotation = math.Pi / 2
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XLeft, draw.YCenter
			} else {
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
			}
		}
		pl.Add(lb)
	}
	return top, nil
}

// barPanelWidth is a panel wide enough for groups × series bars of at
// least 10 points.
func barPanelWidth(groups, series int) vg.Length {
	return max(5*vg.Inch, vg.Length(groups*series)*vg.Points(10)/0.75+1.3*vg.Inch)
}

func (d *sweepData) panelCells(k panelKey) []int {
	var out []int
	for _, i := range d.base {
		c := &d.cells[i]
		if d.src[i] == k.src && d.model[i] == k.model && c.Workload == k.workload {
			out = append(out, i)
		}
	}
	return out
}

// latencyPNG: one panel per workload (and model, machine), bars grouped by
// batch, one per placement, speedup vs cores above each bar.
func latencyPNG(d *sweepData, dir, name string) error {
	var ps []*plot.Plot
	pw := 5 * vg.Inch
	for _, k := range d.panels() {
		pw = max(pw, barPanelWidth(len(d.groups(k)), len(d.placements)))
	}
	for _, k := range d.panels() {
		gs := d.groups(k)
		var names []string
		var colors []color.Color
		var vals, cis [][]float64
		var labels [][]string
		for pi, p := range d.placements {
			v := make([]float64, len(gs))
			l := make([]string, len(gs))
			found := false
			ci := make([]float64, len(gs))
			for gi, g := range gs {
				c := d.cell(k, g, p)
				if c == nil {
					continue
				}
				found = true
				v[gi] = c.Latency.Mean
				ci[gi] = meanCI95(c)
				if base := d.cell(k, g, "cores"); base != nil && c.Latency.Mean > 0 {
					l[gi] = fmt.Sprintf("%.2f×", base.Latency.Mean/c.Latency.Mean)
				}
			}
			if !found {
				continue
			}
			names, colors = append(names, d.legend(p, d.panelCells(k))), append(colors, placementColor(p, pi))
			vals, labels, cis = append(vals, v), append(labels, l), append(cis, ci)
		}
		pl := sweepPlot("End-to-end latency: "+d.panelLabel(k, ", "), d.cellsCaption(d.panelCells(k)),
			"batch size", "mean end-to-end latency per request (s)", horizontalGrid)
		bw := barWidthFor(pw, len(gs), len(names))
		top, err := addGroupedBarsCI(pl, names, colors, vals, cis, labels, bw)
		if err != nil {
			return err
		}
		if top, err = addCIBars(pl, vals, cis, bw, top); err != nil {
			return err
		}
		var xl []string
		for _, g := range gs {
			xl = append(xl, d.groupLabel(g))
		}
		pl.NominalX(xl...)
		pl.X.Min, pl.X.Max = -0.6, float64(len(gs))-0.4
		pl.Y.Min, pl.Y.Max = 0, max(top, 1e-9)*1.3
		if !(top > 0) {
			noData(pl, "no finite mean latency in these cells")
		}
		ps = append(ps, pl)
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, pw, sweepPanelH, dir, name, d.produced(d.base)+"\nbars: mean end-to-end latency per request; error bars: 95% CI of the mean over the requests")
}

// addCIBars draws ± cis[s][g] error bars on the grouped bars vals (as
// addGroupedBars lays them out, width bw) and returns top raised to the
// highest bar end.
func addCIBars(pl *plot.Plot, vals, cis [][]float64, bw vg.Length, top float64) (float64, error) {
	for s := range vals {
		var rb rangeBars
		for g, v := range vals[s] {
			if v > 0 && cis[s][g] > 0 {
				rb.XYs = append(rb.XYs, plotter.XY{X: float64(g), Y: v})
				rb.YErrors = append(rb.YErrors, struct{ Low, High float64 }{cis[s][g], cis[s][g]})
				top = max(top, v+cis[s][g])
			}
		}
		if len(rb.XYs) == 0 {
			continue
		}
		eb, err := plotter.NewYErrorBars(rb)
		if err != nil {
			return top, err
		}
		eb.CapWidth = bw / 3
		pl.Add(offsetPlotter{eb, bw * vg.Length(float64(s)-float64(len(vals)-1)/2)})
	}
	return top, nil
}

// speedupPNG: SMEPilot Fig. 9 — one panel per machine and model, bars of
// the end-to-end speedup over the cores placement (mean latency of cores /
// mean latency) per placement, grouped by workload and batch, a dashed
// line at 1×, error bars from the two means' 95 % CIs (first-order:
// s·√((c_cores/l_cores)² + (c/l)²)).
func speedupPNG(d *sweepData, dir, name string) error {
	type pm struct{ src, model string }
	var keys []pm
	for _, k := range d.panels() {
		if !slices.Contains(keys, pm{k.src, k.model}) {
			keys = append(keys, pm{k.src, k.model})
		}
	}
	var placements []string
	for _, p := range d.placements {
		if p != "cores" {
			placements = append(placements, p)
		}
	}
	var ps []*plot.Plot
	pw := 5 * vg.Inch
	for _, key := range keys {
		type grp struct {
			k panelKey
			g batchGroup
		}
		var groups []grp
		var idx []int
		for _, k := range d.panels() {
			if k.src != key.src || k.model != key.model {
				continue
			}
			idx = append(idx, d.panelCells(k)...)
			for _, g := range d.groups(k) {
				if d.cell(k, g, "cores") != nil {
					groups = append(groups, grp{k, g})
				}
			}
		}
		if len(groups) == 0 {
			continue
		}
		pw = max(pw, barPanelWidth(len(groups), len(placements)))
		var names []string
		var colors []color.Color
		var vals, cis [][]float64
		var labels [][]string
		for pi, p := range placements {
			v := make([]float64, len(groups))
			ci := make([]float64, len(groups))
			l := make([]string, len(groups))
			found := false
			for gi, gr := range groups {
				c, base := d.cell(gr.k, gr.g, p), d.cell(gr.k, gr.g, "cores")
				if c == nil || !(c.Latency.Mean > 0) || !(base.Latency.Mean > 0) {
					continue
				}
				found = true
				sp := base.Latency.Mean / c.Latency.Mean
				v[gi], l[gi] = sp, fmt.Sprintf("%.2f×", sp)
				ci[gi] = sp * math.Hypot(meanCI95(base)/base.Latency.Mean, meanCI95(c)/c.Latency.Mean)
			}
			if !found {
				continue
			}
			names, colors = append(names, d.legend(p, idx)), append(colors, placementColor(p, pi+1))
			vals, cis, labels = append(vals, v), append(cis, ci), append(labels, l)
		}
		if len(names) == 0 {
			continue
		}
		title := "End-to-end speedup over cores: " + key.model
		if len(d.srcs) > 1 {
			title += ", " + key.src
		}
		pl := sweepPlot(title, d.cellsCaption(idx), "workload, batch", "speedup over cores (×, mean latency ratio)", horizontalGrid)
		bw := barWidthFor(pw, len(groups), len(names))
		top, err := addGroupedBarsCI(pl, names, colors, vals, cis, labels, bw)
		if err != nil {
			return err
		}
		if top, err = addCIBars(pl, vals, cis, bw, top); err != nil {
			return err
		}
		one, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: 1}, {X: float64(len(groups)) - 0.4, Y: 1}})
		if err != nil {
			return err
		}
		one.Dashes, one.Color = []vg.Length{vg.Points(4), vg.Points(3)}, color.Gray{Y: 80}
		pl.Add(one)
		pl.Legend.Add("cores (1×)", one)
		var xl []string
		for _, gr := range groups {
			xl = append(xl, gr.k.workload+" "+d.groupLabel(gr.g))
		}
		pl.NominalX(xl...)
		pl.X.Min, pl.X.Max = -0.6, float64(len(groups))-0.4
		pl.Y.Min, pl.Y.Max = 0, max(top, 1)*1.3
		ps = append(ps, pl)
	}
	if len(ps) == 0 {
		return nil
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, pw, sweepPanelH, dir, name,
		d.produced(d.base)+"\nbars: mean latency of cores / mean latency; error bars: from both means' 95% CIs over the requests")
}

// batchTicks labels exactly the batch sizes swept.
type batchTicks []int

func (b batchTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for _, v := range b {
		if x := float64(v); x >= lo && x <= hi {
			t = append(t, plot.Tick{Value: x, Label: strconv.Itoa(v)})
		}
	}
	return t
}

// throughputPNG: output tokens/s vs batch, one line per placement (and
// thread count), one panel per workload with at least two batch sizes.
func throughputPNG(d *sweepData, dir, name string) error {
	var ps []*plot.Plot
	for _, k := range d.panels() {
		gs := d.groups(k)
		bs := batchesOf(gs)
		if len(bs) < 2 {
			continue
		}
		pl := sweepPlot("Output throughput: "+d.panelLabel(k, ", "), d.cellsCaption(d.panelCells(k)),
			"batch size (sequences)", "output tokens/s", fullGrid)
		if bs[len(bs)-1] >= 8*max(1, bs[0]) && bs[0] > 0 {
			pl.X.Scale = plot.LogScale{}
		}
		pl.X.Tick.Marker = batchTicks(bs)
		pl.Legend.Top, pl.Legend.Left = true, true
		var threads []int
		for _, g := range gs {
			if !slices.Contains(threads, g.threads) {
				threads = append(threads, g.threads)
			}
		}
		for pi, p := range d.placements {
			for _, th := range threads {
				var xys plotter.XYs
				for _, g := range gs {
					if g.threads != th {
						continue
					}
					if c := d.cell(k, g, p); c != nil && finite(c.OutputTokS) {
						xys = append(xys, plotter.XY{X: float64(g.batch), Y: c.OutputTokS})
					}
				}
				if len(xys) == 0 {
					continue
				}
				l, pts, err := plotter.NewLinePoints(xys)
				if err != nil {
					return err
				}
				col := placementColor(p, pi)
				l.Color, l.Width = col, vg.Points(1.5)
				pts.Color, pts.Shape, pts.Radius = col, draw.CircleGlyph{}, vg.Points(3)
				if len(threads) > 1 {
					l.Dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}[slices.Index(threads, th)%3]
				}
				pl.Add(l, pts)
				lbl := d.legend(p, d.panelCells(k))
				if d.threadsVary {
					lbl = fmt.Sprintf("%s, %d threads", lbl, th)
				}
				pl.Legend.Add(lbl, l, pts)
			}
		}
		pl.Y.Min = 0
		ps = append(ps, pl)
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, 5.5*vg.Inch, sweepPanelH, dir, name, d.produced(d.base)+"\none replay per cell: output tokens / replay wall time (no repeats, so no spread)")
}

// meanCI95 is the half-width of the 95 % confidence interval of a cell's
// mean end-to-end latency over its requests (Student's t, n − 1 degrees
// of freedom); 0 with fewer than 2 requests.
func meanCI95(c *results.SweepCell) float64 {
	var xs []float64
	for _, r := range c.Requests {
		if finite(r.LatencyS) && r.LatencyS > 0 {
			xs = append(xs, r.LatencyS)
		}
	}
	if len(xs) < 2 {
		return 0
	}
	sd := stat.StdDev(xs, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(0.975)
	return t * sd / math.Sqrt(float64(len(xs)))
}

// Regime map cells: 9 pt text in rows 0.36 in high and columns 1.6 in wide.
const (
	regimeFontPt = 9
	regimeRowH   = 0.36 * vg.Inch
	regimeCellW  = 1.6 * vg.Inch
)

// machinesPNG: per (model, workload), bars per machine grouped by placement,
// speedup over the first machine on each bar.
func machinesPNG(d *sweepData, mps []machinePanel, dir, name string) error {
	var ps []*plot.Plot
	pw := max(5*vg.Inch, barPanelWidth(len(d.placements), len(d.srcs)))
	for _, mp := range mps {
		var placements []string
		for _, p := range d.placements {
			for _, src := range d.srcs {
				if d.machineCell(mp, src, p) != nil && !slices.Contains(placements, p) {
					placements = append(placements, p)
				}
			}
		}
		var names []string
		var colors []color.Color
		var vals, cis [][]float64
		var labels [][]string
		var idx []int
		for si, src := range d.srcs {
			v := make([]float64, len(placements))
			ci := make([]float64, len(placements))
			l := make([]string, len(placements))
			found := false
			for pi, p := range placements {
				c := d.machineCell(mp, src, p)
				if c == nil {
					continue
				}
				found = true
				v[pi] = c.Latency.Mean
				ci[pi] = meanCI95(c)
				if ref := d.machineCell(mp, d.srcs[0], p); ref != nil && c.Latency.Mean > 0 {
					l[pi] = fmt.Sprintf("%.2f×", ref.Latency.Mean/c.Latency.Mean)
				}
				for i := range d.cells {
					if &d.cells[i] == c {
						idx = append(idx, i)
					}
				}
			}
			if !found {
				continue
			}
			names, colors = append(names, src), append(colors, okabeIto[si%len(okabeIto)])
			vals, labels, cis = append(vals, v), append(labels, l), append(cis, ci)
		}
		title := mp.workload
		title += ", " + mp.model
		if mp.common {
			title += fmt.Sprintf(", B=%d", mp.batch[d.srcs[0]])
		} else {
			title += ", largest batch per machine"
		}
		pl := sweepPlot("Machines compared: "+title, d.cellsCaption(idx), "placement", "mean end-to-end latency per request (s)", horizontalGrid)
		bw := barWidthFor(pw, len(placements), len(names))
		top, err := addGroupedBarsCI(pl, names, colors, vals, cis, labels, bw)
		if err != nil {
			return err
		}
		if top, err = addCIBars(pl, vals, cis, bw, top); err != nil {
			return err
		}
		pl.NominalX(placements...)
		pl.X.Min, pl.X.Max = -0.6, float64(len(placements))-0.4
		pl.Y.Min, pl.Y.Max = 0, max(top, 1e-9)*1.3
		if !(top > 0) {
			noData(pl, "no finite mean latency in these cells")
		}
		ps = append(ps, pl)
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, pw, sweepPanelH, dir, name, d.produced(d.base)+"\nbars: mean end-to-end latency per request; error bars: 95% CI of the mean over the requests")
}
