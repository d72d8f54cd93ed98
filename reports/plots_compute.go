package reports

import (
	"cmp"
	"context"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// allThreadPeaks returns the compute peaks measured at the largest thread count.
func allThreadPeaks(c *results.Compute) []results.ComputePeak {
	maxT := 0
	for _, pk := range c.Peaks {
		maxT = max(maxT, pk.Threads)
	}
	var out []results.ComputePeak
	for _, pk := range c.Peaks {
		if pk.Threads == maxT && pk.Rate.Median > 0 {
			out = append(out, pk)
		}
	}
	return out
}

// allThreadLevels returns the memory roofs measured at the largest thread count.
func allThreadLevels(m *results.Memory) []results.LevelBandwidth {
	maxT := 0
	for _, l := range m.Levels {
		maxT = max(maxT, l.Threads)
	}
	var out []results.LevelBandwidth
	for _, l := range m.Levels {
		if l.Threads == maxT && l.GBps.Median > 0 {
			out = append(out, l)
		}
	}
	return out
}

// rooflineCeiling is one compute ceiling of the probe's roofline figure.
type rooflineCeiling struct {
	prec, what string // what: "attained GEMM" or "FMA peak"
	source     string // kernel or backend and shape
	gflops     float64
	used       bool // the ceiling bench roofline's predictions use
}

// probeCeilings returns, per floating-point precision measured at the
// largest thread count, the best FMA peak of the vector cores (and of a
// matrix unit) and the ceiling roofline.FromProfile gives the same
// targets (the attained GEMM where the matrix section measured one, else
// the FMA peak), marked used; integer ceilings (GOP/s) are returned apart.
func probeCeilings(p *results.Profile) (float []rooflineCeiling, integer []string) {
	used := map[[2]string]float64{} // (target kind, precision) → GFLOP/s
	if m, err := roofline.FromProfile(p, "profile"); err == nil {
		for _, t := range m.Targets {
			if t.Kind == roofline.KindCores || t.Kind == roofline.KindMatrix {
				for prec, v := range t.CeilingsGFLOPS {
					used[[2]string{t.Kind, prec}] = v
				}
			}
		}
	}
	best := map[[2]string]results.ComputePeak{}
	for _, pk := range allThreadPeaks(p.Compute) {
		kind := roofline.KindCores
		if pk.ISA == "amx" || pk.ISA == "sme" {
			kind = roofline.KindMatrix
		}
		k := [2]string{kind, pk.Precision}
		if b, ok := best[k]; !ok || pk.Rate.Median > b.Rate.Median {
			best[k] = pk
		}
	}
	var gemm map[[2]string]results.GEMMResult
	if mx := p.Matrix; mx != nil {
		gemm = map[[2]string]results.GEMMResult{}
		maxT := 0
		for _, g := range mx.GEMM {
			maxT = max(maxT, g.Threads)
		}
		for _, g := range mx.GEMM {
			kind := roofline.KindCores
			if strings.HasPrefix(g.Backend, "amx") || strings.HasPrefix(g.Backend, "sme") {
				kind = roofline.KindMatrix
			}
			k := [2]string{kind, g.DType}
			if b, ok := gemm[k]; g.Threads == maxT && (!ok || g.GFLOPS.Median > b.GFLOPS.Median) {
				gemm[k] = g
			}
		}
	}
	keys := map[[2]string]bool{}
	for k := range best {
		keys[k] = true
	}
	for k := range gemm {
		keys[k] = true
	}
	var sorted [][2]string
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.SortFunc(sorted, func(a, b [2]string) int { return cmpStrings(a[0], b[0], a[1], b[1]) })
	for _, k := range sorted {
		unit := "GFLOP/s"
		if pk, ok := best[k]; ok && pk.Unit != "" {
			unit = pk.Unit
		}
		if unit != "GFLOP/s" || strings.HasPrefix(k[1], "int") {
			v := best[k].Rate.Median
			if g, ok := gemm[k]; ok {
				v = g.GFLOPS.Median
			}
			integer = append(integer, fmt.Sprintf("%s %.0f GOP/s", k[1], v))
			continue
		}
		target := ""
		if k[0] == roofline.KindMatrix {
			target = " (matrix unit)"
		}
		u, hasU := used[k]
		if g, ok := gemm[k]; ok {
			float = append(float, rooflineCeiling{prec: k[1], what: "attained GEMM" + target, gflops: g.GFLOPS.Median,
				source: fmt.Sprintf("%s %dx%dx%d", g.Backend, g.M, g.N, g.K), used: hasU && math.Abs(u-g.GFLOPS.Median) <= 1e-9*u})
		}
		if pk, ok := best[k]; ok {
			float = append(float, rooflineCeiling{prec: k[1], what: "FMA peak" + target, gflops: pk.Rate.Median,
				source: pk.Kernel, used: hasU && math.Abs(u-pk.Rate.Median) <= 1e-9*u})
		}
	}
	return float, integer
}

// measuredRoofline draws the machine's roofline from the profile: every
// memory roof (L1, L2, L3, DRAM read, all threads) as bandwidth x intensity
// and, per floating-point precision, the FMA peak (dashed) and the attained
// GEMM (matrix section) as horizontal lines; the ceiling `bench roofline`
// predicts with (roofline.FromProfile: the attained GEMM where measured,
// else the FMA peak) is solid and labeled "used for predictions".
// Log-log, GFLOP/s only: integer ceilings (GOP/s) are named in the title,
// not drawn (SMEPilot §3.2: P(I) = min(π, β·I)).
func measuredRoofline(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	peaks := allThreadPeaks(p.Compute)
	levels := allThreadLevels(p.Memory)
	ceilings, integer := probeCeilings(p)
	threads := 0
	var ns []int
	for _, l := range levels {
		threads = max(threads, l.Threads)
		ns = append(ns, l.GBps.N)
	}
	for _, pk := range peaks {
		ns = append(ns, pk.Rate.N)
	}
	produced := fmt.Sprintf("%d threads; medians of %s; solid ceiling: used for predictions (bench roofline), dashed: not used", threads, strings.TrimPrefix(spread(ns), "median of "))
	produced = strings.Replace(produced, ", bars min to max", "", 1)
	var all []results.Stat
	for _, l := range levels {
		all = append(all, l.GBps)
	}
	for _, pk := range peaks {
		all = append(all, pk.Rate)
	}
	produced += noisyNote(all)
	if len(integer) > 0 {
		produced += "\ninteger ceilings not drawn on this GFLOP/s axis: " + strings.Join(integer, ", ")
	}
	pl := newPlot(title, "arithmetic intensity (FLOP/byte, log scale)", "attainable GFLOP/s (log scale)", p, produced)
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = logTicks{}, logTicks{}
	lo, hi := 1.0/16, 1024.0
	top := 0.0
	for _, c := range ceilings {
		top = max(top, c.gflops)
	}
	for i, l := range levels {
		// The roof rises until the highest ceiling.
		xEnd := hi
		if top > 0 {
			xEnd = min(hi, top/l.GBps.Median)
		}
		line, err := plotter.NewLine(plotter.XYs{{X: lo, Y: l.GBps.Median * lo}, {X: xEnd, Y: l.GBps.Median * xEnd}})
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		pl.Add(line)
		pl.Legend.Add(fmt.Sprintf("%s read %.1f GB/s", l.Level, l.GBps.Median), line)
	}
	slices.SortStableFunc(ceilings, func(a, b rooflineCeiling) int { return cmp.Compare(b.gflops, a.gflops) })
	var lxy plotter.XYs
	var ltxt []string
	for i, c := range ceilings {
		line, err := plotter.NewLine(plotter.XYs{{X: lo, Y: c.gflops}, {X: hi, Y: c.gflops}})
		if err != nil {
			return err
		}
		line.Color = color.Gray{Y: uint8(30 + 25*(i%5))}
		txt := fmt.Sprintf("%s %s %.0f GFLOP/s (%s)", c.prec, c.what, c.gflops, c.source)
		if c.used {
			line.Width = vg.Points(2)
			txt += ", used for predictions"
		} else {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		pl.Add(line)
		lxy = append(lxy, plotter.XY{X: hi, Y: c.gflops})
		ltxt = append(ltxt, txt)
		// Ridge point of the ceiling predictions use against the DRAM roof.
		for _, l := range levels {
			if l.Level == "DRAM" && c.used {
				x := c.gflops / l.GBps.Median
				if x >= lo && x <= hi {
					sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: c.gflops}})
					if err != nil {
						return err
					}
					sc.GlyphStyle.Shape = draw.CircleGlyph{}
					sc.GlyphStyle.Radius = vg.Points(3)
					pl.Add(sc)
				}
			}
		}
	}
	// Labels right-aligned at the right edge just above their line, moved
	// apart at draw time (keeping their order) where ceilings are close.
	if len(lxy) > 0 {
		lbl, err := newStackedLabels(lxy, ltxt, 9, draw.XRight)
		if err != nil {
			return err
		}
		lbl.Offset = vg.Point{X: -vg.Points(2), Y: vg.Points(7)}
		pl.Add(lbl)
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	if len(ceilings) == 0 {
		pl.Title.Text += "\n(no compute ceilings measured: run with --only compute)"
	}
	pl.Y.Min = math.Max(0.01, lowestRoof(levels)*lo*0.8)
	if top > 0 {
		pl.Y.Max = top * 2
	}
	return savePlot(context.Background(), o, pl, 10*vg.Inch, 6.5*vg.Inch, dir, name)
}

func lowestRoof(levels []results.LevelBandwidth) float64 {
	lowest := math.Inf(1)
	for _, l := range levels {
		lowest = min(lowest, l.GBps.Median)
	}
	if math.IsInf(lowest, 1) {
		return 1
	}
	return lowest
}

// isMatrixBackend reports whether a non-linear backend runs on a matrix
// unit (SME, AMX) rather than the cores' vector units.
func isMatrixBackend(b string) bool {
	return strings.HasPrefix(b, "sme") || strings.HasPrefix(b, "amx")
}

// nonlinearBars draws two panels: Gelem/s per kernel (groups) and backend
// (bars) on a log axis, each bar but the first backend's labeled with its
// ratio to the first (the Go baseline); and per kernel the ratio of every
// backend to the best vector-core backend (SMEPilot Fig. 4: matrix unit
// against cores), a line at 1×. Bars are medians with min-to-max error
// bars.
func nonlinearBars(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	n := p.Nonlinear
	var kernels, backends []string
	val := map[[2]string]results.Stat{}
	threads := map[int]bool{}
	var ns []int
	for _, pt := range n.Points {
		k := pt.Kernel
		if pt.RowElems > 0 && (pt.Kernel == "softmax") {
			k = fmt.Sprintf("%s/%d", pt.Kernel, pt.RowElems)
		}
		if !slices.Contains(kernels, k) {
			kernels = append(kernels, k)
		}
		if !slices.Contains(backends, pt.Backend) {
			backends = append(backends, pt.Backend)
		}
		threads[pt.Threads] = true
		ns = append(ns, pt.GElemsPerSec.N)
		if pt.GElemsPerSec.Median > val[[2]string{k, pt.Backend}].Median {
			val[[2]string{k, pt.Backend}] = pt.GElemsPerSec
		}
	}
	th := "1 thread"
	if len(threads) > 1 || !threads[1] {
		var ts []string
		for t := range threads {
			ts = append(ts, strconv.Itoa(t))
		}
		slices.Sort(ts)
		th = strings.Join(ts, ", ") + " threads"
	}
	var all []results.Stat
	for _, pt := range n.Points {
		all = append(all, pt.GElemsPerSec)
	}
	produced := fmt.Sprintf("%s, pinned; backends %s; %s", th, strings.Join(backends, ", "), spread(ns)) + noisyNote(all)
	pl := newPlot(title, "", "Gelem/s (1e9 elements/s, log scale)", p, produced)
	pl.Y.Scale, pl.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	w := vg.Points(float64(min(18, 120/max(1, len(backends)))))
	top, bottom := 0.0, math.Inf(1)
	for _, v := range val {
		if v.Median > 0 {
			top, bottom = max(top, v.Max, v.Median), min(bottom, v.Min, v.Median)
		}
	}
	if top == 0 {
		noData(pl, "no non-linear throughput measured")
		return savePlot(context.Background(), o, pl, 8*vg.Inch, 5*vg.Inch, dir, name)
	}
	floor := bottom / 2
	for bi, be := range backends {
		vs := make(plotter.Values, len(kernels))
		var xs []float64
		var st []results.Stat
		var lxy plotter.XYs
		var ltxt []string
		for ki, k := range kernels {
			v := val[[2]string{k, be}]
			vs[ki] = v.Median
			if v.Median > 0 {
				xs, st = append(xs, float64(ki)), append(st, v)
				if base := val[[2]string{k, backends[0]}].Median; bi > 0 && base > 0 {
					lxy = append(lxy, plotter.XY{X: float64(ki), Y: v.Max})
					ltxt = append(ltxt, fmt.Sprintf("%.0f×", v.Median/base))
				}
			}
		}
		bars := &logBars{Values: vs, Width: w, Color: plotutil.Color(bi), Offset: w * vg.Length(float64(bi)-float64(len(backends)-1)/2)}
		pl.Add(bars)
		pl.Legend.Add(be, bars)
		if err := addRangeOffset(pl, xs, st, color.Black, bars.Offset); err != nil {
			return err
		}
		if len(lxy) > 0 {
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: ltxt})
			if err != nil {
				return err
			}
			lb.Offset = vg.Point{X: bars.Offset, Y: vg.Points(3)}
			for i := range lb.TextStyle {
				lb.TextStyle[i].Font.Size = vg.Points(7)
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
			}
			pl.Add(lb)
		}
	}
	pl.NominalX(kernels...)
	pl.X.Min, pl.X.Max = -0.8, float64(len(kernels))-0.2
	pl.Legend.Top = true
	pl.Y.Min, pl.Y.Max = floor, top*3
	if len(backends) > 1 {
		pl.Title.Text += "\nlabels: throughput / " + backends[0] + "'s"
	}

	// The ratio panel: every backend over the best vector-core backend.
	rp := plot.New()
	rp.Title.Text = "Ratio to the best vector-core backend per kernel (SMEPilot Fig. 4: matrix unit vs cores)"
	hasMatrix := slices.ContainsFunc(backends, isMatrixBackend)
	if !hasMatrix {
		rp.Title.Text += "\nno matrix-unit backend (SME, AMX) measured on this machine: the other backends are shown"
	}
	rp.Y.Label.Text = "throughput / best cores backend (log scale)"
	rp.Add(plotter.NewGrid())
	rp.Y.Scale, rp.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	rlo, rhi := 1.0, 1.0
	for bi, be := range backends {
		vs := make(plotter.Values, len(kernels))
		var lxy plotter.XYs
		var ltxt []string
		for ki, k := range kernels {
			bestCores := 0.0
			for _, b2 := range backends {
				if !isMatrixBackend(b2) {
					bestCores = max(bestCores, val[[2]string{k, b2}].Median)
				}
			}
			v := val[[2]string{k, be}].Median
			if v > 0 && bestCores > 0 {
				r := v / bestCores
				vs[ki] = r
				rlo, rhi = min(rlo, r), max(rhi, r)
				lxy = append(lxy, plotter.XY{X: float64(ki), Y: r})
				ltxt = append(ltxt, fmtRatio(r))
			}
		}
		bars := &logBars{Values: vs, Width: w, Color: plotutil.Color(bi), Offset: w * vg.Length(float64(bi)-float64(len(backends)-1)/2)}
		rp.Add(bars)
		rp.Legend.Add(be, bars)
		if len(lxy) > 0 {
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: ltxt})
			if err != nil {
				return err
			}
			lb.Offset = vg.Point{X: bars.Offset, Y: vg.Points(3)}
			for i := range lb.TextStyle {
				lb.TextStyle[i].Font.Size = vg.Points(7)
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
			}
			rp.Add(lb)
		}
	}
	one, err := plotter.NewLine(plotter.XYs{{X: -0.8, Y: 1}, {X: float64(len(kernels)) - 0.2, Y: 1}})
	if err != nil {
		return err
	}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	rp.Add(one)
	rp.NominalX(kernels...)
	rp.X.Min, rp.X.Max = -0.8, float64(len(kernels))-0.2
	rp.Y.Min, rp.Y.Max = rlo/2, rhi*3
	rp.Legend.Top = true
	width := vg.Length(max(8, 1.15*float64(len(kernels)))) * vg.Inch
	return o.save(context.Background(), panelsFigure(context.Background(), []*plot.Plot{pl, rp}, 1, width, 5*vg.Inch), dir, name)
}

// fmtRatio is "0.031×", "1×", "2.4×".
func fmtRatio(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return strconv.FormatFloat(r, 'g', 2, 64) + "×"
}

// logBars are bars from the bottom of a (log) value axis up to each
// value at x = 0, 1, ... shifted by Offset; values ≤ 0 or NaN are not
// drawn.
type logBars struct {
	Values []float64
	Width  vg.Length
	Offset vg.Length
	Color  color.Color
}

func (b *logBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for i, v := range b.Values {
		if !(v > 0) || v < plt.Y.Min {
			continue
		}
		x := trX(float64(i)) + b.Offset
		top := trY(math.Min(v, plt.Y.Max))
		pts := []vg.Point{{X: x - b.Width/2, Y: c.Min.Y}, {X: x - b.Width/2, Y: top}, {X: x + b.Width/2, Y: top}, {X: x + b.Width/2, Y: c.Min.Y}}
		c.FillPolygon(b.Color, c.ClipPolygonY(pts))
	}
}

func (b *logBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = 0, float64(len(b.Values)-1), math.Inf(1), math.Inf(-1)
	for _, v := range b.Values {
		if v > 0 {
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	return xmin, xmax, ymin, ymax
}

func (b *logBars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(b.Color, c.ClipPolygonY(pts))
}

// addRangeOffset is addRange with the bars shifted by off (a bar's offset
// in its group).
func addRangeOffset(pl *plot.Plot, xs []float64, st []results.Stat, c color.Color, off vg.Length) error {
	var rb rangeBars
	for i, x := range xs {
		m := st[i]
		if m.Max > m.Min {
			rb.XYs = append(rb.XYs, plotter.XY{X: x, Y: m.Median})
			rb.YErrors = append(rb.YErrors, struct{ Low, High float64 }{max(0, m.Median-m.Min), max(0, m.Max-m.Median)})
		}
	}
	if len(rb.XYs) == 0 {
		return nil
	}
	eb, err := plotter.NewYErrorBars(rb)
	if err != nil {
		return err
	}
	eb.Color, eb.CapWidth = c, vg.Points(3)
	pl.Add(offsetPlotter{eb, off})
	return nil
}

// offsetPlotter draws a plotter shifted right by dx.
type offsetPlotter struct {
	p  plot.Plotter
	dx vg.Length
}

func (o offsetPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	c.Push()
	c.Translate(vg.Point{X: o.dx})
	o.p.Plot(c, p)
	c.Pop()
}

func (o offsetPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	if dr, ok := o.p.(plot.DataRanger); ok {
		return dr.DataRange()
	}
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

// mixedAdditivity draws SMEPilot Fig. 3 from the mixed section: per
// experiment (one panel each: compute in GFLOP/s, read bandwidth in GB/s)
// two stacked bars, the groups run alone (summed) and run together, each
// segment a group's median with its min-to-max bar, and the additivity
// together / sum alone above the second bar.
func mixedAdditivity(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	var ps []*plot.Plot
	for _, e := range p.Mixed.Experiments {
		if len(e.Groups) == 0 {
			continue
		}
		var ns []int
		var names []string
		nthreads := 0
		var gst []results.Stat
		for _, g := range e.Groups {
			nthreads += len(g.CPUs)
			gst = append(gst, g.Alone, g.Together)
			ns = append(ns, g.Alone.N, g.Together.N)
			names = append(names, fmt.Sprintf("%s on CPUs %v", g.Name, g.CPUs))
		}
		unit := e.Groups[0].Unit
		kind := map[string]string{"compute": "compute", "read_bandwidth": "read bandwidth"}[e.Kind]
		if kind == "" {
			kind = e.Kind
		}
		pl := newPlot(fmt.Sprintf("%s: %s, alone and together (SMEPilot Fig. 3)", title, kind), "", unit, p,
			fmt.Sprintf("%d pinned threads: ", nthreads)+strings.Join(names, " + ")+"\n"+spread(ns)+noisyNote(gst))
		pl.Title.TextStyle.Font.Size = vg.Points(11)
		w := vg.Points(50)
		var prev *plotter.BarChart
		top := 0.0
		cum := [2]float64{}
		for gi, g := range e.Groups {
			vs := plotter.Values{g.Alone.Median, g.Together.Median}
			if e.Unit == "fraction" && g.Alone.Median > 0 {
				vs = plotter.Values{1, g.Together.Median / g.Alone.Median}
			}
			bc, err := plotter.NewBarChart(vs, w)
			if err != nil {
				return err
			}
			bc.Color = okabeIto[gi%len(okabeIto)]
			bc.LineStyle.Color, bc.LineStyle.Width = color.White, vg.Points(0.5)
			if prev != nil {
				bc.StackOn(prev)
			}
			prev = bc
			pl.Add(bc)
			pl.Legend.Add(g.Name, bc)
			if e.Unit != "fraction" {
				var rb rangeBars
				for i, st := range []results.Stat{g.Alone, g.Together} {
					rb.XYs = append(rb.XYs, plotter.XY{X: float64(i), Y: cum[i] + st.Median})
					rb.YErrors = append(rb.YErrors, struct{ Low, High float64 }{max(0, st.Median-st.Min), max(0, st.Max-st.Median)})
				}
				eb, err := plotter.NewYErrorBars(rb)
				if err != nil {
					return err
				}
				eb.CapWidth = vg.Points(6)
				pl.Add(eb)
			}
			cum[0] += vs[0]
			cum[1] += vs[1]
		}
		top = max(cum[0], cum[1])
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: 0, Y: cum[0]}, {X: 1, Y: cum[1]}},
			Labels: []string{fmt.Sprintf("sum alone %.3g", cum[0]), fmt.Sprintf("together %.3g: additivity %.2f", cum[1], e.Additivity)}})
		if err != nil {
			return err
		}
		lb.Offset = vg.Point{Y: vg.Points(9)}
		for i := range lb.TextStyle {
			lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
		}
		pl.Add(lb)
		pl.NominalX("run alone (sum)", "run together")
		pl.X.Min, pl.X.Max = -0.7, 1.7
		pl.Y.Min, pl.Y.Max = 0, top*1.35
		if e.Unit == "fraction" {
			pl.Y.Label.Text = "fraction of each group's alone median (units differ)"
		}
		ps = append(ps, pl)
	}
	if len(ps) == 0 {
		pl := newPlot(title, "", "", p, "")
		noData(pl, "the mixed section has no experiment")
		ps = append(ps, pl)
	}
	return o.save(context.Background(), panelsFigure(context.Background(), ps, 2, 5.5*vg.Inch, 5*vg.Inch), dir, name)
}
