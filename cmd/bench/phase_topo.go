package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/internal/topotree"
	"github.com/cpubench/bench/sweep"
)

// topoMeasure are the flags of `bench topo --measure`: Sandwich Fig. 3's
// core-location experiment (sweep.CoreLocation).
type topoMeasure struct {
	On                            bool
	Layers                        int
	PromptTokens, GenTokens, Reps int
	Seed                          uint64
	Roofline                      string
	Out                           string
	Fig                           figureFlags
}

func addTopoMeasureFlags(cmd *cobra.Command, m *topoMeasure) {
	f := cmd.Flags()
	f.BoolVar(&m.On, "measure", false, "run the core-location experiment (Sandwich Fig. 3) on this machine: tok/s per preset's active CPUs vs all cores, with the roofline's prediction")
	f.IntVar(&m.Layers, "layers", 2, "with --measure: decoder layers instantiated (0: all)")
	f.IntVar(&m.PromptTokens, "prompt-tokens", 64, "with --measure: prompt tokens prefilled")
	f.IntVar(&m.GenTokens, "gen-tokens", 16, "with --measure: decode steps timed after the prefill")
	f.IntVar(&m.Reps, "reps", 3, "with --measure: timed repetitions per experiment (median reported)")
	f.Uint64Var(&m.Seed, "seed", 1, "with --measure: seed of the synthetic weights and the prompt")
	f.StringVar(&m.Roofline, "roofline", "", "with --measure: machine of the predictions: profile.json, bench.machine/v1 file or published name (default: the newest complete probe profile of this host; none: no predictions)")
	f.StringVar(&m.Out, "out", "", "with --measure: directory for corelocation.md, corelocation.json and the figure (default: Markdown on stdout only)")
	m.Fig.register(cmd, false)
}

// validateMeasure checks --measure's flags (no files read).
func (o *topoOptions) validateMeasure() error {
	m := &o.Measure
	if !m.On {
		if m.Out != "" || m.Roofline != "" {
			return errors.New("topo: --out and --roofline belong to --measure")
		}
		return nil
	}
	switch {
	case o.Profile != "" || o.Shape != "":
		return errors.New("topo: --measure runs the engine on this machine: give no --profile or --shape (--roofline names the machine of the predictions)")
	case o.Remove != "" || o.Configs:
		return errors.New("topo: --measure runs every preset of Sandwich Fig. 3(a): give no --remove or --configs")
	case o.JSON != "":
		return errors.New("topo: --measure writes its JSON with --out DIR (corelocation.json), not --json")
	case m.Layers < 0:
		return fmt.Errorf("topo: --layers %d: must be ≥ 0 (0: all)", m.Layers)
	case m.PromptTokens < 1:
		return fmt.Errorf("topo: --prompt-tokens %d: must be ≥ 1", m.PromptTokens)
	case m.GenTokens < 1:
		return fmt.Errorf("topo: --gen-tokens %d: must be ≥ 1", m.GenTokens)
	case m.Reps < 1:
		return fmt.Errorf("topo: --reps %d: must be ≥ 1", m.Reps)
	}
	return m.Fig.parse("topo")
}

// topoMeasureRun resolves the presets on this machine's tree (--cpus
// applied) and runs sweep.CoreLocation.
func topoMeasureRun(ctx context.Context, o *topoOptions) error {
	tree, _, err := topoTree(o)
	if err != nil {
		return fmt.Errorf("topo: %w", err)
	}
	m := &o.Measure
	lo := sweep.LocationOptions{Model: o.Model, Layers: m.Layers, Seed: m.Seed, PromptTokens: m.PromptTokens, GenTokens: m.GenTokens,
		Reps: m.Reps, Figures: m.Fig.opts, W: o.IO.Out, Log: o.IO.Err, Context: ctx}
	if lo.Model == "" {
		lo.Model = "qwen3-0.6b"
	}
	for _, l := range topotree.Locations(tree) {
		lo.Experiments = append(lo.Experiments, sweep.LocationRun{Name: l.Name, Spec: l.Spec, CPUs: l.CPUs, Idle: l.Idle, NotApplicable: l.NotApplicable})
	}
	if p := defaultProfile(m.Roofline, o.IO, "topo"); p != "" {
		mach, err := loadMachine(p)
		if err != nil {
			return fmt.Errorf("topo: --roofline: %w", err)
		}
		lo.Machine = mach
	}
	undo := func() {}
	if m.Out != "" {
		if undo, err = prepareDir(m.Out); err != nil {
			return fmt.Errorf("topo: --out %s: %w", m.Out, err)
		}
		lo.Out = m.Out
	}
	if _, err := sweep.CoreLocation(lo); err != nil {
		undo()
		if ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("topo: --measure: %w", err)
	}
	return nil
}
