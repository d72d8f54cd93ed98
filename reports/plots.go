package reports

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
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

func caption(p *results.Profile) string {
	model := p.Host
	if p.Machine != nil && p.Machine.CPUModel != "" {
		model = p.Machine.CPUModel + " (" + p.Host + ")"
	}
	return fmt.Sprintf("%s, %s", model, p.CreatedAt.Format("2006-01-02"))
}

// ProfilePlots writes the profile's figures into dir, in o's formats and
// width, and returns them: bandwidth vs working set (one line per kernel,
// cache sizes marked) per thread count, bandwidth vs threads, latency vs
// working set, the measured roofline, non-linear throughput and the NUMA
// heatmap.
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
	if n := p.NUMA; n != nil && len(n.Pairs) > 0 {
		name, title := "numa-read-bandwidth.png", "NUMA read bandwidth, CPU node x memory node"
		if err := numaHeatmap(p, title, o, dir, name); err != nil {
			return nil, err
		}
		out = append(out, Plot{title, withExt(name, o.Primary())})
	}
	return out, nil
}

func newPlot(title, xl, yl string, p *results.Profile) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = title + "\n" + caption(p)
	pl.X.Label.Text = xl
	pl.Y.Label.Text = yl
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	return pl
}

func bwVsWorkingSet(p *results.Profile, threads int, title string, o FigureOptions, dir, name string) error {
	pl := newPlot(title, "working set (all threads, log scale)", "GB/s (1e9 bytes/s)", p)
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = bytesTicks{}
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = logTicks{}
	byKernel := map[string]plotter.XYs{}
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
		ymin, ymax = min(ymin, b.GBps.Median), max(ymax, b.GBps.Median)
	}
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
	}
	// Cache capacities available to this many threads.
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
	return savePlot(context.Background(), o, pl, 9*vg.Inch, 5.5*vg.Inch, dir, name)
}

func bwVsThreads(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	ws := int64(0)
	if len(p.Memory.Threads) > 0 {
		ws = p.Memory.Threads[0].WorkingSetBytes
	}
	pl := newPlot(fmt.Sprintf("%s (working set %s)", title, FormatBytes(ws)), "threads (pinned, one per core first)", "GB/s (1e9 bytes/s)", p)
	byKernel := map[string]plotter.XYs{}
	var order []string
	for _, b := range p.Memory.Threads {
		if _, ok := byKernel[b.Kernel]; !ok {
			order = append(order, b.Kernel)
		}
		byKernel[b.Kernel] = append(byKernel[b.Kernel], plotter.XY{X: float64(b.Threads), Y: b.GBps.Median})
	}
	for i, k := range order {
		l, pts, err := plotter.NewLinePoints(byKernel[k])
		if err != nil {
			return err
		}
		l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		pl.Add(l, pts)
		pl.Legend.Add(k, l, pts)
	}
	pl.Y.Min = 0
	pl.X.Tick.Marker = intTicks{}
	pl.Legend.Top = false
	return savePlot(context.Background(), o, pl, 8*vg.Inch, 5*vg.Inch, dir, name)
}

func latencyPlot(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	pl := newPlot(title, "working set (log scale)", "ns per dependent load (log scale)", p)
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = bytesTicks{}
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = logTicks{}
	var xys plotter.XYs
	for _, pt := range p.Latency.Points {
		xys = append(xys, plotter.XY{X: float64(pt.WorkingSetBytes), Y: pt.NS.Median})
	}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	pl.Add(l, pts)
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

func numaHeatmap(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	g := numaGrid{v: map[[2]int]float64{}}
	for _, pr := range p.NUMA.Pairs {
		if !slices.Contains(g.cpu, pr.CPUNode) {
			g.cpu = append(g.cpu, pr.CPUNode)
		}
		if !slices.Contains(g.mem, pr.MemNode) {
			g.mem = append(g.mem, pr.MemNode)
		}
		g.v[[2]int{pr.CPUNode, pr.MemNode}] = pr.ReadGBps.Median
	}
	pl := newPlot(title, "memory node", "CPU node", p)
	pal := moreland.SmoothBlueRed().Palette(64)
	hm := plotter.NewHeatMap(g, pal)
	if hm.Min == hm.Max {
		hm.Min, hm.Max = hm.Min*0.9, hm.Max*1.1+1e-9
	}
	pl.Add(hm)
	var xys []plotter.XY
	var labels []string
	for r := range g.cpu {
		for c := range g.mem {
			xys = append(xys, plotter.XY{X: float64(c), Y: float64(r)})
			labels = append(labels, fmt.Sprintf("%.1f GB/s", g.Z(c, r)))
		}
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return err
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
	side := vg.Length(max(4, 1.2*float64(len(g.mem)))) * vg.Inch
	return savePlot(context.Background(), o, pl, side+1*vg.Inch, side, dir, name)
}

type nodeTicks []int

func (n nodeTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for i, id := range n {
		t = append(t, plot.Tick{Value: float64(i), Label: fmt.Sprintf("node %d", id)})
	}
	return t
}
