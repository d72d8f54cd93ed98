package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/reports"
)

// figureFlags are --format and --width of the commands that draw figures;
// parse turns them into reports.FigureOptions.
type figureFlags struct {
	Format, Width string

	opts reports.FigureOptions // parsed
}

// register adds the flags. file says the command names its figure's file
// (--plot FILE.png): --format then adds siblings with the other extensions,
// and its default is the file's own format.
func (f *figureFlags) register(cmd *cobra.Command, file bool) {
	fs := cmd.Flags()
	if file {
		fs.StringVar(&f.Format, "format", "", "also write the figure in these formats beside the named file (same name, their extensions), comma-separated: png, pdf, svg (PDF and SVG are vector, fonts embedded)")
	} else {
		fs.StringVar(&f.Format, "format", reports.FormatPNG, "figure formats, comma-separated: png, pdf, svg (PDF and SVG are vector, fonts embedded); Markdown embeds the PNG when there is one")
	}
	fs.StringVar(&f.Width, "width", "", "figure width: column (3.3 in) or page (7 in), the height keeping each figure's aspect ratio (default: each figure's own size)")
}

// parse validates the flags; errors start with the command's name.
func (f *figureFlags) parse(cmd string) error {
	o, err := reports.ParseFigureOptions(f.Format, f.Width)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	f.opts = o
	return nil
}

// forFile returns the options for the figure file named by flag (the
// file's extension picks its format; --format adds siblings).
func (f *figureFlags) forFile(cmd, flag, path string) (reports.FigureOptions, error) {
	o, err := f.opts.ForFile(path)
	if err != nil {
		return o, fmt.Errorf("%s: --%s %w", cmd, flag, err)
	}
	return o, nil
}
