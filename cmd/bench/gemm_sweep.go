package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/opbench"
	"github.com/cpubench/bench/reports"
)

// sweepGEMMFlags are the flags of `bench gemm --sweep`.
type sweepGEMMFlags struct {
	On        bool
	Model     string
	Lengths   []int
	Batches   []int
	Placement string
	Out       string

	cfg opbench.GEMMSweepConfig // resolved by validateSweep
}

func (s *sweepGEMMFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&s.On, "sweep", false, "the FFN GEMMs of --model vs prefill length and decode batch on cores, matrix and mixed, with the roofline (SMEPilot Figs. 10a, 11a): gemm-sweep.png, .md, .json in --out")
	f.StringVar(&s.Model, "model", "qwen3-0.6b", "with --sweep: the model config whose FFN shapes are measured ("+strings.Join(models.Names(), ", ")+", or a config.json)")
	f.IntSliceVar(&s.Lengths, "lengths", []int{32, 128, 512}, "with --sweep: prefill lengths (M = tokens)")
	f.IntSliceVar(&s.Batches, "batches", []int{1, 4, 16}, "with --sweep: decode batches (M = sequences)")
	f.StringVar(&s.Placement, "placement", "cores,matrix,mixed", "with --sweep: placements, comma-separated: cores, matrix, mixed")
	f.StringVar(&s.Out, "out", "", "with --sweep: output directory (default results/gemm-sweep-<host>-<yyyymmdd-hhmmss>)")
}

// sweepOnly are the flags that belong to --sweep alone; sweepNot those
// that do not apply to it.
var (
	sweepOnly = []string{"model", "lengths", "batches", "placement", "out"}
	sweepNot  = []string{"m", "n", "k", "dtype", "split", "pack-every-call", "no-prefill", "json", "shapes", "plot"}
)

// validateSweep checks --sweep's flags, resolves the backends and the
// model, and refuses shapes that do not fit in memory.
func (o *GEMMOptions) validateSweep(cmd *cobra.Command) error {
	for _, n := range sweepNot {
		if cmd.Flags().Changed(n) {
			return fmt.Errorf("gemm: --%s: not with --sweep (the shapes and M come from --model, --lengths, --batches)", n)
		}
	}
	s := &o.Sweep
	if err := o.Fig.parse("gemm"); err != nil {
		return err
	}
	if o.Reps < 1 {
		return fmt.Errorf("gemm: --reps %d: must be ≥ 1", o.Reps)
	}
	if o.RepMS < 1 || o.RepMS > 1e6 {
		return fmt.Errorf("gemm: --rep-ms %d: must be between 1 and 1000000", o.RepMS)
	}
	places, err := opbench.ParsePlacements(s.Placement)
	if err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	mc, err := models.Load(s.Model)
	if err != nil {
		return fmt.Errorf("gemm: --model: %w", err)
	}
	arch, err := mc.Arch()
	if err != nil {
		return fmt.Errorf("gemm: --model: %w", err)
	}
	cores := o.Backend
	if cores == "auto" {
		cores = ""
	}
	bk, err := opbench.ChooseBackends(cores, o.BackendB)
	if err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	if len(o.Threads) == 0 {
		return fmt.Errorf("gemm: --threads: need a value")
	}
	t := slices.Max(o.Threads)
	if cmd.Flags().Changed("threads") && len(o.Threads) > 1 {
		return fmt.Errorf("gemm: --threads %v: one value with --sweep (the threads of every placement)", o.Threads)
	}
	if !cmd.Flags().Changed("threads") {
		t = 0 // every allowed CPU
	}
	cpus := o.CPUs
	if cpus == nil {
		if cpus, err = opCPUs(t); err != nil {
			return fmt.Errorf("gemm: %w", err)
		}
	} else if t > 0 {
		if t > len(cpus) {
			return fmt.Errorf("gemm: --threads %d: must be between 1 and %d", t, len(cpus))
		}
		cpus = cpus[:t]
	}
	s.cfg = opbench.GEMMSweepConfig{Arch: arch, Lengths: s.Lengths, Batches: s.Batches, Placements: places, Backends: bk, CPUs: cpus,
		Timing: opbench.Timing{Reps: o.Reps, RepDuration: time.Duration(o.RepMS) * time.Millisecond}}
	if err := s.cfg.Validate(); err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	if err := s.cfg.CheckMemory(); err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	return nil
}

func gemmSweepRun(ctx context.Context, o *GEMMOptions) error {
	s := &o.Sweep
	c := s.cfg
	var err error
	if c.Machine, c.Profile, o.Profile, err = opProfile(o.Profile, o.IO, "gemm"); err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	fo, err := o.Fig.forFile("gemm", "out", "gemm-sweep.png")
	if err != nil {
		return err
	}
	dir, undo, err := opOutDir(s.Out, "gemm-sweep")
	if err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	done := false
	defer func() {
		if !done {
			undo()
		}
	}()
	c.Progress = func(l string) { fmt.Fprintln(o.IO.Err, l) }
	r, err := opbench.RunGEMMSweep(ctx, c)
	if err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	lines := []string{
		fmt.Sprintf("model %s FFN GEMMs Y = X·Wᵀ (fp32 activations; weights packed once, in each backend's precision); threads %d", r.Model, r.Threads),
		"cores = " + r.CoresLabel + "; matrix = " + r.MatrixLabel + "; mixed = both, each on half of the threads, one GEMM cut by SMEPilot Eq. 1 with co-running feedback",
		fmt.Sprintf("median of %d repetitions of ≥ %.0f ms after a warm-up (min, max, cv); 64 elements of Y checked against a float64 reference per figure", r.Reps, r.RepSeconds*1e3),
	}
	if o.Profile != "" {
		lines = append(lines, "roofline: "+o.Profile+" (max(F/π, Q/β) of the linear on the target named like the placement)")
	}
	for _, k := range r.Skipped {
		lines = append(lines, "skipped "+k)
	}
	lines = append(lines, r.Notes...)
	var panels []reports.OpPanel
	for _, op := range r.Ops() {
		for _, ph := range []struct{ phase, x string }{{"prefill", "prefill length M (tokens)"}, {"decode", "decode batch M (sequences)"}} {
			if ss := r.Series(op, ph.phase); len(ss) > 0 {
				var n, k int
				for _, p := range r.Points {
					if p.Op == op {
						n, k = p.N, p.K
					}
				}
				panels = append(panels, reports.OpPanel{Title: fmt.Sprintf("%s %s (N %d, K %d), %s, %d threads", r.Model, op, n, k, ph.phase, r.Threads),
					XLabel: ph.x, YLabel: "GFLOP/s (median; bars min-max)", LogX: true, Series: opSeries(ss)})
			}
		}
	}
	header, rows, notes := r.Table()
	written, err := writeOpOutputs(dir, "gemm-sweep", "FFN GEMMs vs length and batch (SMEPilot Figs. 10a, 11a)", fo, panels, 2, lines, header, rows, notes, r)
	if err != nil {
		return fmt.Errorf("gemm: %w", err)
	}
	done = true
	out := o.IO.Out
	if err := printOpTable(out, lines, header, rows, notes); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s\n", strings.Join(written, ", "))
	return nil
}
