package reports

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/text/encoding/charmap"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/cpubench/bench/results"
)

// Figure formats: PNG (raster, the default), PDF and SVG (vector, fonts
// embedded).
const (
	FormatPNG = "png"
	FormatPDF = "pdf"
	FormatSVG = "svg"
)

// Figure widths: a single column (≈3.3 in) and a whole page, both columns
// (≈7 in), of a two-column paper.
const (
	WidthColumn = "column"
	WidthPage   = "page"

	ColumnWidth = 3.3 * vg.Inch
	PageWidth   = 7 * vg.Inch
)

// Resolution of a PNG drawn at --width column or page (dots per inch); the
// native size keeps gonum's 96 dpi as before.
const figureDPI = 300

// FigureOptions decide in which formats and at which width every figure is
// written. The zero value writes PNG at each figure's native size, as the
// suite always has.
type FigureOptions struct {
	// Formats are png, pdf and svg in the order given; empty means png.
	Formats []string
	// Width is "" (each figure's native size), "column" (3.3 in wide) or
	// "page" (7 in wide); the height keeps the native aspect ratio.
	Width string

	// capture, when set (tests), receives every figure instead of the
	// files being written.
	capture *figureCapture
	// record, when set, receives every figure as well as the files being
	// written (a report's page drawn from the same figures).
	record *figureCapture
}

// figureCapture collects figures by base name (without extension).
type figureCapture struct {
	figs  map[string]Figure
	order []string
}

// add keeps f under path's base name (without extension).
func (c *figureCapture) add(path string, f Figure) {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if _, ok := c.figs[base]; !ok {
		c.order = append(c.order, base)
	}
	c.figs[base] = f
}

// ParseFigureOptions reads --format (comma-separated png, pdf, svg; "" for
// png) and --width ("", column or page). Errors name the flag and the value,
// e.g. `--format "tiff": want png, pdf or svg`.
func ParseFigureOptions(formats, width string) (FigureOptions, error) {
	var o FigureOptions
	if strings.TrimSpace(formats) != "" {
		for _, f := range strings.Split(formats, ",") {
			f = strings.ToLower(strings.TrimSpace(f))
			if !validFormat(f) {
				return FigureOptions{}, fmt.Errorf("--format %q: want png, pdf or svg", f)
			}
			if !slices.Contains(o.Formats, f) {
				o.Formats = append(o.Formats, f)
			}
		}
	}
	switch w := strings.ToLower(strings.TrimSpace(width)); w {
	case "", WidthColumn, WidthPage:
		o.Width = w
	default:
		return FigureOptions{}, fmt.Errorf("--width %q: want column or page", width)
	}
	return o, nil
}

func validFormat(f string) bool { return f == FormatPNG || f == FormatPDF || f == FormatSVG }

// formats returns the formats to write, png when none was given.
func (o FigureOptions) formats() []string {
	if len(o.Formats) == 0 {
		return []string{FormatPNG}
	}
	return o.Formats
}

// Primary is the format Markdown embeds: png when it is written, else the
// first format.
func (o FigureOptions) Primary() string {
	fs := o.formats()
	if slices.Contains(fs, FormatPNG) {
		return FormatPNG
	}
	return fs[0]
}

// ForFile returns the options for an explicitly named output file
// (--plot FILE.svg): its extension's format first, then o's formats as
// siblings with their own extensions. An extension other than .png, .pdf
// or .svg is an error naming the file.
func (o FigureOptions) ForFile(path string) (FigureOptions, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if !validFormat(ext) {
		return FigureOptions{}, fmt.Errorf("%q: want a .png, .pdf or .svg file name", path)
	}
	out := FigureOptions{Formats: []string{ext}, Width: o.Width}
	for _, f := range o.Formats {
		if !slices.Contains(out.Formats, f) {
			out.Formats = append(out.Formats, f)
		}
	}
	return out, nil
}

// withExt replaces name's extension with format's.
func withExt(name, format string) string {
	return strings.TrimSuffix(name, filepath.Ext(name)) + "." + format
}

// Figure is a drawing with a native size (the size its layout was designed
// for, in vg lengths: 1 in = 72 pt) that can be encoded as PNG, PDF or SVG
// at that size or scaled to a paper's column or page width.
type Figure struct {
	W, H vg.Length
	draw func(draw.Canvas)
}

// plotFigure is a single plot drawn at w × h.
func plotFigure(p *plot.Plot, w, h vg.Length) Figure {
	return Figure{W: w, H: h, draw: titled(p)}
}

// layout returns the size the figure is laid out at and the scale that
// maps it to the output size for width: the native size for "", else the
// target width T with the native aspect ratio, laid out between T and 2T
// wide (the native width clamped) so that text of 10-12 pt prints at 5 pt or
// more and a wide figure's content is not squeezed into 3.3 in.
func (f Figure) layout(width string) (lw, lh vg.Length, scale float64) {
	var t vg.Length
	switch width {
	case WidthColumn:
		t = ColumnWidth
	case WidthPage:
		t = PageWidth
	default:
		return f.W, f.H, 1
	}
	lw = min(max(f.W, t), 2*t)
	return lw, lw * f.H / f.W, float64(t / lw)
}

// Encode renders the figure in format (png, pdf or svg) at width ("",
// column or page). PDF and SVG embed their fonts; PDF text is encoded in
// Windows-1252 (what gonum's PDF backend declares), with Greek letters and
// other symbols outside it spelled out (β → beta, ≥ → >=).
func (f Figure) Encode(format, width string) ([]byte, error) {
	return f.encode(context.Background(), format, width)
}

// encode is Encode stopped with ctx's error when ctx is done (checked
// before drawing, while a large PNG canvas is allocated, after drawing and
// while the file is encoded).
func (f Figure) encode(ctx context.Context, format, width string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lw, lh, s := f.layout(width)
	ow, oh := lw*vg.Length(s), lh*vg.Length(s)
	var (
		c  vg.CanvasWriterTo
		dc vg.Canvas
	)
	switch format {
	case FormatPNG:
		dpi := vgimg.UseDPI(vgimg.DefaultDPI)
		if width != "" {
			dpi = vgimg.UseDPI(figureDPI)
		}
		// Allocating and clearing a large canvas takes seconds and checks
		// no context: wait for it only while ctx runs.
		canvas, err := untilDone(ctx, func() *vgimg.Canvas {
			return vgimg.NewWith(vgimg.UseWH(ow, oh), dpi, vgimg.UseBackgroundColor(color.White))
		})
		if err != nil {
			return nil, err
		}
		img := vgimg.PngCanvas{Canvas: canvas}
		c, dc = img, img
	case FormatPDF:
		pdf := vgpdf.New(ow, oh)
		pdf.EmbedFonts(true)
		c, dc = pdf, cp1252Canvas{pdf}
	case FormatSVG:
		svg := vgsvg.NewWith(vgsvg.UseWH(ow, oh), vgsvg.EmbedFonts(true))
		c, dc = svg, svg
	default:
		return nil, fmt.Errorf("format %q: want png, pdf or svg", format)
	}
	if s != 1 {
		dc.Scale(s, s)
	}
	f.draw(draw.Canvas{Canvas: dc, Rectangle: vg.Rectangle{Max: vg.Point{X: lw, Y: lh}}})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(ctxWriter{ctx, &buf}); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write encodes the figure in each of o's formats and writes each
// atomically to path with that format's extension (path's own extension is
// replaced). It returns the paths written.
func (o FigureOptions) Write(f Figure, path string) ([]string, error) {
	return o.write(context.Background(), f, path)
}

// write is Write stopped with ctx's error when ctx is done; the files
// written before stay.
func (o FigureOptions) write(ctx context.Context, f Figure, path string) ([]string, error) {
	var out []string
	if c := o.capture; c != nil {
		c.add(path, f)
		return []string{withExt(path, o.Primary())}, nil
	}
	if c := o.record; c != nil {
		c.add(path, f)
	}
	for _, format := range o.formats() {
		data, err := f.encode(ctx, format, o.Width)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			return out, fmt.Errorf("plot %s: %w", filepath.Base(path), err)
		}
		name := withExt(path, format)
		if err := results.WriteFileAtomic(name, data, 0o644); err != nil {
			return out, err
		}
		out = append(out, name)
	}
	return out, nil
}

// save writes f to dir/name in o's formats (name's extension replaced),
// stopped with ctx's error when ctx is done.
func (o FigureOptions) save(ctx context.Context, f Figure, dir, name string) error {
	_, err := o.write(ctx, f, filepath.Join(dir, name))
	return err
}

// cp1252Canvas encodes text for gonum's PDF backend, which declares the
// Windows-1252 code page but passes Go's UTF-8 bytes through (× would print
// as Ã—).
type cp1252Canvas struct{ *vgpdf.Canvas }

func (c cp1252Canvas) FillString(f font.Face, pt vg.Point, s string) {
	c.Canvas.FillString(f, pt, toCP1252(s))
}

// cp1252Spelled spells out the runes the suite's labels use that Windows-1252
// lacks.
var cp1252Spelled = map[rune]string{
	'α': "alpha", 'β': "beta", 'γ': "gamma", 'δ': "delta", 'ε': "eps", 'θ': "theta",
	'λ': "lambda", 'μ': "µ", 'π': "pi", 'σ': "sigma", 'Σ': "Sum", 'τ': "tau", 'ω': "omega", 'Δ': "Delta",
	'≥': ">=", '≤': "<=", '≈': "~", '≠': "!=", '→': "->", '←': "<-", '↔': "<->", '∞': "inf",
	'−': "-", '√': "sqrt", '∑': "Sum", '⁻': "^-", '⁰': "^0",
	'₀': "0", '₁': "1", '₂': "2", '₃': "3", '₄': "4",
}

func toCP1252(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if sp, ok := cp1252Spelled[r]; ok {
			for _, r2 := range sp {
				if e, ok := charmap.Windows1252.EncodeRune(r2); ok {
					b.WriteByte(e)
				} else {
					b.WriteByte('?')
				}
			}
			continue
		}
		if e, ok := charmap.Windows1252.EncodeRune(r); ok {
			b.WriteByte(e)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// writePNG writes f as a PNG at its native size to w.
func writePNG(w io.Writer, f Figure) error {
	data, err := f.Encode(FormatPNG, "")
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// PrimaryPath is path with the primary format's extension: the file a
// Markdown table beside the figure embeds.
func (o FigureOptions) PrimaryPath(path string) string { return withExt(path, o.Primary()) }
