package reports

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// mdCounts counts a Markdown file's images, tables and table body rows as
// MarkdownTable writes them (header, separator, rows).
func mdCounts(md string) (figs, tables, rows int) {
	inTable := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "![") {
			figs++
		}
		if strings.HasPrefix(l, "|") {
			if !inTable {
				tables++
				rows -= 2
			}
			rows++
			inTable = true
		} else {
			inTable = false
		}
	}
	return figs, tables, rows
}

var viewBoxRE = regexp.MustCompile(`<svg [^>]*viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)

// checkPage checks a page against the Markdown it renders: one inline SVG
// with a non-empty viewBox per image, the same tables and rows, the title,
// and nothing fetched from elsewhere.
func checkPage(t *testing.T, page, md, title string) {
	t.Helper()
	figs, tables, rows := mdCounts(md)
	if figs == 0 || tables == 0 {
		t.Fatalf("fixture Markdown has %d figures, %d tables", figs, tables)
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "<title>"+title+"</title>") {
		t.Errorf("page head:\n%.300s", page)
	}
	vbs := viewBoxRE.FindAllStringSubmatch(page, -1)
	if len(vbs) != figs || strings.Count(page, "<svg") != figs {
		t.Errorf("%d <svg> (%d with a viewBox), want %d", strings.Count(page, "<svg"), len(vbs), figs)
	}
	for _, vb := range vbs {
		if vb[1] == "0" || vb[2] == "0" {
			t.Errorf("empty viewBox %q", vb[0])
		}
	}
	if got := strings.Count(page, "<table>"); got != tables {
		t.Errorf("%d tables, want %d", got, tables)
	}
	if got := strings.Count(page, "<tr>") - tables; got != rows {
		t.Errorf("%d body rows, want %d", got, rows)
	}
	if strings.Contains(page, "missing") && strings.Contains(page, "Figure not drawn") {
		t.Error("a figure was not drawn")
	}
	for _, bad := range []string{"<script", "<link", "<img", "src=\"http", "href=\"http", "url(http", "xmlns", "<?xml"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestProfileHTML(t *testing.T) {
	p := allSections(t)
	p.Host = `vm<b>&"`
	page, err := ProfileHTML(p, "")
	if err != nil {
		t.Fatal(err)
	}
	plots, err := ProfilePlots(p, "", newCapture())
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := ProfileMarkdown(&md, p, plots); err != nil {
		t.Fatal(err)
	}
	s := string(page)
	checkPage(t, s, md.String(), "bench profile: vm&lt;b&gt;&amp;&#34;")
	if strings.Contains(s, "<b>&") {
		t.Error("host not escaped")
	}
	want := "<code>bench probe --only " + strings.Join(p.Options.Sections, ",")
	if !strings.Contains(s, want) || !strings.Contains(s, "<h2>Machine</h2>") || !strings.Contains(s, "<td>AMD EPYC</td>") {
		t.Errorf("page lacks %q, the Machine section or its CPU", want)
	}
}

func TestSweepHTML(t *testing.T) {
	dir := t.TempDir()
	so := SweepOptions{Command: "bench report in --out out"}
	if err := SweepHTMLContext(context.Background(), synthCells(), dir, so); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the output directory, want report.html alone", len(ents))
	}
	md := t.TempDir()
	if _, err := Sweep(synthCells(), md, SweepOptions{Command: so.Command, Figures: newCapture()}); err != nil {
		t.Fatal(err)
	}
	mdText, err := os.ReadFile(filepath.Join(md, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	checkPage(t, s, string(mdText), "bench sweep report")
	if !strings.Contains(s, "Regenerate: <code>bench report in --out out</code>") || !strings.Contains(s, "<li><code>bench report in --out out</code></li>") {
		t.Error("page lacks the regenerating command")
	}
	if !strings.Contains(s, "<em>Figure 1. ") || !strings.Contains(s, "<strong>geomean speedup</strong>") {
		t.Error("captions or bold cells not rendered")
	}
}

// TestRenderMarkdown: the Markdown goes through goldmark (inline code,
// strong, emphasis, GFM tables), raw HTML in it is not passed through, and
// an image whose figure was not drawn says so.
func TestRenderMarkdown(t *testing.T) {
	md := "a `x*y` **b** *c* d\n\n| h1 | h2 |\n|:---|---:|\n| 1 | 2 |\n\n<script>alert(1)</script>\n\n![Lost figure](lost.png)\n"
	page, err := renderHTML("t", []byte(md), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, want := range []string{"<code>x*y</code>", "<strong>b</strong>", "<em>c</em>", "<th>h1</th>", "<td>1</td>", "Figure not drawn: Lost figure"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<script>") {
		t.Errorf("raw HTML passed through:\n%s", s)
	}
}

// TestHTMLFixture writes the fixture pages for scripts/test-html.sh, which
// renders them in headless Chromium: with BENCH_HTML_OUT=DIR,
// DIR/profile/{report.html,profile.md} from the all-sections fixture
// profile and DIR/sweep/{report.html,report.md} from the synthetic cells.
func TestHTMLFixture(t *testing.T) {
	out := os.Getenv("BENCH_HTML_OUT")
	if out == "" {
		t.Skip("BENCH_HTML_OUT not set (scripts/test-html.sh sets it)")
	}
	p := allSections(t)
	pd, sd := filepath.Join(out, "profile"), filepath.Join(out, "sweep")
	for _, d := range []string{pd, sd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteProfileHTML(pd, p, ""); err != nil {
		t.Fatal(err)
	}
	plots, err := ProfilePlots(p, "", newCapture())
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := ProfileMarkdown(&md, p, plots); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteFileAtomic(filepath.Join(pd, "profile.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	so := SweepOptions{Command: "bench report testdata --out sweep", Figures: newCapture()}
	if _, err := Sweep(synthCells(), sd, so); err != nil {
		t.Fatal(err)
	}
	if err := SweepHTMLContext(context.Background(), synthCells(), sd, so); err != nil {
		t.Fatal(err)
	}
}
