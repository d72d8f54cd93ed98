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
	md, err := os.ReadFile(filepath.Join(tmp, "report.md"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	title := o.Title
	if title == "" {
		title = "bench sweep report"
	}
	page, err := renderHTML(title, md, o.Figures.capture.figs, "")
	if err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(outDir, HTMLFile), page, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// htmlInline is a run of text: plain, `code`, **strong** or *emphasis*.
type htmlInline struct {
	Text               string
	Code, Strong, Emph bool
}

// htmlBlock is one block of the page; Kind picks the template branch.
type htmlBlock struct {
	Kind    string // h1, h2, h3, p, quote, list, table, code, figure
	Inl     []htmlInline
	Items   [][]htmlInline   // list
	Header  [][]htmlInline   // table
	Rows    [][][]htmlInline // table
	Text    string           // code
	Title   string           // figure
	SVG     template.HTML    // figure: trusted, drawn by gonum's SVG backend
	Command string           // figure: the command that regenerates it
}

type htmlPage struct {
	Title    string
	Fonts    template.CSS // the figures' @font-face rules, each once
	Blocks   []htmlBlock
	Commands []string
}

var imageRE = regexp.MustCompile(`^!\[(.*)\]\(([^)]*)\)$`)

var regenRE = regexp.MustCompile("Regenerate: `([^`]+)`")

// renderHTML turns the suite's own Markdown (headings, paragraphs, block
// quotes, lists, pipe tables as MarkdownTable writes them, fenced code and
// images) into a page, each image replaced by the figure of the same base
// name drawn as SVG. command, when not "", is shown under each figure.
func renderHTML(title string, md []byte, figs map[string]Figure, command string) ([]byte, error) {
	page := htmlPage{Title: title}
	addCmd := func(c string) {
		for _, x := range page.Commands {
			if x == c {
				return
			}
		}
		page.Commands = append(page.Commands, c)
	}
	if command != "" {
		addCmd(command)
	}
	var fontRules []string
	lines := strings.Split(strings.ReplaceAll(string(md), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "":
			i++
		case strings.HasPrefix(l, "```"):
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				code = append(code, lines[i])
			}
			i++
			page.Blocks = append(page.Blocks, htmlBlock{Kind: "code", Text: strings.Join(code, "\n")})
		case strings.HasPrefix(l, "#"):
			n := len(l) - len(strings.TrimLeft(l, "#"))
			page.Blocks = append(page.Blocks, htmlBlock{Kind: "h" + strconv.Itoa(min(n, 4)), Inl: parseInline(strings.TrimSpace(l[n:]))})
			i++
		case strings.HasPrefix(l, "|"):
			var rows [][][]htmlInline
			var hdr [][]htmlInline
			for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
				if isSeparatorRow(lines[i]) {
					continue
				}
				cells := splitRow(lines[i])
				var row [][]htmlInline
				for _, c := range cells {
					row = append(row, parseInline(c))
				}
				if hdr == nil {
					hdr = row
				} else {
					rows = append(rows, row)
				}
			}
			page.Blocks = append(page.Blocks, htmlBlock{Kind: "table", Header: hdr, Rows: rows})
		case strings.HasPrefix(l, "- "):
			var items [][]htmlInline
			for ; i < len(lines) && strings.HasPrefix(lines[i], "- "); i++ {
				items = append(items, parseInline(lines[i][2:]))
			}
			page.Blocks = append(page.Blocks, htmlBlock{Kind: "list", Items: items})
		case strings.HasPrefix(l, "> "):
			var q []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "> "); i++ {
				q = append(q, lines[i][2:])
			}
			page.Blocks = append(page.Blocks, htmlBlock{Kind: "quote", Inl: parseInline(strings.Join(q, " "))})
		case imageRE.MatchString(strings.TrimSpace(l)):
			m := imageRE.FindStringSubmatch(strings.TrimSpace(l))
			base := strings.TrimSuffix(filepath.Base(m[2]), filepath.Ext(m[2]))
			b := htmlBlock{Kind: "figure", Title: m[1], Command: command}
			if f, ok := figs[base]; ok {
				svg, fonts, err := inlineSVG(f)
				if err != nil {
					return nil, fmt.Errorf("report.html: figure %s: %w", base, err)
				}
				b.SVG = svg
				for _, ff := range fonts {
					if !slices.Contains(fontRules, ff) {
						fontRules = append(fontRules, ff)
					}
				}
			}
			page.Blocks = append(page.Blocks, b)
			i++
		default:
			var para []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && !blockStart(lines[i]); i++ {
				para = append(para, lines[i])
			}
			text := strings.Join(para, " ")
			for _, m := range regenRE.FindAllStringSubmatch(text, -1) {
				addCmd(m[1])
			}
			page.Blocks = append(page.Blocks, htmlBlock{Kind: "p", Inl: parseInline(text)})
		}
	}
	page.Fonts = template.CSS(strings.Join(fontRules, "\n"))
	var out bytes.Buffer
	if err := htmlTemplate.Execute(&out, page); err != nil {
		return nil, fmt.Errorf("report.html: %w", err)
	}
	return out.Bytes(), nil
}

// blockStart says whether l starts a block other than a paragraph.
func blockStart(l string) bool {
	for _, p := range []string{"#", "|", "```", "- ", "> "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return imageRE.MatchString(strings.TrimSpace(l))
}

// splitRow splits a MarkdownTable row ("| a | b |", cells padded by at
// least one space each side) into trimmed cells.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	parts := strings.Split(" "+l+" ", " | ")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// isSeparatorRow says whether l is a table's header separator ("|:---|---:|").
func isSeparatorRow(l string) bool {
	return strings.Contains(l, "-") && strings.Trim(strings.TrimSpace(l), "|:- ") == ""
}

// parseInline splits s into `code` spans (verbatim), **strong** and
// *emphasis* runs and plain text.
func parseInline(s string) []htmlInline {
	var out []htmlInline
	var cur strings.Builder
	strong, emph := false, false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, htmlInline{Text: cur.String(), Strong: strong, Emph: emph})
			cur.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case s[i] == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				flush()
				out = append(out, htmlInline{Text: s[i+1 : i+1+j], Code: true, Strong: strong, Emph: emph})
				i += j + 2
				continue
			}
			cur.WriteByte(s[i])
			i++
		case strings.HasPrefix(s[i:], "**"):
			flush()
			strong = !strong
			i += 2
		case s[i] == '*':
			flush()
			emph = !emph
			i++
		default:
			cur.WriteByte(s[i])
			i++
		}
	}
	flush()
	return out
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
figure { margin: 1rem 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85rem; color: #333; }
pre, code { font-family: monospace; background: #f3f3f3; }
pre { padding: 0.5rem; overflow-x: auto; }
blockquote { border-left: 4px solid #ccc; margin: 0.5rem 0; padding: 0.2rem 1rem; color: #333; }
.missing { color: #a00; }
{{.Fonts}}
</style>
</head>
<body>
<main>
{{- range .Blocks}}
{{- if eq .Kind "h1"}}
<h1>{{template "inl" .Inl}}</h1>
{{- else if eq .Kind "h2"}}
<h2>{{template "inl" .Inl}}</h2>
{{- else if eq .Kind "h3"}}
<h3>{{template "inl" .Inl}}</h3>
{{- else if eq .Kind "h4"}}
<h4>{{template "inl" .Inl}}</h4>
{{- else if eq .Kind "p"}}
<p>{{template "inl" .Inl}}</p>
{{- else if eq .Kind "quote"}}
<blockquote>{{template "inl" .Inl}}</blockquote>
{{- else if eq .Kind "list"}}
<ul>{{range .Items}}<li>{{template "inl" .}}</li>{{end}}</ul>
{{- else if eq .Kind "code"}}
<pre><code>{{.Text}}</code></pre>
{{- else if eq .Kind "table"}}
<table>
<thead><tr>{{range .Header}}<th>{{template "inl" .}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td>{{template "inl" .}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- else if eq .Kind "figure"}}
<figure>
{{- if .SVG}}
{{.SVG}}
{{- else}}
<p class="missing">Figure not drawn: {{.Title}}</p>
{{- end}}
<figcaption>{{.Title}}{{if .Command}}. Regenerate: <code>{{.Command}}</code>{{end}}</figcaption>
</figure>
{{- end}}
{{- end}}
{{- if .Commands}}
<h2>Commands</h2>
<p>The commands that regenerate this page's figures and tables:</p>
<ul>{{range .Commands}}<li><code>{{.}}</code></li>{{end}}</ul>
{{- end}}
</main>
</body>
</html>
{{define "inl"}}{{range .}}{{if .Code}}<code>{{.Text}}</code>{{else if and .Strong .Emph}}<strong><em>{{.Text}}</em></strong>{{else if .Strong}}<strong>{{.Text}}</strong>{{else if .Emph}}<em>{{.Text}}</em>{{else}}{{.Text}}{{end}}{{end}}{{end}}
`))
