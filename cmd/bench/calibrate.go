package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/calibrate"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/opbench"
	"github.com/cpubench/bench/results"
)

func init() { subcommands = append(subcommands, newCalibrateCmd) }

// calibrateOptions are the flags of `bench calibrate`.
type calibrateOptions struct {
	IO                  IO
	Profile, Out, Dir   string
	Write, Quick        bool
	Threads             int
	Reps, RepMS         int
	Model, CoresBackend string
	// WaitPlacement bounds the waits for the host to put the CPUs where
	// the profile's placement had them (--wait-placement).
	WaitPlacement time.Duration
}

func newCalibrateCmd(streams IO) *cobra.Command {
	o := &calibrateOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "calibrate [--profile P] [--out P2 | --write] [--quick] [--report-dir DIR]",
		Short: "Fit per-class roofline efficiency and fixed cost on measured shapes, validated on held-out shapes",
		Long: `Runs a designed set of operator shapes at 1 and all threads — fp32 GEMM and
GEMV at several M, N, K (as bench gemm), attention prefill and decode at
several contexts (as bench attention), RMSNorm, residual add, RoPE, softmax
and SiLU·mul at several widths — and records each one's measured time
(median of --reps, cv, noise mark: a shape with cv > 10% is measured again,
at most 3 times, and if still noisy neither fitted nor counted) beside the
roofline's prediction from --profile.

The design spans the memory levels: GEMVs and vector operators whose bytes
lie in L1, L2, the L3 and DRAM (4× to 8× the last-level cache; where CPUID
and sysfs report no L3, its size is taken from the knee of the profile's
read bandwidth curves, and the profile written carries it), decode
attention from 64 positions to DRAM-sized KV (the DRAM-sized and a decode
step's timed with the KV evicted), a decode step's vector operators
timed cold, and prefill-sized GEMMs (M 512, 2048).

Each shape's key is its operator class, the thread count that runs it and
what bounds its roofline prediction (the level holding most of its bytes:
L1, L2, L3, DRAM; or compute/ and the level holding its activations). The
shapes are split into a fit half and a held-out half, alternating per key;
per key, t = fixed + t_roofline / efficiency (+ a cost per row for the
attention and the row-wise vector operators, where it predicts the fit
shapes better left out one at a time) is fitted on the fit half
(weighted least squares on the relative error; a key with fewer than 2
fit shapes stays uncalibrated, its held-out shapes counted at their
uncalibrated error), and the held-out half's relative error
|pred−meas|/meas before and after is reported per key (p50, p90, max;
calibration.md, a CDF in calibration-cdf.png, calibration.json in
--report-dir), with the target line: held-out p90 ≤ 15%, and the model's
operators whose key has no fit.

--out P2 writes the profile with a calibration section (schema
bench.calibration/v2, docs/profile-schema.md) to P2; --write replaces
--profile in place. bench roofline, run, sweep, attention and gemm --sweep
then apply it to the predictions of operators of a calibrated class at the
same thread count and bounding level; others stay uncalibrated.`,
		Example: `  bench calibrate --profile results/host-20261125-120000/profile.json --out calibrated.json
  bench calibrate --write
  bench calibrate --quick --report-dir /tmp/cal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return calibrateRun(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", "", "profile.json of 'bench probe' to calibrate (default: this host's newest complete probe profile)")
	f.StringVar(&o.Out, "out", "", "write the calibrated profile to this path (atomically)")
	f.BoolVar(&o.Write, "write", false, "write the calibration into --profile in place (atomically)")
	f.StringVar(&o.Dir, "report-dir", "", "directory of calibration.md, calibration-cdf.png, calibration.json (default results/calibrate-<host>-<yyyymmdd-hhmmss>)")
	f.BoolVar(&o.Quick, "quick", false, "a small set of shapes with short repetitions (tests; a few seconds)")
	f.IntVar(&o.Threads, "threads", 0, "all-thread count (0: every allowed CPU); shapes run at 1 and at this many threads")
	f.IntVar(&o.Reps, "reps", 5, "timed repetitions per shape after one warm-up, at least 1")
	f.IntVar(&o.RepMS, "rep-ms", 20, "minimum duration of one repetition in ms")
	f.DurationVar(&o.WaitPlacement, "wait-placement", 3*time.Minute, "how long the run may wait in all, before shapes on 2 or more CPUs, for the host to put the CPUs where the profile's placement had them (profile.placement: core-to-core round trips); a shape measured while they were moved is marked noisy either way (0: do not wait)")
	f.StringVar(&o.Model, "model", "qwen3-0.6b", "model config of the attention's heads, KV heads and head dim ("+strings.Join(models.Names(), ", ")+")")
	f.StringVar(&o.CoresBackend, "cores-backend", "", coresBackendHelp)
	return cmd
}

func calibrateRun(ctx context.Context, o *calibrateOptions) error {
	if o.Write && o.Out != "" {
		return errors.New("calibrate: --out and --write: give one (--write replaces --profile in place)")
	}
	if o.Reps < 1 {
		return fmt.Errorf("calibrate: --reps %d: must be ≥ 1", o.Reps)
	}
	if o.RepMS < 1 || o.RepMS > 1e6 {
		return fmt.Errorf("calibrate: --rep-ms %d: must be between 1 and 1000000", o.RepMS)
	}
	if o.WaitPlacement < 0 {
		return fmt.Errorf("calibrate: --wait-placement %v: must be ≥ 0 (0: do not wait)", o.WaitPlacement)
	}
	if o.Quick {
		o.Reps, o.RepMS = min(o.Reps, 3), min(o.RepMS, 2)
	}
	path := defaultProfile(o.Profile, o.IO, "calibrate")
	if path == "" {
		return errors.New("calibrate: --profile: no probe profile of this host (run bench probe, or give --profile PATH)")
	}
	p, err := results.ReadProfile(path)
	if err != nil {
		return fmt.Errorf("calibrate: --profile: %w", err)
	}
	if _, _, err := calibrate.Uncalibrated(p, path); err != nil {
		return fmt.Errorf("calibrate: --profile: %w", err)
	}
	dest := o.Out
	if o.Write {
		dest = path
	}
	if dest != "" {
		if err := results.CheckWritableFile(dest); err != nil {
			return fmt.Errorf("calibrate: %s: %w", dest, err)
		}
	}
	bk, err := opbench.ChooseBackends(o.CoresBackend, "")
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	cpus, err := opCPUs(o.Threads)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	dir, undo, err := opOutDir(o.Dir, "calibrate")
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	done := false
	defer func() {
		if !done {
			undo()
		}
	}()
	r, err := calibrate.Run(ctx, calibrate.Config{Profile: p, ProfileName: path, CPUs: cpus, Quick: o.Quick, Reps: o.Reps,
		RepDuration: time.Duration(o.RepMS) * time.Millisecond, Model: o.Model, Backends: &bk, PlacementWait: o.WaitPlacement,
		Progress: func(s string) { fmt.Fprintln(o.IO.Err, s) }})
	if err != nil {
		return err
	}
	md := r.Markdown()
	png, err := r.PlotCDF()
	if err != nil {
		return fmt.Errorf("calibrate: plot: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	var written []string
	for _, f := range []struct {
		name string
		data []byte
	}{{"calibration.md", []byte(md)}, {"calibration-cdf.png", png}, {"calibration.json", append(js, '\n')}} {
		fp := filepath.Join(dir, f.name)
		if err := results.WriteFileAtomic(fp, f.data, 0o644); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		written = append(written, fp)
	}
	done = true
	if dest != "" {
		q, err := calibrate.Apply(p, r, time.Now())
		if err != nil {
			return err
		}
		if err := results.WriteProfile(dest, q); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		written = append(written, dest)
	}
	if _, err := fmt.Fprint(o.IO.Out, md); err != nil {
		return err
	}
	if dest == "" {
		fmt.Fprintln(o.IO.Out, "profile not written (give --out P2 or --write to store the calibration)")
	}
	_, err = fmt.Fprintf(o.IO.Out, "%s\nwrote %s\n", r.Verdict(), strings.Join(written, ", "))
	return err
}
