// The sweep report's operator-level figures: time breakdown, measured vs
// predicted scatter, prediction error CDF, regime map.

package reports

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/roofline"
)

// breakdownPNG: 100 % stacked bars of the operator groups.
func breakdownPNG(d *sweepData, phase string, bars []breakdownBar, dir, name string) error {
	var idx []int
	for _, k := range d.panels() {
		idx = append(idx, d.panelCells(k)...)
	}
	pl := sweepPlot(fmt.Sprintf("Operator time breakdown, %s (largest batch per workload)", phase), d.fullCaption(idx),
		"", "share of measured "+phase+" operator time (%)", horizontalGrid)
	w := vg.Points(26)
	var prev *plotter.BarChart
	var stack []*plotter.BarChart
	cum := make([]float64, len(bars))
	var lxy plotter.XYs
	var ltxt []string
	for gi, g := range opGroups {
		vs := make(plotter.Values, len(bars))
		for bi, b := range bars {
			vs[bi] = 100 * b.share[gi]
		}
		bc, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return err
		}
		bc.Color = opGroupColors[g]
		bc.LineStyle.Color, bc.LineStyle.Width = color.White, vg.Points(0.5)
		if prev != nil {
			bc.StackOn(prev)
		}
		prev = bc
		pl.Add(bc)
		stack = append(stack, bc)
		for bi, v := range vs {
			if v >= 6 {
				lxy = append(lxy, plotter.XY{X: float64(bi), Y: cum[bi] + v/2})
				ltxt = append(ltxt, strconv.FormatFloat(v, 'f', 0, 64))
			}
			cum[bi] += v
		}
	}
	// Legend top to bottom as the stack.
	for gi := len(stack) - 1; gi >= 0; gi-- {
		pl.Legend.Add(opGroups[gi], stack[gi])
	}
	if len(lxy) > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: ltxt})
		if err != nil {
			return err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(7)
			lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		}
		pl.Add(lb)
	}
	var xl []string
	for _, b := range bars {
		xl = append(xl, b.label)
	}
	pl.NominalX(xl...)
	pl.X.Tick.Label.Font.Size = vg.Points(8)
	pl.X.Min, pl.X.Max = -0.7, float64(len(bars))-0.3
	// The axis ends at 100 %; the legend sits right of the plot.
	pl.Y.Min, pl.Y.Max = 0, 100
	pl.Y.Padding = 0
	pl.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}}
	pl.Legend.Top, pl.Legend.Left = true, false
	pl.Legend.XOffs = 1.3 * vg.Inch
	width := max(6*vg.Inch, vg.Length(len(bars))*0.75*vg.Inch+1.8*vg.Inch)
	return saveLegendRight(d, pl, width, 5.5*vg.Inch, dir, name)
}

// saveLegendRight writes a single-panel sweep plot with 1.4 in of room on its
// right for an outside legend.
func saveLegendRight(d *sweepData, pl *plot.Plot, w, h vg.Length, dir, name string) error {
	return d.o.Figures.save(d.ctx, rightMargin(pl, w, h, 1.4*vg.Inch), dir, name)
}

// rightMargin is pl drawn w × h with margin of it left blank on the right
// (where a legend with XOffs = margin goes).
func rightMargin(pl *plot.Plot, w, h, margin vg.Length) Figure {
	drawPl := titled(pl)
	return Figure{W: w + margin, H: h, draw: func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		c := dc
		c.Max.X -= margin
		drawPl(c)
	}}
}

// predScatterPNG: measured vs predicted seconds per operator sample.
func predScatterPNG(d *sweepData, pts []predPoint, pe *PredictionError, dir, name string) error {
	pl := sweepPlot(fmt.Sprintf("Measured vs predicted operator time (median |m/p − 1| %.3f, p90 %.3f)", pe.Median, pe.P90),
		d.fullCaption(d.base), "roofline-predicted time (s, log scale)", "measured time (s, log scale)", fullGrid)
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = plot.LogTicks{Prec: 1}, plot.LogTicks{Prec: 1}
	pl.Legend.Top, pl.Legend.Left = true, true
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, q := range pts {
		lo = min(lo, q.measured, q.predicted)
		hi = max(hi, q.measured, q.predicted)
	}
	lo, hi = lo/1.5, hi*1.5
	for i, f := range []float64{1, 2, 0.5} {
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo * f}, {X: hi, Y: hi * f}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 90}
		if i > 0 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			l.Color = color.Gray{Y: 160}
		} else {
			pl.Legend.Add("measured = predicted", l)
		}
		pl.Add(l)
	}
	shapes := map[string]draw.GlyphDrawer{string(roofline.Prefill): draw.CircleGlyph{}, string(roofline.Decode): draw.TriangleGlyph{}}
	for _, phase := range []string{string(roofline.Prefill), string(roofline.Decode), ""} {
		for _, g := range opGroups {
			var xys plotter.XYs
			for _, q := range pts {
				known := q.phase == string(roofline.Prefill) || q.phase == string(roofline.Decode)
				if q.group == g && (q.phase == phase || (phase == "" && !known)) {
					xys = append(xys, plotter.XY{X: q.predicted, Y: q.measured})
				}
			}
			if len(xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return err
			}
			sh := shapes[phase]
			if sh == nil {
				sh = draw.SquareGlyph{}
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: opGroupColors[g], Radius: vg.Points(3), Shape: sh}
			pl.Add(sc)
			lbl := g
			if phase != "" {
				lbl += ", " + phase
			}
			pl.Legend.Add(lbl, sc)
		}
	}
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = lo, hi, lo, hi
	return savePlot(d.ctx, d.o.Figures, pl, 7.5*vg.Inch, 7*vg.Inch, dir, name)
}

// predErrorPNG: empirical CDF of |measured/predicted − 1|.
func predErrorPNG(d *sweepData, pts []predPoint, pe *PredictionError, dir, name string) error {
	e := make([]float64, 0, len(pts))
	for _, q := range pts {
		e = append(e, math.Abs(q.measured/q.predicted-1))
	}
	slices.Sort(e)
	pl := sweepPlot(fmt.Sprintf("Operator prediction error, %d samples", len(e)), d.fullCaption(d.base),
		"|measured/predicted − 1| (fraction; 0.5 = 50 % off)", "fraction of operator samples ≤ x (CDF)", fullGrid)
	var xys plotter.XYs
	prev := 0.0
	for i, v := range e {
		xys = append(xys, plotter.XY{X: v, Y: prev}, plotter.XY{X: v, Y: float64(i+1) / float64(len(e))})
		prev = float64(i+1) / float64(len(e))
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width = okabeIto[0], vg.Points(1.5)
	pl.Add(l)
	pl.Legend.Add("empirical CDF", l)
	for i, m := range []struct {
		name string
		x, p float64
	}{{"median", pe.Median, 0.5}, {"p90", pe.P90, 0.9}} {
		v, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: m.p}})
		if err != nil {
			return err
		}
		v.Color, v.Dashes = okabeIto[3+i], []vg.Length{vg.Points(4), vg.Points(3)}
		pl.Add(v)
		pl.Legend.Add(fmt.Sprintf("%s %.3f", m.name, m.x), v)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: m.x, Y: m.p}}, Labels: []string{fmt.Sprintf(" %s %.3f", m.name, m.x)}})
		if err != nil {
			return err
		}
		lb.TextStyle[0].Font.Size = vg.Points(8)
		lb.TextStyle[0].YAlign = draw.YBottom
		pl.Add(lb)
	}
	pl.Legend.Top, pl.Legend.Left = false, false
	pl.Y.Min, pl.Y.Max = 0, 1.05
	pl.X.Min = 0
	pl.X.Max = max(e[len(e)-1]*1.05, 0.01)
	return savePlot(d.ctx, d.o.Figures, pl, 7.5*vg.Inch, 5*vg.Inch, dir, name)
}

// tint mixes c with white: f = 0 gives c, 1 white.
func tint(c color.Color, f float64) color.Color {
	r, g, b, _ := c.RGBA()
	m := func(v uint32) uint8 { return uint8(float64(v>>8)*(1-f) + 255*f) }
	return color.RGBA{m(r), m(g), m(b), 255}
}

// regimePNG: per machine, operators × batch cells coloured by regime (or
// measured/predicted, intensity or share) and labeled with their values.
func regimePNG(d *sweepData, maps []*regimeMap, dir, name string) error {
	var ps []*plot.Plot
	pw, ph := 0*vg.Inch, 0*vg.Inch
	for _, rm := range maps {
		pl := sweepPlot("Regime map: "+rm.src+"\n"+rm.colourKey(d.o.Precision), d.cellsCaption(rm.idx), "batch size", "", noGrid)
		pl.Legend.Top, pl.Legend.Left = true, false
		n := len(rm.rows)
		var ramp interface {
			At(float64) (color.Color, error)
		}
		var value func(*regimeCell) float64
		switch {
		case rm.machine:
		case rm.hasPred:
			cm := moreland.SmoothBlueRed()
			cm.SetMin(-2)
			cm.SetMax(2)
			ramp, value = cm, func(c *regimeCell) float64 { return math.Log2(c.ratio()) }
		case rm.hasInten:
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, byB := range rm.cells {
				for _, c := range byB {
					if v := math.Log10(c.intensity()); !math.IsNaN(v) {
						lo, hi = min(lo, v), max(hi, v)
					}
				}
			}
			cm := moreland.SmoothBlueRed()
			cm.SetMin(lo)
			cm.SetMax(max(hi, lo+1e-9))
			ramp, value = cm, func(c *regimeCell) float64 { return math.Log10(c.intensity()) }
		default:
			cm := moreland.SmoothBlueRed()
			cm.SetMin(0)
			cm.SetMax(1)
			ramp, value = cm, func(c *regimeCell) float64 { return c.share() }
		}
		var lxy plotter.XYs
		var ltxt []string
		seen := map[roofline.Regime]bool{}
		for ri, k := range rm.rows {
			y := float64(n - 1 - ri)
			for bi, bt := range rm.batches {
				c := rm.cells[k][bt]
				if c == nil {
					continue
				}
				x := float64(bi)
				fill := color.Color(color.RGBA{235, 235, 235, 255})
				if rm.machine {
					if c.regime != "" {
						fill = tint(rooflineRegimeColor[c.regime], 0.45)
					}
				} else if v := value(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
					if rm.hasPred {
						v = min(2, max(-2, v)) // the ramp spans 0.25× to 4×
					}
					if col, err := ramp.At(v); err == nil {
						fill = tint(col, 0.35)
					}
				}
				poly, err := plotter.NewPolygon(plotter.XYs{{X: x - 0.5, Y: y - 0.5}, {X: x + 0.5, Y: y - 0.5}, {X: x + 0.5, Y: y + 0.5}, {X: x - 0.5, Y: y + 0.5}})
				if err != nil {
					return err
				}
				poly.Color = fill
				poly.LineStyle.Color, poly.LineStyle.Width = color.White, vg.Points(1)
				pl.Add(poly)
				if rm.machine && c.regime != "" && !seen[c.regime] {
					seen[c.regime] = true
				}
				lxy = append(lxy, plotter.XY{X: x, Y: y})
				ltxt = append(ltxt, c.text(" ", false))
			}
		}
		for _, rg := range rooflineRegimeOrder {
			if !seen[rg] {
				continue
			}
			sw, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
			if err != nil {
				return err
			}
			sw.Color = tint(rooflineRegimeColor[rg], 0.45)
			pl.Legend.Add(string(rg), sw)
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: ltxt})
		if err != nil {
			return err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(regimeFontPt)
			lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		}
		pl.Add(lb)
		var yl []string
		for ri := n - 1; ri >= 0; ri-- {
			yl = append(yl, rm.rows[ri][0]+" "+rm.rows[ri][1])
		}
		pl.NominalY(yl...)
		var xl []string
		for _, bt := range rm.batches {
			xl = append(xl, fmt.Sprintf("B=%d", bt))
		}
		pl.NominalX(xl...)
		pl.X.Min, pl.X.Max = -0.5, float64(len(rm.batches))-0.5
		pl.Y.Min, pl.Y.Max = -0.5, float64(n)-0.5
		legendW := 0 * vg.Inch
		if len(seen) > 0 {
			// An empty column right of the grid for the regime legend.
			pl.X.Max++
			legendW = 1.3 * vg.Inch
		}
		pl.X.Padding, pl.Y.Padding = 0, 0
		pw = max(pw, 2.2*vg.Inch+vg.Length(len(rm.batches))*regimeCellW+legendW, 6*vg.Inch)
		ph = max(ph, 2.1*vg.Inch+max(vg.Length(n)*regimeRowH, vg.Length(len(seen))*0.2*vg.Inch))
		ps = append(ps, pl)
	}
	return savePanels(d.ctx, d.o.Figures, ps, 2, pw, ph, dir, name, d.produced(d.base))
}
