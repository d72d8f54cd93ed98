package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/workloads"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

// Defaults of `bench sweep`, chosen so that the default sweep (Qwen3-0.6B
// synthetic, 2 layers; 4 workloads × batch 1,4 × placement cores,mixed =
// 16 cells of 4 requests) takes about 4 minutes on 2 cores; see the
// command's help.
const (
	sweepDefaultModels    = "qwen3-0.6b"
	sweepDefaultWorkloads = "gsm8k,ruler-4k,ruler-8k,longwriter"
	sweepDefaultBatch     = "1,4"
	sweepDefaultPlacement = "cores,mixed"
	sweepDefaultLayers    = 2
	sweepDefaultRequests  = 4
	sweepDefaultMaxGen    = 32
	sweepDefaultMaxPrompt = 2048
	// SLO targets: Sandwich §8.3's batched-serving targets for its 1.3B
	// model (P90 TTFT ≤ 2000 ms, P90 TPOT ≤ 280 ms), applied per request.
	sweepDefaultSLOTTFT = 2.0
	sweepDefaultSLOTPOT = 0.28
	// sweepWarmUpTokens bounds the untimed warm-up request's prompt.
	sweepWarmUpTokens = 128
)

// Files a sweep writes in its output directory.
const (
	sweepCellsFile = "cells.jsonl"
	sweepBenchFile = "bench.txt"
	sweepRunFile   = "sweep.json"
	sweepRunSchema = "bench.sweep-run/v1"
	// sweepLockFile is held (flock) by the sweep writing the directory,
	// and holds its pid; it is removed when the sweep ends.
	sweepLockFile = "sweep.lock"
)

// cellEngine is one grid cell's engine: an Executor whose slots are the
// cell's batch, plus what a SweepCell records about it. The command builds
// one per cell with newCellEngine, runs one untimed warm-up request on it,
// calls ResetOps, replays the cell's trace, reads Ops and closes it.
//
// A cellEngine may also implement cellEngineLayers, cellEngineNotes and
// cellEnginePredictor; the sweep records what they give when present.
type cellEngine interface {
	workloads.Executor
	// Ops are the per-operator measured times (and predicted, when a
	// profile is set) since the last ResetOps, summed over the slots and
	// layers run; seconds.
	Ops() []results.SweepOp
	ResetOps()
	// Backends names the gemm backends used, e.g. "avx2-fp32+avx2-bf16".
	Backends() string
	// PackSeconds is the weight packing time at load (not in the replay).
	PackSeconds() float64
	Close() error
}

// Optional methods of a cellEngine.
type (
	// cellEngineLayers gives the decoder layers instantiated and the
	// model's full count.
	cellEngineLayers interface{ Layers() (run, model int) }
	// cellEngineNotes gives notes for the cell's record (what the
	// placement means on this machine, approximations made).
	cellEngineNotes interface{ Notes() []string }
	// cellEnginePredictor gives the roofline's predicted seconds of one
	// prefill of n tokens (the cell's PredictedTTFT), when a profile is
	// set.
	cellEnginePredictor interface {
		PredictPrefill(n int) (float64, error)
	}
	// cellEngineTargets gives what ran each placement target since
	// ResetOps (backend, unit, weight precision, calls).
	cellEngineTargets interface{ Targets() []results.SweepTarget }
)

// newCellEngine builds the engine for one cell. An error wrapping
// errCellUnavailable skips the cell with a note (a placement this machine
// cannot run); any other error stops the sweep. Set by the engine adapter
// (sweep_engine*.go).
var newCellEngine func(cell workloads.Cell, o *sweepOptions) (cellEngine, error)

// errCellUnavailable marks a cell the machine cannot run.
var errCellUnavailable = errors.New("not available on this machine")

// sweepOptions are the flag values of `bench sweep` plus its IO.
type sweepOptions struct {
	IO IO

	Models      string
	Weights     string
	Layers      int
	Workloads   string
	Batch       string
	Threads     string
	Placement   string
	WeightDType string
	Ablate      string
	Requests    int
	MaxGen      int
	MaxPrompt   int
	Arrival     string
	SLOTTFT     float64
	SLOTPOT     float64
	Profile     string
	Seed        uint64
	Out         string
	EmitJobs    string
	DryRun      bool
	Cell        int
	Quiet       bool
	IsTerminal  func() bool      // whether stderr is a terminal (tests inject it)
	Now         func() time.Time // clock of dates and file stamps

	// The placements' backends by name ("": chosen by capability).
	CoresBackend, MatrixBackend string

	// Set by validate and prepare.
	grid          workloads.Grid
	threadsGiven  bool
	modelsChanged bool
	machine       *roofline.Machine // the loaded --profile; nil without one
	ctx           context.Context   // the command's, for the engines (set by sweepRun)
}

func newSweepCmd(streams IO) *cobra.Command { return newCmdSweep(streams, nil) }

// newCmdSweep builds the command; tests pass runF to capture the options.
func newCmdSweep(streams IO, runF func(context.Context, *sweepOptions) error) *cobra.Command {
	o := &sweepOptions{IO: streams, Now: time.Now}
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
attention instead of written packed by its producer, SMEPilot §4.3).

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
			o.threadsGiven = cmd.Flags().Changed("threads")
			o.modelsChanged = cmd.Flags().Changed("models")
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return sweepRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Models, "models", sweepDefaultModels, "models, comma-separated: shipped config names ("+strings.Join(models.Names(), ", ")+") or config.json paths")
	f.StringVar(&o.Weights, "weights", "synthetic", "synthetic (seeded random weights at each model's shapes), or a llama2.c checkpoint (.bin) used instead of --models")
	f.IntVar(&o.Layers, "layers", sweepDefaultLayers, "decoder layers to instantiate (0: all)")
	f.StringVar(&o.Workloads, "workloads", sweepDefaultWorkloads, "workloads, comma-separated: "+strings.Join(workloads.Names(), ", "))
	f.StringVar(&o.Batch, "batch", sweepDefaultBatch, "batch sizes (decode slots): a list and ranges, e.g. 1,2,4 or 1..16")
	f.StringVar(&o.Threads, "threads", "", "thread counts: a list and ranges (default: every CPU this process may use)")
	f.StringVar(&o.WeightDType, "weight-dtype", "", "linear weights' formats, comma-separated, one cell set each: "+strings.Join(engine.WeightDTypes(), ", ")+" (default: fp32 for synthetic weights, as stored for a file); quantized ones run on the cores")
	f.StringVar(&o.Placement, "placement", sweepDefaultPlacement, "placements, comma-separated: "+strings.Join(workloads.Placements, ", ")+" (auto needs --profile)")
	f.StringVar(&o.CoresBackend, "cores-backend", "", coresBackendHelp)
	f.StringVar(&o.MatrixBackend, "matrix-backend", "", matrixBackendHelp)
	f.StringVar(&o.Ablate, "ablate", "", "ablations to add next to the full system, comma-separated: "+strings.Join(workloads.Ablations, ", "))
	f.IntVar(&o.Requests, "requests", sweepDefaultRequests, "requests per cell")
	f.IntVar(&o.MaxGen, "max-gen-tokens", sweepDefaultMaxGen, "cap on each request's output tokens (0: none)")
	f.IntVar(&o.MaxPrompt, "max-prompt-tokens", sweepDefaultMaxPrompt, "cap on each request's prompt tokens (0: none; an uncapped ruler-8k prefill takes about 30 s on 2 cores)")
	f.StringVar(&o.Arrival, "arrival", "closed", "arrival process: closed or poisson:RATE (requests/s)")
	f.Float64Var(&o.SLOTTFT, "slo-ttft", sweepDefaultSLOTTFT, "TTFT target of the SLO, seconds (0: none)")
	f.Float64Var(&o.SLOTPOT, "slo-tpot", sweepDefaultSLOTPOT, "TPOT target of the SLO, seconds (0: none)")
	f.StringVar(&o.Profile, "profile", "", "machine for predicted times and placement auto: profile.json, bench.machine/v1 file or published profile name (default: the newest complete results/<host>-<stamp>/profile.json of bench probe, one with the memory section; none: no predictions)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the traces, the synthetic weights and the prompts' token ids")
	f.StringVar(&o.Out, "out", "", "output directory (default results/sweep-<host>-<yyyymmdd>)")
	f.StringVar(&o.EmitJobs, "emit-jobs", "", "write batch-scheduler jobs for the grid instead of running it: slurm")
	f.BoolVar(&o.DryRun, "dry-run", false, "list the grid's cells (and which are done in --out) without running them")
	f.IntVar(&o.Cell, "cell", -1, "run only cell N of the grid (0-based, as --dry-run and jobs/cells.txt number them); used by --emit-jobs")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress bar or per-cell lines")
	return cmd
}

// validate checks flag values and builds the grid; it reads no files
// (models, weights and the profile are checked by prepare).
func (o *sweepOptions) validate() error {
	g := workloads.Grid{Weights: o.Weights, Layers: o.Layers, Requests: o.Requests, Seed: o.Seed,
		MaxGenTokens: o.MaxGen, MaxPromptTokens: o.MaxPrompt}
	var err error
	switch {
	case o.Weights == "":
		return errors.New("sweep: --weights: must be synthetic or a llama2.c checkpoint path")
	case o.Weights != "synthetic" && o.modelsChanged:
		return fmt.Errorf("sweep: --models %s: not used with --weights %s (a llama2.c checkpoint carries its config)", o.Models, o.Weights)
	case o.Weights != "synthetic":
		// The checkpoint's file name, without extension, labels its cells.
		g.Models = []string{strings.TrimSuffix(filepath.Base(o.Weights), filepath.Ext(o.Weights))}
	default:
		if g.Models, err = workloads.ParseList(o.Models); err != nil {
			return fmt.Errorf("sweep: --models: %w", err)
		}
	}
	if g.Workloads, err = workloads.ParseList(o.Workloads); err != nil {
		return fmt.Errorf("sweep: --workloads: %w", err)
	}
	for _, w := range g.Workloads {
		if _, err := workloads.Lookup(w); err != nil {
			return fmt.Errorf("sweep: --workloads: %w", err)
		}
	}
	if g.Batches, err = workloads.ParseIntList(o.Batch); err != nil {
		return fmt.Errorf("sweep: --batch: %w", err)
	}
	if o.threadsGiven {
		if g.Threads, err = workloads.ParseIntList(o.Threads); err != nil {
			return fmt.Errorf("sweep: --threads: %w", err)
		}
	} else {
		g.Threads = []int{1} // replaced by the allowed CPUs in prepare
	}
	if g.Placements, err = workloads.ParseList(o.Placement); err != nil {
		return fmt.Errorf("sweep: --placement: %w", err)
	}
	if o.WeightDType != "" {
		if g.WeightDTypes, err = workloads.ParseList(o.WeightDType); err != nil {
			return fmt.Errorf("sweep: --weight-dtype: %w", err)
		}
		for i, d := range g.WeightDTypes {
			if g.WeightDTypes[i], err = engine.ParseWeightDType(d); err != nil {
				return fmt.Errorf("sweep: --weight-dtype: %w", err)
			}
		}
	}
	for _, p := range g.Placements {
		if !slices.Contains(workloads.Placements, p) {
			return fmt.Errorf("sweep: --placement: unknown placement %q (valid: %s)", p, strings.Join(workloads.Placements, ", "))
		}
	}
	if err := checkBackends("sweep", o.CoresBackend, o.MatrixBackend); err != nil {
		return err
	}
	g.CoresBackend, g.MatrixBackend = o.CoresBackend, o.MatrixBackend
	o.Profile = defaultProfile(o.Profile, o.IO, "sweep")
	if slices.Contains(g.Placements, "auto") && o.Profile == "" {
		return errors.New("sweep: --placement auto: needs --profile (auto plans each operator from the roofline of a probed machine; run 'bench probe' or name a published profile)")
	}
	g.Ablations = []string{""}
	if o.Ablate != "" {
		abl, err := workloads.ParseList(o.Ablate)
		if err != nil {
			return fmt.Errorf("sweep: --ablate: %w", err)
		}
		for _, a := range abl {
			if !slices.Contains(workloads.Ablations, a) {
				return fmt.Errorf("sweep: --ablate: unknown ablation %q (valid: %s)", a, strings.Join(workloads.Ablations, ", "))
			}
		}
		g.Ablations = append(g.Ablations, abl...)
	}
	if g.Arrival, err = workloads.ParseArrival(o.Arrival); err != nil {
		return fmt.Errorf("sweep: --arrival %w", err)
	}
	for _, s := range []struct {
		flag string
		v    float64
	}{{"--slo-ttft", o.SLOTTFT}, {"--slo-tpot", o.SLOTPOT}} {
		if !(s.v >= 0) || math.IsInf(s.v, 0) {
			return fmt.Errorf("sweep: %s %v: must be a number of seconds ≥ 0 (0: no target)", s.flag, s.v)
		}
	}
	switch {
	case o.EmitJobs != "" && o.EmitJobs != "slurm":
		return fmt.Errorf("sweep: --emit-jobs %q: the only scheduler supported is slurm", o.EmitJobs)
	case o.EmitJobs != "" && o.Cell >= 0:
		return fmt.Errorf("sweep: --cell %d: not used with --emit-jobs (each job runs one cell)", o.Cell)
	case o.Cell < -1:
		return fmt.Errorf("sweep: --cell %d: must be ≥ 0", o.Cell)
	case o.Layers < 0:
		return fmt.Errorf("sweep: --layers %d: must be ≥ 0 (0: all)", o.Layers)
	case o.Requests < 1:
		return fmt.Errorf("sweep: --requests %d: must be ≥ 1", o.Requests)
	case o.MaxGen < 0:
		return fmt.Errorf("sweep: --max-gen-tokens %d: must be ≥ 0 (0: no cap)", o.MaxGen)
	case o.MaxPrompt < 0:
		return fmt.Errorf("sweep: --max-prompt-tokens %d: must be ≥ 0 (0: no cap)", o.MaxPrompt)
	}
	if err := checkRequests(o.Requests, 1); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	o.grid = g
	return nil
}

// prepare checks what validate could not without reading files or the
// machine: the thread counts against the allowed CPUs (and fills the
// default), the models, the weights file and the profile.
func (o *sweepOptions) prepare() error {
	allowed, err := affinity.Allowed()
	if err != nil || len(allowed) == 0 {
		allowed = make([]int, runtime.NumCPU())
	}
	if !o.threadsGiven {
		o.grid.Threads = []int{len(allowed)}
	}
	for _, t := range o.grid.Threads {
		if t > len(allowed) {
			return fmt.Errorf("sweep: --threads %d: this process may use %d CPUs", t, len(allowed))
		}
	}
	if o.Weights == "synthetic" {
		for i, m := range o.grid.Models {
			if _, err := models.Load(m); err != nil {
				return fmt.Errorf("sweep: --models: %w", err)
			}
			// A shipped name in any case names one model, and one key.
			if n := strings.TrimSuffix(strings.ToLower(m), ".json"); !strings.ContainsAny(m, `/\`) && slices.Contains(models.Names(), n) {
				o.grid.Models[i] = n
			}
		}
		if err := o.grid.Validate(); err != nil {
			return fmt.Errorf("sweep: --models: %w", err)
		}
	} else if st, err := os.Stat(o.Weights); err != nil {
		return fmt.Errorf("sweep: --weights: %w", err)
	} else if st.IsDir() {
		return fmt.Errorf("sweep: --weights %s: a directory, not a llama2.c checkpoint", o.Weights)
	}
	if o.Profile != "" {
		if o.machine, err = loadMachine(o.Profile); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	if newCellEngine == nil {
		return errors.New("sweep: this bench was built without an engine adapter")
	}
	return nil
}

// hostInfo is where the sweep runs.
type hostInfo struct{ host, os, arch, cpu string }

func readHostInfo() hostInfo {
	h := hostInfo{os: runtime.GOOS, arch: runtime.GOARCH}
	h.host, _ = os.Hostname()
	if h.host == "" {
		h.host = "unknown"
	}
	if m, err := topology.ReadMachine(topology.LiveRoots()); err == nil && m.CPUModel != "unknown" {
		h.cpu = m.CPUModel
	}
	return h
}

// sweepCells is the grid's cells, narrowed to --cell when given.
func (o *sweepOptions) sweepCells() (cells []workloads.Cell, skipped []string, err error) {
	cells, skipped = o.grid.Cells()
	if o.Cell >= 0 {
		if o.Cell >= len(cells) {
			return nil, nil, fmt.Errorf("sweep: --cell %d: the grid has %d cells (0..%d)", o.Cell, len(cells), len(cells)-1)
		}
		cells = cells[o.Cell : o.Cell+1]
	}
	return cells, skipped, nil
}

func sweepRun(ctx context.Context, o *sweepOptions) (err error) {
	o.ctx = ctx
	if err := o.prepare(); err != nil {
		return err
	}
	cells, skipped, err := o.sweepCells()
	if err != nil {
		return err
	}
	host := readHostInfo()
	dir := o.Out
	if dir == "" {
		dir = filepath.Join("results", fmt.Sprintf("sweep-%s-%s", host.host, o.Now().Format("20060102")))
	}
	errw := o.IO.Err
	for _, s := range skipped {
		fmt.Fprintf(errw, "sweep: %s\n", s)
	}
	if o.DryRun {
		return sweepDryRun(o, cells, dir)
	}
	if o.EmitJobs != "" {
		return emitSlurm(o, cells, dir)
	}

	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	undo, err := prepareDir(dir)
	if err != nil {
		return fmt.Errorf("sweep: --out %s: %w", dir, err)
	}
	// One sweep writes a directory at a time: a second one fails here
	// instead of running every cell again beside the first.
	lock, err := results.LockDir(dir, sweepLockFile)
	if err != nil {
		undo()
		if le := (*results.LockedError)(nil); errors.As(err, &le) {
			holder := "another bench sweep"
			if le.PID > 0 {
				holder = fmt.Sprintf("another bench sweep (pid %d)", le.PID)
			}
			return fmt.Errorf("sweep: --out %s: %s is writing it (lock %s); wait for it to finish or choose another --out", dir, holder, le.Path)
		}
		return fmt.Errorf("sweep: --out %s: %w", dir, err)
	}
	var all []results.SweepCell
	defer func() {
		lock.Unlock()
		if err != nil && created && len(all) == 0 {
			// Nothing measured: leave no directory behind.
			os.Remove(filepath.Join(dir, sweepRunFile))
			undo()
		}
	}()
	cellsPath := filepath.Join(dir, sweepCellsFile)
	prev, bad, err := results.ReadSweepCells(cellsPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sweep: %w", err)
	}
	if len(bad) > 0 {
		for _, e := range bad {
			fmt.Fprintf(errw, "sweep: skipping a bad results line (its cell will be rerun): %v\n", e)
		}
		saved, err := results.QuarantineSweepLines(cellsPath, bad, o.Now())
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		fmt.Fprintf(errw, "sweep: moved %d bad line(s) of %s to %s\n", len(bad), cellsPath, saved)
	}
	doneKeys := map[string]bool{}
	for _, c := range prev {
		doneKeys[c.Key] = true
	}
	var todo []workloads.Cell
	for _, c := range cells {
		if !doneKeys[c.Key()] {
			todo = append(todo, c)
		}
	}
	if n := len(cells) - len(todo); n > 0 {
		fmt.Fprintf(errw, "sweep: resuming: %d of %d cells done (in %s)\n", n, len(cells), cellsPath)
	}
	if err := writeSweepRecord(o, dir, host, cells, skipped); err != nil {
		return err
	}
	all = prev
	if len(bad) > 0 || len(prev) > 0 {
		if err := writeBenchText(dir, all); err != nil {
			return err
		}
	}
	if len(todo) == 0 {
		fmt.Fprintf(errw, "sweep: all %d cells done; results in %s\n", len(cells), dir)
		return nil
	}

	prog := newSweepProgress(o, todo, len(cells))
	traces := map[string]*workloads.Trace{}
	var ran []results.SweepCell
	for i, cell := range todo {
		if err := ctx.Err(); err != nil {
			break
		}
		tr, ok := traces[cell.Workload]
		if !ok {
			err = untilDone(ctx, func() (err error) { tr, err = cell.Trace(); return err })
			if ctx.Err() != nil {
				break
			}
			if err != nil {
				prog.finish()
				return fmt.Errorf("sweep: %w", err)
			}
			traces[cell.Workload] = tr
		}
		prog.startCell(i, cell)
		sc, note, err := runSweepCell(ctx, o, cell, tr, host, prog)
		if err != nil {
			prog.finish()
			if ctx.Err() != nil {
				break
			}
			if len(all) == 0 {
				return fmt.Errorf("sweep: cell %d (%s): %w", cell.Index, cell.Key(), err)
			}
			return fmt.Errorf("sweep: cell %d (%s): %w; the %d finished cells are kept in %s, rerun to resume", cell.Index, cell.Key(), err, len(all), cellsPath)
		}
		if sc == nil {
			prog.skipCell(cell, note)
			continue
		}
		if err := results.AppendSweepCell(cellsPath, sc); err != nil {
			prog.finish()
			return fmt.Errorf("sweep: %w", err)
		}
		all = append(all, *sc)
		ran = append(ran, *sc)
		if err := writeBenchText(dir, all); err != nil {
			prog.finish()
			return err
		}
		prog.doneCell(cell, sc)
	}
	prog.finish()
	if err := ctx.Err(); err != nil {
		if created && len(all) == 0 {
			fmt.Fprintf(errw, "sweep: interrupted before a cell finished; %s removed\n", dir)
			return err
		}
		fmt.Fprintf(errw, "sweep: interrupted: %d of %d cells done, kept in %s; rerun the same command (--out %s) to resume\n",
			len(cells)-len(todo)+len(ran), len(cells), cellsPath, dir)
		return err
	}
	if len(ran) > 0 {
		if err := writeSweepSummary(o.IO.Out, ran); err != nil {
			return err
		}
	}
	fmt.Fprintf(errw, "sweep: wrote %s (%s, %s, %s)\n", dir, sweepCellsFile, sweepBenchFile, sweepRunFile)
	return nil
}

// runSweepCell builds the cell's engine, warms it up and replays tr. A
// cell the machine cannot run gives a nil cell and a note.
func runSweepCell(ctx context.Context, o *sweepOptions, cell workloads.Cell, tr *workloads.Trace, host hostInfo, prog *sweepProgress) (*results.SweepCell, string, error) {
	eng, err := newCellEngineContext(ctx, cell, o)
	if errors.Is(err, errCellUnavailable) {
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	defer eng.Close()
	// One untimed warm-up request (a short prefill and one decode step in
	// slot 0), so the figures exclude first-touch page faults and cold
	// caches; then reset the slot and the operator timers.
	p0, _ := workloads.CappedLengths(tr.Requests[0], cell.MaxPromptTokens, cell.MaxGenTokens)
	warm := min(p0, sweepWarmUpTokens)
	if err := eng.Prefill(0, warm); err != nil {
		return nil, "", fmt.Errorf("warm-up prefill: %w", err)
	}
	if err := eng.Decode([]int{0}); err != nil {
		return nil, "", fmt.Errorf("warm-up decode: %w", err)
	}
	if err := eng.Reset(0); err != nil {
		return nil, "", fmt.Errorf("warm-up reset: %w", err)
	}
	eng.ResetOps()
	res, err := workloads.Replay(tr, eng, workloads.ReplayOptions{
		Batch: cell.Batch, MaxGenTokens: cell.MaxGenTokens, MaxPromptTokens: cell.MaxPromptTokens,
		SLO: workloads.SLO{TTFT: o.SLOTTFT, TPOT: o.SLOTPOT}, Progress: prog.request, Context: ctx,
	})
	if err != nil {
		return nil, "", err
	}
	sc := sweepCellRecord(o, cell, tr, res, eng, host)
	sc.Notes = append([]string{fmt.Sprintf("timed after one untimed warm-up request (prefill of %d tokens + 1 decode step)", warm)}, sc.Notes...)
	return sc, "", nil
}

// newCellEngineContext is newCellEngine, returning ctx's error as soon as
// ctx is done (drawing a model's synthetic weights takes seconds and
// checks no context); an engine built after that is closed.
func newCellEngineContext(ctx context.Context, cell workloads.Cell, o *sweepOptions) (cellEngine, error) {
	type built struct {
		eng cellEngine
		err error
	}
	ch := make(chan built, 1)
	go func() {
		e, err := newCellEngine(cell, o)
		ch <- built{e, err}
	}()
	select {
	case b := <-ch:
		return b.eng, b.err
	case <-ctx.Done():
		go func() {
			if b := <-ch; b.eng != nil {
				b.eng.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func resultsDist(d workloads.Dist, n int) results.Dist {
	if n == 0 {
		return results.Dist{}
	}
	return results.Dist{Mean: d.Mean, P50: d.P50, P90: d.P90, P99: d.P99, N: n}
}

// sweepCellRecord builds the results record of a replayed cell.
func sweepCellRecord(o *sweepOptions, cell workloads.Cell, tr *workloads.Trace, res *workloads.ReplayResult, eng cellEngine, host hostInfo) *results.SweepCell {
	sc := &results.SweepCell{
		Schema: results.SweepSchema, Key: cell.Key(), Model: cell.Model, Weights: cell.Weights, WeightDType: cell.WeightDType, Layers: cell.Layers,
		Workload: cell.Workload, Batch: cell.Batch, Threads: cell.Threads, Placement: cell.Placement, Ablation: cell.Ablation,
		Backends: eng.Backends(),
		Config: results.SweepConfig{Requests: len(tr.Requests), Arrival: cell.Arrival.String(), Seed: cell.Seed,
			MaxGenTokens: cell.MaxGenTokens, MaxPrompt: cell.MaxPromptTokens, SLOTTFTS: o.SLOTTFT, SLOTPOTS: o.SLOTPOT,
			GoVersion: runtime.Version(), BenchVersion: version},
		Host: host.host, OS: host.os, Arch: host.arch, CPU: host.cpu, Profile: o.Profile,
		Date:    o.Now().UTC().Format(time.RFC3339),
		TTFT:    resultsDist(res.TTFT, len(res.Requests)),
		TPOT:    resultsDist(res.TPOT, res.TPOTCount),
		Latency: resultsDist(res.Latency, len(res.Requests)),
		WallS:   res.Wall, OutputTokS: res.OutputTokS, PrefillTokS: res.PrefillTokS,
		SLOAttained: res.SLOAttainment, GoodputReqS: res.Goodput, PackS: eng.PackSeconds(),
		Ops: eng.Ops(),
	}
	if o.machine != nil {
		sc.Machine = o.machine.Name
	}
	if l, ok := eng.(cellEngineLayers); ok {
		sc.Layers, sc.ModelLayers = l.Layers()
	}
	for _, r := range res.Requests {
		sc.Requests = append(sc.Requests, results.SweepRequest{ID: r.ID, PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens,
			ArrivalS: r.Arrival, StartS: r.Start, TTFTS: r.TTFT, TPOTS: r.TPOT, LatencyS: r.Latency, MetSLO: r.MetSLO})
	}
	if p, ok := eng.(cellEnginePredictor); ok && o.machine != nil {
		mean := int(math.Round(float64(res.PromptTokens) / float64(len(res.Requests))))
		if t, err := p.PredictPrefill(max(mean, 1)); err == nil {
			sc.PredictedTTFT = &t
		} else {
			sc.Notes = append(sc.Notes, "no predicted TTFT: "+err.Error())
		}
	}
	n := len(res.Requests)
	if res.PromptsCapped > 0 {
		sc.Notes = append(sc.Notes, fmt.Sprintf("%d of %d prompts capped at %d tokens (--max-prompt-tokens)", res.PromptsCapped, n, cell.MaxPromptTokens))
	}
	if res.OutputsCapped > 0 {
		sc.Notes = append(sc.Notes, fmt.Sprintf("%d of %d outputs capped at %d tokens (--max-gen-tokens)", res.OutputsCapped, n, cell.MaxGenTokens))
	}
	if res.IdleSkipped > 0 {
		sc.Notes = append(sc.Notes, fmt.Sprintf("%.3g s of idle time before arrivals skipped (not slept), counted in wall time", res.IdleSkipped))
	}
	if nt, ok := eng.(cellEngineNotes); ok {
		sc.Notes = append(sc.Notes, nt.Notes()...)
	}
	if tg, ok := eng.(cellEngineTargets); ok {
		sc.Targets = tg.Targets()
	}
	return sc
}

// writeBenchText rewrites DIR/bench.txt from all cells, atomically.
func writeBenchText(dir string, cells []results.SweepCell) error {
	var b bytes.Buffer
	if err := results.WriteBenchstat(&b, cells); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, sweepBenchFile), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// sweepRecord is DIR/sweep.json: the last invocation's grid and flags.
type sweepRecord struct {
	Schema       string   `json:"schema"` // sweepRunSchema
	Date         string   `json:"date"`
	Host         string   `json:"host"`
	BenchVersion string   `json:"bench_version"`
	GoVersion    string   `json:"go_version"`
	Args         []string `json:"args"` // the resolved flags: 'bench sweep' + Args reruns this grid
	Grid         sweepGrid
	Cells        []string `json:"cells"`             // keys, in cell order
	Skipped      []string `json:"skipped,omitempty"` // combinations left out of the grid
}

type sweepGrid struct {
	Models          []string `json:"models"`
	Weights         string   `json:"weights"`
	WeightDTypes    []string `json:"weight_dtypes,omitempty"`
	Layers          int      `json:"layers"`
	Workloads       []string `json:"workloads"`
	Batches         []int    `json:"batches"`
	Threads         []int    `json:"threads"`
	Placements      []string `json:"placements"`
	Ablations       []string `json:"ablations"` // "" is the full system
	Requests        int      `json:"requests"`
	Arrival         string   `json:"arrival"`
	Seed            uint64   `json:"seed"`
	MaxGenTokens    int      `json:"max_gen_tokens"`
	MaxPromptTokens int      `json:"max_prompt_tokens"`
	SLOTTFTS        float64  `json:"slo_ttft_s"`
	SLOTPOTS        float64  `json:"slo_tpot_s"`
	Profile         string   `json:"profile,omitempty"`
	Cell            *int     `json:"cell,omitempty"` // --cell
}

func writeSweepRecord(o *sweepOptions, dir string, host hostInfo, cells []workloads.Cell, skipped []string) error {
	g := o.grid
	r := sweepRecord{Schema: sweepRunSchema, Date: o.Now().UTC().Format(time.RFC3339), Host: host.host,
		BenchVersion: version, GoVersion: runtime.Version(), Args: o.args(false), Skipped: skipped,
		Grid: sweepGrid{Models: g.Models, Weights: o.Weights, WeightDTypes: g.WeightDTypes, Layers: g.Layers, Workloads: g.Workloads, Batches: g.Batches,
			Threads: g.Threads, Placements: g.Placements, Ablations: g.Ablations, Requests: g.Requests,
			Arrival: g.Arrival.String(), Seed: g.Seed, MaxGenTokens: g.MaxGenTokens, MaxPromptTokens: g.MaxPromptTokens,
			SLOTTFTS: o.SLOTTFT, SLOTPOTS: o.SLOTPOT, Profile: o.Profile}}
	if o.Cell >= 0 {
		c := o.Cell
		r.Grid.Cell = &c
	}
	for _, c := range cells {
		r.Cells = append(r.Cells, c.Key())
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, sweepRunFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// args are the resolved flags that reproduce this grid (without --out,
// --cell and the run-mode flags); abs makes file paths absolute, for jobs
// that run elsewhere.
func (o *sweepOptions) args(abs bool) []string {
	g := o.grid
	path := func(p string) string {
		if !abs {
			return p
		}
		if _, err := os.Stat(p); err == nil || strings.ContainsAny(p, `/\`) {
			if a, err := filepath.Abs(p); err == nil {
				return a
			}
		}
		return p
	}
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ",")
	}
	var a []string
	if o.Weights == "synthetic" {
		ms := make([]string, len(g.Models))
		for i, m := range g.Models {
			ms[i] = path(m)
		}
		a = append(a, "--models", strings.Join(ms, ","), "--weights", "synthetic")
	} else {
		a = append(a, "--weights", path(o.Weights))
	}
	a = append(a, "--layers", strconv.Itoa(g.Layers), "--workloads", strings.Join(g.Workloads, ","),
		"--batch", ints(g.Batches), "--threads", ints(g.Threads), "--placement", strings.Join(g.Placements, ","))
	if len(g.Ablations) > 1 {
		a = append(a, "--ablate", strings.Join(g.Ablations[1:], ","))
	}
	if len(g.WeightDTypes) > 0 {
		a = append(a, "--weight-dtype", strings.Join(g.WeightDTypes, ","))
	}
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	a = append(a, "--requests", strconv.Itoa(g.Requests), "--max-gen-tokens", strconv.Itoa(g.MaxGenTokens),
		"--max-prompt-tokens", strconv.Itoa(g.MaxPromptTokens), "--arrival", g.Arrival.String(),
		"--slo-ttft", ff(o.SLOTTFT), "--slo-tpot", ff(o.SLOTPOT), "--seed", strconv.FormatUint(g.Seed, 10))
	// Without a profile the line says so: a bare one would take the
	// newest probe profile of wherever it reruns (a Slurm node's).
	if o.Profile != "" {
		a = append(a, "--profile", path(o.Profile))
	} else {
		a = append(a, "--profile", "none")
	}
	if g.CoresBackend != "" {
		a = append(a, "--cores-backend", g.CoresBackend)
	}
	if g.MatrixBackend != "" {
		a = append(a, "--matrix-backend", g.MatrixBackend)
	}
	return a
}

func sweepDryRun(o *sweepOptions, cells []workloads.Cell, dir string) error {
	done := map[string]bool{}
	if prev, _, err := results.ReadSweepCells(filepath.Join(dir, sweepCellsFile)); err == nil {
		for _, c := range prev {
			done[c.Key] = true
		}
	}
	var rows [][]string
	ndone := 0
	for _, c := range cells {
		status := "to run"
		if done[c.Key()] {
			status = "done"
			ndone++
		}
		abl := c.Ablation
		if abl == "" {
			abl = "none"
		}
		rows = append(rows, []string{strconv.Itoa(c.Index), modelLabel(c.Model, c.WeightDType), c.Workload, strconv.Itoa(c.Batch), strconv.Itoa(c.Threads),
			c.Placement, abl, status})
	}
	if err := reports.TextTable(o.IO.Out, []string{"cell", "model", "workload", "batch", "threads", "placement", "ablate", "status"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "\n%d cells × %d requests = %d requests (%d cells done in %s, %d to run)\n",
		len(cells), o.grid.Requests, len(cells)*o.grid.Requests, ndone, dir, len(cells)-ndone)
	return nil
}

// writeSweepSummary prints one markdown row per cell run.
func writeSweepSummary(w io.Writer, cells []results.SweepCell) error {
	fmt.Fprintln(w)
	t := newMarkdown(w, "workload", "model", "batch", "threads", "placement", "ablate", "TTFT p50", "TPOT p50", "latency p90", "tok/s", "SLO", "goodput req/s")
	for _, c := range cells {
		abl := c.Ablation
		if abl == "" {
			abl = "none"
		}
		tpot := "—"
		if c.TPOT.N > 0 {
			tpot = fmtTime(c.TPOT.P50)
		}
		t.Append([]string{c.Workload, modelLabel(c.Model, c.WeightDType), strconv.Itoa(c.Batch), strconv.Itoa(c.Threads), c.PlacementLabel(), abl,
			fmtTime(c.TTFT.P50), tpot, fmtTime(c.Latency.P90), fmt.Sprintf("%.4g", c.OutputTokS),
			fmt.Sprintf("%.0f%%", 100*c.SLOAttained), fmt.Sprintf("%.3g", c.GoodputReqS)})
	}
	return t.Render()
}

// sweepProgress reports a sweep's progress on stderr: a progress bar over
// the requests of every cell to run, with an ETA, on a terminal; one line
// per cell otherwise; nothing with --quiet.
type sweepProgress struct {
	w      io.Writer
	bar    *progressbar.ProgressBar
	lines  bool
	total  int // cells of the grid
	offset int // cells done before this run
	n      int // cells to run
	pos    int
	start  time.Time
}

func newSweepProgress(o *sweepOptions, todo []workloads.Cell, total int) *sweepProgress {
	p := &sweepProgress{w: o.IO.Err, total: total, offset: total - len(todo), n: len(todo)}
	if o.Quiet {
		return p
	}
	isTerm := o.IsTerminal
	if isTerm == nil {
		isTerm = func() bool { return stderrIsTerminal(o.IO.Err) }
	}
	if !isTerm() {
		p.lines = true
		return p
	}
	reqs := 0
	for _, c := range todo {
		reqs += c.Requests
	}
	p.bar = progressbar.NewOptions(reqs,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("sweep"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return p
}

func cellLabel(c workloads.Cell) string {
	abl := ""
	if c.Ablation != "" {
		abl = " -" + c.Ablation
	}
	if c.WeightDType != "" {
		abl += " " + c.WeightDType
	}
	return fmt.Sprintf("%s b%d t%d %s%s", c.Workload, c.Batch, c.Threads, c.Placement, abl)
}

// modelLabel is a model's name in the sweep's tables, with its weights'
// format when the grid sets one ("qwen3-0.6b q4_0").
func modelLabel(model, dtype string) string {
	if dtype == "" {
		return model
	}
	return model + " " + dtype
}

func (p *sweepProgress) startCell(i int, c workloads.Cell) {
	p.pos, p.start = i, time.Now()
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("cell %d/%d %-28s", p.offset+i+1, p.total, cellLabel(c)))
	}
}

func (p *sweepProgress) request(done, total int) {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

func (p *sweepProgress) doneCell(c workloads.Cell, sc *results.SweepCell) {
	if p.lines {
		fmt.Fprintf(p.w, "sweep: cell %d/%d (%s %s): done in %.1f s (TTFT p50 %s, %.3g tok/s, SLO %.0f%%)\n",
			p.offset+p.pos+1, p.total, c.Model, cellLabel(c), time.Since(p.start).Seconds(), fmtTime(sc.TTFT.P50), sc.OutputTokS, 100*sc.SLOAttained)
	}
}

func (p *sweepProgress) skipCell(c workloads.Cell, note string) {
	if p.bar != nil {
		_ = p.bar.Add(c.Requests)
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.w, "sweep: cell %d %s: skipped: %s\n", c.Index, c.Key(), note)
}

func (p *sweepProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
