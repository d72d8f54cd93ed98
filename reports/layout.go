package reports

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cpubench/bench/roofline"
)

// PIM-SHERPA's figures for the engine's weight layout policies: resident
// bytes per policy and model (Figs. 4 and 9), TTFT against input length
// with Table 2's model beside it (Fig. 10), and a per-thread timeline of
// one prefill (Fig. 11).

// layoutColor colours the policies (Okabe–Ito) and the timeline's kinds
// (the paper's Fig. 11: copy threads blue, compute purple).
var layoutColor = map[string]color.Color{
	"duplicate": color.RGBA{0, 0, 0, 255},
	"owr":       color.RGBA{230, 159, 0, 255},
	"ddb":       color.RGBA{0, 114, 178, 255},
	"gemm":      color.RGBA{136, 86, 167, 255},
	"copy":      color.RGBA{0, 114, 178, 255},
	"pack":      color.RGBA{230, 159, 0, 255},
	"wait":      color.RGBA{213, 94, 0, 255},
	"preload":   color.RGBA{204, 121, 167, 255},
}

func layoutCol(k string) color.Color {
	if c, ok := layoutColor[k]; ok {
		return c
	}
	return color.Gray{Y: 120}
}

// rect is a filled rectangle [x0, x1] × [y0, y1] in data coordinates.
func rect(x0, x1, y0, y1 float64, c color.Color) (*plotter.Polygon, error) {
	pg, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return nil, err
	}
	pg.Color = c
	pg.LineStyle.Width = 0
	return pg, nil
}

// LayoutCapacityFigure draws PIM-SHERPA Figs. 4/9 for the models of caps:
// per model, three bars (duplicate, owr, ddb) of resident weight GB on a
// log scale, with the paper's duplication (every weight twice) as a tick
// above them. dtype names the weight precision counted. Errors: no rows.
func LayoutCapacityFigure(caps []roofline.LayoutCapacity, dtype string) (Figure, error) {
	if len(caps) == 0 {
		return Figure{}, fmt.Errorf("layout capacity: no models")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Resident weight bytes per layout policy (PIM-SHERPA Figs. 4, 9), %s weights", dtype)
	p.Y.Label.Text = "GB (1e9 bytes), log scale"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), 0.0
	for _, c := range caps {
		lo, hi = math.Min(lo, c.Decode/1e9), math.Max(hi, c.PaperWD/1e9)
	}
	base := lo / 2
	pols := []string{"duplicate", "owr", "ddb"}
	var names []string
	for i, c := range caps {
		names = append(names, c.Model)
		vals := []float64{c.Duplicate, c.OWR, c.DDB}
		for j, v := range vals {
			x := float64(i) + (float64(j)-1)*0.27
			r, err := rect(x-0.12, x+0.12, base, v/1e9, layoutCol(pols[j]))
			if err != nil {
				return Figure{}, err
			}
			p.Add(r)
			if i == 0 {
				p.Legend.Add(pols[j], r)
			}
		}
		wd, err := plotter.NewLine(plotter.XYs{{X: float64(i) - 0.42, Y: c.PaperWD / 1e9}, {X: float64(i) + 0.42, Y: c.PaperWD / 1e9}})
		if err != nil {
			return Figure{}, err
		}
		wd.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		wd.Color = color.Gray{Y: 90}
		p.Add(wd)
		if i == 0 {
			p.Legend.Add("paper's duplication (every weight twice)", wd)
		}
	}
	p.Y.Min, p.Y.Max = base, hi*3 // room for the legend
	p.X.Min, p.X.Max = -0.6, float64(len(caps))-0.4
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Legend.Top, p.Legend.Left = true, true
	return plotFigure(p, vg.Length(max(6, 0.8*float64(len(caps))+2))*vg.Inch, 4.5*vg.Inch), nil
}

// LayoutTTFT is one policy's TTFT at one input length: measured by the
// engine and predicted by Table 2's model for this machine (duplicate:
// GEMM; owr: SUM; ddb: MAX; each plus the measured time outside the
// linear layers), in seconds.
type LayoutTTFT struct {
	Policy     string
	InputSL    int
	MeasuredS  float64 // median of the repetitions
	PredictedS float64
	// MinS and MaxS are the repetitions' spread, drawn as error bars
	// (0: none).
	MinS, MaxS float64
}

// LayoutTTFTFigure draws PIM-SHERPA Fig. 10 for this machine: TTFT
// against input length per policy (solid, markers: measured; dashed:
// Table 2's model), log-log, with a vertical line at the model's
// crossover length (where ddb's copy is hidden; ≤ 0: none drawn). Errors:
// no points, or a point ≤ 0.
func LayoutTTFTFigure(pts []LayoutTTFT, crossover float64, title string) (Figure, error) {
	if len(pts) == 0 {
		return Figure{}, fmt.Errorf("layout TTFT: no points")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "input length (tokens), log scale"
	p.Y.Label.Text = "TTFT (s), log scale"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	p.Add(plotter.NewGrid())
	var pols []string
	for _, q := range pts {
		if q.InputSL < 1 || !(q.MeasuredS > 0) {
			return Figure{}, fmt.Errorf("layout TTFT: %s at %d tokens: %v s: want a length ≥ 1 and a time > 0", q.Policy, q.InputSL, q.MeasuredS)
		}
		if !slices.Contains(pols, q.Policy) {
			pols = append(pols, q.Policy)
		}
	}
	ylo, yhi := math.Inf(1), 0.0
	for _, pol := range pols {
		var meas, pred plotter.XYs
		for _, q := range pts {
			if q.Policy != pol {
				continue
			}
			meas = append(meas, plotter.XY{X: float64(q.InputSL), Y: q.MeasuredS})
			ylo, yhi = math.Min(ylo, q.MeasuredS), math.Max(yhi, q.MeasuredS)
			if q.PredictedS > 0 {
				pred = append(pred, plotter.XY{X: float64(q.InputSL), Y: q.PredictedS})
				ylo, yhi = math.Min(ylo, q.PredictedS), math.Max(yhi, q.PredictedS)
			}
		}
		l, s, err := plotter.NewLinePoints(meas)
		if err != nil {
			return Figure{}, err
		}
		l.Color, s.Color, l.Width = layoutCol(pol), layoutCol(pol), vg.Points(1.8)
		p.Add(l, s)
		var bars layoutBars
		for _, q := range pts {
			if q.Policy == pol && q.MinS > 0 && q.MaxS >= q.MinS {
				bars = append(bars, layoutBar{x: float64(q.InputSL), y: q.MeasuredS, lo: q.MeasuredS - q.MinS, hi: q.MaxS - q.MeasuredS})
				ylo, yhi = math.Min(ylo, q.MinS), math.Max(yhi, q.MaxS)
			}
		}
		if len(bars) > 0 {
			eb, err := plotter.NewYErrorBars(bars)
			if err != nil {
				return Figure{}, err
			}
			eb.Color = layoutCol(pol)
			p.Add(eb)
		}
		p.Legend.Add(pol+" measured", l, s)
		if len(pred) > 0 {
			pl, err := plotter.NewLine(pred)
			if err != nil {
				return Figure{}, err
			}
			pl.Color, pl.Width = layoutCol(pol), vg.Points(1.2)
			pl.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(pl)
			what := map[string]string{"duplicate": "GEMM", "owr": "SUM", "ddb": "MAX"}[pol]
			p.Legend.Add(fmt.Sprintf("%s model (Table 2, %s)", pol, what), pl)
		}
	}
	if crossover > 0 {
		xl, err := plotter.NewLine(plotter.XYs{{X: crossover, Y: ylo / 1.3}, {X: crossover, Y: yhi * 1.3}})
		if err != nil {
			return Figure{}, err
		}
		xl.Color = color.Gray{Y: 100}
		xl.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(xl)
		p.Legend.Add(fmt.Sprintf("model crossover, %.4g tokens", crossover), xl)
	}
	p.Y.Min, p.Y.Max = ylo/1.3, yhi*1.3
	p.Legend.Top, p.Legend.Left = true, true
	return plotFigure(p, 7*vg.Inch, 5*vg.Inch), nil
}

// LayoutSpan is one interval of one thread in a prefill's timeline:
// Thread ("compute N", "copy N"), Kind ("gemm", "copy", "pack", "wait",
// "preload"), the operator or copied layer (Op), the decoder layer, and
// seconds since the prefill began.
type LayoutSpan struct {
	Thread, Kind, Op string
	Layer            int
	Start, End       float64
}

// LayoutGanttFigure draws PIM-SHERPA Fig. 11 for one prefill: a lane per
// thread (compute workers, then copy threads), a bar per span coloured by
// kind, milliseconds on x. Errors: no spans, or a span ending before it
// starts.
func LayoutGanttFigure(spans []LayoutSpan, title string) (Figure, error) {
	if len(spans) == 0 {
		return Figure{}, fmt.Errorf("layout timeline: no spans")
	}
	var lanes []string
	for _, s := range spans {
		if !(s.End >= s.Start) {
			return Figure{}, fmt.Errorf("layout timeline: %s %s span [%v, %v]: ends before it starts", s.Thread, s.Kind, s.Start, s.End)
		}
		if !slices.Contains(lanes, s.Thread) {
			lanes = append(lanes, s.Thread)
		}
	}
	slices.SortFunc(lanes, func(a, b string) int {
		ca, cb := strings.HasPrefix(a, "copy"), strings.HasPrefix(b, "copy")
		if ca != cb {
			if ca {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the prefill began (ms)"
	p.Add(plotter.NewGrid())
	seen := map[string]bool{}
	end := 0.0
	for _, s := range spans {
		y := float64(slices.Index(lanes, s.Thread))
		x0, x1 := 1e3*s.Start, 1e3*math.Max(s.End, s.Start+1e-7)
		end = math.Max(end, x1)
		r, err := rect(x0, x1, y-0.35, y+0.35, layoutCol(s.Kind))
		if err != nil {
			return Figure{}, err
		}
		r.LineStyle = draw.LineStyle{Color: color.White, Width: vg.Points(0.3)}
		p.Add(r)
		if !seen[s.Kind] {
			seen[s.Kind] = true
			p.Legend.Add(s.Kind, r)
		}
	}
	p.NominalY(lanes...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(lanes))-0.4+0.5
	p.X.Min, p.X.Max = 0, end*1.02
	p.Legend.Top = true
	return plotFigure(p, 8*vg.Inch, vg.Length(1.2+0.5*float64(len(lanes)))*vg.Inch+1.5*vg.Inch), nil
}

// layoutBar is one measured point's spread (min to max of the repetitions)
// for plotter.YErrorBars.
type layoutBar struct{ x, y, lo, hi float64 }

type layoutBars []layoutBar

func (b layoutBars) Len() int                        { return len(b) }
func (b layoutBars) XY(i int) (float64, float64)     { return b[i].x, b[i].y }
func (b layoutBars) YError(i int) (float64, float64) { return b[i].lo, b[i].hi }
