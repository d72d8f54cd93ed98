package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/workloads"
)

// bench sweep: the flags, into sweep.Options, and one call of sweep.Run.

func init() { subcommands = append(subcommands, newSweepCmd) }

func newSweepCmd(streams IO) *cobra.Command { return newCmdSweep(streams, nil) }

// newCmdSweep builds the command; tests pass runF to capture the options.
func newCmdSweep(streams IO, runF func(context.Context, *sweep.Options) error) *cobra.Command {
	o := &sweep.Options{Stdout: streams.Out, Stderr: streams.Err, Now: time.Now, BenchVersion: version,
		IsTerminal:     func() bool { return stderrIsTerminal(streams.Err) },
		ResolveProfile: func(flag string) string { return defaultProfile(flag, streams, "sweep") },
		LoadMachine:    loadMachine}
	sweepPhaseResolvers(o)
	var pf phaseFlags
	cmd := &cobra.Command{
		Use:   "sweep [--models M,...] [--workloads W,...] [--batch 1,4] [--threads T,...] [--placement P,...] [--out DIR]",
		Short: "Replay request traces on the engine over a grid of models, workloads, batch sizes, threads and placements",
		Long: `Runs every cell of the grid models × workloads × batch sizes × thread counts ×
placements (× ablations) on the engine and records, per cell: TTFT, TPOT and
end-to-end latency (mean, p50, p90, p99), output and prefill tokens/s, SLO
attainment and goodput, per-operator measured (and, with --profile,
predicted) times, and the full configuration.

Each cell replays a trace of --requests requests of its workload (see 'bench
workloads') with continuous batching over --batch slots (iteration-level
scheduling as in Orca and vLLM): arrived requests are admitted into free
slots, each prefilled alone, then one batched decode step runs over all
running requests. --arrival closed keeps --batch requests outstanding (a
request arrives when a slot frees, so its TTFT counts the engine's queue of
prefills, not requests not yet sent); poisson:RATE draws arrivals at RATE requests/s (idle time before an arrival
is skipped, not slept, and counted in the latencies). Before each cell one
untimed warm-up request runs.

A request meets the SLO when its TTFT ≤ --slo-ttft and its TPOT ≤
--slo-tpot (defaults: Sandwich §8.3's batched-serving targets for a 1.3B
model, 2 s and 280 ms). SLO attainment is the fraction of requests meeting
it; goodput the SLO-meeting requests per second of the cell's wall time.
(Sandwich §8.1's goodput, the highest request rate kept at ≥ 90%
attainment, is read off a sweep over --arrival poisson rates.)

Ablations (--ablate, SMEPilot §5.4) add variants of each cell: partition
(no tile partitioning: a mixed GEMM runs whole on one group; placements
mixed and auto only), packing (weights packed on every call) and
kv-packing (the KV cache kept row-major, every K/V tile packed inside
attention instead of written packed by its producer, SMEPilot §4.3) and
pipeline (prefill attention's stages run serially per job instead of
pipelined over a matrix and a vector worker, SMEPilot §4.2).

Placements: cores, matrix, mixed, auto; auto plans each operator from the
roofline and needs --profile (a profile.json, bench.machine/v1 file or
published profile name). cores runs the cores' fp32 vector kernels, matrix
the matrix unit's (e.g. sme-fp32), or where the CPU has none a second
backend on the cores (the best bf16 one); --cores-backend and
--matrix-backend name others (they join the cell keys). Each cell records
what ran each target (backend, unit, weight precision, calls: "targets"),
and the summary says it ("matrix = avx2-bf16 on the cores, no matrix
unit").

Output (--out DIR, default results/sweep-<host>-<yyyymmdd>):
  cells.jsonl  one bench.sweep/v1 record per finished cell, appended as each
               cell finishes
  bench.txt    all cells in the Go benchmark format, for benchstat
  sweep.json   the grid and flags of the last invocation
Resumable: rerun the same command (with the same --out) and cells already in
cells.jsonl are skipped; Ctrl-C stops within the current forward pass (between
layers), keeps every finished cell and exits with status 130 (SIGTERM: 143).
While a sweep writes DIR it holds DIR/sweep.lock (flock; it holds the pid): a
second sweep on DIR fails at once naming that pid. A corrupt line in
cells.jsonl is reported, saved to cells.jsonl.corrupt-<time> and its cell
rerun.

Defaults keep the default sweep (qwen3-0.6b synthetic, 2 layers, the four
workloads, batch 1,4, placements cores,mixed: 16 cells of 4 requests) at
about 4 minutes on 2 cores: prompts are capped at --max-prompt-tokens 2048
(RULER's prompts average 3.3K and 7.3K tokens, and one uncapped ruler-8k
prefill of 2 layers takes about 30 s on 2 cores; under the cap both RULER
workloads run 2048-token prompts, and each cell records how many prompts
were capped) and outputs at --max-gen-tokens 32 (LongWriter asks for
thousands). Pass --max-prompt-tokens 0 --max-gen-tokens 0 for the
workloads' real lengths.

--emit-jobs slurm writes DIR/jobs/sweep.sbatch, a Slurm job array with one
task per cell (each runs 'bench sweep <same flags> --cell N --out
DIR/cells/N'), merge.sbatch ('bench report --merge DIR --out DIR': the
tasks' cells into DIR/cells.jsonl and a report, run after the array with
--dependency=afterok), submit.sh, which submits both, and cells.txt (cell
index and key). --dry-run lists the cells.`,
		Example: `  bench sweep                                  # the default grid, about 4 minutes on 2 cores
  bench sweep --batch 1..4 --placement cores --workloads gsm8k --requests 16 --out results/gsm8k
  bench sweep --placement cores,mixed,auto --profile results/host/profile.json --ablate partition,packing
  bench sweep --arrival poisson:0.5 --requests 32 --workloads gsm8k
  bench sweep --models qwen3-0.6b,llama-3.2-1b --threads 1,2 --dry-run
  bench sweep --emit-jobs slurm --out /shared/sweeps/grid1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ThreadsGiven = cmd.Flags().Changed("threads")
			o.ModelsGiven = cmd.Flags().Changed("models")
			if err := pf.syntax("sweep"); err != nil {
				return err
			}
			o.PrefillConfig, o.DecodeConfig, o.Configs, o.ConfigsTry = pf.PrefillConfig, pf.DecodeConfig, pf.Configs, pf.ConfigsTry
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return sweep.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Models, "models", sweep.DefaultModels, "models, comma-separated: shipped config names ("+strings.Join(models.Names(), ", ")+") or config.json paths")
	f.StringVar(&o.Weights, "weights", "synthetic", "synthetic (seeded random weights at each model's shapes), or a llama2.c checkpoint (.bin) used instead of --models")
	f.IntVar(&o.Layers, "layers", sweep.DefaultLayers, "decoder layers to instantiate (0: all)")
	f.StringVar(&o.Workloads, "workloads", sweep.DefaultWorkloads, "workloads, comma-separated: "+strings.Join(workloads.Names(), ", "))
	f.StringVar(&o.Batch, "batch", sweep.DefaultBatch, "batch sizes (decode slots): a list and ranges, e.g. 1,2,4 or 1..16")
	f.StringVar(&o.Threads, "threads", "", "thread counts: a list and ranges (default: every CPU this process may use)")
	f.StringVar(&o.WeightDType, "weight-dtype", "", "linear weights' formats, comma-separated, one cell set each: "+strings.Join(engine.WeightDTypes(), ", ")+" (default: fp32 for synthetic weights, as stored for a file); quantized ones run on the cores")
	f.StringVar(&o.Placement, "placement", sweep.DefaultPlacement, "placements, comma-separated: "+strings.Join(engine.PlacementNames(), ", ")+" (auto needs --profile)")
	f.StringVar(&o.CoresBackend, "cores-backend", "", coresBackendHelp)
	f.StringVar(&o.MatrixBackend, "matrix-backend", "", matrixBackendHelp)
	f.StringVar(&o.Ablate, "ablate", "", "ablations to add next to the full system, comma-separated: "+strings.Join(engine.AblationNames(), ", "))
	f.IntVar(&o.Requests, "requests", sweep.DefaultRequests, "requests per cell")
	f.IntVar(&o.MaxGen, "max-gen-tokens", sweep.DefaultMaxGen, "cap on each request's output tokens (0: none)")
	f.IntVar(&o.MaxPrompt, "max-prompt-tokens", sweep.DefaultMaxPrompt, "cap on each request's prompt tokens (0: none; an uncapped ruler-8k prefill takes about 30 s on 2 cores)")
	f.StringVar(&o.Arrival, "arrival", "closed", "arrival processes, comma-separated: closed or poisson:RATE (requests/s) each; several Poisson rates make a rate sweep (serving curves and goodput in bench report)")
	f.Float64Var(&o.SLOTTFT, "slo-ttft", sweep.DefaultSLOTTFT, "TTFT target of the SLO, seconds (0: none)")
	f.Float64Var(&o.SLOTPOT, "slo-tpot", sweep.DefaultSLOTPOT, "TPOT target of the SLO, seconds (0: none)")
	f.DurationVar(&o.WaitPlacement, "wait-placement", 0, "with a profile that records where the host put its CPUs (profile.placement) and 2 or more threads: before each cell's replay, wait up to this long (e.g. 60s) for the host to put the cell's CPUs back there (0: do not wait; each cell is checked and marked noisy either way)")
	f.StringVar(&o.Profile, "profile", "", "machine for predicted times and placement auto: profile.json, bench.machine/v1 file or published profile name (default: the newest complete results/<host>-<stamp>/profile.json of bench probe, one with the memory section; none: no predictions)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the traces, the synthetic weights and the prompts' token ids")
	f.StringVar(&o.Out, "out", "", "output directory (default results/sweep-<host>-<yyyymmdd>)")
	f.StringVar(&o.EmitJobs, "emit-jobs", "", "write batch-scheduler jobs for the grid instead of running it: slurm")
	f.BoolVar(&o.DryRun, "dry-run", false, "list the grid's cells (and which are done in --out) without running them")
	f.IntVar(&o.Cell, "cell", -1, "run only cell N of the grid (0-based, as --dry-run and jobs/cells.txt number them); used by --emit-jobs")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress bar or per-cell lines")
	addPhaseFlags(f, &pf)
	return cmd
}
