package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/layouts"
	"github.com/cpubench/bench/results"
)

func init() { subcommands = append(subcommands, newLayoutCmd) }

// layoutFlags are the flag values of `bench layout`.
type layoutFlags struct {
	IO IO

	FLOPPerByte    float64
	Table2Lengths  []int
	CapacityModels []string
	CapacityDType  string
	NoMeasure      bool
	Model          string
	Layers         int
	Seed           uint64
	Inputs         []int
	Reps           int
	Policies       []string
	Threads        int
	CopyThreads    int
	GanttPolicy    string
	GanttTokens    int
	Profile        string
	Out            string
	Fig            figureFlags
}

func newLayoutCmd(streams IO) *cobra.Command { return newCmdLayout(streams, nil) }

// newCmdLayout builds the command; tests pass runF to capture the options.
func newCmdLayout(streams IO, runF func(context.Context, layouts.Options) error) *cobra.Command {
	f := &layoutFlags{IO: streams}
	cmd := &cobra.Command{
		Use:   "layout [--flop-per-byte F] [--no-measure] [--model M --layers N --inputs 1,8,32,128,512] [--copy-threads N] [--out DIR]",
		Short: "PIM-SHERPA's weight layout experiments: Table 2, resident bytes per policy, TTFT per policy vs the model, a prefill's per-thread timeline",
		Long: `PIM-SHERPA (§3.2–3.3, §4) on the CPU engine. Decode reads the weights
row-major (the decode layout), prefill GEMMs read gemm panels (the prefill
layout); the policies are duplicate (both resident), owr (decode layout only,
each prefill GEMM's weight rearranged into one buffer first) and ddb (decode
layout only, --copy-threads copy threads rearrange layer l+1 into one of two
buffers while layer l computes). bench run --weight-layout runs one policy.

Prints, and with --out writes as layout.md, layout.json and figures:
  (a) Table 2 at --flop-per-byte (4: the paper's rows);
  (b) resident weight bytes per policy for each --capacity-models config
      (Figs. 4, 9), at --capacity-dtype (bf16, the paper's, or fp32);
  (c) TTFT vs input length per policy on the engine (synthetic fp32 weights
      of --model with --layers layers, --inputs lengths, --reps prefills each)
      with Table 2's model for this machine beside it: the GEMM rate and copy
      bandwidth measured in the run, the DRAM read bandwidth from --profile;
      SUM for owr, MAX for ddb; and the model's crossover length (Fig. 10);
  (d) a per-thread timeline of one --gantt-policy prefill of --gantt-tokens
      tokens from the engine's timers (Fig. 11).
` + layouts.NonCacheableNote,
		Example: `  bench layout --no-measure --flop-per-byte 4
  bench layout --model qwen3-0.6b --layers 2 --inputs 1,8,32,128 --out results/layout
  bench layout --inputs 16,64 --policies owr,ddb --copy-threads 1 --profile results/host/profile.json --out /tmp/layout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, undo, err := f.options(cmd.Context())
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if _, err := layouts.Run(o); err != nil {
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
	fs.Float64Var(&f.FLOPPerByte, "flop-per-byte", 4, "Table 2's FLOP/B (4: the paper's Galaxy S24+ rows)")
	fs.IntSliceVar(&f.Table2Lengths, "table2-lengths", nil, "Table 2's input lengths (default the paper's 1,4,8,16,32,64,128,192)")
	fs.StringSliceVar(&f.CapacityModels, "capacity-models", nil, "model configs of the capacity table (default every shipped one)")
	fs.StringVar(&f.CapacityDType, "capacity-dtype", "bf16", "weight precision of the capacity table: bf16 (the paper's) or fp32 (the engine's)")
	fs.BoolVar(&f.NoMeasure, "no-measure", false, "print Table 2 and the capacities only (no engine runs)")
	fs.StringVar(&f.Model, "model", "qwen3-0.6b", "model of the TTFT experiment (synthetic fp32 weights; dense configs only)")
	fs.IntVar(&f.Layers, "layers", 2, "decoder layers instantiated for the TTFT experiment (0: all)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the synthetic weights and the prompt")
	fs.IntSliceVar(&f.Inputs, "inputs", []int{1, 8, 32, 128, 512}, "input lengths of the TTFT experiment (the paper's Fig. 10 goes to 2048)")
	fs.IntVar(&f.Reps, "reps", 3, "prefills per policy and input length (median reported)")
	fs.StringSliceVar(&f.Policies, "policies", []string{"duplicate", "owr", "ddb"}, "weight layout policies measured")
	fs.IntVar(&f.Threads, "threads", 0, "threads (0: every allowed CPU); ddb's copy threads are taken out of them")
	fs.IntVar(&f.CopyThreads, "copy-threads", 0, "ddb's dedicated copy threads (0: 1)")
	fs.StringVar(&f.GanttPolicy, "gantt-policy", "ddb", "policy of the per-thread timeline")
	fs.IntVar(&f.GanttTokens, "gantt-tokens", 64, "input length of the per-thread timeline's prefill")
	fs.StringVar(&f.Profile, "profile", "", "probe profile.json: DRAM read bandwidth of the model and write_nt of the non-cacheable source (default: the newest complete probe profile of this host; none: no profile)")
	fs.StringVar(&f.Out, "out", "", "directory for layout.md, layout.json and the figures (default: Markdown on stdout only)")
	f.Fig.register(cmd, false)
	return cmd
}

// options validates the flags and turns them into layouts.Options,
// creating --out (undo removes it while empty).
func (f *layoutFlags) options(ctx context.Context) (layouts.Options, func(), error) {
	undo := func() {}
	if err := f.Fig.parse("layout"); err != nil {
		return layouts.Options{}, undo, err
	}
	o := layouts.Options{FLOPPerByte: f.FLOPPerByte, Table2Lengths: f.Table2Lengths, CapacityModels: f.CapacityModels, CapacityDType: f.CapacityDType,
		NoMeasure: f.NoMeasure, Model: f.Model, Layers: f.Layers, Seed: f.Seed, Inputs: f.Inputs, Reps: f.Reps, Threads: f.Threads,
		CopyThreads: f.CopyThreads, GanttTokens: f.GanttTokens, Figures: f.Fig.opts, W: f.IO.Out, Log: f.IO.Err, Context: ctx}
	if !(f.FLOPPerByte > 0) {
		return o, undo, fmt.Errorf("layout: --flop-per-byte %v: must be > 0", f.FLOPPerByte)
	}
	for _, p := range f.Policies {
		wl, err := engine.ParseWeightLayout(p)
		if err != nil || wl == "" {
			return o, undo, fmt.Errorf("layout: --policies %q: want duplicate, owr or ddb", p)
		}
		o.Policies = append(o.Policies, wl)
	}
	gp, err := engine.ParseWeightLayout(f.GanttPolicy)
	if err != nil || gp == "" {
		return o, undo, fmt.Errorf("layout: --gantt-policy %q: want duplicate, owr or ddb", f.GanttPolicy)
	}
	o.GanttPolicy = gp
	for _, n := range append(append([]int(nil), f.Inputs...), f.Table2Lengths...) {
		if n < 1 {
			return o, undo, fmt.Errorf("layout: input length %d: must be ≥ 1", n)
		}
	}
	switch {
	case f.Reps < 1:
		return o, undo, fmt.Errorf("layout: --reps %d: must be ≥ 1", f.Reps)
	case f.Layers < 0:
		return o, undo, fmt.Errorf("layout: --layers %d: must be ≥ 0 (0: all)", f.Layers)
	case f.Threads < 0:
		return o, undo, fmt.Errorf("layout: --threads %d: must be ≥ 0 (0: every allowed CPU)", f.Threads)
	case f.CopyThreads < 0:
		return o, undo, fmt.Errorf("layout: --copy-threads %d: must be ≥ 0 (0: 1)", f.CopyThreads)
	case f.GanttTokens < 1:
		return o, undo, fmt.Errorf("layout: --gantt-tokens %d: must be ≥ 1", f.GanttTokens)
	case f.CapacityDType != "bf16" && f.CapacityDType != "fp32":
		return o, undo, fmt.Errorf("layout: --capacity-dtype %q: want bf16 or fp32", f.CapacityDType)
	}
	if !f.NoMeasure {
		if p := defaultProfile(f.Profile, f.IO, "layout"); p != "" {
			prof, err := results.ReadProfile(p)
			if err != nil {
				return o, undo, fmt.Errorf("layout: --profile %s: %w", p, results.UnwrapPath(err))
			}
			o.Profile, o.ProfileName = prof, p
		}
	}
	if f.Out != "" {
		u, err := prepareDir(f.Out)
		if err != nil {
			return o, undo, fmt.Errorf("layout: --out %s: %w", f.Out, err)
		}
		o.Out, undo = f.Out, u
	}
	return o, undo, nil
}
