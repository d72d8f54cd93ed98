package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/results"
)

// GEMVRoof is a horizontal line of the GEMV bandwidth plot: the probed
// DRAM read roof, or a format's effective bandwidth (low-bit GEMV paper
// Eq. 3), in GB/s (1e9 bytes/s).
type GEMVRoof struct {
	Label string
	// Format is the weight format the line belongs to ("" for the DRAM
	// roof): it takes the format's bar colour.
	Format string
	GBps   float64
}

// gemvFormatColor colours the bars by weight format (Okabe–Ito; the paper
// draws int8 dark blue, int2 orange, int1 green).
var gemvFormatColor = map[string]color.Color{
	"fp32": color.RGBA{120, 120, 120, 255},
	"bf16": color.RGBA{86, 180, 233, 255},
	"int8": color.RGBA{0, 70, 140, 255},
	"q8_0": color.RGBA{0, 114, 178, 255},
	"q4_0": color.RGBA{204, 121, 167, 255},
	"q4_k": color.RGBA{150, 110, 40, 255},
	"int2": color.RGBA{230, 159, 0, 255},
	"int1": color.RGBA{0, 158, 115, 255},
}

// gemvShape labels a weight shape N×K.
func gemvShape(g results.GEMMResult) string { return fmt.Sprintf("%d×%d", g.N, g.K) }

// gemvGroups orders the rows' shapes and formats by first appearance.
func gemvGroups(rows []results.GEMMResult) (shapes, formats []string, val map[[2]string]float64) {
	val = map[[2]string]float64{}
	for _, g := range rows {
		s := gemvShape(g)
		if !slices.Contains(shapes, s) {
			shapes = append(shapes, s)
		}
		if !slices.Contains(formats, g.DType) {
			formats = append(formats, g.DType)
		}
		val[[2]string{s, g.DType}] = g.WeightGBps
	}
	return shapes, formats, val
}

// GEMVBandwidthPNG draws the low-bit GEMV paper's Figs. 5–7: the attained
// GEMV bandwidth (GB/s of weights read, median) per weight shape N×K and
// format, bars grouped by shape with one bar per format, and a horizontal
// line per roof (the probed DRAM read roof, each format's ebw). rows are
// M = 1 results at one thread count.
func GEMVBandwidthFigure(title string, rows []results.GEMMResult, roofs []GEMVRoof) (Figure, error) {
	if len(rows) == 0 {
		return Figure{}, fmt.Errorf("gemv plot: no M = 1 figures")
	}
	shapes, formats, val := gemvGroups(rows)
	var backends []string
	var ns []int
	for _, g := range rows {
		if g.Backend != "" && !slices.Contains(backends, g.Backend) {
			backends = append(backends, g.Backend)
		}
		ns = append(ns, g.GFLOPS.N)
	}
	p := plot.New()
	p.Title.Text = title + "\nbackends " + strings.Join(backends, ", ") + "; " + spread(ns)
	p.X.Label.Text = "weight shape N×K (output channels × reduction depth)"
	p.Y.Label.Text = "attained GEMV bandwidth, GB/s of weights (1e9 bytes/s)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	barW := vg.Points(math.Max(6, math.Min(24, 520/float64(len(shapes)*len(formats)))))
	ymax := 0.0
	for i, f := range formats {
		vs := make(plotter.Values, len(shapes))
		for j, s := range shapes {
			vs[j] = val[[2]string{s, f}]
			ymax = math.Max(ymax, vs[j])
		}
		b, err := plotter.NewBarChart(vs, barW)
		if err != nil {
			return Figure{}, err
		}
		col, ok := gemvFormatColor[f]
		if !ok {
			col = ebwOther[i%len(ebwOther)]
		}
		b.Color, b.LineStyle.Width = col, 0
		b.Offset = vg.Length(float64(i)-float64(len(formats)-1)/2) * barW
		p.Add(b)
		p.Legend.Add(f, b)
		// Min-to-max over the repeats, in weight GB/s.
		var xs []float64
		var st []results.Stat
		for j, sh := range shapes {
			for _, g := range rows {
				if gemvShape(g) == sh && g.DType == f && g.GFLOPS.Median > 0 {
					k := g.WeightGBps / g.GFLOPS.Median
					xs = append(xs, float64(j))
					st = append(st, results.Stat{Median: g.WeightGBps, Min: g.GFLOPS.Min * k, Max: g.GFLOPS.Max * k})
					ymax = math.Max(ymax, g.GFLOPS.Max*k)
					break
				}
			}
		}
		if err := addRangeOffset(p, xs, st, color.Black, b.Offset); err != nil {
			return Figure{}, err
		}
	}
	for i, r := range roofs {
		if !(r.GBps > 0) {
			continue
		}
		ymax = math.Max(ymax, r.GBps)
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: r.GBps}, {X: float64(len(shapes)) - 0.5, Y: r.GBps}})
		if err != nil {
			return Figure{}, err
		}
		l.Width = vg.Points(1.5)
		l.Color = color.Black
		if c, ok := gemvFormatColor[r.Format]; ok && r.Format != "" {
			l.Color = c
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		} else if r.Format != "" {
			l.Color = ebwOther[i%len(ebwOther)]
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(r.Label, l)
	}
	p.NominalX(shapes...)
	p.X.Min, p.X.Max = -0.5, float64(len(shapes))-0.5
	p.Y.Min = 0
	// Head room for the legend above the bars and roofs.
	p.Y.Max = ymax * (1.15 + 0.06*float64(len(formats)+len(roofs)))
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return plotFigure(p, vg.Length(math.Max(8, 1.1*float64(len(shapes))+4))*vg.Inch, 5.5*vg.Inch), nil
}

// GEMVBandwidthPNG writes GEMVBandwidthFigure as a PNG at its native size.
func GEMVBandwidthPNG(w io.Writer, title string, rows []results.GEMMResult, roofs []GEMVRoof) error {
	f, err := GEMVBandwidthFigure(title, rows, roofs)
	if err != nil {
		return err
	}
	return writePNG(w, f)
}

// GEMVBandwidthMarkdown is the table behind GEMVBandwidthPNG: one row per
// shape, one column per format (GB/s of weights, median), then the roofs;
// png names the figure.
func GEMVBandwidthMarkdown(title string, rows []results.GEMMResult, roofs []GEMVRoof, png string) string {
	shapes, formats, val := gemvGroups(rows)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", title)
	if png != "" {
		fmt.Fprintf(&b, "![attained GEMV bandwidth per shape and format](%s)\n\n", png)
	}
	b.WriteString("| shape N×K |")
	for _, f := range formats {
		fmt.Fprintf(&b, " %s GB/s |", f)
	}
	b.WriteString("\n| --- |")
	for range formats {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, s := range shapes {
		fmt.Fprintf(&b, "| %s |", s)
		for _, f := range formats {
			if v, ok := val[[2]string{s, f}]; ok {
				fmt.Fprintf(&b, " %.2f |", v)
			} else {
				b.WriteString(" — |")
			}
		}
		b.WriteString("\n")
	}
	if len(roofs) > 0 {
		b.WriteString("\n| roof | GB/s |\n| --- | --- |\n")
		for _, r := range roofs {
			fmt.Fprintf(&b, "| %s | %.2f |\n", r.Label, r.GBps)
		}
	}
	b.WriteString("\nGB/s = 1e9 bytes/s of weights read per call (packed bytes, block scales included, for the block formats), median of the timed repetitions; Y = X·Wᵀ with M = 1 (low-bit GEMV paper Figs. 5–7). The weights stay where the previous call left them: a shape whose weights fit in the last-level cache can exceed the DRAM read roof.\n")
	return b.String()
}
