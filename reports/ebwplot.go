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

	"github.com/cpubench/bench/roofline"
)

// ebwFormatColor colours the formats of the effective-bandwidth plot
// (Okabe–Ito; the paper draws 2-bit green and 1-bit orange).
var ebwFormatColor = map[string]color.Color{
	"int2": color.RGBA{0, 158, 115, 255},  // green
	"int1": color.RGBA{230, 159, 0, 255},  // orange
	"q8_0": color.RGBA{0, 114, 178, 255},  // blue
	"q4_0": color.RGBA{213, 94, 0, 255},   // vermilion
	"q4_k": color.RGBA{86, 180, 233, 255}, // sky blue
}

// ebwOther colours formats not in ebwFormatColor.
var ebwOther = []color.Color{color.RGBA{204, 121, 167, 255}, color.RGBA{150, 110, 40, 255}, color.RGBA{40, 40, 40, 255}}

// ebwCores returns the machine's cores target with its per-core-type γ, or
// an error naming the machine when it has none.
func ebwCores(m *roofline.Machine) (roofline.Target, []string, error) {
	for _, t := range m.Targets {
		if t.Kind == roofline.KindCores {
			if f := t.QuantFormats(); len(f) > 0 {
				return t, f, nil
			}
		}
	}
	return roofline.Target{}, nil, fmt.Errorf("machine %s: no up-convert γ per core type (a published profile of the low-bit paper's CPUs, lnl, arl or arlh, or a probe profile with a matrix section's quant_ebw)", m.Name)
}

// EBWPNG draws the low-bit GEMV paper's Fig. 4 (§III-F) for a machine: the
// effective bandwidth per core ebw = min(β, B/γ) in bytes/cycle (y, Eq. 3)
// against the bandwidth per core β in bytes/cycle (x), one line per weight
// format and core type (solid: the first core type, P or "all"; dashed:
// the others), a vertical bar at each core type's β, and — for a probe
// profile — a marker at the GEMV's measured bytes/cycle per core.
func EBWFigure(m *roofline.Machine) (Figure, error) {
	cores, formats, err := ebwCores(m)
	if err != nil {
		return Figure{}, err
	}
	xmax := 0.0
	for _, ct := range cores.CoreTypes {
		xmax = math.Max(xmax, 1.25*ct.BetaBytesPerCycle)
	}
	for _, f := range formats {
		for _, ct := range cores.CoreTypes {
			xmax = math.Max(xmax, 1.25*cores.BytesPerVector[f]/ct.GammaCycles[f])
		}
	}
	p := plot.New()
	p.Title.Text = "Effective bandwidth per core, ebw = min(β, B/γ) (low-bit GEMV paper Fig. 4, Eq. 3)\n" + m.Name
	p.X.Label.Text = "β: bandwidth per core when all cores read (bytes/cycle)"
	p.Y.Label.Text = "ebw: effective bandwidth per core (bytes/cycle)"
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	// Head room above the highest cap for the legend (top left).
	ymax := 0.0
	for _, f := range formats {
		for _, ct := range cores.CoreTypes {
			ymax = math.Max(ymax, math.Min(xmax, cores.BytesPerVector[f]/ct.GammaCycles[f]))
		}
	}
	ymax *= 1.2 + 0.12*float64(len(formats)*len(cores.CoreTypes))
	p.X.Min, p.Y.Min, p.X.Max, p.Y.Max = 0, 0, xmax, ymax
	for i, f := range formats {
		col, ok := ebwFormatColor[f]
		if !ok {
			col = ebwOther[i%len(ebwOther)]
		}
		for j, ct := range cores.CoreTypes {
			cap := cores.BytesPerVector[f] / ct.GammaCycles[f]
			pts := plotter.XYs{{X: 0, Y: 0}}
			if cap < xmax {
				pts = append(pts, plotter.XY{X: cap, Y: cap})
			}
			pts = append(pts, plotter.XY{X: xmax, Y: math.Min(cap, xmax)})
			l, err := plotter.NewLine(pts)
			if err != nil {
				return Figure{}, err
			}
			l.Color, l.Width = col, vg.Points(2)
			if j > 0 {
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
			}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s, %s cores: min(β, %g/%.4g = %.3g)", f, ct.Name, cores.BytesPerVector[f], ct.GammaCycles[f], cap), l)
			if ms := ct.MeasuredBytesPerCycle[f]; ms > 0 && ct.BetaBytesPerCycle > 0 {
				sc, err := plotter.NewScatter(plotter.XYs{{X: ct.BetaBytesPerCycle, Y: ms}})
				if err != nil {
					return Figure{}, err
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}
				p.Add(sc)
				p.Legend.Add(fmt.Sprintf("%s GEMV measured, %.3g bytes/cycle per core", f, ms), sc)
			}
		}
	}
	n := 0
	for _, ct := range cores.CoreTypes {
		n += ct.Cores
	}
	for j, ct := range cores.CoreTypes {
		beta, from := ct.BetaBytesPerCycle, "published"
		if !(beta > 0) {
			beta, from = roofline.PerCoreBytesPerCycle(cores.BandwidthGBps, n, ct.GHz, gbBytes(cores)), "derived"
		} else if strings.Contains(ct.Source, "probe") {
			from = "probed"
		}
		bar, err := plotter.NewLine(plotter.XYs{{X: beta, Y: 0}, {X: beta, Y: ymax}})
		if err != nil {
			return Figure{}, err
		}
		bar.Color = color.Gray{Y: uint8(60 + 60*j)}
		bar.Width = vg.Points(1.5)
		bar.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(bar)
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: beta, Y: ymax * (0.55 - 0.05*float64(j))}},
			Labels: []string{fmt.Sprintf(" β_%s = %.3g (%s)", ct.Name, beta, from)}})
		if err != nil {
			return Figure{}, err
		}
		p.Add(lbl)
	}
	return plotFigure(p, 9*vg.Inch, 6.5*vg.Inch), nil
}

// EBWPNG writes EBWFigure as a PNG at its native size.
func EBWPNG(w io.Writer, m *roofline.Machine) error {
	f, err := EBWFigure(m)
	if err != nil {
		return err
	}
	return writePNG(w, f)
}

func gbBytes(t roofline.Target) float64 {
	if t.GBBytes > 0 {
		return t.GBBytes
	}
	return 1e9
}

// EBWMarkdown is the table behind EBWPNG: per format and core type, B, γ,
// B/γ, β, ebw (bytes/cycle), the limit, the per-core and chip GB/s and, for
// probe profiles, the measured GEMV bytes/cycle per core; then each
// format's chip roof Σ cores · ebw · f (§IV-B). png names the figure.
func EBWMarkdown(m *roofline.Machine, png string) (string, error) {
	cores, formats, err := ebwCores(m)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Effective bandwidth per core: %s\n\n", m.Name)
	if png != "" {
		fmt.Fprintf(&b, "![ebw per core against β per core](%s)\n\n", png)
	}
	fmt.Fprintf(&b, "Low-bit GEMV paper §III-F, Eq. 3: ebw = min(β, B/γ) bytes/cycle per core, γ the up-convert-and-compute cycles per output vector of B bytes; chip roof Σ cores · ebw · f (§IV-B), capped at the read bandwidth.\n\n")
	unit := "GB/s = 1e9 bytes/s"
	if gbBytes(cores) == roofline.GiB {
		unit = "GB/s as the source counts it (2^30 bytes: its β and modeled totals follow only with GiB)"
	}
	fmt.Fprintf(&b, "| format | core type | cores | GHz | B (bytes) | γ (cycles) | B/γ (B/cycle) | β (B/cycle) | ebw (B/cycle) | limit | measured (B/cycle) | per core (%s) |\n", "GB/s")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var roofs []roofline.QuantRoof
	for _, f := range formats {
		q, _ := cores.QuantRoof(f)
		roofs = append(roofs, q)
		for _, t := range q.Types {
			meas := "—"
			if t.Measured > 0 {
				meas = fmt.Sprintf("%.3g", t.Measured)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.3g | %g | %.4g | %.3g | %.3g (%s) | %.3g | %s | %s | %.3g |\n",
				f, t.Name, t.Cores, t.GHz, q.BytesPerVector, t.Gamma, t.UpConvert, t.Beta, t.BetaFrom, t.EBW, t.Limit, meas, t.PerCoreGBps)
		}
	}
	b.WriteString("\n| format | Σ cores · ebw · f | read bandwidth | roof | limit |\n| --- | --- | --- | --- | --- |\n")
	for _, q := range roofs {
		fmt.Fprintf(&b, "| %s | %.3g GB/s | %.3g GB/s | %.3g GB/s (%.0f%%) | %s |\n", q.Format, q.SumGBps, q.BandwidthGBps, q.GBps, 100*q.GBps/q.BandwidthGBps, q.Limit)
	}
	fmt.Fprintf(&b, "\nUnits: bytes/cycle; %s.\n", unit)
	var src []string
	for _, ct := range cores.CoreTypes {
		if ct.Source != "" && !slices.Contains(src, ct.Source) {
			src = append(src, ct.Source)
		}
	}
	for _, s := range src {
		fmt.Fprintf(&b, "\nSource: %s\n", s)
	}
	return b.String(), nil
}
