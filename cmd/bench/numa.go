package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/numabench"
)

func init() { subcommands = append(subcommands, newNUMACmd) }

// numaFlags are the flag values of `bench numa`.
type numaFlags struct {
	IO IO

	Model        string
	Layers       int
	Seed         uint64
	PromptTokens int
	GenTokens    int
	Threads      []int
	Policies     []string
	Syncs        []string
	TP           int
	Reps         int
	Profile      string
	Out          string
	Fig          figureFlags
}

func newNUMACmd(streams IO) *cobra.Command { return newCmdNUMA(streams, nil) }

// newCmdNUMA builds the command; tests pass runF to capture the options.
func newCmdNUMA(streams IO, runF func(context.Context, numabench.Options) error) *cobra.Command {
	f := &numaFlags{IO: streams}
	cmd := &cobra.Command{
		Use:   "numa [--model M --layers N] [--threads 1,2,4] [--policies os,interleave,local,tp] [--sync a,b] [--out DIR]",
		Short: "ArcLight's experiments: decode and prefill tok/s vs threads per NUMA policy, tp's Sync A vs Sync B, with the roofline's prediction",
		Long: `ArcLight (§4, Figs. 9–13) on the engine: for every NUMA policy (--policies;
tp under each --sync mode) and thread count (--threads), the engine is built
with synthetic fp32 weights of --model (--layers layers), prefills a
--prompt-tokens prompt and decodes --gen-tokens tokens, --reps times after
one warm-up; the table gives the median tok/s with min–max, the CPUs and
nodes that ran, and the roofline's prediction from --profile (one node: the
per-operator model at those threads; several: the NUMA matrix model of
'bench roofline --numa-nodes'). A configuration a policy cannot run (tp with
fewer threads than its degree) is listed as not run, with why.

The pool takes the first N CPUs this process may run on: spread the threads
over nodes with taskset or numactl --cpunodebind as ArcLight Fig. 11 does.
With --out, writes numa.md, numa.json and the figure numa-threads.`,
		Example: `  bench numa --model qwen3-0.6b --layers 2
  bench numa --policies os,tp --sync a,b --threads 2,4,8 --out results/numa
  numactl --cpunodebind=0,1 bench numa --model qwen3-4b --layers 4 --gen-tokens 64 --out /tmp/numa`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, undo, err := f.options(cmd.Context())
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if _, err := numabench.Run(o); err != nil {
				undo()
				if ctx := cmd.Context(); ctx != nil && ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Model, "model", "qwen3-0.6b", "model: shipped config name or config.json path (synthetic fp32 weights)")
	fs.IntVar(&f.Layers, "layers", 2, "decoder layers instantiated (0: all)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the synthetic weights and the prompt")
	fs.IntVar(&f.PromptTokens, "prompt-tokens", 15, "prompt tokens prefilled (ArcLight §4: 15; appendix A.2: 300)")
	fs.IntVar(&f.GenTokens, "gen-tokens", 32, "decode steps timed after the prefill (ArcLight: 256)")
	fs.IntSliceVar(&f.Threads, "threads", nil, "thread counts (default 1, 2, 4, … and every allowed CPU)")
	fs.StringSliceVar(&f.Policies, "policies", nil, "NUMA policies: os, interleave, local, tp (default all)")
	fs.StringSliceVar(&f.Syncs, "sync", nil, "tp's synchronization modes: a (global barrier per operator), b (group-local barriers; default both)")
	fs.IntVar(&f.TP, "tp", 0, "tp's thread groups (0: one per NUMA node of the threads)")
	fs.IntVar(&f.Reps, "reps", 3, "timed requests per configuration (median reported)")
	fs.StringVar(&f.Profile, "profile", "", "machine profile of the predictions: profile.json, bench.machine/v1 file or published name (default: the newest complete probe profile of this host; none: no predictions)")
	fs.StringVar(&f.Out, "out", "", "directory for numa.md, numa.json and the figure (default: Markdown on stdout only)")
	f.Fig.register(cmd, false)
	return cmd
}

// options validates the flags and turns them into numabench.Options,
// creating --out (undo removes it while empty).
func (f *numaFlags) options(ctx context.Context) (numabench.Options, func(), error) {
	undo := func() {}
	if err := f.Fig.parse("numa"); err != nil {
		return numabench.Options{}, undo, err
	}
	o := numabench.Options{Model: f.Model, Layers: f.Layers, Seed: f.Seed, PromptTokens: f.PromptTokens, GenTokens: f.GenTokens,
		Threads: f.Threads, TPDegree: f.TP, Reps: f.Reps, Figures: f.Fig.opts, W: f.IO.Out, Log: f.IO.Err, Context: ctx}
	for _, p := range f.Policies {
		pol, err := engine.ParseNUMAPolicy(p)
		if err != nil || p == "" {
			return o, undo, fmt.Errorf("numa: --policies %q: want os, interleave, local or tp", p)
		}
		o.Policies = append(o.Policies, pol)
	}
	for _, s := range f.Syncs {
		m, err := engine.ParseSyncMode(s)
		if err != nil || s == "" {
			return o, undo, fmt.Errorf("numa: --sync %q: want a or b", s)
		}
		o.Syncs = append(o.Syncs, m)
	}
	switch {
	case f.Reps < 1:
		return o, undo, fmt.Errorf("numa: --reps %d: must be ≥ 1", f.Reps)
	case f.Layers < 0:
		return o, undo, fmt.Errorf("numa: --layers %d: must be ≥ 0 (0: all)", f.Layers)
	case f.PromptTokens < 1:
		return o, undo, fmt.Errorf("numa: --prompt-tokens %d: must be ≥ 1", f.PromptTokens)
	case f.GenTokens < 1:
		return o, undo, fmt.Errorf("numa: --gen-tokens %d: must be ≥ 1", f.GenTokens)
	case f.TP < 0:
		return o, undo, fmt.Errorf("numa: --tp %d: must be ≥ 0 (0: one group per NUMA node)", f.TP)
	}
	for _, t := range f.Threads {
		if t < 1 {
			return o, undo, fmt.Errorf("numa: --threads %d: must be ≥ 1", t)
		}
	}
	if p := defaultProfile(f.Profile, f.IO, "numa"); p != "" {
		m, err := loadMachine(p)
		if err != nil {
			return o, undo, fmt.Errorf("numa: --profile %s: %w", p, err)
		}
		o.Machine = m
	}
	if f.Out != "" {
		u, err := prepareDir(f.Out)
		if err != nil {
			return o, undo, fmt.Errorf("numa: --out %s: %w", f.Out, err)
		}
		o.Out, undo = f.Out, u
	}
	return o, undo, nil
}
