package calibrate

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Markdown is the report's tables: per class the fitted parameters and the
// held-out relative error p50, p90 and max before and after calibration,
// then every shape, and the target line.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Roofline calibration, held-out shapes\n\nProfile %s; threads %v; t = fixed + t_roofline / efficiency per class, thread count and bounding level, fitted on the fit half; errors |pred−meas|/meas on the held-out half.\n\n", r.Profile, r.Threads)
	b.WriteString("| class | threads | level | efficiency | fixed (µs) | fit | held out | before p50 | before p90 | before max | after p50 | after p90 | after max |\n")
	b.WriteString("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	pc := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	for _, c := range r.Classes {
		fmt.Fprintf(&b, "| %s | %d | %s | %.3f | %.2f | %d | %d | %s | %s | %s | %s | %s | %s |\n", c.Class, c.Threads, c.Level, c.Efficiency, 1e6*c.FixedSeconds,
			c.FitShapes, c.HeldOutShapes, pc(c.Before.P50), pc(c.Before.P90), pc(c.Before.Max), pc(c.After.P50), pc(c.After.P90), pc(c.After.Max))
	}
	fmt.Fprintf(&b, "| all | | | | | | %d | %s | %s | %s | %s | %s | %s |\n\n", r.After.N, pc(r.Before.P50), pc(r.Before.P90), pc(r.Before.Max), pc(r.After.P50), pc(r.After.P90), pc(r.After.Max))
	b.WriteString(r.Verdict() + "\n\n")
	for _, n := range r.Notes {
		b.WriteString("- " + n + "\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("| shape | half | measured (µs) | cv | predicted (µs) | calibrated (µs) | error before | error after |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, p := range r.Points {
		half := "fit"
		if p.HeldOut {
			half = "held out"
		}
		if p.Noisy() {
			half += " (NOISY: " + p.Seconds.Noise.Why + ")"
		}
		m := p.Seconds.Median
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.1f%% | %.2f | %.2f | %s | %s |\n", p.Name(), half, 1e6*m, 100*p.Seconds.CV, 1e6*p.Predicted, 1e6*p.Calibrated,
			relPct(p.Predicted, m), relPct(p.Calibrated, m))
	}
	return b.String()
}

func relPct(pred, meas float64) string {
	if !(meas > 0) {
		return "—"
	}
	d := (pred - meas) / meas
	if d < 0 {
		d = -d
	}
	return fmt.Sprintf("%.1f%%", 100*d)
}

// PlotCDF draws the held-out relative errors' empirical CDF per class,
// before (dashed) and after (solid) calibration, as PNG bytes.
func (r *Report) PlotCDF() ([]byte, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Roofline calibration: held-out relative error CDF per class (%s, threads %v)", r.Profile, r.Threads)
	p.X.Label.Text = "|predicted − measured| / measured"
	p.Y.Label.Text = "fraction of held-out shapes"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	byClass := map[string][2][]float64{}
	for _, pt := range r.Points {
		if !pt.Counted {
			continue
		}
		e := byClass[pt.Class]
		m := pt.Seconds.Median
		e[0] = append(e[0], max(abs(pt.Predicted-m)/m, 1e-4))
		e[1] = append(e[1], max(abs(pt.Calibrated-m)/m, 1e-4))
		byClass[pt.Class] = e
	}
	for i, class := range ClassOrder {
		e, ok := byClass[class]
		if !ok {
			continue
		}
		col := plotColors[i%len(plotColors)]
		for k, errs := range e {
			l, err := plotter.NewLine(cdf(errs))
			if err != nil {
				return nil, err
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			name := class + " after"
			if k == 0 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				name = class + " before"
			}
			p.Add(l)
			p.Legend.Add(name, l)
		}
	}
	tl, err := plotter.NewLine(plotter.XYs{{X: Target, Y: 0}, {X: Target, Y: 1}})
	if err != nil {
		return nil, err
	}
	tl.Color = color.Gray{Y: 120}
	tl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(tl)
	p.Legend.Add(fmt.Sprintf("target p90 %.0f%%", 100*Target), tl)
	w, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// cdf is the empirical CDF of v as a step line.
func cdf(v []float64) plotter.XYs {
	s := slices.Clone(v)
	slices.Sort(s)
	xy := make(plotter.XYs, 0, 2*len(s))
	for i, x := range s {
		xy = append(xy, plotter.XY{X: x, Y: float64(i) / float64(len(s))}, plotter.XY{X: x, Y: float64(i+1) / float64(len(s))})
	}
	return xy
}

var plotColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 255},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 255}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 255},
}
