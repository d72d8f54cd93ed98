package reports

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/results"
)

// Plot is one figure written next to the profile or report.
type Plot struct {
	Title string
	// File is the base name, relative to the output directory, in the
	// primary format (FigureOptions.Primary); the other formats sit beside
	// it with their own extensions.
	File string
}

// savePlot renders p, laid out at w x h, in o's formats and width and
// writes each atomically to dir/name with the format's extension, stopped
// with ctx's error when ctx is done.
func savePlot(ctx context.Context, o FigureOptions, p *plot.Plot, w, h vg.Length, dir, name string) error {
	return o.save(ctx, plotFigure(p, w, h), dir, name)
}

// untilDone returns f's result, or ctx's error as soon as ctx is done; f
// (which must write nothing) then finishes unobserved.
func untilDone[T any](ctx context.Context, f func() T) (T, error) {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// ctxWriter is w failing with ctx's error once ctx is done: the PNG
// encoder of a large figure (seconds) stops at its next write.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// bytesTicks labels a log2 axis of byte sizes at powers of 4 (16 KiB, 64 KiB, ...).
type bytesTicks struct{}

func (bytesTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log2(min)); e <= math.Ceil(math.Log2(max)); e++ {
		v := math.Pow(2, e)
		if v < min || v > max {
			continue
		}
		lbl := ""
		if int(e)%2 == 0 {
			lbl = FormatBytes(int64(v))
		}
		t = append(t, plot.Tick{Value: v, Label: lbl})
	}
	return t
}

// logTicks labels a log axis at 1, 2 and 5 times powers of ten.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= min && v <= max {
				t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	if len(t) < 2 {
		return plot.LogTicks{Prec: 2}.Ticks(min, max)
	}
	return t
}

// intTicks labels integer values only (thread counts).
type intTicks struct{}

func (intTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	step := math.Max(1, math.Ceil((max-min)/10))
	for v := math.Ceil(min); v <= max; v += step {
		t = append(t, plot.Tick{Value: v, Label: strconv.Itoa(int(v))})
	}
	return t
}

// caption is the line under every probe figure's title: the machine (CPU
// model and host), the probe's date and the bench version that ran it.
func caption(p *results.Profile) string {
	model := p.Host
	if p.Machine != nil && p.Machine.CPUModel != "" {
		model = p.Machine.CPUModel + " (" + p.Host + ")"
	}
	s := fmt.Sprintf("%s, %s", model, p.CreatedAt.Format("2006-01-02"))
	if p.Tool.Version != "" {
		s += ", bench " + p.Tool.Version
	}
	return s
}

// spread says how repeated measurements are drawn: "median of 5-7
// repeats, bars min to max".
func spread(ns []int) string {
	lo, hi := 0, 0
	for _, n := range ns {
		if n <= 0 {
			continue
		}
		if lo == 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	switch {
	case hi == 0:
		return "medians"
	case lo == hi:
		return fmt.Sprintf("median of %d repeats, bars min to max", lo)
	}
	return fmt.Sprintf("median of %d-%d repeats, bars min to max", lo, hi)
}

// rangeBars are vertical error bars from each point's min to max.
type rangeBars struct {
	plotter.XYs
	plotter.YErrors
}

// addRange adds min-to-max error bars at xs in colour c, and a red ring
// on each figure the noise check marked NOISY, with a legend entry the
// first time (*legend false; legend nil: none).
func addRange(pl *plot.Plot, xs []float64, st []results.Stat, c color.Color, legend *bool) error {
	var rb rangeBars
	for i, x := range xs {
		m := st[i]
		if !(m.Median > 0) {
			continue
		}
		rb.XYs = append(rb.XYs, plotter.XY{X: x, Y: m.Median})
		rb.YErrors = append(rb.YErrors, struct{ Low, High float64 }{max(0, m.Median-m.Min), max(0, m.Max-m.Median)})
	}
	if len(rb.XYs) == 0 {
		return nil
	}
	if slices.ContainsFunc(rb.YErrors, func(e struct{ Low, High float64 }) bool { return e.Low > 0 || e.High > 0 }) {
		eb, err := plotter.NewYErrorBars(rb)
		if err != nil {
			return err
		}
		eb.Color = c
		eb.CapWidth = vg.Points(4)
		pl.Add(eb)
	}
	// Figures the probe's noise check marked: a red ring and one legend
	// entry per plot.
	var noisy plotter.XYs
	for i, x := range xs {
		if st[i].Noisy() && st[i].Median > 0 {
			noisy = append(noisy, plotter.XY{X: x, Y: st[i].Median})
		}
	}
	if len(noisy) > 0 {
		sc, err := plotter.NewScatter(noisy)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: noisyColor, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
		pl.Add(sc)
		if legend != nil && !*legend {
			*legend = true
			pl.Legend.Add("NOISY (noise check: CPU share or cv)", sc)
		}
	}
	return nil
}

// noisyColor rings the figures the noise check marked.
var noisyColor = color.RGBA{213, 0, 0, 255}

// noisyNote is "; 2 of 14 NOISY" when the noise check marked some of st,
// else "".
func noisyNote(st []results.Stat) string {
	n := 0
	for _, s := range st {
		if s.Noisy() {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of %d NOISY (noise check)", n, len(st))
}

// ProfilePlots writes the profile's figures into dir, in o's formats and
// width, and returns them: bandwidth vs working set (one line per kernel,
// cache sizes marked) per thread count, bandwidth vs threads, latency vs
// working set (cache sizes marked), the measured roofline (the ceilings
// predictions use solid, FMA peaks dashed), non-linear throughput (log
// axis, ratios to the first backend, and a panel of ratios to the best
// vector-core backend), two backends alone and together (SMEPilot Fig. 3,
// from the mixed section) and the NUMA heatmaps of read bandwidth and
// latency with values and colour bars (ArcLight Table 1). Each
// title carries the machine, date, threads and how many repeats each
// median has; measured points carry min-to-max bars.
func ProfilePlots(p *results.Profile, dir string, o FigureOptions) ([]Plot, error) {
	var out []Plot
	if m := p.Memory; m != nil && len(m.WorkingSet) > 0 {
		var tcs []int
		for _, b := range m.WorkingSet {
			if !slices.Contains(tcs, b.Threads) {
				tcs = append(tcs, b.Threads)
			}
		}
		for _, tc := range tcs {
			name := fmt.Sprintf("bandwidth-vs-working-set-%dt.png", tc)
			title := fmt.Sprintf("Bandwidth vs working set, %d thread(s)", tc)
			if err := bwVsWorkingSet(p, tc, title, o, dir, name); err != nil {
				return nil, err
			}
			out = append(out, Plot{title, withExt(name, o.Primary())})
		}
	}
	if m := p.Memory; m != nil && len(m.Threads) > 0 {
		name, title := "bandwidth-vs-threads.png", "Bandwidth vs threads"
		if err := bwVsThreads(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{title, withExt(name, o.Primary())})
	}
	if l := p.Latency; l != nil && len(l.Points) > 0 {
		name, title := "latency-vs-working-set.png", "Load latency vs working set"
		if err := latencyPlot(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{title, withExt(name, o.Primary())})
	}
	if p.Compute != nil && p.Memory != nil && len(allThreadLevels(p.Memory)) > 0 {
		name, title := "roofline.png", "Roofline of the measured machine (all threads)"
		if err := measuredRoofline(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{title, withExt(name, o.Primary())})
	}
	if n := p.Nonlinear; n != nil && len(n.Points) > 0 {
		name, title := "nonlinear-throughput.png", "Non-linear kernel throughput per backend"
		if err := nonlinearBars(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{title, withExt(name, o.Primary())})
	}
	if m := p.Mixed; m != nil && len(m.Experiments) > 0 {
		name, title := "mixed-additivity.png", "Two backends"
		if err := mixedAdditivity(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{"Two backends alone and together (SMEPilot Fig. 3)", withExt(name, o.Primary())})
	}
	if n := p.NUMA; n != nil && len(n.Pairs) > 0 {
		name, title := "numa-read-bandwidth.png", "NUMA read bandwidth, CPU node x memory node"
		if err := numaHeatmap(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{"NUMA read bandwidth and latency, CPU node x memory node (ArcLight Table 1)", withExt(name, o.Primary())})
	}
	return out, nil
}

// newPlot is a probe figure: the title, the caption line (machine, date,
// version) and a line of what produced it (threads, kernels, repeats).
func newPlot(title, xl, yl string, p *results.Profile, produced string) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = title + "\n" + caption(p)
	if produced != "" {
		pl.Title.Text += "\n" + produced
	}
	pl.X.Label.Text = xl
	pl.Y.Label.Text = yl
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	return pl
}

func bwVsWorkingSet(p *results.Profile, threads int, title string, o FigureOptions, dir, name string) error {
	var ns []int
	for _, b := range p.Memory.WorkingSet {
		if b.Threads == threads {
			ns = append(ns, b.GBps.N)
		}
	}
	pl := newPlot(title, "working set (all threads, log scale)", "GB/s (1e9 bytes/s)", p,
		fmt.Sprintf("%d pinned thread(s); %s", threads, spread(ns)))
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = bytesTicks{}
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = logTicks{}
	byKernel := map[string]plotter.XYs{}
	stats := map[string][]results.Stat{}
	var order []string
	ymin, ymax := math.Inf(1), 0.0
	for _, b := range p.Memory.WorkingSet {
		if b.Threads != threads {
			continue
		}
		if _, ok := byKernel[b.Kernel]; !ok {
			order = append(order, b.Kernel)
		}
		byKernel[b.Kernel] = append(byKernel[b.Kernel], plotter.XY{X: float64(b.WorkingSetBytes), Y: b.GBps.Median})
		stats[b.Kernel] = append(stats[b.Kernel], b.GBps)
		ymin, ymax = min(ymin, b.GBps.Min, b.GBps.Median), max(ymax, b.GBps.Max, b.GBps.Median)
	}
	noisyLegend := false
	for i, k := range order {
		l, pts, err := plotter.NewLinePoints(byKernel[k])
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		pl.Add(l, pts)
		pl.Legend.Add(k, l, pts)
		var xs []float64
		for _, q := range byKernel[k] {
			xs = append(xs, q.X)
		}
		if err := addRange(pl, xs, stats[k], plotutil.Color(i), &noisyLegend); err != nil {
			return err
		}
	}
	if err := addCacheMarkers(pl, p, threads, ymin, ymax); err != nil {
		return err
	}
	return savePlot(context.Background(), o, pl, 9*vg.Inch, 5.5*vg.Inch, dir, name)
}

// addCacheMarkers draws a dashed vertical line at each data or unified
// cache's capacity available to threads threads (per-core caches times the
// instances those threads use), labeled "L2 1 MiB" at the top, between
// ymin and ymax.
func addCacheMarkers(pl *plot.Plot, p *results.Profile, threads int, ymin, ymax float64) error {
	if t := p.Topology; t != nil {
		for _, c := range t.Caches {
			if c.Type == "Instruction" {
				continue
			}
			inst := min(c.Instances, max(1, (threads+c.SharedBy-1)/max(1, c.SharedBy)))
			x := float64(c.SizeBytes) * float64(max(1, inst))
			line, err := plotter.NewLine(plotter.XYs{{X: x, Y: ymin * 0.9}, {X: x, Y: ymax * 1.1}})
			if err != nil {
				return err
			}
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			line.Color = color.Gray{Y: 120}
			pl.Add(line)
			lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: x, Y: ymax * 1.1}}, Labels: []string{fmt.Sprintf("L%d %s", c.Level, FormatBytes(int64(x)))}})
			if err != nil {
				return err
			}
			pl.Add(lbl)
		}
	}
	return nil
}

func bwVsThreads(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	ws := int64(0)
	if len(p.Memory.Threads) > 0 {
		ws = p.Memory.Threads[0].WorkingSetBytes
	}
	var ns []int
	for _, b := range p.Memory.Threads {
		ns = append(ns, b.GBps.N)
	}
	pl := newPlot(fmt.Sprintf("%s (working set %s)", title, FormatBytes(ws)), "threads (pinned, one per core first)", "GB/s (1e9 bytes/s)", p, spread(ns))
	byKernel := map[string]plotter.XYs{}
	stats := map[string][]results.Stat{}
	var order []string
	for _, b := range p.Memory.Threads {
		if _, ok := byKernel[b.Kernel]; !ok {
			order = append(order, b.Kernel)
		}
		byKernel[b.Kernel] = append(byKernel[b.Kernel], plotter.XY{X: float64(b.Threads), Y: b.GBps.Median})
		stats[b.Kernel] = append(stats[b.Kernel], b.GBps)
	}
	noisyLegend := false
	for i, k := range order {
		l, pts, err := plotter.NewLinePoints(byKernel[k])
		if err != nil {
			return err
		}
		l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		pl.Add(l, pts)
		pl.Legend.Add(k, l, pts)
		var xs []float64
		for _, q := range byKernel[k] {
			xs = append(xs, q.X)
		}
		if err := addRange(pl, xs, stats[k], plotutil.Color(i), &noisyLegend); err != nil {
			return err
		}
	}
	pl.Y.Min = 0
	pl.X.Tick.Marker = intTicks{}
	pl.Legend.Top = false
	return savePlot(context.Background(), o, pl, 8*vg.Inch, 5*vg.Inch, dir, name)
}

func latencyPlot(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	var ns []int
	var xys plotter.XYs
	var xs []float64
	var st []results.Stat
	ymin, ymax := math.Inf(1), 0.0
	for _, pt := range p.Latency.Points {
		xys = append(xys, plotter.XY{X: float64(pt.WorkingSetBytes), Y: pt.NS.Median})
		xs, st, ns = append(xs, float64(pt.WorkingSetBytes)), append(st, pt.NS), append(ns, pt.NS.N)
		ymin, ymax = min(ymin, pt.NS.Min, pt.NS.Median), max(ymax, pt.NS.Max, pt.NS.Median)
	}
	pl := newPlot(title, "working set (log scale)", "ns per dependent load (log scale)", p,
		"1 pinned thread, pointer chase; "+spread(ns)+"; dashed: cache sizes")
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = bytesTicks{}
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = logTicks{}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	pl.Add(l, pts)
	if err := addRange(pl, xs, st, color.Black, new(bool)); err != nil {
		return err
	}
	if err := addCacheMarkers(pl, p, 1, ymin, ymax); err != nil {
		return err
	}
	return savePlot(context.Background(), o, pl, 8*vg.Inch, 5*vg.Inch, dir, name)
}

// numaGrid adapts the NUMA pairs to plotter.GridXYZ (column = memory node,
// row = CPU node).
type numaGrid struct {
	cpu, mem []int
	v        map[[2]int]float64
}

func (g numaGrid) Dims() (c, r int)   { return len(g.mem), len(g.cpu) }
func (g numaGrid) Z(c, r int) float64 { return g.v[[2]int{g.cpu[r], g.mem[c]}] }
func (g numaGrid) X(c int) float64    { return float64(c) }
func (g numaGrid) Y(r int) float64    { return float64(r) }

// numaHeatmap draws ArcLight Table 1 as heatmaps with values: read
// bandwidth (GB/s) and, where measured, load latency (ns) per CPU node
// (rows) and memory node (columns), each cell labeled with its median and
// [min-max], each heatmap with its colour bar.
func numaHeatmap(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	var cpu, mem []int
	bw := map[[2]int]results.Stat{}
	lat := map[[2]int]results.Stat{}
	var ns, lns []int
	nt := 0
	hasLat := false
	for _, pr := range p.NUMA.Pairs {
		if !slices.Contains(cpu, pr.CPUNode) {
			cpu = append(cpu, pr.CPUNode)
		}
		if !slices.Contains(mem, pr.MemNode) {
			mem = append(mem, pr.MemNode)
		}
		bw[[2]int{pr.CPUNode, pr.MemNode}] = pr.ReadGBps
		lat[[2]int{pr.CPUNode, pr.MemNode}] = pr.LatencyNS
		hasLat = hasLat || pr.LatencyNS.Median > 0
		ns = append(ns, pr.ReadGBps.N)
		lns = append(lns, pr.LatencyNS.N)
		nt = max(nt, len(pr.CPUs))
	}
	var bws []results.Stat
	for _, pr := range p.NUMA.Pairs {
		bws = append(bws, pr.ReadGBps)
	}
	produced := fmt.Sprintf("%d threads (the CPU node's), %s; %s", nt, FormatBytes(p.NUMA.WorkingSetBytes),
		strings.Replace(spread(ns), "bars min to max", "[min-max]", 1)) + noisyNote(bws)
	side := vg.Length(max(4, 1.2*float64(len(mem)))) * vg.Inch
	f, err := numaPanel(p, title, produced, cpu, mem, bw, "GB/s", "read bandwidth (GB/s)", side)
	if err != nil {
		return err
	}
	if hasLat {
		lf, err := numaPanel(p, "NUMA load latency, CPU node x memory node", "1 thread, pointer chase; "+strings.Replace(spread(lns), "bars min to max", "[min-max]", 1),
			cpu, mem, lat, "ns", "latency (ns per dependent load)", side)
		if err != nil {
			return err
		}
		f = hstack(f, lf)
	}
	return o.save(context.Background(), f, dir, name)
}

// numaPanel is one heatmap of v (CPU node rows, memory node columns) with
// values in the cells and a colour bar.
func numaPanel(p *results.Profile, title, produced string, cpu, mem []int, v map[[2]int]results.Stat, unit, barLabel string, side vg.Length) (Figure, error) {
	g := numaGrid{cpu: cpu, mem: mem, v: map[[2]int]float64{}}
	for k, s := range v {
		g.v[k] = s.Median
	}
	pl := newPlot(title, "memory node", "CPU node", p, produced)
	cm := moreland.SmoothBlueRed()
	hm := plotter.NewHeatMap(g, cm.Palette(64))
	if hm.Min == hm.Max {
		hm.Min, hm.Max = hm.Min*0.9, hm.Max*1.1+1e-9
	}
	pl.Add(hm)
	var xys []plotter.XY
	var labels []string
	for r, cn := range g.cpu {
		for c, mn := range g.mem {
			s := v[[2]int{cn, mn}]
			xys = append(xys, plotter.XY{X: float64(c), Y: float64(r)})
			l := fmt.Sprintf("%.1f %s\n[%.1f-%.1f]", s.Median, unit, s.Min, s.Max)
			if s.Noisy() {
				l += "\nNOISY"
			}
			labels = append(labels, l)
		}
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return Figure{}, err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].XAlign = draw.XCenter
		lbl.TextStyle[i].YAlign = draw.YCenter
		lbl.TextStyle[i].Color = color.Black
	}
	pl.Add(lbl)
	pl.X.Tick.Marker = nodeTicks(g.mem)
	pl.Y.Tick.Marker = nodeTicks(g.cpu)
	pl.Legend.Top = false
	pl.X.Padding, pl.Y.Padding = 0, 0
	cm.SetMin(hm.Min)
	cm.SetMax(hm.Max)
	return withColorBar(pl, cm, barLabel, side+1*vg.Inch, side), nil
}

// hstack draws figures side by side, top-aligned.
func hstack(fs ...Figure) Figure {
	var w, h vg.Length
	for _, f := range fs {
		w += f.W
		h = max(h, f.H)
	}
	return Figure{W: w, H: h, draw: func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		x := dc.Min.X
		for _, f := range fs {
			c := dc
			c.Min.X, c.Max.X = x, x+f.W
			c.Min.Y = c.Max.Y - f.H
			f.draw(c)
			x += f.W
		}
	}}
}

// withColorBar is pl (w × h) with a vertical colour bar of cm right of
// it, labeled label.
func withColorBar(pl *plot.Plot, cm palette.ColorMap, label string, w, h vg.Length) Figure {
	cb := plot.New()
	cb.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	cb.HideX()
	cb.Y.Label.Text = label
	cb.Y.Padding = 0
	cb.Title.Text = " "
	barW := 1.3 * vg.Inch
	drawPl := titled(pl)
	return Figure{W: w + barW, H: h, draw: func(dc draw.Canvas) {
		left := dc
		left.Max.X = dc.Min.X + w
		drawPl(left)
		right := dc
		right.Min.X = dc.Min.X + w
		// Align the bar with the heatmap's data area.
		right.Min.Y += 0.55 * vg.Inch
		right.Max.Y -= 0.75 * vg.Inch
		cb.Draw(right)
	}}
}

type nodeTicks []int

func (n nodeTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for i, id := range n {
		t = append(t, plot.Tick{Value: float64(i), Label: fmt.Sprintf("node %d", id)})
	}
	return t
}
