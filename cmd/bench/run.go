package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/internal/perfcount"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/sweep"
)

func init() { subcommands = append(subcommands, newRunCmd) }

// runOptions are the flag values of `bench run` plus its IO.
type runOptions struct {
	IO IO

	Model        string
	Weights      string
	WeightDType  string
	Layers       int
	PromptTokens int
	GenTokens    int
	Batch        int
	Threads      int
	Placement    string
	Ablate       []string
	Profile      string
	Seed         uint64
	Repeats      int    // --repeats: timed requests, each operator's median kept
	JSON         string // --json: "", "-" (stdout) or a file (jsonflag.go)
	Amdahl       bool
	Counters     bool   // --counters: hardware counters per phase
	CountersPlot string // --counters-plot FILE
	CountersOps  bool   // --counters-ops: also per operator class
	// WeightLayout and CopyThreads: the PIM-SHERPA policy (layout_run.go).
	WeightLayout string
	// NUMA, TPDegree and Sync: the ArcLight policy (numa_run.go).
	NUMA        string
	TPDegree    int
	Sync        string
	CopyThreads int
	// PrefillConfig, DecodeConfig, Configs and ConfigsTry: Sandwich's
	// per-phase service configurations (phase_run.go).
	phaseFlags
	// KVDType is the KV cache's element type (--kv-dtype).
	KVDType string

	// The placements' backends by name ("": chosen by capability).
	CoresBackend, MatrixBackend string
	// WaitPlacement is how long the run may wait, before its timed
	// phases, for the host to put its CPUs where the profile's placement
	// had them (--wait-placement; 0: not at all).
	WaitPlacement time.Duration
}

func newRunCmd(streams IO) *cobra.Command { return newCmdRun(streams, nil) }

// newCmdRun builds the command; tests pass runF to capture the options.
func newCmdRun(streams IO, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "run --model M --weights synthetic|FILE.bin|FILE.gguf [--weight-dtype fp32|q8_0|q4_0|q4_k|q6_k|int2|int1|tq2_0|tq1_0] [--layers N] [--prompt-tokens T] [--gen-tokens G] [--batch B] [--threads N] [--placement P] [--profile P]",
		Short: "Run the engine's forward pass: TTFT, TPOT and per-operator times against the roofline",
		Long: `Builds a model in the engine (weights packed once, at load, for the
backends the placement uses; the packing time is reported apart), then for
each of --batch sequences prefills --prompt-tokens seeded random token ids
in one call (GEMMs with M = T), then decodes --gen-tokens steps greedily
with all sequences together (GEMMs with M = B). Reports TTFT (mean prefill
seconds per sequence, each prefilled alone), TPOT (mean seconds per decode
step; one step gives every sequence a token), tokens/s of both phases, and
per operator and phase: calls, measured seconds summed over the layers run
and per layer, and with --profile the roofline's predicted seconds for the
same shapes (decode summed over each step's context) and measured /
predicted. A call that took 4× or more the median of its neighbours (the
same operator and layer, 4 calls either side) was interrupted (the host
took the time: a microsecond operator's call of 40–300 µs): a line lists
such calls, and measured / predicted and the fidelity figures leave their
time above that median out (uninterrupted_s in the JSON; measured_s keeps
it). With a profile it also prints the issue's speed checks: decode
step vs the memory-roof bound (weight + KV bytes / probed DRAM read
bandwidth), each prefill GEMM vs the same GEMM run standalone on the same
workers, and the engine's time outside its operators. With a probe's
profile.json it re-measures the profile's DRAM read roof at the run's
threads right after the timed phases (about a second) and marks the run
NOISY when the two differ by more than 10%: the host's memory bandwidth
moved since the probe, and the guest sees that neither as steal nor as
spread.

--placement: cores (the cores' fp32 vector kernels on every thread), matrix
(the matrix unit's kernels, e.g. sme-fp32, on every thread; on a CPU
without a matrix unit a second backend on the cores, the best bf16 one,
and the output says so), mixed (each GEMM split by SMEPilot Eq. 1 between
the two backends on two halves of the threads), auto (the roofline's plan
per operator; needs --profile). The backends are chosen by what executes
them (vector cores or matrix unit) and by capability, never by the order
kernels/gemm lists them; --cores-backend and --matrix-backend name others.
The placement line says what ran each target, with its weight precision
and calls. --ablate partition (mixed GEMMs run whole
on the faster group), packing (weights packed on every call) and
kv-packing (the KV cache kept row-major and every K/V tile packed inside
attention, instead of written packed by the K/V producer) and pipeline
(prefill attention's QKᵀ, softmax and P·V run serially per job instead of
the phase-aware pipeline of a matrix and a vector worker, §4.2; identical
logits) are SMEPilot §5.4's ablations.

--weights synthetic draws N(0, 0.02) weights (norms 1) at the exact shapes
of --model: a shipped config (` + strings.Join(models.Names(), ", ") + `),
a HuggingFace config.json path or a GGUF file's metadata, dense or MoE
(--model FILE.gguf alone runs the file's own weights). --weights FILE.bin reads a
llama2.c checkpoint and FILE.gguf a GGUF file (F32, F16, BF16 tensors
dequantized to fp32; Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0 and TQ1_0 matrices kept
quantized); both carry
their config (no --model).
--weight-dtype q8_0 or q4_0 keeps the linear weights block-quantized as
GGUF's Q8_0 and Q4_0 (1.0625 and 0.5625 bytes per weight; norms and the
embedding table stay fp32); int2 and int1 are the low-bit GEMV paper's
2-bit and 1-bit weights with per-32 scales (0.3125 and 0.1875 bytes per
weight; synthetic weights only: GGUF has no such types); q4_k and q6_k are
GGUF's K-quants (0.5625 and 0.828125 bytes per weight resident), tq2_0 and
tq1_0 its ternary formats, held and run as int2 (0.3125). All run on kernels/quant's best backend,
the activations quantized to int8 per 32-element block as llama.cpp does;
only placement cores (and auto, which then means cores) runs them.
Synthetic weights are drawn as for fp32 and quantized layer by layer;
GGUF quantized matrices are loaded quantized whatever this flag says,
and with it their other matrices are quantized too (fp32: a file's
quantized matrices are dequantized).
With quantized weights the run then decodes the same steps again with
synthetic bf16 weights (same shapes, prompts and threads) and prints the
low-bit GEMV paper's Amdahl bound (Eq. 4, §IV-D), all measured: α, the
bf16 run's share of decode time in the linear operators; x, the GEMV
speedup (Σ linear timers, bf16 / this format); s = 1/((1−α) + α/x); and
the end-to-end decode speedup beside it (--amdahl=false skips this).
--layers N instantiates only the first N decoder layers (0: all; a GGUF
file's later layers are not read); times are then for N layers and the
per-layer columns say what one layer costs.
--profile is a profile.json, a bench.machine/v1 or v2 file or a published profile.`,
		Example: `  bench run --weights engine/testdata/stories260K/stories260K.bin --prompt-tokens 64 --gen-tokens 32
  bench run --model qwen3-0.6b --weights synthetic --layers 2 --prompt-tokens 128 --gen-tokens 16 --profile results/host/profile.json
  bench run --model qwen3-30b-a3b --layers 1 --batch 4 --placement mixed --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if err := checkJSONPath(opts.JSON); err != nil {
				return fmt.Errorf("run: %w", err)
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Model, "model", "", "model for synthetic weights: shipped config name, path to a HuggingFace config.json or a GGUF file (its shapes); or a GGUF file alone, to run its weights")
	f.StringVar(&opts.Weights, "weights", "synthetic", "synthetic, or the path of a llama2.c checkpoint (.bin) or a GGUF file (.gguf)")
	f.StringVar(&opts.WeightDType, "weight-dtype", "", "linear weights: fp32, q8_0, q4_0, q4_k, q6_k, int2, int1, tq2_0 or tq1_0 (default: fp32 for synthetic weights, as stored for a file)")
	f.BoolVar(&opts.Amdahl, "amdahl", true, "with quantized weights and --gen-tokens > 0: decode the same steps again with synthetic bf16 weights on the same threads and print the low-bit GEMV paper's Eq. 4 as measured (α, GEMV speedup x, bound, end-to-end speedup); --amdahl=false skips the second decode")
	f.IntVar(&opts.Layers, "layers", 0, "decoder layers to instantiate (0: all)")
	f.IntVar(&opts.PromptTokens, "prompt-tokens", 128, "prompt tokens prefilled in one call (T)")
	f.IntVar(&opts.GenTokens, "gen-tokens", 32, "tokens decoded greedily after the prefill (G)")
	f.IntVar(&opts.Batch, "batch", 1, "sequences decoded together (B)")
	f.IntVar(&opts.Threads, "threads", 0, "pinned worker threads (0: every allowed CPU)")
	f.StringVar(&opts.Placement, "placement", "cores", "where GEMMs run: cores, matrix, mixed or auto (auto needs --profile)")
	f.StringVar(&opts.CoresBackend, "cores-backend", "", coresBackendHelp)
	f.StringVar(&opts.MatrixBackend, "matrix-backend", "", matrixBackendHelp)
	f.StringSliceVar(&opts.Ablate, "ablate", nil, "ablations: "+strings.Join(engine.AblationNames(), ", ")+" (comma-separated)")
	f.StringVar(&opts.KVDType, "kv-dtype", "fp32", "KV cache element type: "+strings.Join(engine.KVDTypes, ", ")+" (bf16: the producer-packed panels in bfloat16, half the bytes; prefill attention converts each tile to fp32, decode reads the bf16 panels in place where AVX-512 runs it; with matrix = amx-bf16 (placements matrix, mixed, auto) the panels take the AMX tile layout and prefill's QKᵀ and P·V run on the tile unit on them in place; not with --ablate kv-packing)")
	f.StringVar(&opts.Profile, "profile", "", "machine for the predicted times: profile.json, bench.machine/v1 file or published profile name (default: the newest complete results/<host>-<stamp>/profile.json of bench probe, one with the memory section; none: no predictions)")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the synthetic weights and the prompt's token ids")
	f.IntVar(&opts.Repeats, "repeats", 1, "timed requests (the same prompts' prefill and decode, the KV caches reset between): each operator's time, TTFT and TPOT are the median over them, their range kept (measured_min_s, measured_max_s)")
	f.DurationVar(&opts.WaitPlacement, "wait-placement", 0, "with a profile that records where the host put its CPUs (profile.placement: core-to-core round trips) and 2 or more threads: before the timed phases, wait up to this long (e.g. 60s) for the host to put the run's CPUs back there; a VM's host that moves its vCPUs between dies changes the bandwidth of every figure (0: do not wait; the run is checked and marked noisy either way)")
	addJSONFlag(cmd, &opts.JSON, "the run (one object)")
	f.BoolVar(&opts.Counters, "counters", false, "count hardware events per phase (perf_event_open, user space, every thread): IPC, LLC and dTLB loads and misses, backend stalls, bus cycles; or say why they are unavailable")
	f.BoolVar(&opts.CountersOps, "counters-ops", false, "with the counters: also per operator class within each phase (linear, attention, nonlinear, elementwise, between operators; Sandwich Fig. 1 per operator), read at every operator's end, which adds one read(2) per thread and counter group to each operator (outside its timer); implies --counters")
	f.StringVar(&opts.CountersPlot, "counters-plot", "", "with --counters: draw prefill vs decode as grouped bars (Sandwich Fig. 1) to this .png/.svg/.pdf, or a figure saying why the counters are unavailable")
	addLayoutFlags(f, opts)
	addNUMAFlags(f, opts)
	addPhaseFlags(f, &opts.phaseFlags)
	return cmd
}

// validate checks flag values only; it reads no files. --model FILE.gguf
// without --weights runs the file's weights.
func (o *runOptions) validate(cmd *cobra.Command) error {
	if strings.HasSuffix(strings.ToLower(o.Model), ".gguf") && !cmd.Flags().Changed("weights") {
		o.Weights, o.Model = o.Model, ""
	}
	switch {
	case o.Weights == "":
		return errors.New("run: --weights: must be synthetic, a llama2.c checkpoint or a GGUF file")
	case o.Weights == "synthetic" && o.Model == "":
		return errors.New("run: --model: required with --weights synthetic (one of " + strings.Join(models.Names(), ", ") + ", or a config.json path)")
	case o.Weights != "synthetic" && o.Model != "":
		return fmt.Errorf("run: --model %s: not used with --weights %s (a checkpoint file carries its config)", o.Model, o.Weights)
	case o.Layers < 0:
		return fmt.Errorf("run: --layers %d: must be ≥ 0 (0: all)", o.Layers)
	case o.PromptTokens < 1:
		return fmt.Errorf("run: --prompt-tokens %d: must be ≥ 1", o.PromptTokens)
	case o.GenTokens < 0:
		return fmt.Errorf("run: --gen-tokens %d: must be ≥ 0", o.GenTokens)
	case o.Batch < 1:
		return fmt.Errorf("run: --batch %d: must be ≥ 1", o.Batch)
	case o.Repeats < 1:
		return fmt.Errorf("run: --repeats %d: must be ≥ 1", o.Repeats)
	case o.Repeats > 1 && (o.Counters || o.CountersOps || o.CountersPlot != ""):
		return fmt.Errorf("run: --repeats %d with --counters: the counters cover one request (use --repeats 1)", o.Repeats)
	case o.Threads < 0:
		return fmt.Errorf("run: --threads %d: must be ≥ 0 (0: every allowed CPU)", o.Threads)
	case o.WaitPlacement < 0:
		return fmt.Errorf("run: --wait-placement %v: must be ≥ 0 (0: do not wait)", o.WaitPlacement)
	case o.CountersPlot != "" && perfcount.CheckPlotPath(o.CountersPlot) != nil:
		return fmt.Errorf("run: --counters-plot: %w", perfcount.CheckPlotPath(o.CountersPlot))
	}
	if _, err := engine.ParsePlacement(o.Placement); err != nil {
		return fmt.Errorf("run: --placement: %w", err)
	}
	if err := sweep.CheckBackends("run", o.CoresBackend, o.MatrixBackend); err != nil {
		return err
	}
	if o.WeightDType != "" {
		if _, err := engine.ParseWeightDType(o.WeightDType); err != nil {
			return fmt.Errorf("run: --weight-dtype: %w", err)
		}
	}
	if o.Placement == string(engine.PlaceAuto) && (o.Profile == "none" || o.Profile == "" && !hasProbeProfile()) {
		return errors.New("run: --placement auto: needs --profile (the roofline plans from a machine profile)")
	}
	for _, a := range o.Ablate {
		if _, err := engine.ParseAblation(a); err != nil {
			return fmt.Errorf("run: --ablate %q: want one of %s", a, strings.Join(engine.AblationNames(), ", "))
		}
	}
	if err := engine.CheckKVDType(o.KVDType, slices.Contains(o.Ablate, string(engine.AblateKVPacking))); err != nil {
		return fmt.Errorf("run: --kv-dtype: %w", err)
	}
	if err := o.validateNUMA(); err != nil {
		return err
	}
	if err := o.phaseFlags.validate("run", o.Threads, o.Placement, o.NUMA, o.WeightLayout); err != nil {
		return err
	}
	return o.validateLayout()
}

// runOp is one operator's measured and predicted time in one phase.
type runOp struct {
	Phase roofline.Phase `json:"phase"`
	Op    string         `json:"op"`
	// PerLayer is true for decoder-layer operators (false for embed,
	// final_norm, lm_head).
	PerLayer bool `json:"per_layer"`
	// Calls is the forward calls that ran the operator (per layer).
	Calls int `json:"calls"`
	// MeasuredS is summed over calls and over the layers run; with
	// --repeats N, the median of the N requests' sums, whose smallest and
	// largest are MeasuredMinS and MeasuredMaxS (left out with one).
	MeasuredS      float64  `json:"measured_s"`
	MeasuredMinS   *float64 `json:"measured_min_s,omitempty"`
	MeasuredMaxS   *float64 `json:"measured_max_s,omitempty"`
	MeasuredLayerS float64  `json:"measured_per_layer_s,omitempty"`
	// UninterruptedS is MeasuredS less the excess of its interrupted
	// calls (engine.Interrupted: a call ≥ 4× the median of its
	// neighbours; the median request's), present when any call was;
	// MeasuredPredicted and the fidelity figures compare it, and
	// InterruptedCalls counts those calls over every request.
	UninterruptedS    *float64 `json:"uninterrupted_s,omitempty"`
	InterruptedCalls  int      `json:"interrupted_calls,omitempty"`
	PredictedS        *float64 `json:"predicted_s,omitempty"`
	PredictedLayerS   *float64 `json:"predicted_per_layer_s,omitempty"`
	MeasuredPredicted *float64 `json:"measured_over_predicted,omitempty"`
	// PredictedDriftS is the prediction on the machine as the run's DRAM
	// roof and GEMM checks found it (runResult.Drift), summed as
	// PredictedS.
	PredictedDriftS *float64 `json:"predicted_at_drift_s,omitempty"`
	// Threads is the workers that ran the operator's phase, with
	// per-phase configurations (0, left out, without).
	Threads int `json:"threads,omitempty"`
}

// compared is the measured time the prediction is held against: its
// uninterrupted time where any call was interrupted, else MeasuredS.
func (o runOp) compared() float64 {
	if o.UninterruptedS != nil {
		return *o.UninterruptedS
	}
	return o.MeasuredS
}

// interruptedLine is one line naming the operators with interrupted calls
// ("" if none).
func interruptedLine(ops []runOp) string {
	var parts []string
	for _, op := range ops {
		if op.UninterruptedS != nil {
			parts = append(parts, fmt.Sprintf("%s %s %d (%s of %s)", op.Phase, op.Op, op.InterruptedCalls, fmtTime(op.MeasuredS-*op.UninterruptedS), fmtTime(op.MeasuredS)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("interrupted calls (each ≥ %d× the median of its %d neighbours on either side: time the host took, which no roofline models; measured/predicted and the fidelity figures leave their excess out): %s",
		engine.InterruptedFactor, engine.InterruptedWindow, strings.Join(parts, ", "))
}

// uninterrupted returns, per (phase, operator), the median over requests
// of the operator's time less its interrupted calls' excess
// (engine.Timing.Uninterrupted), and its interrupted calls over every
// request.
func uninterrupted(reqs [][]engine.Timing) (map[[2]string]float64, map[[2]string]int) {
	per := map[[2]string][]float64{}
	calls := map[[2]string]int{}
	for _, list := range reqs {
		sums := map[[2]string]float64{}
		for _, t := range list {
			k := [2]string{string(t.Phase), t.Op}
			sums[k] += t.Uninterrupted()
			calls[k] += t.InterruptedCalls
		}
		for k, v := range sums {
			per[k] = append(per[k], v)
		}
	}
	med := map[[2]string]float64{}
	for k, v := range per {
		med[k] = results.Summarize(v).Median
	}
	return med, calls
}

// runDrift is runResult.Drift.
type runDrift struct {
	DRAMFactor    float64        `json:"dram_factor"`
	ComputeFactor float64        `json:"compute_factor"`
	Fidelity      sweep.Fidelity `json:"fidelity"`
}

// String is one line.
func (d *runDrift) String() string {
	f := d.Fidelity
	if f.Rows == 0 {
		return ""
	}
	return fmt.Sprintf("at the host's drift (a diagnostic, not counted: predicted on the profile with DRAM ×%.2f and compute ×%.2f, as re-measured after the timed phases): %d of %d rows, %.0f%% of the measured time within ±%.0f%%",
		d.DRAMFactor, d.ComputeFactor, f.Within, f.Rows, 100*f.WithinS/max(f.TimeS, 1e-300), 100*sweep.FidelityTol)
}

// runResult is the JSON object of `bench run --json`.
type runResult struct {
	Model         string     `json:"model"`
	Weights       string     `json:"weights"`
	Seed          uint64     `json:"seed"`
	Backend       string     `json:"backend"`
	Layers        int        `json:"layers"`
	ModelLayers   int        `json:"model_layers"`
	PromptTokens  int        `json:"prompt_tokens"`
	GenTokens     int        `json:"gen_tokens"`
	Batch         int        `json:"batch"`
	Threads       int        `json:"threads"`
	Placement     string     `json:"placement"`
	Ablate        []string   `json:"ablate,omitempty"`
	Repeats       int        `json:"repeats,omitempty"` // --repeats above 1
	TTFTS         float64    `json:"ttft_s"`
	TPOTS         float64    `json:"tpot_s,omitempty"`
	PrefillTokS   float64    `json:"prefill_tokens_per_s"`
	DecodeTokS    float64    `json:"decode_tokens_per_s,omitempty"`
	PackS         float64    `json:"pack_s"`
	WeightDType   string     `json:"weight_dtype"`
	KVDType       string     `json:"kv_dtype,omitempty"`
	QuantBackend  string     `json:"quant_backend,omitempty"`
	WeightBytes   int64      `json:"weight_bytes"`
	Precision     string     `json:"predicted_precision,omitempty"`
	Profile       string     `json:"profile,omitempty"`
	Machine       string     `json:"machine,omitempty"`
	PredictedTTFT *float64   `json:"predicted_ttft_s,omitempty"`
	PredictedTPOT *float64   `json:"predicted_tpot_s,omitempty"`
	Ops           []runOp    `json:"operators"`
	Checks        []runCheck `json:"checks,omitempty"`
	Amdahl        *runAmdahl `json:"amdahl,omitempty"`
	Layout        *runLayout `json:"weight_layout,omitempty"`
	NUMA          *runNUMA   `json:"numa,omitempty"`
	Notes         []string   `json:"notes,omitempty"`
	// Counters are the hardware counters per phase (--counters).
	Counters *perfcount.Report `json:"counters,omitempty"`
	// Noise is what the machine did during the timed phases (issue #16
	// part 3): the process's CPU time over wall time × threads, steal,
	// load average and the decode steps' cv; Noisy marks a run that
	// fails a threshold.
	Noise *results.Noise `json:"noise,omitempty"`
	// Fidelity counts the operator rows within ±10% of their prediction
	// (with a profile); a noisy run's is not counted.
	Fidelity *sweep.Fidelity `json:"fidelity,omitempty"`
	// Drift is the diagnostic beside Fidelity where the run's checks
	// measured the host away from the profile: the operators predicted
	// on roofline.Machine.Drifted (DRAM figures × the DRAM roof now over
	// the profile's, compute × the attained GEMM now over the profile's)
	// and counted as Fidelity counts them. It separates the model's error
	// from the host's drift; it is never the counted figure.
	Drift *runDrift `json:"drift,omitempty"`

	// Targets is what ran each placement target's linear operators in the
	// timed calls: backend, unit, weight precision, calls and label.
	Targets []results.SweepTarget `json:"targets"`
	// Phases are the per-phase configurations (--prefill-config,
	// --decode-config, --configs auto); nil without them.
	Phases *runPhases `json:"phases,omitempty"`
}

func runRun(ctx context.Context, o *runOptions) error {
	// The model or weights first: a bad --model is the error to give, not
	// one of the profile's.
	if err := checkRunModel(o); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	o.Profile = defaultProfile(o.Profile, o.IO, "run")
	var machine *roofline.Machine
	if o.Profile != "" {
		var err error
		if machine, err = loadMachine(o.Profile); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	var w *engine.Weights
	var full int
	var notes []string
	err := untilDone(ctx, func() (err error) {
		w, full, notes, err = sweep.ResolveWeights(o.weightSpec())
		return err
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	c := w.Config
	T, G, B := o.PromptTokens, o.GenTokens, o.Batch
	if T > c.MaxSeq || G > c.MaxSeq-T {
		return fmt.Errorf("run: --prompt-tokens %d + --gen-tokens %d: more than the model's %d positions", T, G, c.MaxSeq)
	}
	if err := memlimit.Check(fmt.Sprintf("--batch %d × (--prompt-tokens %d + --gen-tokens %d) KV caches", B, T, G), c.KVBytes(B, T+G)); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	place, _ := engine.ParsePlacement(o.Placement)
	eo := engine.Options{Context: ctx, Threads: o.Threads, Placement: place, Machine: machine, Backend: o.CoresBackend, MatrixBackend: o.MatrixBackend,
		WeightLayout: engine.WeightLayout(o.WeightLayout), CopyThreads: o.CopyThreads,
		NUMA: engine.NUMAPolicy(o.NUMA), TPDegree: o.TPDegree, Sync: engine.SyncMode(o.Sync), KVDType: o.KVDType}
	for _, a := range o.Ablate {
		engine.Ablation(a).Apply(&eo)
	}
	phases, err := o.phaseFlags.resolve(c, &eo)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	m, err := engine.New(w, eo)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer m.Close()
	if err := phases.runAuto(m, machine, o, o.IO.Err); err != nil {
		return fmt.Errorf("run: --configs auto: %w", err)
	}
	notes = append(notes, m.Notes...)
	b, err := m.NewBatch(B, T+G)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x70c5))
	prompts := make([][]int, B)
	for i := range prompts {
		prompts[i] = make([]int, T)
		for j := range prompts[i] {
			prompts[i][j] = rng.IntN(c.Vocab)
		}
	}
	slots := make([]int, B)
	for i := range slots {
		slots[i] = i
	}
	// One untimed warm-up request (prefill + one decode step) first, so the
	// figures exclude first-touch page faults and cold caches; then reset
	// the KV caches and the operator timers.
	if wt, err := b.PrefillNext(0, prompts[0], nil); err != nil {
		return fmt.Errorf("run: warm-up prefill: %w", err)
	} else if G > 0 {
		if err := b.DecodeNext([]int{0}, []int{wt}, []int{0}, nil); err != nil {
			return fmt.Errorf("run: warm-up decode: %w", err)
		}
	}
	b.Reset(0)
	b.ResetTimings()
	m.ResetLayout()
	notes = append(notes, "timed after one untimed warm-up request (prefill + 1 decode step)")
	var ctr *perfcount.Recorder
	if o.Counters || o.CountersOps || o.CountersPlot != "" {
		ctr = perfcount.NewRecorder(nil)
		defer ctr.Report()
		if o.CountersOps && ctr.Counting() {
			b.Observe(func(_ roofline.Phase, op string) { ctr.Mark(string(roofline.Kind(op))) })
			notes = append(notes, "hardware counters read at every operator's end (--counters-ops): the reads run outside the operators' timers but inside the phase times")
		}
	}
	// The timed phases run with the pool held (Hold: the loops on worker
	// 0, the argmax inside each call on every worker, so no worker parks
	// between calls; issue #16) and metered for the noise record.
	meter := noise.NewMeter(m.CPUs(), m.Threads)
	// The probe's profile.json behind machine, read once for the host
	// checks (nil: no profile, or a machine file or published profile).
	var hostProf *results.Profile
	if machine != nil {
		hostProf, _ = results.ReadProfile(o.Profile)
	}
	hostPlace := runPlacementCheck(hostProf, m.CPUs())
	if waited, back, err := hostPlace.Await(ctx, o.WaitPlacement); err != nil {
		return err
	} else if waited > 0 {
		if back {
			notes = append(notes, fmt.Sprintf("placement: waited %.1f s (--wait-placement %v) for the host to put the CPUs back where the profile's placement had them", waited.Seconds(), o.WaitPlacement))
		} else {
			notes = append(notes, fmt.Sprintf("placement: the host did not put the CPUs back where the profile's placement had them within --wait-placement %v", o.WaitPlacement))
		}
	}
	// The timed requests (--repeats): each the same prompts' prefill and
	// decode from position 0; the figures below are the median request's.
	var prefills, steps []float64 // every request's, in order
	var stepKeys []int            // the request of each step (noise: successive steps of one request)
	var reqPrefill, reqDecode []float64
	var reqOverhead []float64 // each request's decode time outside the operators' timers
	var reqTimings [][]engine.Timing
	toks := make([]int, B)
	var touched int64
	var touchS float64
	for r := range o.Repeats {
		if r > 0 {
			for i := range B {
				if err := b.Reset(i); err != nil {
					return fmt.Errorf("run: %w", err)
				}
			}
			b.ResetTimings()
		}
		// Pages of the embedding table and the KV caches idle since the
		// warm-up back before the timed gather and kv_write (Batch.Touch:
		// a VM's host reclaims idle guest pages).
		t0 := time.Now()
		touched = b.Touch()
		touchS += time.Since(t0).Seconds()
		if err := hostPlace.Sample(ctx, "before prefill"); err != nil {
			return err
		}
		ctr.Begin("prefill")
		var prefill float64
		meter.Start()
		err = m.Hold(func() error {
			for i := range B {
				start := time.Now()
				tok, err := b.PrefillNext(i, prompts[i], nil)
				if err != nil {
					return fmt.Errorf("run: prefill of sequence %d: %w", i, err)
				}
				toks[i] = tok
				s := time.Since(start).Seconds()
				prefills = append(prefills, s)
				prefill += s
			}
			return nil
		})
		meter.Stop()
		if err != nil {
			return err
		}
		ctr.End()
		if G > 0 {
			if err := hostPlace.Sample(ctx, "before decode"); err != nil {
				return err
			}
			ctr.Begin("decode")
		}
		var decode float64
		meter.Start()
		err = m.Hold(func() error {
			for i := range G {
				start := time.Now()
				if err := b.DecodeNext(slots, toks, toks, nil); err != nil {
					return fmt.Errorf("run: decode step %d: %w", i+1, err)
				}
				s := time.Since(start).Seconds()
				steps, stepKeys = append(steps, s), append(stepKeys, r)
				decode += s
			}
			return nil
		})
		meter.Stop()
		if err != nil {
			return err
		}
		ctr.End()
		reqPrefill, reqDecode = append(reqPrefill, prefill), append(reqDecode, decode)
		reqTimings = append(reqTimings, b.Timings())
		inOps := 0.0
		for _, t := range reqTimings[r] {
			if t.Phase == roofline.Decode {
				inOps += t.Seconds
			}
		}
		reqOverhead = append(reqOverhead, decode-inOps)
	}
	prefill, decode := results.Summarize(reqPrefill).Median, results.Summarize(reqDecode).Median
	notes = append(notes, fmt.Sprintf("before each timed request, one load in every 4 KiB page of the embedding table and the KV caches (%.0f MB, %.0f ms a request, untimed): pages idle since the warm-up, which a VM's host may have reclaimed, back before the timed gather and kv_write", float64(touched)/1e6, 1e3*touchS/float64(o.Repeats)))
	timings, opRange := medianTimings(reqTimings)
	if o.Repeats > 1 {
		notes = append(notes, fmt.Sprintf("%d timed requests (the same prompts, the KV caches reset between): each operator's time, TTFT and TPOT are the median request's, the operators' range in measured_min_s and measured_max_s", o.Repeats))
	}
	nz := sweep.RunNoise(meter, steps, stepKeys, prefills)
	if machine != nil {
		// The host's memory bandwidth and compute rate may have moved
		// since the probe: re-measure the profile's DRAM roof and attained
		// GEMM at the run's threads.
		be := m.Backend.Name
		if m.Placement == engine.PlaceMatrix && m.Matrix != nil {
			be = m.Matrix.Name
		}
		notes = append(notes, checkHost(ctx, hostProf, be, m.Threads, T, &nz)...)
		if err := hostPlace.Sample(ctx, "after"); err != nil {
			return err
		}
		hostPlace.Record(&nz)
		noise.Judge(&nz, nz.CPUFraction > 0)
		if n := hostPlace.Note(); n != "" {
			notes = append(notes, n)
		}
	}
	numaPl, err := m.NUMAPlacement(0) // while b's caches and buffers are live
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}

	res := runResult{Model: c.Name, Weights: o.Weights, Seed: o.Seed, Backend: m.Backends(), Layers: c.Layers,
		ModelLayers: full, PromptTokens: T, GenTokens: G, Batch: B, Threads: m.Threads, Placement: string(m.Placement),
		Ablate: o.Ablate, TTFTS: prefill / float64(B), PrefillTokS: float64(B*T) / prefill,
		PackS: m.PackSeconds, WeightDType: m.WeightFormat, KVDType: o.KVDType, WeightBytes: m.WeightBytes, Notes: notes, Targets: sweep.Targets(b.Use()),
		Counters: ctr.Report(), Noise: &nz}
	if o.Repeats > 1 {
		res.Repeats = o.Repeats
	}
	if m.Quant != nil {
		res.QuantBackend = m.Quant.Name
	}
	prec, precNote := m.PredictionPrecision(machine)
	if G > 0 {
		res.TPOTS = decode / float64(G)
		res.DecodeTokS = float64(B*G) / decode
	}
	if c.Layers < full {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of the model's %d layers instantiated: times are for %d layer(s); per-layer columns are one layer", c.Layers, full, c.Layers))
	}
	if n := m.ExpertPlanNote(); n != "" {
		res.Notes = append(res.Notes, n)
	}
	var pred map[[2]string]float64
	var predictOn func(*roofline.Machine) (map[[2]string]float64, error) // the run's prediction on another machine
	if machine != nil {
		var pt, pd float64
		predict := sweep.Predict
		if !m.PerPhase() && m.Threads != machine.CoresWorkers() {
			// Fewer threads than the profile's workers: predict at the
			// run's (roofline.Machine.AtThreads, as per-phase runs do).
			res.Notes = append(res.Notes, fmt.Sprintf("predicted at the run's %d threads, not the profile's %d workers (the cores target scaled: roofline.Machine.AtThreads)", m.Threads, machine.CoresWorkers()))
			if machine.HasMatrixUnit() {
				res.Notes = append(res.Notes, "the profile's matrix-unit target is not scaled to fewer threads: the prediction is the cores target's")
			}
		}
		if m.PerPhase() || m.Threads != machine.CoresWorkers() {
			predict = func(mach *roofline.Machine, c engine.Config, prec engine.Precision, B, T, G int) (map[[2]string]float64, float64, float64, error) {
				return sweep.PredictPhases(mach, c, prec, B, T, G, m.PhaseThreads(roofline.Prefill), m.PhaseThreads(roofline.Decode))
			}
		}
		predictOn = func(mach *roofline.Machine) (map[[2]string]float64, error) {
			p, _, _, err := predict(mach, c, prec, B, T, G)
			return p, err
		}
		if pred, pt, pd, err = predict(machine, c, prec, B, T, G); err != nil {
			return fmt.Errorf("run: --profile %s: %w", o.Profile, err)
		}
		res.Profile, res.Machine, res.PredictedTTFT = o.Profile, machine.Name, &pt
		res.Precision = prec.String()
		if precNote != "" {
			res.Notes = append(res.Notes, precNote)
		}
		if G > 0 {
			res.PredictedTPOT = &pd
		}
	} else {
		res.Notes = append(res.Notes, "no profile: no prediction (pass --profile)")
	}

	idx := map[[2]string]int{}
	for _, t := range timings {
		k := [2]string{string(t.Phase), t.Op}
		i, ok := idx[k]
		if !ok {
			i = len(res.Ops)
			idx[k] = i
			res.Ops = append(res.Ops, runOp{Phase: t.Phase, Op: t.Op, PerLayer: t.Layer >= 0})
		}
		op := &res.Ops[i]
		op.MeasuredS += t.Seconds
		op.Calls = max(op.Calls, t.Calls)
	}
	unint, icalls := uninterrupted(reqTimings)
	for i := range res.Ops {
		op := &res.Ops[i]
		k := [2]string{string(op.Phase), op.Op}
		if r, ok := opRange[k]; ok {
			op.MeasuredMinS, op.MeasuredMaxS = &r[0], &r[1]
		}
		if n := icalls[k]; n > 0 {
			u := unint[k]
			op.UninterruptedS, op.InterruptedCalls = &u, n
		}
	}
	res.Phases = phases.record(m)
	for i := range res.Ops {
		op := &res.Ops[i]
		if m.PerPhase() {
			op.Threads = m.PhaseThreads(op.Phase)
		}
		if op.PerLayer {
			op.MeasuredLayerS = op.MeasuredS / float64(c.Layers)
		}
		p, ok := pred[[2]string{string(op.Phase), op.Op}]
		if !ok {
			continue
		}
		op.PredictedS = &p
		if op.PerLayer {
			pl := p / float64(c.Layers)
			op.PredictedLayerS = &pl
		}
		if p > 0 {
			r := op.compared() / p
			op.MeasuredPredicted = &r
		}
	}
	if machine != nil {
		var pairs [][2]float64
		for _, op := range res.Ops {
			if op.PredictedS != nil {
				pairs = append(pairs, [2]float64{op.compared(), *op.PredictedS})
			}
		}
		f := sweep.CountFidelity(pairs, res.Noise)
		res.Fidelity = &f
		if d, err := driftFidelity(&res, machine, nz, predictOn); err != nil {
			res.Notes = append(res.Notes, "prediction at the host's drift: "+err.Error())
		} else {
			res.Drift = d
		}
	}
	if nz.Noisy {
		fmt.Fprintf(o.IO.Err, "run: NOISY: %s (the figures are kept, marked, and not counted in the fidelity figures)\n", nz.Why)
	}
	if G > 0 {
		over := results.Summarize(reqOverhead).Median
		res.Checks = append(res.Checks, runCheck{What: "engine overhead outside operators, decode",
			MeasuredS: decode, RefS: over, Ratio: over / decode,
			Detail: "ratio = (wall − Σ operator timers) / wall over the decode steps (with --repeats, the median request's); target < 0.05"})
	}
	if machine != nil && G > 0 {
		if ck, ok := sweep.RoofCheck(machine, c, prec, B, T, G, res.TPOTS); ok {
			res.Checks = append(res.Checks, ck)
		}
	}
	res.Layout = measuredLayout(m, B)
	res.NUMA = numaResult(m, o.NUMA)
	if res.NUMA != nil {
		res.NUMA.Placement = numaPl
	}
	if err := runStandaloneChecks(m, &res, timings, T, B); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if o.Amdahl && m.Quant != nil && G > 0 {
		// This run's pinned workers must not compete with the reference's.
		threads := m.PhaseThreads(roofline.Decode)
		m.Close()
		if a, err := measureAmdahl(ctx, c, o.Seed, threads, prompts, G, decode, timings); ctx.Err() != nil {
			return ctx.Err()
		} else if err != nil {
			res.Notes = append(res.Notes, "Amdahl bound (Eq. 4) not measured: "+err.Error())
		} else {
			res.Amdahl = a
		}
	}

	if o.CountersPlot != "" {
		if err := res.Counters.WritePlot(o.CountersPlot); err != nil {
			return fmt.Errorf("run: --counters-plot: %w", err)
		}
	}
	js := newJSONOut(o.JSON, o.IO.Out)
	if js.on() {
		data, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if err := js.write(append(data, '\n')); err != nil {
			return err
		}
		if err := js.flush(); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	if !js.tables() {
		return nil
	}
	if err := writeRun(o.IO.Out, &res); err != nil {
		return err
	}
	return res.Counters.WriteText(o.IO.Out)
}

// runCheck is one of the speed checks (sweep.RoofCheck,
// sweep.StandaloneChecks).
type runCheck = sweep.Check

// weightSpec is the weights the flags ask for.
func (o *runOptions) weightSpec() sweep.WeightSpec {
	return sweep.WeightSpec{Model: o.Model, Weights: o.Weights, WeightDType: o.WeightDType, Layers: o.Layers, Seed: o.Seed,
		PromptTokens: o.PromptTokens, GenTokens: o.GenTokens, Placement: o.Placement}
}

// runStandaloneChecks adds sweep.StandaloneChecks to res.
func runStandaloneChecks(m *engine.Model, res *runResult, ts []engine.Timing, T, B int) error {
	cs, err := sweep.StandaloneChecks(m, ts, T)
	res.Checks = append(res.Checks, cs...)
	return err
}

func writeRun(w io.Writer, r *runResult) error {
	fmt.Fprintf(w, "## %s, %s weights (seed %d), backend %s: prompt %d tokens, %d generated greedily\n\n",
		r.Model, r.Weights, r.Seed, r.Backend, r.PromptTokens, r.GenTokens)
	abl := "none"
	if len(r.Ablate) > 0 {
		abl = strings.Join(r.Ablate, ",")
	}
	pl := (&results.SweepCell{Placement: r.Placement, Targets: r.Targets}).PlacementLabel()
	fmt.Fprintf(w, "batch %d, %d threads, placement %s, ablations %s\n\n", r.Batch, r.Threads, pl, abl)
	writeRunNUMA(w, r.NUMA)
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "linear operators: %s\n\n", sweep.TargetsLine(r.Targets))
	}
	if err := writeRunPhases(w, r.Phases); err != nil {
		return err
	}
	fmt.Fprintf(w, "weights: %s", r.WeightDType)
	if r.QuantBackend != "" {
		fmt.Fprintf(w, " (kernels/quant backend %s; activations quantized to int8 per 32-element block as llama.cpp does)", r.QuantBackend)
	}
	fmt.Fprintf(w, ", %.4g MB resident (quantized matrices as packed, float tensors and packed fp32/bf16 copies at their element size), packed in %s\n\n",
		float64(r.WeightBytes)/1e6, fmtTime(r.PackS))
	if r.Layers < r.ModelLayers {
		fmt.Fprintf(w, "layers: %d of %d instantiated; TTFT, TPOT and measured sums cover %d layer(s), per-layer columns one layer\n\n", r.Layers, r.ModelLayers, r.Layers)
	}
	opt := func(p *float64, f func(float64) string) string {
		if p == nil {
			return "—"
		}
		return f(*p)
	}
	ratio := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	// A noisy run's measured figures are marked in the table (issue #16).
	mark := func(s string) string {
		if r.Noise != nil && r.Noise.Noisy {
			return s + " NOISY"
		}
		return s
	}
	t := newMarkdown(w, "metric", "measured", "predicted")
	t.Append([]string{fmt.Sprintf("TTFT (prefill of %d)", r.PromptTokens), mark(fmtTime(r.TTFTS)), opt(r.PredictedTTFT, fmtTime)})
	if r.GenTokens > 0 {
		what := fmt.Sprintf("TPOT (mean of %d decode steps)", r.GenTokens)
		if r.Batch > 1 {
			what = fmt.Sprintf("TPOT (mean of %d decode steps of %d sequences)", r.GenTokens, r.Batch)
		}
		t.Append([]string{what, mark(fmtTime(r.TPOTS)), opt(r.PredictedTPOT, fmtTime)})
		t.Append([]string{"decode tokens/s", fmt.Sprintf("%.4g", r.DecodeTokS), "—"})
	} else {
		t.Append([]string{"TPOT", "— (no decode steps)", "—"})
	}
	t.Append([]string{"prefill tokens/s", fmt.Sprintf("%.4g", r.PrefillTokS), "—"})
	t.Append([]string{"packing", fmtTime(r.PackS), "—"})
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.Noise != nil {
		fmt.Fprintf(w, "%s\n\n", sweep.NoiseLine(r.Noise))
	}
	if r.Machine != "" {
		fmt.Fprintf(w, "predicted: roofline of %s at %s\n\n", r.Machine, r.Precision)
	}
	cols := []string{"phase", "operator", "calls", "measured", "measured/layer", "predicted", "predicted/layer", "measured/predicted"}
	if r.Phases != nil {
		cols = append(cols, "threads")
	}
	t = newMarkdown(w, cols...)
	for _, op := range r.Ops {
		ml := "—"
		if op.PerLayer {
			ml = fmtTime(op.MeasuredLayerS)
		}
		row := []string{string(op.Phase), op.Op, fmt.Sprint(op.Calls), fmtTime(op.MeasuredS), ml,
			opt(op.PredictedS, fmtTime), opt(op.PredictedLayerS, fmtTime), opt(op.MeasuredPredicted, ratio)}
		if r.Phases != nil {
			row = append(row, fmt.Sprint(op.Threads))
		}
		t.Append(row)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if l := interruptedLine(r.Ops); l != "" {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	if r.Fidelity != nil {
		fmt.Fprintf(w, "\n%s\n", r.Fidelity)
		if r.Drift != nil && r.Drift.String() != "" {
			fmt.Fprintf(w, "%s\n", r.Drift)
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(w)
		t = newMarkdown(w, "check", "measured", "reference", "ratio", "how")
		for _, c := range r.Checks {
			t.Append([]string{c.What, fmtTime(c.MeasuredS), fmtTime(c.RefS), fmt.Sprintf("%.3f", c.Ratio), c.Detail})
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if r.Amdahl != nil {
		writeAmdahl(w, r.Amdahl, r.WeightDType, r.GenTokens, r.Batch)
	}
	if r.Layout != nil {
		if err := writeRunLayout(w, r.Layout); err != nil {
			return err
		}
	}
	if err := writeRunNUMAPlacement(w, r.NUMA); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s", n)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
	}
	return nil
}

// driftFidelity predicts res's operators again on machine drifted as the
// run's checks found the host (nz: DRAM roof now over the profile's,
// attained GEMM now over the profile's), fills each operator's
// PredictedDriftS and counts them as Fidelity does, for every run whose
// checks measured the host (a drift within NoiseMaxRoofDrift still moves
// a prediction by up to 10%, the fidelity test's whole tolerance); nil
// where neither check ran.
func driftFidelity(res *runResult, machine *roofline.Machine, nz results.Noise, predict func(*roofline.Machine) (map[[2]string]float64, error)) (*runDrift, error) {
	d := &runDrift{DRAMFactor: 1, ComputeFactor: 1}
	if nz.DRAMNowGBps > 0 && nz.DRAMProfileGBps > 0 {
		d.DRAMFactor = nz.DRAMNowGBps / nz.DRAMProfileGBps
	}
	if nz.GEMMRatio > 0 {
		d.ComputeFactor = nz.GEMMRatio
	}
	if d.DRAMFactor == 1 && d.ComputeFactor == 1 {
		return nil, nil // no check measured the host
	}
	pred, err := predict(machine.Drifted(d.DRAMFactor, d.ComputeFactor))
	if err != nil {
		return nil, err
	}
	var pairs [][2]float64
	for i := range res.Ops {
		op := &res.Ops[i]
		p, ok := pred[[2]string{string(op.Phase), op.Op}]
		if !ok || op.PredictedS == nil {
			continue
		}
		op.PredictedDriftS = &p
		pairs = append(pairs, [2]float64{op.compared(), p})
	}
	d.Fidelity = sweep.CountFidelity(pairs, nil)
	d.Fidelity.Counted = false
	d.Fidelity.Why = "a diagnostic at the host's drift, never counted"
	return d, nil
}

// runPlacementCheck is the check of a run's CPUs against the placement of
// p (a probe's profile); nil (checking nothing) without one, or where p
// has no placement (fewer than 2 CPUs, a profile from before it).
func runPlacementCheck(p *results.Profile, cpus []int) *noise.PlacementCheck {
	if p == nil {
		return nil
	}
	return noise.NewPlacementCheck(p.Placement, cpus)
}

// checkHost re-measures, right after the timed phases, what profile p (a
// probe's profile.json; nil: none) says the host can do at threads: its DRAM
// read roof (probes.CheckDRAMRoof) and its attained GEMM rate on backend
// (probes.CheckGEMM, also at the table point of rows, the run's prefill
// length, where that is longer than the check's points); it records both
// in nz, judges nz again (a drift beyond results.NoiseMaxRoofDrift marks
// the run noisy) and returns the run's notes saying what each found, or
// why it did not run.
func checkHost(ctx context.Context, p *results.Profile, backend string, threads, rows int, nz *results.Noise) []string {
	if p == nil {
		return []string{"DRAM roof and GEMM checks: not run (the profile is not a probe's profile.json)"}
	}
	var notes []string
	if ck, err := probes.CheckDRAMRoof(ctx, p, threads); err != nil {
		notes = append(notes, "DRAM roof check: not run: "+err.Error())
	} else {
		nz.DRAMNowGBps, nz.DRAMProfileGBps = ck.Now.Median, ck.Profile.Median
		var wss []string
		for _, ws := range ck.WorkingSets {
			wss = append(wss, reports.FormatBytes(ws))
		}
		notes = append(notes, fmt.Sprintf("DRAM roof check: %s on %s pages, working sets %s, %d threads, right after the timed phases: %.1f GB/s (median of the working sets' medians, cv %.1f%%) vs the profile's %.1f GB/s (%+.0f%%; more than ±%.0f%% marks the run noisy)",
			ck.Kernel, ck.Pages, strings.Join(wss, ", "), ck.Threads, ck.Now.Median, 100*ck.Now.CV, ck.Profile.Median,
			100*(ck.Now.Median/ck.Profile.Median-1), 100*results.NoiseMaxRoofDrift))
	}
	if ck, err := probes.CheckGEMM(ctx, p, backend, threads, rows); err != nil {
		notes = append(notes, "GEMM check: not run: "+err.Error())
	} else {
		nz.GEMMRatio, nz.GEMMBackend = ck.Ratio, ck.Backend
		var pts []string
		for _, q := range ck.Points {
			pts = append(pts, fmt.Sprintf("%d×%d×%d %.0f vs %.0f", q.M, q.N, q.K, q.NowGFLOPS, q.ProfileGFLOPS))
		}
		atRows := ""
		if q := ck.Rows; q != nil {
			nz.GEMMRowsRatio, nz.GEMMRowsShape = ck.RowsRatio(), fmt.Sprintf("%d×%d×%d", q.M, q.N, q.K)
			atRows = fmt.Sprintf("; at the prefill's rows %s %.0f vs %.0f, ratio %.2f", nz.GEMMRowsShape, q.NowGFLOPS, q.ProfileGFLOPS, nz.GEMMRowsRatio)
		}
		notes = append(notes, fmt.Sprintf("GEMM check: %s, %d threads, right after the timed phases, GFLOP/s now vs the profile's (M×N×K, median of 5): %s; median ratio %.2f%s (either more than ±%.0f%% from 1 marks the run noisy)",
			ck.Backend, ck.Threads, strings.Join(pts, ", "), ck.Ratio, atRows, 100*results.NoiseMaxRoofDrift))
	}
	noise.Judge(nz, nz.CPUFraction > 0)
	return notes
}

// medianTimings is one list of operator timings for --repeats' requests
// (each request's Batch.Timings, the same operators in the same order):
// per phase and operator, the layer entries of the request whose sum over
// the layers is the median (the mean of the two middle requests' entries
// for an even count), so that each operator's sum is the median of the
// requests' sums. With two or more requests, rng holds each phase and
// operator's smallest and largest sum (nil with one).
func medianTimings(reqs [][]engine.Timing) (ts []engine.Timing, rng map[[2]string][2]float64) {
	if len(reqs) == 0 {
		return nil, nil
	}
	if len(reqs) == 1 {
		return reqs[0], nil
	}
	key := func(t engine.Timing) [2]string { return [2]string{string(t.Phase), t.Op} }
	sums := make([]map[[2]string]float64, len(reqs))
	for r, list := range reqs {
		sums[r] = map[[2]string]float64{}
		for _, t := range list {
			sums[r][key(t)] += t.Seconds
		}
	}
	rng = map[[2]string][2]float64{}
	pick := map[[2]string][]int{} // the middle request(s) of each operator
	for k := range sums[0] {
		order := make([]int, len(reqs))
		for r := range order {
			order[r] = r
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sums[a][k], sums[b][k]) })
		n := len(order)
		rng[k] = [2]float64{sums[order[0]][k], sums[order[n-1]][k]}
		if n%2 == 1 {
			pick[k] = []int{order[n/2]}
		} else {
			pick[k] = []int{order[n/2-1], order[n/2]}
		}
	}
	type entry struct {
		k     [2]string
		layer int
	}
	secs := make([]map[entry]float64, len(reqs))
	for r, list := range reqs {
		secs[r] = map[entry]float64{}
		for _, t := range list {
			secs[r][entry{key(t), t.Layer}] += t.Seconds
		}
	}
	ts = slices.Clone(reqs[0])
	for i := range ts {
		e := entry{key(ts[i]), ts[i].Layer}
		s := 0.0
		for _, r := range pick[e.k] {
			s += secs[r][e]
		}
		ts[i].Seconds = s / float64(len(pick[e.k]))
	}
	return ts, rng
}
