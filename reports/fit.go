package reports

import (
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// stackedLabels are labels at data anchors, listed top to bottom, moved
// down at draw time (in points, so at any output size) where they would
// overlap the one above: their order on the figure is the list's.
type stackedLabels struct {
	XYs    plotter.XYs
	Labels []string
	Style  draw.TextStyle
	Offset vg.Point
}

// newStackedLabels is labels at xys in a size-pt font, aligned by xa
// (and vertically centred on their anchor).
func newStackedLabels(xys plotter.XYs, labels []string, size float64, xa draw.XAlignment) (*stackedLabels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{}}, Labels: []string{""}})
	if err != nil {
		return nil, err
	}
	sty := l.TextStyle[0]
	sty.Font.Size = vg.Points(size)
	sty.XAlign, sty.YAlign = xa, draw.YCenter
	return &stackedLabels{XYs: xys, Labels: labels, Style: sty}, nil
}

// Plot draws the labels top to bottom, each at least one line height
// below the one before.
func (s *stackedLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	prev := vg.Length(math.Inf(1))
	for i, xy := range s.XYs {
		h := s.Style.Height(s.Labels[i])
		y := trY(xy.Y) + s.Offset.Y
		if i > 0 {
			y = min(y, prev-h*1.05)
		}
		prev = y
		c.FillText(s.Style, vg.Point{X: trX(xy.X) + s.Offset.X, Y: y}, s.Labels[i])
	}
}

// DataRange is the anchors' range.
func (s *stackedLabels) DataRange() (xmin, xmax, ymin, ymax float64) {
	return plotter.XYRange(s.XYs)
}

// titled draws p with its title's lines wrapped to the canvas width at
// draw time (at "; ", ", " or spaces), so a figure laid out narrower than
// its native size (--width column) keeps every word of its title. The
// title as built is kept and re-wrapped on every draw.
func titled(p *plot.Plot) func(draw.Canvas) {
	orig := p.Title.Text
	return func(c draw.Canvas) {
		p.Title.Text = wrapLines(orig, c.Max.X-c.Min.X-vg.Points(8), func(s string) vg.Length {
			return p.Title.TextStyle.Width(s)
		})
		p.Draw(c)
	}
}

// wrapLines breaks each line of s longer than w (as width measures it)
// after "; ", then ", ", then a space.
func wrapLines(s string, w vg.Length, width func(string) vg.Length) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for width(line) > w {
			cut := -1
			for _, sep := range []string{"; ", ", ", " "} {
				// The last separator that leaves the head within w.
				for i := strings.LastIndex(line, sep); i > 0; i = strings.LastIndex(line[:i], sep) {
					if width(line[:i+len(sep)-1]) <= w {
						cut = i + len(sep)
						break
					}
				}
				if cut > 0 {
					break
				}
			}
			if cut <= 0 {
				break
			}
			out = append(out, strings.TrimRight(line[:cut], " "))
			line = line[cut:]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
