package reports

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"github.com/cpubench/bench/results"
)

// HTMLFile is the name of the self-contained page `bench probe` writes
// beside profile.md and `bench report` beside report.md.
const HTMLFile = "report.html"

// ProfileHTML renders a profile as one self-contained HTML page: the same
// sections and tables as profile.md (ProfileMarkdown), every probe figure
// inlined as SVG (fonts embedded, no external URL, script or font), and
// command, the one that regenerates the figures (e.g. the `bench probe`
// invocation; "" for ProbeCommand(p, "DIR")), under each figure and in a
// closing "Commands" section. Errors are those of drawing the figures.
func ProfileHTML(p *results.Profile, command string) ([]byte, error) {
	o := FigureOptions{capture: &figureCapture{figs: map[string]Figure{}}}
	plots, err := ProfilePlots(p, "", o)
	if err != nil {
		return nil, err
	}
	var md bytes.Buffer
	if err := ProfileMarkdown(&md, p, plots); err != nil {
		return nil, err
	}
	if command == "" {
		command = ProbeCommand(p, "DIR")
	}
	return renderHTML("bench profile: "+p.Host, md.Bytes(), o.capture.figs, command)
}

// WriteProfileHTML writes ProfileHTML(p, command) to dir/report.html
// atomically.
func WriteProfileHTML(dir string, p *results.Profile, command string) error {
	page, err := ProfileHTML(p, command)
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, HTMLFile), page, 0o644)
}

// ProbeCommand is the `bench probe` invocation that measures p's sections
// again with p's options into dir (probe figures are drawn from a fresh
// measurement; nothing redraws them from profile.json).
func ProbeCommand(p *results.Profile, dir string) string {
	c := []string{"bench", "probe"}
	if len(p.Options.Sections) > 0 {
		c = append(c, "--only", strings.Join(p.Options.Sections, ","))
	}
	if p.Options.Quick {
		c = append(c, "--quick")
	}
	if p.Options.Reps > 0 {
		c = append(c, "--reps", strconv.Itoa(p.Options.Reps))
	}
	return strings.Join(append(c, "--out", dir), " ")
}

// SweepHTMLContext renders the sweep report of cells (SweepContext with o)
// as one self-contained HTML page, the same sections, tables, captions and
// "Regenerate:" commands as report.md with every figure inlined as SVG, and
// writes it to outDir/report.html atomically. The report is drawn again
// in a temporary directory (no figure file is written); ctx stops it.
func SweepHTMLContext(ctx context.Context, cells []results.SweepCell, outDir string, o SweepOptions) error {
	tmp, err := os.MkdirTemp("", "bench-report-html-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.RemoveAll(tmp)
	o.Figures = FigureOptions{capture: &figureCapture{figs: map[string]Figure{}}}
	if _, err := SweepContext(ctx, cells, tmp, o); err != nil {
		return err
	}
	return writeSweepHTML(tmp, outDir, o, o.Figures.capture.figs)
}

// SweepWithHTMLContext is SweepContext followed by its page: the report
// (report.md and the figure files) is drawn once into outDir, and
// report.html is made from that report.md and the same figures.
func SweepWithHTMLContext(ctx context.Context, cells []results.SweepCell, outDir string, o SweepOptions) (*SweepSummary, error) {
	rec := &figureCapture{figs: map[string]Figure{}}
	o.Figures.record = rec
	s, err := SweepContext(ctx, cells, outDir, o)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s, writeSweepHTML(outDir, outDir, o, rec.figs)
}

// writeSweepHTML renders mdDir/report.md with figs as the sweep's page and
// writes it to outDir/report.html atomically.
func writeSweepHTML(mdDir, outDir string, o SweepOptions, figs map[string]Figure) error {
	md, err := os.ReadFile(filepath.Join(mdDir, "report.md"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	title := o.Title
	if title == "" {
		title = "bench sweep report"
	}
	page, err := renderHTML(title, md, figs, "")
	if err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(outDir, HTMLFile), page, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

type htmlPage struct {
	Title    string
	Fonts    template.CSS  // the figures' @font-face rules, each once
	Body     template.HTML // goldmark's rendering of the Markdown, figures inlined
	Commands []string
}

var regenRE = regexp.MustCompile("Regenerate: `([^`]+)`")

// renderHTML turns the suite's own Markdown into a page with goldmark
// (CommonMark plus GFM tables; raw HTML in the Markdown is not passed
// through), each image replaced by the figure of the same base name drawn
// as SVG (figureRenderer). command, when not "", is shown under each
// figure; it and every "Regenerate: `…`" command of the Markdown are listed
// once in a closing "Commands" section.
func renderHTML(title string, md []byte, figs map[string]Figure, command string) ([]byte, error) {
	page := htmlPage{Title: title}
	addCmd := func(c string) {
		if !slices.Contains(page.Commands, c) {
			page.Commands = append(page.Commands, c)
		}
	}
	if command != "" {
		addCmd(command)
	}
	for _, m := range regenRE.FindAllSubmatch(md, -1) {
		addCmd(string(m[1]))
	}
	fr := &figureRenderer{figs: figs, command: command}
	gm := goldmark.New(
		goldmark.WithExtensions(extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignNone))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(fr, 100))),
	)
	var body bytes.Buffer
	if err := gm.Convert(md, &body); err != nil {
		return nil, fmt.Errorf("report.html: %w", err)
	}
	if fr.err != nil {
		return nil, fr.err
	}
	page.Body = template.HTML(body.String())
	page.Fonts = template.CSS(strings.Join(fr.fonts, "\n"))
	var out bytes.Buffer
	if err := htmlTemplate.Execute(&out, page); err != nil {
		return nil, fmt.Errorf("report.html: %w", err)
	}
	return out.Bytes(), nil
}

// figureRenderer renders a Markdown image whose file's base name is a
// drawn figure as the figure's inline SVG with its caption (the image's
// alt text) and regenerating command; other images as their alt text
// marked missing (the page loads no file).
type figureRenderer struct {
	figs    map[string]Figure
	command string
	fonts   []string // @font-face rules, each once
	err     error
}

// RegisterFuncs implements goldmark's renderer.NodeRenderer.
func (r *figureRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, r.image)
}

func (r *figureRenderer) image(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	var alt bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			alt.Write(t.Value(source))
		}
	}
	dest := string(n.Destination)
	base := strings.TrimSuffix(filepath.Base(dest), filepath.Ext(dest))
	// The figure sits inside the paragraph goldmark makes of the image
	// line, so it is phrasing content: spans styled as blocks.
	w.WriteString(`<span class="figure">`)
	if f, ok := r.figs[base]; ok {
		svg, fonts, err := inlineSVG(f)
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("report.html: figure %s: %w", base, err)
		}
		w.WriteString(string(svg))
		for _, ff := range fonts {
			if !slices.Contains(r.fonts, ff) {
				r.fonts = append(r.fonts, ff)
			}
		}
	} else {
		w.WriteString(`<span class="missing">Figure not drawn: `)
		template.HTMLEscape(w, alt.Bytes())
		w.WriteString(`</span>`)
	}
	w.WriteString(`<span class="figcaption">`)
	template.HTMLEscape(w, alt.Bytes())
	if r.command != "" {
		w.WriteString(`. Regenerate: <code>`)
		template.HTMLEscape(w, []byte(r.command))
		w.WriteString(`</code>`)
	}
	w.WriteString(`</span></span>`)
	return ast.WalkSkipChildren, nil
}

// inlineSVG draws f as SVG at its native size and returns the <svg>
// element alone: no XML prolog or comment, no namespace declarations
// (HTML's parser puts <svg> in the SVG namespace), so that the page
// names no URL; and, apart, the @font-face rules that embed its fonts
// (the page states each once, not once per figure).
func inlineSVG(f Figure) (template.HTML, []string, error) {
	data, err := f.Encode(FormatSVG, "")
	if err != nil {
		return "", nil, err
	}
	s := string(data)
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", nil, fmt.Errorf("no <svg> element in the SVG backend's output")
	}
	s = s[i:]
	var fonts []string
	if m := svgFontsRE.FindStringSubmatchIndex(s); m != nil {
		fonts = fontFaceRE.FindAllString(s[m[2]:m[3]], -1)
		s = s[:m[0]] + s[m[1]:]
	}
	for _, ns := range []string{`xmlns="http://www.w3.org/2000/svg"`, `xmlns:xlink="http://www.w3.org/1999/xlink"`} {
		s = strings.Replace(s, ns, "", 1)
	}
	return template.HTML(s), fonts, nil
}

// svgFontsRE is the <defs> block in which gonum's SVG backend embeds the
// fonts, each an @font-face rule (fontFaceRE) with the font as a data URL.
var (
	svgFontsRE = regexp.MustCompile(`(?s)<defs>\s*<style>(.*?)</style>\s*</defs>`)
	fontFaceRE = regexp.MustCompile(`(?s)@font-face\{.*?\}`)
)

var htmlTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem 2rem; color: #111; background: #fff; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.85rem; }
th, td { border: 1px solid #bbb; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #eee; }
tbody tr:nth-child(even) { background: #f7f7f7; }
.figure { display: block; margin: 1rem 0; }
.figure svg { display: block; max-width: 100%; height: auto; }
.figcaption { display: block; font-size: 0.85rem; color: #333; }
pre, code { font-family: monospace; background: #f3f3f3; }
pre { padding: 0.5rem; overflow-x: auto; }
blockquote { border-left: 4px solid #ccc; margin: 0.5rem 0; padding: 0.2rem 1rem; color: #333; }
.missing { color: #a00; }
{{.Fonts}}
</style>
</head>
<body>
<main>
{{.Body}}
{{- if .Commands}}
<h2>Commands</h2>
<p>The commands that regenerate this page's figures and tables:</p>
<ul>{{range .Commands}}<li><code>{{.}}</code></li>{{end}}</ul>
{{- end}}
</main>
</body>
</html>
`))
