package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/roofline"
)

// Colors of the regimes (Okabe–Ito palette, readable in grey and by
// colour-blind readers) and of the targets' roofs.
var (
	rooflineRegimeColor = map[roofline.Regime]color.Color{
		roofline.MemoryBound:   color.RGBA{0, 114, 178, 255},   // blue
		roofline.RidgeCrossing: color.RGBA{230, 159, 0, 255},   // orange
		roofline.ComputeBound:  color.RGBA{213, 94, 0, 255},    // vermilion
		roofline.NonLinear:     color.RGBA{0, 158, 115, 255},   // green
		roofline.NoCeiling:     color.RGBA{120, 120, 120, 255}, // grey
		// Up-convert-bound quantized GEMVs (low-bit GEMV paper Eq. 3).
		roofline.UpConvertBound: color.RGBA{204, 121, 167, 255}, // reddish purple
	}
	rooflineRegimeOrder = []roofline.Regime{roofline.MemoryBound, roofline.UpConvertBound, roofline.RidgeCrossing, roofline.ComputeBound, roofline.NonLinear, roofline.NoCeiling}
	rooflineTargetColor = []color.Color{
		color.RGBA{40, 40, 40, 255},
		color.RGBA{204, 121, 167, 255},
		color.RGBA{86, 180, 233, 255},
		color.RGBA{150, 110, 40, 255},
	}
	rooflineRoofColor = color.RGBA{160, 160, 160, 255}
)

// rooflineSize is the PNG size: 11 × 7.5 in at gonum/plot's 96 dpi.
const rooflineW, rooflineH = 11 * vg.Inch, 7.5 * vg.Inch

// rooflinePoint is one labeled operator point.
type rooflinePoint struct {
	x, y   float64
	label  string
	regime roofline.Regime
}

// RooflineFigure draws the analysis as a log-log roofline: arithmetic
// intensity (FLOP/byte) against attainable GFLOP/s. Every target's roof
// min(π_t, β_t·I) is a solid line labeled with its ceiling and bandwidth
// (dashed over an earlier target whose β it shares, so both stay
// visible), extra roofs (cache levels, remote NUMA nodes) are dashed grey
// lines in the legend in bandwidth order and tagged in that order, ridge
// points I_t = π_t/β_t are marked, and every operator with FLOPs is a point
// at its intensity and planned performance (FLOPs / plan time), colored by
// regime; non-linear operators, timed in elements/s, are a rug of
// intensities along the bottom. Operators of one regime that fall on the
// same spot share one label; MoE experts with the same routed token count
// are one point. The title names the model, its layers, the request and
// the weight, activation and KV precisions.
func RooflineFigure(a *roofline.Analysis) (Figure, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s%s on %s: %s B=%d T=%d C=%d\nweights %s, activations %s, KV %s; ceilings at %s (roofline prediction, not measured)",
		a.ModelName, rooflineLayers(a), a.Machine, a.Request.Phase, a.Request.Batch, a.Request.Tokens, a.Request.Context,
		a.Request.Weight, a.Request.Act, a.Request.KV, a.Precision)
	p.X.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Label.Text = "attainable performance (GFLOP/s)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	// The legend top left: above the roofs, where no operator can be.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())

	// Non-linear operators have no FLOP/s ceiling (they are timed in
	// elements/s): they are drawn as a rug of intensities along the
	// bottom, never at a FLOP/s.
	var pts, rug []rooflinePoint
	for _, q := range rooflinePoints(a) {
		if q.regime == roofline.NonLinear {
			rug = append(rug, q)
		} else {
			pts = append(pts, q)
		}
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	upd := func(x, y float64) {
		if x > 0 && y > 0 {
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
	}
	for _, q := range pts {
		upd(q.x, q.y)
	}
	for _, q := range rug {
		if q.x > 0 {
			xmin, xmax = math.Min(xmin, q.x), math.Max(xmax, q.x)
		}
	}
	for _, t := range a.Targets {
		if t.Ridge > 0 {
			upd(t.Ridge, t.CeilingGFLOPS)
		}
	}
	if math.IsInf(xmin, 1) || math.IsInf(ymin, 1) {
		if len(pts) == 0 && len(rug) == 0 && len(a.Targets) == 0 {
			noData(p, "no operators and no targets to draw")
			return plotFigure(p, rooflineW, rooflineH), nil
		}
		if math.IsInf(xmin, 1) {
			xmin, xmax = 0.1, 100
		}
		if math.IsInf(ymin, 1) {
			ymin, ymax = 1, 1000
		}
	}
	xmin, xmax = xmin/3, xmax*6
	maxBW := 0.0
	for _, t := range a.Targets {
		maxBW = math.Max(maxBW, t.BandwidthGBps)
	}
	for _, r := range a.Roofs {
		maxBW = math.Max(maxBW, r.GBps)
	}
	ymax = math.Max(ymax, 1.0) * 3
	ymin = math.Max(ymin/3, 1e-3)

	// Target roofs.
	var labels []rooflinePoint
	xs := rooflineLogSpace(xmin, xmax, 200)
	for i, t := range a.Targets {
		line := make(plotter.XYs, 0, len(xs))
		for _, x := range xs {
			y := roofline.Attainable(t.CeilingGFLOPS, t.BandwidthGBps, x)
			if y <= ymax && y >= ymin {
				line = append(line, plotter.XY{X: x, Y: y})
			}
		}
		if len(line) < 2 {
			continue
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return Figure{}, err
		}
		l.Color = rooflineTargetColor[i%len(rooflineTargetColor)]
		l.Width = vg.Points(2)
		// A roof that coincides with an earlier target's (same β) is
		// dashed on top of it so that both stay visible.
		same := ""
		for _, u := range a.Targets[:i] {
			if u.BandwidthGBps > 0 && math.Abs(t.BandwidthGBps/u.BandwidthGBps-1) < 0.02 {
				same = u.Name
				break
			}
		}
		if same != "" {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		}
		p.Add(l)
		name := fmt.Sprintf("%s: β %s", t.Name, rooflineGB(t.BandwidthGBps))
		if t.CeilingGFLOPS > 0 {
			name = fmt.Sprintf("%s: π %s, β %s", t.Name, rooflineGF(t.CeilingGFLOPS), rooflineGB(t.BandwidthGBps))
			// Ceiling label at the right end, ridge marker and label.
			labels = append(labels, rooflinePoint{x: t.Ridge * 2, y: t.CeilingGFLOPS * 1.08, label: t.Name + " π " + rooflineGF(t.CeilingGFLOPS)})
			rp, _ := plotter.NewScatter(plotter.XYs{{X: t.Ridge, Y: t.CeilingGFLOPS}})
			rp.GlyphStyle = draw.GlyphStyle{Color: l.Color, Radius: vg.Points(5), Shape: draw.RingGlyph{}}
			p.Add(rp)
			labels = append(labels, rooflinePoint{x: t.Ridge, y: t.CeilingGFLOPS / 1.25, label: fmt.Sprintf("ridge %.2f", t.Ridge)})
		} else {
			labels = append(labels, rooflinePoint{x: line[len(line)-1].X / 1.3, y: line[len(line)-1].Y / 1.5, label: t.Name + " (no ceiling)"})
		}
		if same != "" {
			name += " (dashed: same roof as " + same + ")"
		}
		p.Legend.Add(name, l)
	}
	// Extra roofs (cache levels, remote NUMA nodes), highest bandwidth
	// first: one legend entry each, and a short tag on each line at a
	// common intensity so that the tags stack in bandwidth order.
	roofs := slices.Clone(a.Roofs)
	slices.SortStableFunc(roofs, func(x, y roofline.Roof) int { return cmp.Compare(y.GBps, x.GBps) })
	var tags []rooflinePoint
	for i, r := range roofs {
		line := plotter.XYs{}
		for _, x := range xs {
			if y := r.GBps * x; y <= ymax && y >= ymin {
				line = append(line, plotter.XY{X: x, Y: y})
			}
		}
		if len(line) < 2 {
			continue
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return Figure{}, err
		}
		l.Color = rooflineRoofColor
		l.Dashes = [][]vg.Length{{vg.Points(4), vg.Points(3)}, {vg.Points(1), vg.Points(2)}, {vg.Points(8), vg.Points(3)}}[i%3]
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s roof: β %s", r.Level, rooflineGB(r.GBps)), l)
		tags = append(tags, rooflinePoint{y: r.GBps, label: r.Level})
	}
	if err := rooflineRoofTags(p, tags, xmin, xmax, ymin, ymax); err != nil {
		return Figure{}, err
	}
	// Operators by regime.
	for _, rg := range rooflineRegimeOrder {
		var xy plotter.XYs
		for _, q := range pts {
			if q.regime == rg {
				xy = append(xy, plotter.XY{X: q.x, Y: q.y})
			}
		}
		if len(xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return Figure{}, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: rooflineRegimeColor[rg], Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		p.Add(s)
		p.Legend.Add(string(rg), s)
	}
	// The non-linear rug, just above the x axis.
	if len(rug) > 0 {
		rugY := ymin * math.Pow(ymax/ymin, 0.03)
		var xy plotter.XYs
		for i := range rug {
			rug[i].y = rugY
			xy = append(xy, plotter.XY{X: rug[i].x, Y: rugY})
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return Figure{}, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: rooflineRegimeColor[roofline.NonLinear], Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}
		p.Add(s)
		p.Legend.Add("non-linear: intensity only (elements/s, no FLOP/s)", s)
		pts = append(pts, rug...)
	}
	// Operator labels first so they get the spots next to their points.
	labels = append(rooflineClusterLabels(pts), labels...)
	if err := rooflineAddLabels(p, labels, pts, math.Log10(xmax/xmin), math.Log10(ymax/ymin)); err != nil {
		return Figure{}, err
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin, xmax, ymin, ymax
	return plotFigure(p, rooflineW, rooflineH), nil
}

// RooflinePNG writes RooflineFigure as a PNG at its native size.
func RooflinePNG(w io.Writer, a *roofline.Analysis) error {
	f, err := RooflineFigure(a)
	if err != nil {
		return err
	}
	return writePNG(w, f)
}

// rooflinePoints turns placed operators into points; experts with the same
// routed token count collapse into one.
func rooflinePoints(a *roofline.Analysis) []rooflinePoint {
	var pts []rooflinePoint
	add := func(prefix string, ps []roofline.Placed) {
		experts := map[int][]int{}
		for _, p := range ps {
			if p.Expert >= 0 {
				experts[p.RoutedTokens] = append(experts[p.RoutedTokens], p.Expert)
				continue
			}
			if p.Time <= 0 || p.FLOPs <= 0 {
				continue
			}
			pts = append(pts, rooflinePoint{x: p.Intensity, y: p.FLOPs / p.Time / 1e9, label: prefix + p.Name, regime: p.Regime})
		}
		var counts []int
		for n := range experts {
			counts = append(counts, n)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(counts)))
		for _, n := range counts {
			for _, p := range ps {
				if p.Expert >= 0 && p.RoutedTokens == n {
					lab := fmt.Sprintf("%d experts × %d tok", len(experts[n]), n)
					if len(experts[n]) == 1 {
						lab = fmt.Sprintf("expert %d (%d tok)", p.Expert, n)
					}
					pts = append(pts, rooflinePoint{x: p.Intensity, y: p.FLOPs / p.Time / 1e9, label: prefix + lab, regime: p.Regime})
					break
				}
			}
		}
	}
	for _, l := range a.Layers {
		pre := ""
		if len(a.Layers) > 1 {
			pre = l.Kind + ":"
		}
		add(pre, l.Ops)
	}
	add("", a.Head)
	return pts
}

// rooflineClusterLabels merges the labels of points of one regime closer
// than 4% of a decade on both axes, listing up to three names per line (a
// memory-bound operator never shares a label with a non-linear one).
func rooflineClusterLabels(pts []rooflinePoint) []rooflinePoint {
	sorted := append([]rooflinePoint(nil), pts...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].x < sorted[j].x })
	used := make([]bool, len(sorted))
	var out []rooflinePoint
	for i, p := range sorted {
		if used[i] {
			continue
		}
		names := []string{p.label}
		for j := i + 1; j < len(sorted); j++ {
			q := sorted[j]
			if used[j] || q.regime != p.regime || math.Abs(math.Log10(q.x/p.x)) > 0.04 || math.Abs(math.Log10(q.y/p.y)) > 0.04 {
				continue
			}
			used[j] = true
			names = append(names, q.label)
		}
		var lines []string
		for k := 0; k < len(names); k += 3 {
			lines = append(lines, strings.Join(names[k:min(k+3, len(names))], ", "))
		}
		out = append(out, rooflinePoint{x: p.x * 1.12, y: p.y, label: strings.Join(lines, "\n")})
	}
	return out
}

// rooflineAddLabels adds text labels, moving a label down (then up) by
// whole lines while its estimated box overlaps one already placed, and
// drawing a thin leader from the point to a label that moved. Boxes are
// estimated in log-decades from the font size and the plot size; xDec and
// yDec are the decades the axes span (0 for a linear axis: no layout).
func rooflineAddLabels(p *plot.Plot, pts []rooflinePoint, avoid []rooflinePoint, xDec, yDec float64) error {
	if len(pts) == 0 {
		return nil
	}
	const fontPt = 8.0
	plotWIn, plotHIn := float64(rooflineW/vg.Inch)-1.2, float64(rooflineH/vg.Inch)-1.0
	charDec, lineDec := 0.0, 0.0
	if xDec > 0 && yDec > 0 {
		charDec = 0.55 * fontPt / 72 / plotWIn * xDec
		lineDec = 1.25 * fontPt / 72 / plotHIn * yDec
	}
	type box struct{ x0, x1, y0, y1 float64 }
	var placed []box
	for _, a := range avoid { // the glyphs themselves
		x, y := math.Log10(a.x), math.Log10(a.y)
		placed = append(placed, box{x - charDec, x + charDec, y - lineDec/2, y + lineDec/2})
	}
	overlaps := func(b box) bool {
		for _, o := range placed {
			if b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 {
				return true
			}
		}
		return false
	}
	d := plotter.XYLabels{}
	var leaders []plotter.XYs
	for _, q := range pts {
		lines := strings.Split(q.label, "\n")
		width := 0
		for _, l := range lines {
			width = max(width, len([]rune(l)))
		}
		x0, y := math.Log10(q.x), math.Log10(q.y)
		mk := func(dy float64) box {
			h := float64(len(lines)) * lineDec
			return box{x0, x0 + float64(width)*charDec, y + dy - h/2, y + dy + h/2}
		}
		dy := 0.0
		if lineDec > 0 {
			for k := 1; k < 40 && overlaps(mk(dy)); k++ {
				dy = float64((k+1)/2) * lineDec * 1.05
				if k%2 == 1 {
					dy = -dy
				}
			}
		}
		placed = append(placed, mk(dy))
		ny := math.Pow(10, y+dy)
		d.XYs = append(d.XYs, plotter.XY{X: q.x, Y: ny})
		d.Labels = append(d.Labels, q.label)
		if dy != 0 {
			leaders = append(leaders, plotter.XYs{{X: q.x / 1.1, Y: q.y}, {X: q.x, Y: ny}})
		}
	}
	for _, xy := range leaders {
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = color.RGBA{150, 150, 150, 255}, vg.Points(0.5)
		p.Add(l)
	}
	l, err := plotter.NewLabels(d)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(fontPt)
		l.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(l)
	return nil
}

func rooflineLogSpace(lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = lo * math.Pow(hi/lo, float64(i)/float64(n-1))
	}
	return out
}

func rooflineGF(g float64) string {
	if g >= 1000 {
		return fmt.Sprintf("%.3g TFLOP/s", g/1000)
	}
	return fmt.Sprintf("%.3g GFLOP/s", g)
}

func rooflineGB(g float64) string {
	if g >= 1000 {
		return fmt.Sprintf("%.3g TB/s", g/1000)
	}
	return fmt.Sprintf("%.3g GB/s", g)
}

// RooflineSweepFigure draws a sweep (SMEPilot Insight 2): the arithmetic
// intensity of every non-expert operator with FLOPs against the swept
// variable, points colored by regime, with the targets' ridge points as
// horizontal dashed lines, so the value where an operator's line crosses a
// ridge is where it changes placement. Operators with identical curves
// share one label.
func RooflineSweepFigure(s *roofline.SweepResult, title string) (Figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = string(s.Var)
	p.Y.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	v := s.Values
	if v[0] > 0 && float64(v[len(v)-1])/float64(v[0]) >= 16 {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())

	xmin, xmax := float64(v[0]), float64(v[len(v)-1])
	if xmin == xmax {
		xmin, xmax = xmin/2, xmax*2
	}
	ymin, ymax := math.Inf(1), math.Inf(-1)
	type curve struct {
		names []string
		pts   []roofline.SweepPoint
	}
	var curves []*curve
	byKey := map[string]*curve{}
	for _, sr := range s.Series {
		if _, expert := roofline.ParseExpertOp(sr.Operator); expert || sr.Operator == roofline.OpEmbed || len(sr.Points) == 0 || sr.Points[0].Intensity <= 0 {
			continue
		}
		var key strings.Builder
		for _, q := range sr.Points {
			fmt.Fprintf(&key, "%.4g/%s;", q.Intensity, q.Regime)
		}
		c := byKey[key.String()]
		if c == nil {
			c = &curve{pts: sr.Points}
			byKey[key.String()] = c
			curves = append(curves, c)
		}
		c.names = append(c.names, sr.Operator)
		for _, q := range sr.Points {
			ymin, ymax = math.Min(ymin, q.Intensity), math.Max(ymax, q.Intensity)
		}
	}
	for _, t := range s.Targets {
		if t.Ridge > 0 {
			ymin, ymax = math.Min(ymin, t.Ridge), math.Max(ymax, t.Ridge)
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 0.1, 10
	}
	if len(curves) == 0 {
		noData(p, "no operator with FLOPs in the sweep")
		return plotFigure(p, rooflineW, rooflineH), nil
	}
	ymin, ymax = ymin/2, ymax*2
	seen := map[roofline.Regime]bool{}
	var labels []rooflinePoint
	for _, c := range curves {
		line := plotter.XYs{}
		for _, q := range c.pts {
			line = append(line, plotter.XY{X: float64(q.Value), Y: q.Intensity})
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return Figure{}, err
		}
		l.Color, l.Width = color.RGBA{170, 170, 170, 255}, vg.Points(1)
		p.Add(l)
		for _, rg := range rooflineRegimeOrder {
			var xy plotter.XYs
			for _, q := range c.pts {
				if q.Regime == rg {
					xy = append(xy, plotter.XY{X: float64(q.Value), Y: q.Intensity})
				}
			}
			if len(xy) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return Figure{}, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: rooflineRegimeColor[rg], Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			p.Add(sc)
			if !seen[rg] {
				seen[rg] = true
				p.Legend.Add(string(rg), sc)
			}
		}
		end := c.pts[len(c.pts)-1]
		labels = append(labels, rooflinePoint{x: float64(end.Value), y: end.Intensity, label: strings.Join(c.names, ", ")})
	}
	for i, t := range s.Targets {
		if t.Ridge <= 0 {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: t.Ridge}, {X: xmax, Y: t.Ridge}})
		if err != nil {
			return Figure{}, err
		}
		l.Color, l.Dashes, l.Width = rooflineTargetColor[i%len(rooflineTargetColor)], []vg.Length{vg.Points(5), vg.Points(3)}, vg.Points(1.5)
		p.Add(l)
		name := fmt.Sprintf("%s ridge %.2f FLOP/B", t.Name, t.Ridge)
		if t.Kind == roofline.KindMixed {
			name += " (not a regime boundary)"
		}
		p.Legend.Add(name, l)
		labels = append(labels, rooflinePoint{x: float64(v[len(v)-1]), y: t.Ridge, label: fmt.Sprintf("%s ridge %.2f", t.Name, t.Ridge)})
	}
	// Curve labels sit right of the last value; leave room for them.
	if _, ok := p.X.Scale.(plot.LogScale); ok {
		xmax *= 2.2
	} else {
		xmax += (xmax - xmin) * 0.25
	}
	for i := range labels {
		if labels[i].x == float64(v[len(v)-1]) {
			labels[i].x *= 1.04
		}
	}
	xDec := 0.0
	if _, ok := p.X.Scale.(plot.LogScale); ok {
		xDec = math.Log10(xmax / xmin)
	}
	if err := rooflineAddLabels(p, labels, nil, xDec, math.Log10(ymax/ymin)); err != nil {
		return Figure{}, err
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin, xmax, ymin, ymax
	return plotFigure(p, rooflineW, rooflineH), nil
}

// RooflineSweepPNG writes RooflineSweepFigure as a PNG at its native size.
func RooflineSweepPNG(w io.Writer, s *roofline.SweepResult, title string) error {
	f, err := RooflineSweepFigure(s, title)
	if err != nil {
		return err
	}
	return writePNG(w, f)
}

// rooflineLayers is " (28 layers)" or " (24 dense + 24 moe layers)".
func rooflineLayers(a *roofline.Analysis) string {
	var parts []string
	n := 0
	for _, l := range a.Layers {
		n += l.Count
		parts = append(parts, fmt.Sprintf("%d %s", l.Count, l.Kind))
	}
	switch {
	case n == 0:
		return ""
	case len(parts) == 1:
		return fmt.Sprintf(" (%d layers)", n)
	}
	return " (" + strings.Join(parts, " + ") + " layers)"
}

// rooflineRoofTags tags each extra roof (pts: y the bandwidth in GB/s,
// label the level, highest bandwidth first) just right of its line at one
// intensity, the tags at least a line apart and in the same order.
func rooflineRoofTags(p *plot.Plot, pts []rooflinePoint, xmin, xmax, ymin, ymax float64) error {
	if len(pts) == 0 {
		return nil
	}
	// The common intensity: the highest roof at about 60 % of the height.
	x := math.Pow(10, math.Log10(ymin)+0.6*math.Log10(ymax/ymin)) / pts[0].y
	x = math.Min(math.Max(x, xmin*1.5), xmax/4)
	var xys plotter.XYs
	var labels []string
	for _, q := range pts {
		xys = append(xys, plotter.XY{X: x * 1.06, Y: q.y * x})
		labels = append(labels, q.label)
	}
	l, err := newStackedLabels(xys, labels, 8, draw.XLeft)
	if err != nil {
		return err
	}
	l.Style.Color = color.Gray{Y: 90}
	p.Add(l)
	return nil
}

// noData turns p into a figure that says it has no data (why) instead of
// drawing empty axes.
func noData(p *plot.Plot, why string) {
	p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks{}, plot.ConstantTicks{}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: 0.5, Y: 0.5}}, Labels: []string{"no data: " + why}})
	if err != nil {
		return
	}
	l.TextStyle[0].Font.Size = vg.Points(14)
	l.TextStyle[0].XAlign, l.TextStyle[0].YAlign = draw.XCenter, draw.YCenter
	p.Add(l)
}

// RooflineSweepTitle is the title of a sweep figure: the model (with its
// layer count when > 0), the machine and the request with the swept
// variable given as its range, never at the base request's single value
// ("decode, batch B = 1..64, T=1 C=1024, weights fp16, act fp16, KV fp16").
func RooflineSweepTitle(model string, layers int, machine string, r roofline.Request, s *roofline.SweepResult) string {
	vals := ""
	if n := len(s.Values); n > 0 {
		vals = fmt.Sprintf("%d..%d (%d values)", s.Values[0], s.Values[n-1], n)
	}
	var fixed []string
	switch s.Var {
	case roofline.SweepBatch:
		vals = "batch B = " + vals
	case roofline.SweepTokens:
		vals = "tokens T = " + vals
	case roofline.SweepContext:
		vals = "context C = " + vals
	default:
		vals = string(s.Var) + " = " + vals
	}
	if s.Var != roofline.SweepBatch {
		fixed = append(fixed, fmt.Sprintf("B=%d", r.Batch))
	}
	if s.Var != roofline.SweepTokens {
		fixed = append(fixed, fmt.Sprintf("T=%d", r.Tokens))
	}
	if s.Var != roofline.SweepContext {
		c := fmt.Sprintf("C=%d", r.Context)
		if s.Var == roofline.SweepTokens && r.Phase == roofline.Prefill {
			c = "C=T"
		}
		fixed = append(fixed, c)
	}
	m := model
	if layers > 0 {
		m = fmt.Sprintf("%s (%d layers)", model, layers)
	}
	t := fmt.Sprintf("%s on %s: %s, %s swept, %s\nweights %s, activations %s, KV %s (roofline prediction, not measured)",
		m, machine, r.Phase, vals, strings.Join(fixed, " "), r.Weight, r.Act, r.KV)
	if r.Routing.Kind != "" && r.Routing.Kind != "uniform" {
		t += ", routing " + r.Routing.String()
	}
	return t
}
