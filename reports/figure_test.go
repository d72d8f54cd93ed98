package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

func TestParseFigureOptions(t *testing.T) {
	for _, c := range []struct {
		formats, width string
		want           FigureOptions
		primary        string
	}{
		{"", "", FigureOptions{}, "png"},
		{"png", "", FigureOptions{Formats: []string{"png"}}, "png"},
		{"svg, PDF,svg", "column", FigureOptions{Formats: []string{"svg", "pdf"}, Width: "column"}, "svg"},
		{"pdf,png", "page", FigureOptions{Formats: []string{"pdf", "png"}, Width: "page"}, "png"},
	} {
		got, err := ParseFigureOptions(c.formats, c.width)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) || got.Primary() != c.primary {
			t.Errorf("%q %q: %+v (primary %s), %v; want %+v (primary %s)", c.formats, c.width, got, got.Primary(), err, c.want, c.primary)
		}
	}
	for _, c := range []struct{ formats, width, want string }{
		{"tiff", "", `--format "tiff": want png, pdf or svg`},
		{"png,,svg", "", `--format "": want png, pdf or svg`},
		{"png", "wide", `--width "wide": want column or page`},
		{"png", "3.3in", `--width "3.3in": want column or page`},
	} {
		_, err := ParseFigureOptions(c.formats, c.width)
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q %q: %v, want %q", c.formats, c.width, err, c.want)
		}
	}
}

func TestFigureForFile(t *testing.T) {
	o := FigureOptions{Formats: []string{"png", "svg"}, Width: "page"}
	got, err := o.ForFile("out/fig4.PDF")
	if err != nil || fmt.Sprint(got.Formats) != "[pdf png svg]" || got.Width != "page" || got.PrimaryPath("out/fig4.PDF") != "out/fig4.png" {
		t.Errorf("ForFile: %+v, %v", got, err)
	}
	got, err = FigureOptions{}.ForFile("a.svg")
	if err != nil || fmt.Sprint(got.Formats) != "[svg]" || got.PrimaryPath("a.svg") != "a.svg" {
		t.Errorf("ForFile a.svg: %+v, %v", got, err)
	}
	for _, bad := range []string{"a.tiff", "a", "a.png.bak"} {
		if _, err := o.ForFile(bad); err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)+": want a .png, .pdf or .svg file name") {
			t.Errorf("ForFile %q: %v", bad, err)
		}
	}
}

func TestToCP1252(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"4×4 µs":       "4\xd74 \xb5s",
		"β_P ≥ γ — ok": "beta_P >= gamma \x97 ok",
		"a → b ∞ 中":    "a -> b inf ?",
	} {
		if got := toCP1252(in); got != want {
			t.Errorf("toCP1252(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	mediaBoxRE = regexp.MustCompile(`/MediaBox \[0 0 ([0-9.]+) ([0-9.]+)\]`)
	svgWidthRE = regexp.MustCompile(`^([0-9.]+)pt$`)
	fontFileRE = regexp.MustCompile(`/FontFile[23]? [1-9][0-9]* 0 R`)
)

// checkFigure checks that data is a valid figure in format at width
// ("column" 237.6 pt, "page" 504 pt, "" any): PDF starting %PDF with an
// embedded font file and a MediaBox of that width, SVG parsing as XML with an
// <svg> root of that width, or a PNG.
func checkFigure(t *testing.T, name string, data []byte, format, width string) {
	t.Helper()
	wantPt := map[string]float64{WidthColumn: 237.6, WidthPage: 504}[width]
	var gotPt float64
	switch format {
	case FormatPDF:
		if !bytes.HasPrefix(data, []byte("%PDF")) {
			t.Errorf("%s: does not start with %%PDF", name)
			return
		}
		// Not embedded, gofpdf still names /FontFile2, as object 0.
		if !fontFileRE.Match(data) || !bytes.Contains(data, []byte("/Length1 ")) {
			t.Errorf("%s: no embedded font (/FontFile2 N 0 R with a font stream)", name)
		}
		m := mediaBoxRE.FindSubmatch(data)
		if m == nil {
			t.Errorf("%s: no MediaBox", name)
			return
		}
		gotPt, _ = strconv.ParseFloat(string(m[1]), 64)
	case FormatSVG:
		var root struct {
			XMLName xml.Name
			Width   string `xml:"width,attr"`
		}
		if err := xml.Unmarshal(data, &root); err != nil {
			t.Errorf("%s: not XML: %v", name, err)
			return
		}
		if root.XMLName.Local != "svg" {
			t.Errorf("%s: root <%s>, want <svg>", name, root.XMLName.Local)
		}
		if !bytes.Contains(data, []byte("@font-face")) {
			t.Errorf("%s: no embedded font (@font-face)", name)
		}
		m := svgWidthRE.FindStringSubmatch(root.Width)
		if m == nil {
			t.Errorf("%s: width %q", name, root.Width)
			return
		}
		gotPt, _ = strconv.ParseFloat(m[1], 64)
	case FormatPNG:
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Errorf("%s: not a PNG: %v", name, err)
			return
		}
		if wantPt > 0 {
			gotPt = float64(img.Bounds().Dx()) / figureDPI * 72
			if d := gotPt - wantPt; d < -1 || d > 1 {
				t.Errorf("%s: %d px wide, want %.0f", name, img.Bounds().Dx(), wantPt/72*figureDPI)
			}
		}
		return
	}
	if wantPt > 0 && (gotPt < wantPt-0.1 || gotPt > wantPt+0.1) {
		t.Errorf("%s: %.2f pt wide, want %.1f", name, gotPt, wantPt)
	}
}

// Every plot kind that is not written into a directory (the roofline, its
// sweep, the ebw plot, the GEMV bars) as PDF and SVG at both widths; the
// height keeps the native aspect ratio.
func TestFigureKindsVector(t *testing.T) {
	r := roofline.Request{Phase: roofline.Decode, Batch: 1, Tokens: 1, Context: 1024, Weight: "fp16", Act: "fp16", KV: "fp16", Routing: roofline.Routing{Kind: "uniform"}}
	rf, err := RooflineFigure(rooflineTestAnalysis(t, r))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := roofline.Published("m4-pro")
	arch := roofline.Arch{Name: "llama-3.2-1b", Dim: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, Vocab: 128256}
	s, err := roofline.Sweep(m, arch, r, "fp16", roofline.SweepBatch, []int{1, 8, 64})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := RooflineSweepFigure(s, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	lnl, _ := roofline.Published("lnl")
	ef, err := EBWFigure(lnl)
	if err != nil {
		t.Fatal(err)
	}
	gf, err := GEMVBandwidthFigure("GEMV β ≥ ebw", []results.GEMMResult{{DType: "fp32", M: 1, N: 64, K: 64, Threads: 1, WeightGBps: 10},
		{DType: "int1", M: 1, N: 64, K: 64, Threads: 1, WeightGBps: 4}}, []GEMVRoof{{Label: "DRAM", GBps: 12}})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]Figure{"roofline": rf, "sweep": sf, "ebw": ef, "gemv": gf} {
		for _, width := range []string{WidthColumn, WidthPage} {
			for _, format := range []string{FormatPDF, FormatSVG} {
				data, err := f.Encode(format, width)
				if err != nil {
					t.Fatalf("%s %s %s: %v", name, format, width, err)
				}
				checkFigure(t, fmt.Sprintf("%s.%s (%s)", name, format, width), data, format, width)
			}
		}
		// Aspect ratio kept: the page PDF's height over width is the native one.
		data, _ := f.Encode(FormatPDF, WidthPage)
		mb := mediaBoxRE.FindSubmatch(data)
		w, _ := strconv.ParseFloat(string(mb[1]), 64)
		h, _ := strconv.ParseFloat(string(mb[2]), 64)
		if want := float64(f.H / f.W); h/w < want-0.01 || h/w > want+0.01 {
			t.Errorf("%s: page PDF %.1f × %.1f pt, aspect %.3f, want %.3f", name, w, h, h/w, want)
		}
	}
	if _, err := rf.Encode("tiff", ""); err == nil || !strings.Contains(err.Error(), `format "tiff"`) {
		t.Errorf("Encode tiff: %v", err)
	}
}

// The profile's and the sweep report's figures (single plots and the
// multi-panel grids) in every format at column width, the Markdown
// embedding the PNG; without PNG, the first format.
func TestFigureDirectories(t *testing.T) {
	p := loadProfile(t)
	withSyntheticCompute(p)
	for _, c := range []struct {
		o   FigureOptions
		ext string
	}{
		{FigureOptions{Formats: []string{"svg", "png", "pdf"}, Width: WidthColumn}, "png"},
		{FigureOptions{Formats: []string{"svg", "pdf"}, Width: WidthPage}, "svg"},
	} {
		dir := t.TempDir()
		plots, err := ProfilePlots(p, dir, c.o)
		if err != nil {
			t.Fatal(err)
		}
		sdir := filepath.Join(dir, "sweep")
		s, err := Sweep(synthCells(), sdir, SweepOptions{Figures: c.o})
		if err != nil {
			t.Fatal(err)
		}
		if len(plots) < 5 || len(s.Plots) < 3 {
			t.Fatalf("%d profile plots, %d sweep plots", len(plots), len(s.Plots))
		}
		var md strings.Builder
		if err := ProfileMarkdown(&md, p, plots); err != nil {
			t.Fatal(err)
		}
		smd, err := os.ReadFile(filepath.Join(sdir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range []struct {
			dir, md string
			plots   []Plot
		}{{dir, md.String(), plots}, {sdir, string(smd), s.Plots}} {
			for _, pl := range set.plots {
				if filepath.Ext(pl.File) != "."+c.ext || !strings.Contains(set.md, "]("+pl.File+")") {
					t.Errorf("plot %s: want .%s, embedded in the Markdown", pl.File, c.ext)
				}
				for _, format := range c.o.Formats {
					name := withExt(pl.File, format)
					data, err := os.ReadFile(filepath.Join(set.dir, name))
					if err != nil {
						t.Error(err)
						continue
					}
					checkFigure(t, name, data, format, c.o.Width)
				}
			}
			if !slices.Contains(c.o.Formats, "png") {
				if m, _ := filepath.Glob(filepath.Join(set.dir, "*.png")); len(m) > 0 {
					t.Errorf("PNGs written without png in --format: %v", m)
				}
			}
		}
	}
}
