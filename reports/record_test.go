package reports

import (
	"image"
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// drawnText is one string a figure drew, at its anchor in figure
// coordinates (points, origin bottom left) with its font size.
type drawnText struct {
	X, Y, Size float64
	S          string
}

// drawnStroke is one stroked path: its colour, whether it was dashed and
// its points in figure coordinates.
type drawnStroke struct {
	Color  color.RGBA
	Dashed bool
	Pts    []vg.Point
}

// recording is what a figure drew.
type recording struct {
	Texts   []drawnText
	Strokes []drawnStroke
	Fills   int
}

// affine is a 2-D transform x' = a·x + b·y + c, y' = d·x + e·y + f.
type affine struct{ a, b, c, d, e, f float64 }

func (m affine) apply(p vg.Point) vg.Point {
	x, y := float64(p.X), float64(p.Y)
	return vg.Point{X: vg.Length(m.a*x + m.b*y + m.c), Y: vg.Length(m.d*x + m.e*y + m.f)}
}

// mul returns m ∘ n (n applied first).
func (m affine) mul(n affine) affine {
	return affine{
		m.a*n.a + m.b*n.d, m.a*n.b + m.b*n.e, m.a*n.c + m.b*n.f + m.c,
		m.d*n.a + m.e*n.d, m.d*n.b + m.e*n.e, m.d*n.c + m.e*n.f + m.f,
	}
}

type recState struct {
	m      affine
	col    color.RGBA
	dashed bool
}

// recorder is a vg.Canvas that records text and strokes with their
// positions in figure coordinates.
type recorder struct {
	st    recState
	stack []recState
	rec   *recording
}

func (r *recorder) SetLineWidth(vg.Length) {}
func (r *recorder) SetLineDash(p []vg.Length, _ vg.Length) {
	r.st.dashed = len(p) > 0
}
func (r *recorder) SetColor(c color.Color) {
	if c == nil {
		c = color.Black
	}
	r.st.col = color.RGBAModel.Convert(c).(color.RGBA)
}
func (r *recorder) Rotate(rad float64) {
	s, c := math.Sincos(rad)
	r.st.m = r.st.m.mul(affine{c, -s, 0, s, c, 0})
}
func (r *recorder) Translate(p vg.Point) {
	r.st.m = r.st.m.mul(affine{1, 0, float64(p.X), 0, 1, float64(p.Y)})
}
func (r *recorder) Scale(x, y float64) { r.st.m = r.st.m.mul(affine{x, 0, 0, 0, y, 0}) }
func (r *recorder) Push()              { r.stack = append(r.stack, r.st) }
func (r *recorder) Pop() {
	r.st = r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
}
func (r *recorder) Stroke(p vg.Path) {
	var pts []vg.Point
	for _, c := range p {
		if c.Type == vg.MoveComp || c.Type == vg.LineComp {
			pts = append(pts, r.st.m.apply(c.Pos))
		}
	}
	r.rec.Strokes = append(r.rec.Strokes, drawnStroke{Color: r.st.col, Dashed: r.st.dashed, Pts: pts})
}
func (r *recorder) Fill(vg.Path) { r.rec.Fills++ }
func (r *recorder) FillString(f font.Face, p vg.Point, s string) {
	q := r.st.m.apply(p)
	r.rec.Texts = append(r.rec.Texts, drawnText{X: float64(q.X), Y: float64(q.Y), Size: f.Font.Size.Points(), S: s})
}
func (r *recorder) DrawImage(vg.Rectangle, image.Image) {}

// record draws f at its native size on a recorder.
func record(t *testing.T, f Figure) *recording {
	t.Helper()
	rec := &recording{}
	r := &recorder{st: recState{m: affine{1, 0, 0, 0, 1, 0}}, rec: rec}
	f.draw(draw.Canvas{Canvas: r, Rectangle: vg.Rectangle{Max: vg.Point{X: f.W, Y: f.H}}})
	return rec
}

// text returns every drawn string joined by newlines.
func (r *recording) text() string {
	var b strings.Builder
	for _, t := range r.Texts {
		b.WriteString(t.S)
		b.WriteByte('\n')
	}
	return b.String()
}

// find returns the drawn strings containing sub.
func (r *recording) find(sub string) []drawnText {
	var out []drawnText
	for _, t := range r.Texts {
		if strings.Contains(t.S, sub) {
			out = append(out, t)
		}
	}
	return out
}

// strokesOf returns the strokes drawn in colour c.
func (r *recording) strokesOf(c color.Color) []drawnStroke {
	want := color.RGBAModel.Convert(c).(color.RGBA)
	var out []drawnStroke
	for _, s := range r.Strokes {
		if s.Color == want {
			out = append(out, s)
		}
	}
	return out
}

var colorBlack = color.RGBA{0, 0, 0, 255}
