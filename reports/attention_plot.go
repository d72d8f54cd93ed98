package reports

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// OpSeries is one line of an operator sweep panel (SMEPilot Figs. 10 and
// 11): a placement's medians X, Y with their min-max spread Lo, Hi, or,
// with Predicted, its roofline prediction (a dashed line without markers
// or spread). Group is the placement, which picks the colour, so a
// measured line and its prediction share it.
type OpSeries struct {
	Label     string
	Group     string
	Predicted bool
	X, Y      []float64
	Lo, Hi    []float64
}

// OpPanel is one panel: a title, axis labels (with units) and its lines;
// LogX draws x on a log₂-spaced scale (contexts, batches, M).
type OpPanel struct {
	Title, XLabel, YLabel string
	LogX                  bool
	Series                []OpSeries
}

// OpSweepFigure draws panels side by side (at most cols per row), each a
// line plot of its series: measured lines with markers and min-max error
// bars, predictions dashed. Errors: no panel, or a panel without a point.
//
// header, when not "", is drawn once above the panels: what produced them
// (model, precision, threads, backends, machine, date; issue #18 part 2).
func OpSweepFigure(panels []OpPanel, cols int, header string) (Figure, error) {
	if len(panels) == 0 {
		return Figure{}, fmt.Errorf("operator sweep plot: no panels")
	}
	var ps []*plot.Plot
	for _, pn := range panels {
		p, err := opPanel(pn)
		if err != nil {
			return Figure{}, err
		}
		ps = append(ps, p)
	}
	return panelsFigureHeader(context.Background(), ps, cols, 6*vg.Inch, sweepPanelH, header), nil
}

func opPanel(pn OpPanel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	if pn.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = pow2Ticks{}
	}
	groups := map[string]int{}
	ymax, n := 0.0, 0
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, s := range pn.Series {
		if len(s.X) == 0 || len(s.X) != len(s.Y) {
			continue
		}
		gi, ok := groups[s.Group]
		if !ok {
			gi = len(groups)
			groups[s.Group] = gi
		}
		col := placementColor(s.Group, gi)
		xy := make(plotter.XYs, len(s.X))
		for i := range s.X {
			xy[i] = plotter.XY{X: s.X[i], Y: s.Y[i]}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymax = math.Max(ymax, s.Y[i])
			if i < len(s.Hi) {
				ymax = math.Max(ymax, s.Hi[i])
			}
		}
		n++
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("operator sweep plot %q: %w", s.Label, err)
		}
		l.Color, l.Width = col, vg.Points(1.5)
		if s.Predicted {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(s.Label, l)
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = col, draw.CircleGlyph{}, vg.Points(3)
		p.Add(l, sc)
		if len(s.Lo) == len(s.X) && len(s.Hi) == len(s.X) {
			eb := make(errPoints, len(s.X))
			for i := range s.X {
				eb[i] = errPoint{s.X[i], s.Y[i], s.Y[i] - s.Lo[i], s.Hi[i] - s.Y[i]}
			}
			bars, err := plotter.NewYErrorBars(eb)
			if err != nil {
				return nil, err
			}
			bars.Color = col
			p.Add(bars)
		}
		p.Legend.Add(s.Label, l, sc)
	}
	if n == 0 {
		return nil, fmt.Errorf("operator sweep plot %q: no points", pn.Title)
	}
	p.Y.Min = 0
	if pn.LogX {
		if xmin <= 0 {
			return nil, fmt.Errorf("operator sweep plot %q: x = %g on a log scale", pn.Title, xmin)
		}
		p.X.Min, p.X.Max = xmin/1.25, xmax*1.25
	} else {
		pad := math.Max((xmax-xmin)*0.05, 0.5)
		p.X.Min, p.X.Max = xmin-pad, xmax+pad
	}
	p.Y.Max = ymax * (1.2 + 0.07*float64(len(pn.Series)))
	return p, nil
}

// errPoints are points with asymmetric y errors for plotter.NewYErrorBars.
type errPoint struct{ x, y, lo, hi float64 }
type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].lo, e[i].hi }

// pow2Ticks marks the powers of two in range (contexts, batches, M).
type pow2Ticks struct{}

func (pow2Ticks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for v := math.Exp2(math.Floor(math.Log2(math.Max(min, 1)))); v <= max*1.0001; v *= 2 {
		if v >= min*0.9999 {
			ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
		}
	}
	if len(ts) < 2 {
		return plot.LogTicks{Prec: -1}.Ticks(min, max)
	}
	return ts
}

// OpSweepMarkdown is the Markdown page of an operator sweep: the title,
// the figure (image, a path relative to the page; "" for none), lines of
// context (what ran, in which precision, how it was timed), the table and
// its numbered footnotes.
func OpSweepMarkdown(title, image string, context []string, header []string, rows [][]string, notes []string) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", title)
	if image != "" {
		fmt.Fprintf(&b, "![%s](%s)\n\n", strings.ReplaceAll(title, "]", ")"), image)
	}
	for _, l := range context {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	if len(context) > 0 {
		b.WriteString("\n")
	}
	if err := MarkdownTable(&b, header, rows); err != nil {
		return "", err
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	for i, n := range notes {
		fmt.Fprintf(&b, "[%d] %s\n\n", i+1, n)
	}
	return b.String(), nil
}
