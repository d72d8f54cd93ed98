package reports

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// MarkdownTable writes a GitHub-flavoured Markdown table. Header cells are
// printed as given (no automatic upper-casing).
func MarkdownTable(w io.Writer, header []string, rows [][]string) error {
	return writeTable(w, header, rows, tablewriter.WithRenderer(renderer.NewMarkdown()))
}

// TextTable writes an aligned plain-text table for terminals.
func TextTable(w io.Writer, header []string, rows [][]string) error {
	return writeTable(w, header, rows)
}

func writeTable(w io.Writer, header []string, rows [][]string, opts ...tablewriter.Option) error {
	opts = append(opts,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	t := tablewriter.NewTable(w, opts...)
	h := make([]any, len(header))
	for i, v := range header {
		h[i] = v
	}
	t.Header(h...)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}
