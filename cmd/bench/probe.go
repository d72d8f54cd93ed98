package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
)

func init() { subcommands = append(subcommands, newProbeCmd) }

// ProbeOptions are the parsed flags of `bench probe`.
type ProbeOptions struct {
	IO      IO
	Out     string
	JSON    string
	Only    []string
	Quick   bool
	Threads []int
	MaxWS   string
	ISA     string
	Reps    int
	RepMS   int
	Quiet   bool
	RootSys string
	RootPrc string
	List    bool
	// WaitPlacement bounds the probe's waits for the host to put its CPUs
	// back where they were when it began (--wait-placement; -1: the
	// default, 3 minutes for the full probe and none with --quick).
	WaitPlacement time.Duration
	Fig           figureFlags // --format, --width
	// IsTerminal reports whether stderr is a terminal (injected for tests).
	IsTerminal func() bool
	Now        func() time.Time
}

func newProbeCmd(streams IO) *cobra.Command {
	return newProbeCmdWith(streams, probeRun)
}

func newProbeCmdWith(streams IO, runF func(context.Context, *ProbeOptions) error) *cobra.Command {
	opts := &ProbeOptions{IO: streams, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Characterize this machine: topology, memory bandwidth and latency, shared bandwidth, NUMA",
		Long: `Characterize this machine and write a versioned profile (schema bench.profile/v1).

Sections (--only): ` + strings.Join(probes.Sections, ", ") + `.
Every figure is the median of at least 5 timed repetitions after a warm-up, with
min, max and coefficient of variation; threads are pinned with sched_setaffinity;
buffers are mapped with mmap. GB/s = 1e9 bytes/s, bytes counted as STREAM does.

--quick runs the same sections, every figure still the median of at least 5
repetitions (of at least 6 ms), with less resolution: thread sweeps at 1 and
all cores; the working-set sweep one size per octave, read kernel only;
latency every second octave down from half the largest working set; the
largest working set 4x the last-level cache (256 MiB where its size is
unknown, as in a VM, against the full probe's 1 GiB); in the matrix section
each dtype's best backend, the attained-GEMM table at M 16 and 512 on two
weight shapes, and no int8, int2 or int1 GEMV. The profile records
options.quick. It took 48 s on 2 idle cores (103 s with other jobs sharing
them; the full probe 2 to 10 minutes); its time grows with the size of the
last-level cache (the DRAM-sized figures), its number of figures not with the
core count.

Writes results/<host>-<yyyymmdd-hhmmss>/ (a new directory each run: -2, -3,
... is added when probes start in the same second; or --out DIR) with
profile.json, profile.md, report.html (one self-contained page, figures as
SVG) and PNG plots (--format png,pdf,svg and --width
column|page for a paper). --json=FILE also writes the profile
to FILE (its directory is checked before measuring); --json (or --json -)
prints it on stdout instead (the directory is then written only if --out
is given).`,
		Example: `  bench probe                      # everything, 2 to 10 minutes on 2 cores
  bench probe --quick              # about 50 s on 2 cores, more with a larger last-level cache
  bench probe --only memory --threads 1,2 --max-ws 2GiB
  bench probe --only machine,topology --json
  bench probe --quick --json=profile.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.List {
				return listKernels(opts.IO.Out)
			}
			if _, err := probes.ValidateSections(opts.Only); err != nil {
				return fmt.Errorf("probe: --only: %w", err)
			}
			for _, t := range opts.Threads {
				if t < 1 {
					return fmt.Errorf("probe: --threads %d: must be at least 1", t)
				}
			}
			if opts.Reps != 0 && opts.Reps < 5 {
				return fmt.Errorf("probe: --reps %d: must be at least 5", opts.Reps)
			}
			if opts.RepMS < 0 {
				return fmt.Errorf("probe: --rep-ms %d: must be positive", opts.RepMS)
			}
			if !cmd.Flags().Changed("wait-placement") {
				opts.WaitPlacement = defaultProbePlacementWait
				if opts.Quick {
					opts.WaitPlacement = 0
				}
			} else if opts.WaitPlacement < 0 {
				return fmt.Errorf("probe: --wait-placement %v: must be ≥ 0 (0: do not wait)", opts.WaitPlacement)
			}
			if opts.MaxWS != "" {
				v, err := humanize.ParseBytes(opts.MaxWS)
				if err != nil {
					return fmt.Errorf("probe: --max-ws %q: %v", opts.MaxWS, err)
				}
				if err := probes.CheckMaxWorkingSet(v, opts.Only); err != nil {
					return fmt.Errorf("probe: %w", err)
				}
			}
			if err := opts.Fig.parse("probe"); err != nil {
				return err
			}
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Out, "out", "", "output directory (default results/<host>-<yyyymmdd-hhmmss>)")
	addJSONFlag(cmd, &opts.JSON, "the profile (profile.json's content; --json - writes no directory unless --out is given)")
	f.StringSliceVar(&opts.Only, "only", nil, "sections to run, comma-separated: "+strings.Join(probes.Sections, ","))
	f.BoolVar(&opts.Quick, "quick", false, "1 and all cores, fewer working sets and shapes, 5 repetitions of 6 ms (about 50 s on 2 cores, more with a larger last-level cache)")
	f.IntSliceVar(&opts.Threads, "threads", nil, "thread counts of the thread sweep (default 1,2,4,... and all cores)")
	f.StringVar(&opts.MaxWS, "max-ws", "", "largest working set, e.g. 2GiB (default: next power of two ≥ 4x the last-level cache, min 64MiB)")
	f.StringVar(&opts.ISA, "isa", "", "memory kernel implementation: avx512, avx2, neon or go (default: best available)")
	f.IntVar(&opts.Reps, "reps", 0, "timed repetitions per figure, at least 5 (default 7, quick 5)")
	f.IntVar(&opts.RepMS, "rep-ms", 0, "minimum duration of one repetition in ms (default 20, quick 6)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress bar")
	f.DurationVar(&opts.WaitPlacement, "wait-placement", defaultProbePlacementWait, "how long the probe may wait in all, before figures on 2 or more CPUs, for the host to put the CPUs back where they were when it began (core-to-core round trips, profile.placement): a VM's host that moves its vCPUs between dies moves the bandwidth of every such figure; a figure measured while they were moved is marked noisy either way; at the end, the sections with figures measured in another placement than profile.placement's are measured again, waiting up to this long again (default 3m, 0 with --quick: neither)")
	f.BoolVar(&opts.List, "list", false, "list the kernels compiled in, and why those this CPU cannot run are unavailable")
	f.StringVar(&opts.RootSys, "sysfs", "/sys", "root of sysfs to read the topology from (for testing on snapshots)")
	f.StringVar(&opts.RootPrc, "procfs", "/proc", "root of procfs")
	opts.Fig.register(cmd, false)
	_ = f.MarkHidden("sysfs")
	_ = f.MarkHidden("procfs")
	return cmd
}

// barProgress draws a progress bar on stderr.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (b *barProgress) Start(total int) {
	b.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription("probe"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}
func (b *barProgress) Step(desc string) {
	if b.bar != nil {
		b.bar.Describe(fmt.Sprintf("%-32s", desc))
		_ = b.bar.Add(1)
	}
}
func (b *barProgress) Finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}

func stderrIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// defaultProbePlacementWait is --wait-placement's default for the full
// probe: the 2-vCPU KVM guest's host kept its vCPUs on two dies for more
// than the 90 s an earlier budget allowed.
const defaultProbePlacementWait = 3 * time.Minute

func probeRun(ctx context.Context, opts *ProbeOptions) error {
	cfg := probes.Config{
		Sections:      opts.Only,
		Quick:         opts.Quick,
		Threads:       opts.Threads,
		ISA:           opts.ISA,
		Reps:          opts.Reps,
		Roots:         topology.Roots{Sys: opts.RootSys, Proc: opts.RootPrc},
		Version:       version,
		PlacementWait: opts.WaitPlacement,
	}
	if opts.RepMS > 0 {
		cfg.RepDuration = time.Duration(opts.RepMS) * time.Millisecond
	}
	if opts.MaxWS != "" {
		v, _ := humanize.ParseBytes(opts.MaxWS)
		cfg.MaxWorkingSet = int64(v)
	}
	isTerm := opts.IsTerminal
	if isTerm == nil {
		isTerm = func() bool { return stderrIsTerminal(opts.IO.Err) }
	}
	if !opts.Quiet && isTerm() {
		cfg.Progress = &barProgress{w: opts.IO.Err}
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	cfg.Host = host

	// Check the outputs before measuring for minutes: --json's directory
	// is writable, and the output directory is created (a new one per
	// run by default: results/<host>-<stamp>, -2, -3, ... when probes
	// start in the same second) and writable.
	if err := checkJSONPath(opts.JSON); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	writeDir := opts.JSON != jsonStdout || opts.Out != ""
	dir := opts.Out
	undo := func() {}
	if writeDir {
		var err error
		if dir == "" {
			base := filepath.Join("results", fmt.Sprintf("%s-%s", host, opts.Now().Format("20060102-150405")))
			if dir, undo, err = results.MkdirUnique(base); err == nil {
				err = results.CheckWritableDir(dir)
			}
			if err != nil {
				undo()
				return fmt.Errorf("probe: output directory %s: %w", base, results.UnwrapPath(err))
			}
		} else if undo, err = prepareDir(dir); err != nil {
			return fmt.Errorf("probe: --out %s: %w", dir, err)
		}
	}
	p, err := probes.Run(ctx, cfg)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		undo()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("probe: %w", err)
	}
	if ns := p.Noise(); ns.Noisy > 0 {
		fmt.Fprintf(opts.IO.Err, "bench probe: %s\n", ns)
	}
	if js := newJSONOut(opts.JSON, opts.IO.Out); js.on() {
		data, err := results.MarshalProfile(p)
		if err != nil {
			undo()
			return err
		}
		if err := js.write(data); err != nil {
			undo()
			return err
		}
		if err := js.flush(); err != nil {
			undo()
			return fmt.Errorf("probe: %w", err)
		}
	}
	if !writeDir {
		return nil
	}
	if err := writeProfileDir(dir, p, opts.Fig.opts); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	fmt.Fprintf(opts.IO.Err, "bench: wrote %s (profile.json, profile.md, report.html, plots)\n", dir)
	return nil
}

// prepareDir creates dir if needed and checks it is writable. undo
// removes what it created while still empty (results.MkdirAll).
func prepareDir(dir string) (undo func(), err error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return func() {}, errors.New("not a directory")
	}
	undo, err = results.MkdirAll(dir)
	if err != nil {
		return func() {}, results.UnwrapPath(err)
	}
	if err := results.CheckWritableDir(dir); err != nil {
		undo()
		return func() {}, err
	}
	return undo, nil
}

// writeProfileDir writes profile.json, the plots (in fig's formats and
// width), profile.md and report.html (the same page with the figures
// inlined as SVG), each atomically.
func writeProfileDir(dir string, p *results.Profile, fig reports.FigureOptions) error {
	if err := results.WriteProfile(filepath.Join(dir, "profile.json"), p); err != nil {
		return err
	}
	plots, err := reports.ProfilePlots(p, dir, fig)
	if err != nil {
		return err
	}
	var md strings.Builder
	if err := reports.ProfileMarkdown(&md, p, plots); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, "profile.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	return reports.WriteProfileHTML(dir, p, reports.ProbeCommand(p, dir))
}

func listKernels(w io.Writer) error {
	var rows [][]string
	for _, k := range probes.Kernels() {
		rows = append(rows, []string{k.Section, k.ISA, k.Name, k.Detail, k.Status})
	}
	return reports.TextTable(w, []string{"section", "ISA", "kernels", "detail", "status"}, rows)
}
