package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// A bad --format or --width is one error line naming the value, in every
// command that draws figures, before any work.
func TestFigureFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cells := writeCells(t, filepath.Join(dir, "sweep"), []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "gsm8k", "cores", 1, 1)})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", cells, "--out", filepath.Join(dir, "out"), "--format", "tiff"}, `bench report: --format "tiff": want png, pdf or svg`},
		{[]string{"report", cells, "--out", filepath.Join(dir, "out"), "--width", "wide"}, `bench report: --width "wide": want column or page`},
		{[]string{"probe", "--format", "png,eps"}, `bench probe: --format "eps": want png, pdf or svg`},
		{[]string{"probe", "--width", "2col"}, `bench probe: --width "2col": want column or page`},
		{[]string{"roofline", "--profile", "m4-pro", "--model", "qwen3-0.6b", "--png", filepath.Join(dir, "r.png"), "--format", "jpg"}, `bench roofline: --format "jpg": want png, pdf or svg`},
		{[]string{"roofline", "--profile", "m4-pro", "--model", "qwen3-0.6b", "--png", filepath.Join(dir, "r.jpg")}, `bench roofline: --png "` + filepath.Join(dir, "r.jpg") + `": want a .png, .pdf or .svg file name`},
		{[]string{"roofline", "--profile", "lnl", "--ebw-plot", filepath.Join(dir, "f.svg"), "--width", "half"}, `bench roofline: --width "half": want column or page`},
		{[]string{"gemm", "--m", "1", "--plot", filepath.Join(dir, "g.eps")}, `bench gemm: --plot "` + filepath.Join(dir, "g.eps") + `": want a .png, .pdf or .svg file name`},
		{[]string{"gemm", "--m", "1", "--format", "tiff"}, `bench gemm: --format "tiff": want png, pdf or svg`},
	} {
		code, _, errs := run(t, c.args...)
		if code == 0 || strings.TrimSpace(errs) != c.want {
			t.Errorf("bench %v: exit %d, stderr %q, want the one line %q", c.args, code, errs, c.want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.*")); len(m) > 0 {
		t.Errorf("a refused command wrote %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused report created its --out")
	}
}

// probe parses --format and --width into the options its directory writer
// gets.
func TestProbeFigureFlags(t *testing.T) {
	var got *ProbeOptions
	cmd := newProbeCmdWith(IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *ProbeOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--format", "pdf,svg", "--width", "column"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if o := got.Fig.opts; strings.Join(o.Formats, ",") != "pdf,svg" || o.Width != "column" {
		t.Errorf("figure options %+v", o)
	}
}

// roofline --png FILE.svg writes an SVG; --format adds siblings; the
// --ebw-plot table embeds the PNG when one is written, else the file's own
// format.
func TestRooflineVectorFigures(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "r.svg")
	code, _, errs := runRoofline(t, "--profile", "m4-pro", "--model", "llama-3.2-1b", "--png", svg, "--format", "pdf", "--width", "column")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(data, []byte(`<svg width="237.6pt"`)) {
		t.Errorf("%s: %v, %.200s", svg, err, data)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "r.pdf")); err != nil || !bytes.HasPrefix(data, []byte("%PDF")) {
		t.Errorf("r.pdf: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.png")); err == nil {
		t.Error("r.png written without png in --format")
	}
	for _, c := range []struct{ format, embed string }{{"", "fig4.pdf"}, {"svg,png", "fig4.png"}} {
		fig := filepath.Join(dir, c.format, "fig4.pdf")
		os.MkdirAll(filepath.Dir(fig), 0o755)
		code, out, errs := runRoofline(t, "--profile", "lnl", "--ebw-plot", fig, "--format", c.format)
		if code != 0 {
			t.Fatalf("--ebw-plot %s --format %q: exit %d: %s", fig, c.format, code, errs)
		}
		md, _ := os.ReadFile(filepath.Join(filepath.Dir(fig), "fig4.md"))
		if !strings.Contains(string(md), "]("+c.embed+")") || !strings.Contains(out, "wrote "+fig) {
			t.Errorf("--format %q: table embeds %q?\n%s\n%s", c.format, c.embed, md, out)
		}
	}
	for _, f := range []string{"fig4.pdf", "fig4.png", "fig4.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "svg,png", f)); err != nil {
			t.Error(err)
		}
	}
}

// report --format svg,pdf writes no PNG and report.md embeds the SVGs.
func TestReportVectorFigures(t *testing.T) {
	tmp := t.TempDir()
	in := filepath.Join(tmp, "sweep")
	writeCells(t, in, []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "gsm8k", "cores", 1, 2),
		reportCell("b", "h", "2026-03-01T00:00:00Z", "gsm8k", "matrix", 1, 1)})
	out := filepath.Join(tmp, "out")
	code, stdout, errs := run(t, "report", in, "--out", out, "--format", "svg,pdf", "--width", "page")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "(latency.svg)") || !strings.Contains(stdout, "latency.svg") {
		t.Errorf("report.md: %v\n%s\n%s", err, md, stdout)
	}
	for _, f := range []string{"latency.svg", "latency.pdf"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(out, "*.png")); len(m) > 0 {
		t.Errorf("PNGs without png in --format: %v", m)
	}
}

// Every figure's caption in report.md gives the command that regenerates
// it (issue 18 part 2).
func TestReportCaptionCommand(t *testing.T) {
	tmp := t.TempDir()
	in := filepath.Join(tmp, "my sweep")
	writeCells(t, in, []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "gsm8k", "cores", 1, 2),
		reportCell("b", "h", "2026-03-01T00:00:00Z", "gsm8k", "matrix", 1, 1)})
	out := filepath.Join(tmp, "out")
	code, _, errs := run(t, "report", in, "--out", out, "--format", "png,svg", "--width", "column")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "Regenerate: `bench report '" + in + "' --out " + out + " --format png,svg --width column`."
	figs := strings.Count(string(md), "![")
	if n := strings.Count(string(md), want); figs == 0 || n != figs {
		t.Errorf("%d of %d figures give %q:\n%s", n, figs, want, md)
	}
}
