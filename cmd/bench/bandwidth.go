package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/reports"
)

func init() { subcommands = append(subcommands, newBandwidthCmd) }

// BandwidthOptions are the parsed flags of `bench bandwidth`.
type BandwidthOptions struct {
	IO      IO
	Kernels []string
	WS      []string
	Threads []int
	ISA     string
	Reps    int
	RepMS   int
	JSON    string // --json: "", "-" (stdout) or a file (jsonflag.go)
	wsBytes []int64
}

func newBandwidthCmd(streams IO) *cobra.Command {
	opts := &BandwidthOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "bandwidth",
		Short: "Measure single memory-bandwidth figures (kernel x working set x threads)",
		Long: `Measure chosen memory-bandwidth figures with the memory section's machinery:
pinned threads, mmap buffers, a warm-up, then the median of --reps repetitions.
The working set is the total of all arrays of all threads (likwid-bench's -w S0:<size>:<threads>).
GB/s = 1e9 bytes/s; bytes counted as STREAM does (no write-allocate traffic).`,
		Example: `  bench bandwidth --kernel read,copy,triad --ws 2GB --threads 1,2
  bench bandwidth --kernel read --ws 16KiB --threads 1 --json
  bench bandwidth --kernel triad --ws 2GB --threads 1,2 --json=triad.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range opts.WS {
				v, err := humanize.ParseBytes(s)
				if err != nil {
					return fmt.Errorf("bandwidth: --ws %q: %v", s, err)
				}
				if v > math.MaxInt64 {
					return fmt.Errorf("bandwidth: --ws %s: more than an int64 of bytes", s)
				}
				opts.wsBytes = append(opts.wsBytes, int64(v))
			}
			if opts.Reps != 0 && opts.Reps < 5 {
				return fmt.Errorf("bandwidth: --reps %d: must be at least 5", opts.Reps)
			}
			if err := checkJSONPath(opts.JSON); err != nil {
				return fmt.Errorf("bandwidth: %w", err)
			}
			return bandwidthRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Kernels, "kernel", []string{"read", "copy", "triad"}, "kernels: "+strings.Join(probes.MemoryKernelNames(), ","))
	f.StringSliceVar(&opts.WS, "ws", []string{"1GiB"}, "total working sets, e.g. 16KiB,2GB (GB = 1e9 bytes, GiB = 2^30)")
	f.IntSliceVar(&opts.Threads, "threads", []int{1}, "thread counts")
	f.StringVar(&opts.ISA, "isa", "", "avx512, avx2, neon or go (default: best available)")
	f.IntVar(&opts.Reps, "reps", 0, "timed repetitions, at least 5 (default 7)")
	f.IntVar(&opts.RepMS, "rep-ms", 0, "minimum duration of one repetition in ms (default 20)")
	addJSONFlag(cmd, &opts.JSON, "the figures (JSON lines of results.Bandwidth)")
	return cmd
}

func bandwidthRun(ctx context.Context, opts *BandwidthOptions) error {
	cfg := probes.BandwidthConfig{Kernels: opts.Kernels, WorkingSets: opts.wsBytes, Threads: opts.Threads, ISA: opts.ISA, Reps: opts.Reps}
	if opts.RepMS > 0 {
		cfg.RepDuration = time.Duration(opts.RepMS) * time.Millisecond
	}
	bs, err := probes.Bandwidth(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("bandwidth: %w", err)
	}
	js := newJSONOut(opts.JSON, opts.IO.Out)
	for _, b := range bs {
		if err := js.encode(b); err != nil {
			return err
		}
	}
	if err := js.flush(); err != nil {
		return fmt.Errorf("bandwidth: %w", err)
	}
	if !js.tables() {
		return nil
	}
	var rows [][]string
	noisy := false
	for _, b := range bs {
		rows = append(rows, []string{b.Kernel, b.ISA, reports.FormatBytes(b.WorkingSetBytes), strconv.Itoa(b.Threads), strconv.FormatBool(b.Pinned), fmt.Sprintf("%.2f", b.GBps.Median), fmt.Sprintf("%.2f", b.GBps.Min), fmt.Sprintf("%.2f", b.GBps.Max), reports.FormatCV(b.GBps), strconv.Itoa(b.GBps.N)})
		noisy = noisy || b.GBps.Noisy()
	}
	if err := reports.TextTable(opts.IO.Out, []string{"kernel", "ISA", "working set", "threads", "pinned", "GB/s median", "min", "max", "cv", "reps"}, rows); err != nil {
		return err
	}
	if noisy {
		_, err := fmt.Fprintln(opts.IO.Out, reports.NoisyLegend)
		return err
	}
	return nil
}
