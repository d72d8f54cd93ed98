package reports

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/results"
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

// measuredRoofline draws the machine's roofline from the profile: every
// memory roof (L1, L2, L3, DRAM read, all threads) as bandwidth x intensity
// and every compute ceiling (all threads) as a horizontal line, log-log,
// each labeled with its value (SMEPilot §3.2: P(I) = min(π, β·I)).
func measuredRoofline(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	pl := newPlot(title, "arithmetic intensity (FLOP/byte, log scale)", "GFLOP/s or GOP/s (log scale)", p)
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = logTicks{}, logTicks{}
	lo, hi := 1.0/16, 1024.0
	peaks := allThreadPeaks(p.Compute)
	levels := allThreadLevels(p.Memory)
	top := 0.0
	for _, pk := range peaks {
		top = max(top, pk.Rate.Median)
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
	slices.SortFunc(peaks, func(a, b results.ComputePeak) int { return int(b.Rate.Median - a.Rate.Median) })
	for i, pk := range peaks {
		line, err := plotter.NewLine(plotter.XYs{{X: lo, Y: pk.Rate.Median}, {X: hi, Y: pk.Rate.Median}})
		if err != nil {
			return err
		}
		line.Color = color.Gray{Y: uint8(40 + 30*(i%5))}
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		pl.Add(line)
		lbl, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    []plotter.XY{{X: hi, Y: pk.Rate.Median}},
			Labels: []string{fmt.Sprintf("%s %.0f %s", pk.Kernel, pk.Rate.Median, pk.Unit)},
		})
		if err != nil {
			return err
		}
		for j := range lbl.TextStyle {
			lbl.TextStyle[j].XAlign = draw.XRight
			lbl.TextStyle[j].YAlign = draw.YBottom
		}
		pl.Add(lbl)
		// Ridge point against the DRAM roof.
		for _, l := range levels {
			if l.Level == "DRAM" {
				x := pk.Rate.Median / l.GBps.Median
				if x >= lo && x <= hi {
					sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: pk.Rate.Median}})
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
	pl.Legend.Top, pl.Legend.Left = true, true
	if len(peaks) == 0 {
		pl.Title.Text += "\n(no compute ceilings measured: run with --only compute)"
	}
	lowest := math.Inf(1)
	for _, l := range levels {
		lowest = min(lowest, l.GBps.Median)
	}
	pl.Y.Min = math.Max(0.01, lowest*lo*0.8)
	if top > 0 {
		pl.Y.Max = top * 2
	}
	return savePlot(context.Background(), o, pl, 10*vg.Inch, 6.5*vg.Inch, dir, name)
}

// nonlinearBars draws Gelem/s per kernel (groups) and backend (bars).
func nonlinearBars(p *results.Profile, title string, o FigureOptions, dir, name string) error {
	n := p.Nonlinear
	var kernels, backends []string
	val := map[[2]string]float64{}
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
		val[[2]string{k, pt.Backend}] = max(val[[2]string{k, pt.Backend}], pt.GElemsPerSec.Median)
	}
	pl := newPlot(title, "", "Gelem/s (1e9 elements/s, 1 thread)", p)
	w := vg.Points(float64(min(18, 120/max(1, len(backends)))))
	for bi, be := range backends {
		vs := make(plotter.Values, len(kernels))
		for ki, k := range kernels {
			vs[ki] = val[[2]string{k, be}]
		}
		bars, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(bi)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(bi)-float64(len(backends)-1)/2)
		pl.Add(bars)
		pl.Legend.Add(be, bars)
	}
	pl.NominalX(kernels...)
	pl.X.Min, pl.X.Max = -0.8, float64(len(kernels))-0.2
	pl.Legend.Top = true
	pl.Y.Min = 0
	top := 0.0
	for _, v := range val {
		top = max(top, v)
	}
	pl.Y.Max = top * 1.12
	width := vg.Length(max(8, 1.15*float64(len(kernels)))) * vg.Inch
	return savePlot(context.Background(), o, pl, width, 5*vg.Inch, dir, name)
}
