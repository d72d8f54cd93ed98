package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

func init() { subcommands = append(subcommands, newReportCmd) }

// ReportOptions are the parsed arguments of `bench report`.
type ReportOptions struct {
	IO IO

	Dirs      []string // result directories, each with a cells.jsonl
	Out       string   // output directory
	Merge     bool     // merge per-task directories into Out/cells.jsonl first
	Profile   string   // machine for the regime map when the cells' own profile cannot be read
	Precision string   // ceilings the ridge points use
	Baseline  string   // llama-bench -o json or -o jsonl output drawn beside the placements

	Fig figureFlags // --format, --width
}

// cellsFile is the results file of a sweep directory.
const cellsFile = "cells.jsonl"

func newReportCmd(streams IO) *cobra.Command { return newCmdReport(streams, nil) }

// newCmdReport builds the command; tests pass runF to capture the options.
func newCmdReport(streams IO, runF func(*ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "report DIR... --out DIR [--merge]",
		Short: "Render sweep results as PNG plots and a Markdown report",
		Long: `Reads the cells.jsonl (` + results.SweepSchema + ` lines) of each DIR and writes
OUT/report.md with PNGs, and OUT/report.html (the same report on one
self-contained page, figures inlined as SVG): end-to-end latency per placement with the speedup
over cores and the speedup bars (SMEPilot Fig. 9), throughput vs batch, per-operator time
breakdown of prefill and decode, measured vs roofline-predicted operator
times with the median and p90 of |measured/predicted − 1|, the regime map
(operator × batch), ablations (SMEPilot §5.4) and, for cells from several
machines, a machine comparison. A plot whose data is absent is skipped with
a note in the report.

Corrupt lines are skipped with a warning naming FILE:LINE. Without --merge
every cell is shown, and cells with the same key in different files are
labeled by machine (and date); one file holding a key twice (two sweeps
that wrote one directory) is refused: --merge chooses. --merge combines the cells.jsonl of DIR, DIR/*/ and
DIR/cells/*/ (the per-task directories of a Slurm array), keeps one cell per
key (the later date wins; each replacement is reported), writes
OUT/cells.jsonl atomically and renders that.

The regime map classifies operators against the ridge points of the profile
each cell names (its "profile" field), or of --profile.

--baseline FILE reads llama.cpp's llama-bench output (-o json, an array, or
-o jsonl, one test per line) and draws its prefill (pp) and decode (tg)
tokens/s beside the batch-1 cells' (legend: placement, model and weight
format; llama.cpp's test and weight format from its model type; the file is
named in the caption).`,
		Example: `  bench report results/sweep-20260301 --out results/sweep-20260301/report
  bench report --merge results/sweep-20260301 --out results/sweep-20260301
  bench report results/host-a results/host-b --out results/compare-ab
  bench report results/sweep-20260301 --out report --baseline llama-bench.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("report: need at least one results directory (DIR with " + cellsFile + ")")
			}
			if opts.Out == "" {
				return errors.New("report: --out DIR is required")
			}
			if err := opts.Fig.parse("report"); err != nil {
				return err
			}
			opts.Dirs = args
			if runF != nil {
				return runF(opts)
			}
			return reportRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Out, "out", "", "output directory for report.md and the PNGs (created; required)")
	f.BoolVar(&opts.Merge, "merge", false, "merge DIR/cells.jsonl, DIR/*/cells.jsonl and DIR/cells/*/cells.jsonl into OUT/cells.jsonl, one cell per key (later date wins)")
	f.StringVar(&opts.Profile, "profile", "", "machine for the regime map when a cell's own profile cannot be read: profile.json, bench.machine/v1 file or published profile name")
	f.StringVar(&opts.Precision, "precision", "fp32", "precision whose compute ceilings set the ridge points of the regime map")
	f.StringVar(&opts.Baseline, "baseline", "", "llama.cpp's llama-bench output (-o json or -o jsonl) to draw beside the placements: prefill (pp) and decode (tg) tok/s per thread count, SMEPilot Fig. 9 style")
	opts.Fig.register(cmd, false)
	return cmd
}

// maxInputBytes caps the --baseline and --profile files report reads
// (real ones are kB).
const maxInputBytes = 64 << 20

func reportRun(ctx context.Context, opts *ReportOptions) error {
	var baseline *reports.Baseline
	if opts.Baseline != "" {
		data, err := regfile.ReadFile(opts.Baseline, maxInputBytes)
		if err != nil {
			return fmt.Errorf("report: --baseline %s: %w", opts.Baseline, results.UnwrapPath(err))
		}
		if baseline, err = reports.ParseLlamaBench(data, opts.Baseline); err != nil {
			return fmt.Errorf("report: --baseline %w", err)
		}
	}
	files, err := reportInputs(opts.Dirs, opts.Merge)
	if err != nil {
		return err
	}
	var cells []results.SweepCell
	var from []string // file of each cell
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		cs, skipped, err := readCells(f)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		for _, e := range skipped {
			fmt.Fprintf(opts.IO.Err, "report: warning: skipped %v\n", e)
		}
		for range cs {
			from = append(from, f)
		}
		cells = append(cells, cs...)
	}
	if len(cells) == 0 {
		return fmt.Errorf("report: no valid cells in %s", strings.Join(files, ", "))
	}
	var merged []byte
	if opts.Merge {
		cells = mergeCells(cells, from, opts.IO.Err)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for i := range cells {
			if err := enc.Encode(&cells[i]); err != nil {
				return fmt.Errorf("report: encode cell %q: %w", cells[i].Key, err)
			}
		}
		merged = buf.Bytes()
	} else if err := checkDuplicateKeys(cells, from, opts.IO.Err); err != nil {
		return err
	}
	machines, err := reportMachines(cells, from, opts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The report first (all or nothing, reports.SweepContext), then the
	// merged cells beside it: a failed or interrupted report writes
	// neither.
	so := reports.SweepOptions{Machines: machines, Precision: opts.Precision, Sources: files, Baseline: baseline, Figures: opts.Fig.opts, Command: reportCommand(opts)}
	s, err := reports.SweepWithHTMLContext(ctx, cells, opts.Out, so)
	if err != nil {
		return err
	}
	if opts.Merge {
		path := filepath.Join(opts.Out, cellsFile)
		if err := results.WriteFileAtomic(path, merged, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		fmt.Fprintf(opts.IO.Out, "merged %d cell(s) from %d file(s) into %s\n", len(cells), len(files), path)
	}
	var names []string
	for _, p := range s.Plots {
		names = append(names, p.File)
	}
	fmt.Fprintf(opts.IO.Out, "wrote %s (and %s) with %d cell(s) and %d plot(s): %s\n", filepath.Join(opts.Out, "report.md"), reports.HTMLFile, s.Cells, len(names), strings.Join(names, ", "))
	if pe := s.PredError; pe != nil {
		fmt.Fprintf(opts.IO.Out, "operator prediction error |measured/predicted − 1| over %d samples: median %.3f, p90 %.3f\n", pe.N, pe.Median, pe.P90)
	}
	if len(s.Notes) > 0 {
		fmt.Fprintf(opts.IO.Out, "%d note(s) in the report: %s\n", len(s.Notes), strings.Join(s.Notes, "; "))
	}
	return nil
}

// reportInputs resolves the directories to cells.jsonl files: DIR/cells.jsonl,
// and with merge also DIR/*/cells.jsonl and DIR/cells/*/cells.jsonl in
// numeric order of the task directory.
func reportInputs(dirs []string, merge bool) ([]string, error) {
	var files []string
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", dir, results.UnwrapPath(err))
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("report: %s: not a directory (give the directory that holds %s)", dir, cellsFile)
		}
		var found []string
		top := filepath.Join(dir, cellsFile)
		if _, err := os.Stat(top); err == nil {
			found = append(found, top)
		}
		sub := taskFiles(dir)
		if merge {
			found = append(found, sub...)
		}
		if len(found) == 0 {
			if len(sub) > 0 {
				return nil, fmt.Errorf("report: %s: no %s, but %d per-task result(s) under it (e.g. %s): use --merge", dir, cellsFile, len(sub), sub[0])
			}
			if merge {
				return nil, fmt.Errorf("report: %s: no %s, %s or %s", dir, cellsFile, filepath.Join("*", cellsFile), filepath.Join("cells", "*", cellsFile))
			}
			return nil, fmt.Errorf("report: %s: no %s", dir, cellsFile)
		}
		for _, f := range found {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// taskFiles are DIR/*/cells.jsonl and DIR/cells/*/cells.jsonl, task
// directories with numeric names in numeric order.
func taskFiles(dir string) []string {
	var out []string
	for _, pat := range []string{filepath.Join(dir, "*", cellsFile), filepath.Join(dir, "cells", "*", cellsFile)} {
		m, _ := filepath.Glob(pat) // the only error is a bad pattern
		slices.SortFunc(m, func(a, b string) int {
			na, ea := strconv.Atoi(filepath.Base(filepath.Dir(a)))
			nb, eb := strconv.Atoi(filepath.Base(filepath.Dir(b)))
			if ea == nil && eb == nil {
				return na - nb
			}
			return strings.Compare(a, b)
		})
		out = append(out, m...)
	}
	return out
}

// readCells reads a cells.jsonl: the valid cells, and the skipped lines as
// errors naming FILE:LINE (results.ReadSweepCells).
func readCells(path string) ([]results.SweepCell, []error, error) {
	return results.ReadSweepCells(path)
}

// maxDupMessages caps the per-key lines of a merge.
const maxDupMessages = 20

// mergeCells keeps one cell per key, in order of first appearance: the
// one with the later date (RFC 3339), or of two with the same date the one
// read later. Each replacement is reported on w.
func mergeCells(cells []results.SweepCell, from []string, w io.Writer) []results.SweepCell {
	at := map[string]int{}
	var out []results.SweepCell
	var src []string
	dups := 0
	for i, c := range cells {
		j, ok := at[c.Key]
		if !ok {
			at[c.Key] = len(out)
			out = append(out, c)
			src = append(src, from[i])
			continue
		}
		dups++
		old := out[j]
		keepNew := !laterDate(old.Date, c.Date) // same date: the one read later
		kept, keptFrom, dropped, droppedFrom := c, from[i], old, src[j]
		if !keepNew {
			kept, keptFrom, dropped, droppedFrom = old, src[j], c, from[i]
		}
		if dups <= maxDupMessages {
			why := "later date wins"
			if kept.Date == dropped.Date {
				why = "same date: the later file wins"
			}
			fmt.Fprintf(w, "report: merge: key %q: kept %s (date %s), dropped %s (date %s): %s\n",
				c.Key, keptFrom, kept.Date, droppedFrom, dropped.Date, why)
		}
		out[j], src[j] = kept, keptFrom
	}
	if dups > maxDupMessages {
		fmt.Fprintf(w, "report: merge: ... and %d more duplicate key(s)\n", dups-maxDupMessages)
	}
	if dups > 0 {
		fmt.Fprintf(w, "report: merge: %d duplicate key(s) resolved, %d cell(s) kept\n", dups, len(out))
	}
	return out
}

// laterDate reports whether date a is after date b (RFC 3339; dates that do
// not parse compare as strings).
func laterDate(a, b string) bool {
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	if ea == nil && eb == nil {
		return ta.After(tb)
	}
	return a > b
}

// checkDuplicateKeys refuses unmerged inputs in which one file holds the
// same key twice (two sweeps that wrote one directory at once): which of
// them to show is for --merge to choose, and say. The same key in
// different files (sweeps of several machines, or runs to compare) is
// shown once per file, labeled by machine (and by date where a machine
// repeats), which a warning on w says.
func checkDuplicateKeys(cells []results.SweepCell, from []string, w io.Writer) error {
	type fileKey struct{ file, key string }
	inFile := map[fileKey]int{}
	first := map[string]int{}
	n := 0
	var example string
	for i, c := range cells {
		if j, ok := inFile[fileKey{from[i], c.Key}]; ok {
			return fmt.Errorf("report: %s: key %q appears more than once (dates %s and %s; two sweeps wrote this directory at once?): use --merge to keep the later of each key",
				from[i], c.Key, cells[j].Date, c.Date)
		}
		inFile[fileKey{from[i], c.Key}] = i
		j, ok := first[c.Key]
		if !ok {
			first[c.Key] = i
			continue
		}
		if n == 0 {
			example = fmt.Sprintf("%q in %s (host %s) and %s (host %s)", c.Key, from[j], cells[j].Host, from[i], c.Host)
		}
		n++
	}
	if n > 0 {
		fmt.Fprintf(w, "report: %d cell(s) repeat a key (e.g. %s): all are shown, labeled by machine (and by date where a machine repeats); use --merge to keep the latest of each\n", n, example)
	}
	return nil
}

// readMachineFile reads a profile.json or bench.machine/v1 file.
func readMachineFile(path string) (*roofline.Machine, error) {
	data, err := regfile.ReadFile(path, maxInputBytes)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, results.UnwrapPath(err))
	}
	return roofline.ParseMachine(data, path)
}

// reportMachines loads the roofline machine of each machine label from the
// profile its cells name (as given, else relative to the cells file), else
// from --profile. A cell's unreadable profile is a warning; an unreadable
// --profile is an error.
func reportMachines(cells []results.SweepCell, from []string, opts *ReportOptions) (map[string]*roofline.Machine, error) {
	var fallback *roofline.Machine
	if opts.Profile != "" {
		m, err := loadMachine(opts.Profile)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		fallback = m
	}
	out := map[string]*roofline.Machine{}
	tried := map[string]bool{}
	for i := range cells {
		c := &cells[i]
		name := reports.SweepMachine(c)
		if out[name] != nil || c.Profile == "" || tried[name+"\x00"+c.Profile] {
			continue
		}
		tried[name+"\x00"+c.Profile] = true
		m, err := readMachineFile(c.Profile)
		if err != nil && !filepath.IsAbs(c.Profile) {
			if m2, err2 := readMachineFile(filepath.Join(filepath.Dir(from[i]), c.Profile)); err2 == nil {
				m, err = m2, nil
			}
		}
		if err != nil {
			fmt.Fprintf(opts.IO.Err, "report: warning: machine %s: %v; its regimes are not classified (give --profile)\n", name, err)
			continue
		}
		out[name] = m
	}
	if fallback != nil {
		for i := range cells {
			if name := reports.SweepMachine(&cells[i]); out[name] == nil {
				out[name] = fallback
			}
		}
	}
	return out, nil
}

// reportCommand is the bench report command line that regenerates the
// report from opts, shell-quoted (report.md's captions give it).
func reportCommand(opts *ReportOptions) string {
	args := []string{"bench", "report"}
	args = append(args, opts.Dirs...)
	args = append(args, "--out", opts.Out)
	if opts.Merge {
		args = append(args, "--merge")
	}
	if opts.Profile != "" {
		args = append(args, "--profile", opts.Profile)
	}
	if opts.Precision != "" && opts.Precision != "fp32" {
		args = append(args, "--precision", opts.Precision)
	}
	if opts.Baseline != "" {
		args = append(args, "--baseline", opts.Baseline)
	}
	if opts.Fig.Format != "" && opts.Fig.Format != reports.FormatPNG {
		args = append(args, "--format", opts.Fig.Format)
	}
	if opts.Fig.Width != "" {
		args = append(args, "--width", opts.Fig.Width)
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./=:,+@%.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
