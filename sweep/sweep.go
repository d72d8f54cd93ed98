package sweep

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

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/workloads"
)

// Defaults of `bench sweep`, chosen so that the default sweep (Qwen3-0.6B
// synthetic, 2 layers; 4 workloads × batch 1,4 × placement cores,mixed =
// 16 cells of 4 requests) takes about 4 minutes on 2 cores; see the
// command's help.
const (
	DefaultModels    = "qwen3-0.6b"
	DefaultWorkloads = "gsm8k,ruler-4k,ruler-8k,longwriter"
	DefaultBatch     = "1,4"
	DefaultPlacement = "cores,mixed"
	DefaultLayers    = 2
	DefaultRequests  = 4
	DefaultMaxGen    = 32
	DefaultMaxPrompt = 2048
	// SLO targets: Sandwich §8.3's batched-serving targets for its 1.3B
	// model (P90 TTFT ≤ 2000 ms, P90 TPOT ≤ 280 ms), applied per request.
	DefaultSLOTTFT = 2.0
	DefaultSLOTPOT = 0.28
	// warmUpTokens bounds the untimed warm-up request's prompt.
	warmUpTokens = 128
)

// Files a sweep writes in its output directory.
const (
	CellsFile = "cells.jsonl"
	BenchFile = "bench.txt"
	RunFile   = "sweep.json"
	RunSchema = "bench.sweep-run/v1"
	// LockFile is held (flock) by the sweep writing the directory,
	// and holds its pid; it is removed when the sweep ends.
	LockFile = "sweep.lock"
)

// CellEngine is one grid cell's engine: an Executor whose slots are the
// cell's batch, plus what a SweepCell records about it. Run builds
// one per cell with NewCellEngine, runs one untimed warm-up request on it,
// calls ResetOps, replays the cell's trace, reads Ops and closes it.
//
// A CellEngine may also implement engineLayers, engineNotes and
// enginePredictor; the sweep records what they give when present.
type CellEngine interface {
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

// Optional methods of a CellEngine.
type (
	// engineLayers gives the decoder layers instantiated and the
	// model's full count.
	engineLayers interface{ Layers() (run, model int) }
	// engineNotes gives notes for the cell's record (what the
	// placement means on this machine, approximations made).
	engineNotes interface{ Notes() []string }
	// enginePredictor gives the roofline's predicted seconds of one
	// prefill of n tokens (the cell's PredictedTTFT), when a profile is
	// set.
	enginePredictor interface {
		PredictPrefill(n int) (float64, error)
	}
	// engineTargets gives what ran each placement target since
	// ResetOps (backend, unit, weight precision, calls).
	engineTargets interface{ Targets() []results.SweepTarget }
	// engineHold runs the replay with the engine's workers held, the
	// replay's loop on one of them (engine.Model.Hold), so that none
	// parks between decode steps.
	engineHold interface{ Hold(func() error) error }
	// engineNoise gives what the cell's noise record needs: the
	// workers' CPUs and count, and the timed calls' seconds since
	// ResetOps (decode steps with their batch sizes, prefills).
	engineNoise interface {
		CPUs() ([]int, int)
		Steps() (steps []float64, slots []int, prefills []float64)
	}
	// enginePrecision says what the predictions assume, as the cell ran
	// (engine.Precision's String).
	enginePrecision interface{ PredictedPrecision() string }
)

// NewCellEngine builds the engine for one cell. An error wrapping
// ErrCellUnavailable skips the cell with a note (a placement this machine
// cannot run); any other error stops the sweep. It is the engine adapter
// (engine.go); tests replace it with engines of their own.
var NewCellEngine func(cell workloads.Cell, o *Options) (CellEngine, error)

// ErrCellUnavailable marks a cell the machine cannot run.
var ErrCellUnavailable = errors.New("not available on this machine")

// Options are the settings of a sweep: the flags of `bench sweep`, each
// field named after its flag (Out is --out, MaxGen --max-gen-tokens,
// MaxPrompt --max-prompt-tokens, Ablate --ablate, ...), with the same
// defaults (the Default* constants; Cell -1 is every cell), plus where the
// sweep writes and what the command resolves for it.
type Options struct {
	// Stdout gets the summary table and --dry-run's listing; Stderr the
	// progress, notes and the lines that say what was written.
	Stdout, Stderr io.Writer

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
	SLOTTFT     float64 // seconds
	SLOTPOT     float64 // seconds
	Profile     string
	// WaitPlacement is how long each cell may wait, before its replay,
	// for the host to put its CPUs where the profile's placement had them
	// (--wait-placement; 0: not at all).
	WaitPlacement time.Duration
	Seed          uint64
	Out           string
	EmitJobs      string
	DryRun        bool
	Cell          int
	Quiet         bool
	IsTerminal    func() bool      // whether Stderr is a terminal (a progress bar then); nil: never
	Now           func() time.Time // clock of dates and file stamps; nil: time.Now

	// The placements' backends by name ("": chosen by capability).
	CoresBackend, MatrixBackend string

	// PrefillConfig and DecodeConfig (--prefill-config, --decode-config;
	// "" with the other set: all) and Configs ("auto", --configs) with
	// ConfigsTry (--configs-try): Sandwich's per-phase service
	// configurations (phase.go), resolved for each cell's model by
	// ResolveConfig and, for auto, listed by ConfigCandidates (the
	// command's: they read the machine's TopoTree). The command checks
	// their syntax.
	PrefillConfig, DecodeConfig, Configs string
	ConfigsTry                           int
	ResolveConfig                        func(spec string, c engine.Config) (PhaseConfig, error)
	ConfigCandidates                     func(c engine.Config) ([]PhaseConfig, error)

	// ThreadsGiven and ModelsGiven say whether --threads and --models were
	// given (without --threads the grid runs on every allowed CPU; --models
	// is refused with a checkpoint).
	ThreadsGiven, ModelsGiven bool
	// BenchVersion is recorded in every cell and in sweep.json.
	BenchVersion string
	// ResolveProfile turns the --profile value into the profile to use
	// ("": none), e.g. the newest probe profile for "" and nothing for
	// "none"; nil: the value as given. Validate calls it once.
	ResolveProfile func(flag string) string
	// LoadMachine reads the resolved profile (a file or a published
	// profile name); nil: profiles are refused.
	LoadMachine func(profile string) (*roofline.Machine, error)

	// Set by Validate and prepare.
	validated bool
	grid      workloads.Grid
	machine   *roofline.Machine // the loaded --profile; nil without one
	// placement is the --profile's (a probe's profile.json) record of where
	// the host put its CPUs; nil without one. Each cell is checked
	// against it (noise.PlacementCheck).
	placement *results.Placement
	ctx       context.Context // Run's, for the engines
}

// Validate checks the settings and builds the grid; it reads no files
// (models, weights and the profile are checked when the sweep runs). An
// error is one line naming the flag and value, prefixed "sweep: ".
func (o *Options) Validate() error {
	g := workloads.Grid{Weights: o.Weights, Layers: o.Layers, Requests: o.Requests, Seed: o.Seed,
		MaxGenTokens: o.MaxGen, MaxPromptTokens: o.MaxPrompt}
	var err error
	switch {
	case o.Weights == "":
		return errors.New("sweep: --weights: must be synthetic or a llama2.c checkpoint path")
	case o.Weights != "synthetic" && o.ModelsGiven:
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
	if o.ThreadsGiven {
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
		if !slices.Contains(engine.PlacementNames(), p) {
			return fmt.Errorf("sweep: --placement: unknown placement %q (valid: %s)", p, strings.Join(engine.PlacementNames(), ", "))
		}
	}
	if err := CheckBackends("sweep", o.CoresBackend, o.MatrixBackend); err != nil {
		return err
	}
	g.CoresBackend, g.MatrixBackend = o.CoresBackend, o.MatrixBackend
	if o.ResolveProfile != nil {
		o.Profile = o.ResolveProfile(o.Profile)
	}
	if slices.Contains(g.Placements, string(engine.PlaceAuto)) && o.Profile == "" {
		return errors.New("sweep: --placement auto: needs --profile (auto plans each operator from the roofline of a probed machine; run 'bench probe' or name a published profile)")
	}
	if err := o.validatePhases(&g); err != nil {
		return err
	}
	g.Ablations = []string{""}
	if o.Ablate != "" {
		abl, err := workloads.ParseList(o.Ablate)
		if err != nil {
			return fmt.Errorf("sweep: --ablate: %w", err)
		}
		for _, a := range abl {
			if _, err := engine.ParseAblation(a); err != nil {
				return fmt.Errorf("sweep: --ablate: %w", err)
			}
		}
		g.Ablations = append(g.Ablations, abl...)
	}
	if g.Arrivals, err = workloads.ParseArrivals(o.Arrival); err != nil {
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
	if o.WaitPlacement < 0 {
		return fmt.Errorf("sweep: --wait-placement %v: must be ≥ 0 (0: do not wait)", o.WaitPlacement)
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
	if err := CheckRequests(o.Requests, 1); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	g.Skip = skipCell
	if err := g.Validate(); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	o.grid = g
	o.validated = true
	return nil
}

// Grid is the grid Validate built.
func (o *Options) Grid() workloads.Grid { return o.grid }

// prepare checks what validate could not without reading files or the
// machine: the thread counts against the allowed CPUs (and fills the
// default), the models, the weights file and the profile.
func (o *Options) prepare() error {
	allowed, err := affinity.Allowed()
	if err != nil || len(allowed) == 0 {
		allowed = make([]int, runtime.NumCPU())
	}
	if !o.ThreadsGiven {
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
		if o.LoadMachine == nil {
			return fmt.Errorf("sweep: --profile %s: no profile loader", o.Profile)
		}
		if o.machine, err = o.LoadMachine(o.Profile); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		if p, err := results.ReadProfile(o.Profile); err == nil {
			o.placement = p.Placement
		}
	}
	if NewCellEngine == nil {
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

// Cells is the grid's cells, narrowed to --cell when given, and the
// combinations left out of the grid (one line each); Validate first.
func (o *Options) Cells() (cells []workloads.Cell, skipped []string, err error) {
	cells, skipped = o.grid.Cells()
	if o.Cell >= 0 {
		if o.Cell >= len(cells) {
			return nil, nil, fmt.Errorf("sweep: --cell %d: the grid has %d cells (0..%d)", o.Cell, len(cells), len(cells)-1)
		}
		cells = cells[o.Cell : o.Cell+1]
	}
	return cells, skipped, nil
}

// Run runs the sweep o describes (Validate is called first when it has
// not been): every cell of the grid not yet in Out/cells.jsonl, or with
// DryRun the listing, or with EmitJobs the Slurm jobs. Files written:
// CellsFile (a line per cell as it finishes), BenchFile, RunFile, all
// atomically, and LockFile while it runs. When ctx is done it stops within
// the current forward pass and returns ctx's error, keeping every
// finished cell (and removing Out if it created it and none finished).
func Run(ctx context.Context, o *Options) (err error) {
	if !o.validated {
		if err := o.Validate(); err != nil {
			return err
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.ctx = ctx
	if err := o.prepare(); err != nil {
		return err
	}
	cells, skipped, err := o.Cells()
	if err != nil {
		return err
	}
	host := readHostInfo()
	dir := o.Out
	if dir == "" {
		dir = filepath.Join("results", fmt.Sprintf("sweep-%s-%s", host.host, o.Now().Format("20060102")))
	}
	errw := o.Stderr
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
	lock, err := results.LockDir(dir, LockFile)
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
			os.Remove(filepath.Join(dir, RunFile))
			undo()
		}
	}()
	cellsPath := filepath.Join(dir, CellsFile)
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
		if err := writeSweepSummary(o.Stdout, ran); err != nil {
			return err
		}
	}
	fmt.Fprintf(errw, "sweep: wrote %s (%s, %s, %s)\n", dir, CellsFile, BenchFile, RunFile)
	return nil
}

// runSweepCell builds the cell's engine, warms it up and replays tr. A
// cell the machine cannot run gives a nil cell and a note.
func runSweepCell(ctx context.Context, o *Options, cell workloads.Cell, tr *workloads.Trace, host hostInfo, prog *sweepProgress) (*results.SweepCell, string, error) {
	eng, err := NewCellEngineContext_(ctx, cell, o)
	if errors.Is(err, ErrCellUnavailable) {
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
	warm := min(p0, warmUpTokens)
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
	var res *workloads.ReplayResult
	replay := func() (err error) {
		res, err = workloads.Replay(tr, eng, workloads.ReplayOptions{
			Batch: cell.Batch, MaxGenTokens: cell.MaxGenTokens, MaxPromptTokens: cell.MaxPromptTokens,
			SLO: workloads.SLO{TTFT: o.SLOTTFT, TPOT: o.SLOTPOT}, Progress: prog.request, Context: ctx,
		})
		return err
	}
	var meter *noise.Meter
	var place *noise.PlacementCheck
	var waitNote string
	if c, ok := eng.(engineNoise); ok {
		cpus, threads := c.CPUs()
		meter = noise.NewMeter(cpus, threads)
		place = noise.NewPlacementCheck(o.placement, cpus)
		waited, back, err := place.Await(ctx, o.WaitPlacement)
		if err != nil {
			return nil, "", err
		}
		if waited > 0 {
			waitNote = fmt.Sprintf("placement: waited %.1f s (--wait-placement %v) for the host to put the CPUs where the profile's placement had them", waited.Seconds(), o.WaitPlacement)
			if !back {
				waitNote = fmt.Sprintf("placement: the host did not put the CPUs where the profile's placement had them within --wait-placement %v", o.WaitPlacement)
			}
		}
		if err := place.Sample(ctx, "before"); err != nil {
			return nil, "", err
		}
		meter.Start()
	}
	if h, ok := eng.(engineHold); ok {
		err = h.Hold(replay)
	} else {
		err = replay()
	}
	if err != nil {
		return nil, "", err
	}
	if meter != nil {
		meter.Stop()
		if err := place.Sample(ctx, "after"); err != nil {
			return nil, "", err
		}
	}
	sc := sweepCellRecord(o, cell, tr, res, eng, host)
	if meter != nil {
		steps, keys, prefills := eng.(engineNoise).Steps()
		nz := ReplayNoise(meter, steps, keys, prefills)
		place.Record(&nz)
		noise.MarkMoved(&nz)
		sc.Noise = &nz
		for _, n := range []string{waitNote, place.Note()} {
			if n != "" {
				sc.Notes = append(sc.Notes, n)
			}
		}
	}
	sc.Notes = append([]string{fmt.Sprintf("timed after one untimed warm-up request (prefill of %d tokens + 1 decode step)", warm)}, sc.Notes...)
	return sc, "", nil
}

// NewCellEngineContext_ is NewCellEngine, returning ctx's error as soon as
// ctx is done (drawing a model's synthetic weights takes seconds and
// checks no context); an engine built after that is closed.
func NewCellEngineContext_(ctx context.Context, cell workloads.Cell, o *Options) (CellEngine, error) {
	type built struct {
		eng CellEngine
		err error
	}
	ch := make(chan built, 1)
	go func() {
		e, err := NewCellEngine(cell, o)
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
func sweepCellRecord(o *Options, cell workloads.Cell, tr *workloads.Trace, res *workloads.ReplayResult, eng CellEngine, host hostInfo) *results.SweepCell {
	sc := &results.SweepCell{
		Schema: results.SweepSchema, Key: cell.Key(), Model: cell.Model, Weights: cell.Weights, WeightDType: cell.WeightDType, Layers: cell.Layers,
		Workload: cell.Workload, Batch: cell.Batch, Threads: cell.Threads, Placement: cell.Placement, Ablation: cell.Ablation,
		Backends: eng.Backends(),
		Config: results.SweepConfig{Requests: len(tr.Requests), Arrival: cell.Arrival.String(), Seed: cell.Seed,
			MaxGenTokens: cell.MaxGenTokens, MaxPrompt: cell.MaxPromptTokens, SLOTTFTS: o.SLOTTFT, SLOTPOTS: o.SLOTPOT,
			GoVersion: runtime.Version(), BenchVersion: o.BenchVersion},
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
	if l, ok := eng.(engineLayers); ok {
		sc.Layers, sc.ModelLayers = l.Layers()
	}
	for _, r := range res.Requests {
		sc.Requests = append(sc.Requests, results.SweepRequest{ID: r.ID, PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens,
			ArrivalS: r.Arrival, StartS: r.Start, TTFTS: r.TTFT, TPOTS: r.TPOT, LatencyS: r.Latency, MetSLO: r.MetSLO})
	}
	if p, ok := eng.(enginePrecision); ok && o.machine != nil {
		sc.PredictedPrecision = p.PredictedPrecision()
	}
	if p, ok := eng.(enginePredictor); ok && o.machine != nil {
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
	if nt, ok := eng.(engineNotes); ok {
		sc.Notes = append(sc.Notes, nt.Notes()...)
	}
	if tg, ok := eng.(engineTargets); ok {
		sc.Targets = tg.Targets()
	}
	if ph, ok := eng.(enginePhases); ok {
		sc.PrefillConfig, sc.DecodeConfig = ph.PhaseConfigs()
	}
	return sc
}

// writeBenchText rewrites DIR/bench.txt from all cells, atomically.
func writeBenchText(dir string, cells []results.SweepCell) error {
	var b bytes.Buffer
	if err := results.WriteBenchstat(&b, cells); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, BenchFile), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// sweepRecord is DIR/sweep.json: the last invocation's grid and flags.
type sweepRecord struct {
	Schema       string   `json:"schema"` // RunSchema
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
	Arrival         string   `json:"arrival"` // comma-separated: closed or poisson:RATE each
	Seed            uint64   `json:"seed"`
	MaxGenTokens    int      `json:"max_gen_tokens"`
	MaxPromptTokens int      `json:"max_prompt_tokens"`
	SLOTTFTS        float64  `json:"slo_ttft_s"`
	SLOTPOTS        float64  `json:"slo_tpot_s"`
	Profile         string   `json:"profile,omitempty"`
	Cell            *int     `json:"cell,omitempty"` // --cell
}

func writeSweepRecord(o *Options, dir string, host hostInfo, cells []workloads.Cell, skipped []string) error {
	g := o.grid
	r := sweepRecord{Schema: RunSchema, Date: o.Now().UTC().Format(time.RFC3339), Host: host.host,
		BenchVersion: o.BenchVersion, GoVersion: runtime.Version(), Args: o.args(false), Skipped: skipped,
		Grid: sweepGrid{Models: g.Models, Weights: o.Weights, WeightDTypes: g.WeightDTypes, Layers: g.Layers, Workloads: g.Workloads, Batches: g.Batches,
			Threads: g.Threads, Placements: g.Placements, Ablations: g.Ablations, Requests: g.Requests,
			Arrival: arrivalList(g.Arrivals), Seed: g.Seed, MaxGenTokens: g.MaxGenTokens, MaxPromptTokens: g.MaxPromptTokens,
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
	if err := results.WriteFileAtomic(filepath.Join(dir, RunFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// arrivalList is the --arrival value of arrivals.
func arrivalList(arrivals []workloads.Arrival) string {
	s := make([]string, len(arrivals))
	for i, a := range arrivals {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// args are the resolved flags that reproduce this grid (without --out,
// --cell and the run-mode flags); abs makes file paths absolute, for jobs
// that run elsewhere.
func (o *Options) args(abs bool) []string {
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
	a = append(a, "--layers", strconv.Itoa(g.Layers), "--workloads", strings.Join(g.Workloads, ","), "--batch", ints(g.Batches))
	a = append(a, o.phaseArgs(ints(g.Threads))...)
	a = append(a, "--placement", strings.Join(g.Placements, ","))
	if len(g.Ablations) > 1 {
		a = append(a, "--ablate", strings.Join(g.Ablations[1:], ","))
	}
	if len(g.WeightDTypes) > 0 {
		a = append(a, "--weight-dtype", strings.Join(g.WeightDTypes, ","))
	}
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	a = append(a, "--requests", strconv.Itoa(g.Requests), "--max-gen-tokens", strconv.Itoa(g.MaxGenTokens),
		"--max-prompt-tokens", strconv.Itoa(g.MaxPromptTokens), "--arrival", arrivalList(g.Arrivals),
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
	if o.WaitPlacement > 0 {
		a = append(a, "--wait-placement", o.WaitPlacement.String())
	}
	return a
}

func sweepDryRun(o *Options, cells []workloads.Cell, dir string) error {
	done := map[string]bool{}
	if prev, _, err := results.ReadSweepCells(filepath.Join(dir, CellsFile)); err == nil {
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
			c.Placement, abl, c.Arrival.String(), status})
	}
	if err := reports.TextTable(o.Stdout, []string{"cell", "model", "workload", "batch", "threads", "placement", "ablate", "arrival", "status"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "\n%d cells × %d requests = %d requests (%d cells done in %s, %d to run)\n",
		len(cells), o.grid.Requests, len(cells)*o.grid.Requests, ndone, dir, len(cells)-ndone)
	return nil
}

// writeSweepSummary prints one markdown row per cell run.
func writeSweepSummary(w io.Writer, cells []results.SweepCell) error {
	fmt.Fprintln(w)
	t := newMarkdown(w, "workload", "model", "batch", "threads", "placement", "ablate", "arrival", "TTFT p50", "TPOT p50", "latency p90", "tok/s", "SLO", "SLO-met req/s")
	for _, c := range cells {
		abl := c.Ablation
		if abl == "" {
			abl = "none"
		}
		tpot := "—"
		if c.TPOT.N > 0 {
			tpot = FormatSeconds(c.TPOT.P50)
		}
		t.Append([]string{c.Workload, modelLabel(c.Model, c.WeightDType), strconv.Itoa(c.Batch), threadsLabel(&c), c.PlacementLabel(), abl, c.Config.Arrival,
			FormatSeconds(c.TTFT.P50), tpot, FormatSeconds(c.Latency.P90), fmt.Sprintf("%.4g", c.OutputTokS),
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

func newSweepProgress(o *Options, todo []workloads.Cell, total int) *sweepProgress {
	p := &sweepProgress{w: o.Stderr, total: total, offset: total - len(todo), n: len(todo)}
	if o.Quiet {
		return p
	}
	isTerm := o.IsTerminal
	if isTerm == nil {
		isTerm = func() bool { return false }
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
			p.offset+p.pos+1, p.total, c.Model, cellLabel(c), time.Since(p.start).Seconds(), FormatSeconds(sc.TTFT.P50), sc.OutputTokS, 100*sc.SLOAttained)
	}
	if sc.Noisy() { // on stderr even with a progress bar (issue #16 part 3)
		fmt.Fprintf(p.w, "sweep: cell %d/%d (%s %s): NOISY: %s (kept, marked, not counted in the prediction error)\n",
			p.offset+p.pos+1, p.total, c.Model, cellLabel(c), sc.Noise.Why)
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
