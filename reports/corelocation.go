package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// CoreLocationBar is one core-location experiment of Sandwich Fig. 3:
// decode and prefill throughput with some cores left idle, measured and
// predicted, each relative to the all-cores run (1 = as fast; 0:
// missing).
type CoreLocationBar struct {
	Name                    string
	Decode, Prefill         float64
	PredDecode, PredPrefill float64
}

// CoreLocationFigure draws Sandwich Fig. 3(b): per experiment, a decode
// and a prefill bar of measured tok/s relative to all cores, the
// roofline's prediction as a dashed tick over each bar, and a line at 1.
// Errors: no experiments.
func CoreLocationFigure(bars []CoreLocationBar, title string) (Figure, error) {
	if len(bars) == 0 {
		return Figure{}, fmt.Errorf("core location: no experiments")
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "tokens/s relative to all cores"
	p.Add(plotter.NewGrid())
	cols := [2]color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}
	hi := 1.0
	var names []string
	for i, b := range bars {
		names = append(names, b.Name)
		for j, v := range [2][2]float64{{b.Decode, b.PredDecode}, {b.Prefill, b.PredPrefill}} {
			x := float64(i) + (float64(j)-0.5)*0.36
			if v[0] > 0 {
				r, err := rect(x-0.16, x+0.16, 0, v[0], cols[j])
				if err != nil {
					return Figure{}, err
				}
				p.Add(r)
				if i == 0 {
					p.Legend.Add([]string{"decode, measured", "prefill, measured"}[j], r)
				}
			}
			if v[1] > 0 {
				l, err := plotter.NewLine(plotter.XYs{{X: x - 0.18, Y: v[1]}, {X: x + 0.18, Y: v[1]}})
				if err != nil {
					return Figure{}, err
				}
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
				l.Width = vg.Points(1.5)
				l.Color = color.Black
				p.Add(l)
				if i == 0 && j == 0 {
					p.Legend.Add("roofline prediction", l)
				}
			}
			hi = math.Max(hi, math.Max(v[0], v[1]))
		}
	}
	one, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: 1}, {X: float64(len(bars)) - 0.4, Y: 1}})
	if err != nil {
		return Figure{}, err
	}
	one.Color = color.Gray{Y: 100}
	p.Add(one)
	p.Y.Min, p.Y.Max = 0, hi*1.35 // room for the legend
	p.X.Min, p.X.Max = -0.6, float64(len(bars))-0.4
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Legend.Top, p.Legend.Left = true, true
	return plotFigure(p, vg.Length(max(6, 0.9*float64(len(bars))+2))*vg.Inch, 4.5*vg.Inch), nil
}
