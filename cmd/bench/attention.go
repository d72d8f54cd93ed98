package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/opbench"
	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

func init() { subcommands = append(subcommands, newAttentionCmd) }

// attentionOptions are the flags of `bench attention`.
type attentionOptions struct {
	IO                          IO
	Model                       string
	Contexts, Batches, Widths   []int
	DecodeContext               int
	Placement                   string
	Threads                     int
	CoresBackend, MatrixBackend string
	Ablate                      []string
	KVDType                     string
	Reps, RepMS                 int
	Profile                     string
	RoofNow                     bool
	KVState                     string
	WaitPlacement               time.Duration
	Out                         string
	Fig                         figureFlags
}

func newAttentionCmd(streams IO) *cobra.Command {
	o := &attentionOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "attention [--model M] [--contexts T,...] [--decode-context C] [--batches B,...] [--widths W,...] [--placement cores,matrix,mixed] [--out DIR]",
		Short: "Attention alone: prefill vs context length, decode vs batch and token width (SMEPilot Figs. 10b, 11b), against the roofline",
		Long: `Runs the engine's attention kernel alone (tiled online-softmax causal GQA
attention on the producer-packed KV cache, in the engine's work units over
pinned workers) at the model's heads, KV heads and head dim:

  prefill: a prompt of T tokens from an empty cache, per --contexts T;
  decode:  one new token for each of B sequences at --decode-context, per --batches B;
           W new tokens of one sequence at --decode-context, per --widths W
           (the decode token width of SMEPilot Fig. 11b).

Placements: cores (the cores' fp32 backend on every thread), matrix (the
matrix target's backend on every thread) and mixed (the two, each on half
of the threads; prefill's work units claimed dynamically, decode's split
statically, balanced by cost, as the engine runs them); attention's tiles run on
fp32 panels, so matrix and mixed apply only where the matrix target's
backend is fp32 (e.g. sme-fp32, or one named by --matrix-backend), or is
amx-bf16 with --kv-dtype bf16; those that do not apply are listed with the
reason. --ablate kv-packing keeps the cache row-major and packs every K and
V tile inside each call. --kv-dtype bf16 stores the packed panels in
bfloat16 (half the KV bytes; decode's KV GB/s counts 2 bytes an element)
and converts each tile to fp32; on amx-bf16 the producer writes them in
the AMX tile layout instead, and prefill's QKᵀ and P·V run on the tile
unit on them in place (queries and probabilities rounded to bf16 as K
and V are, fp32 accumulation), decode's vector kernel reading them in
place too. The output check then compares with the reference of the bf16
values the cache holds.

Prefill is measured twice per placement with 2 or more threads: pipelined
(SMEPilot §4.2, Fig. 6: pairs of workers, the matrix group's worker
computing QKᵀ of tile i+1 and P·V of tile i while the vector group's
worker runs the softmax and rescale of tile i; without a matrix unit the
matrix group is a second group of cores, as the output says) and serial
(every worker runs whole jobs: the pipeline ablation), side by side in
the table, the figure and the pipeline lines (speedup measured and
predicted). --ablate pipeline measures the serial schedule only. The
kernels column is the planner's choice per shape: vector (for jobs of fewer
than 8 query rows: decode; AxpyPanels on the packed panels, every query row
of a KV head per panel row read, a bf16 cache read in place on AVX-512;
DotRows/AxpyRows per query row under --ablate kv-packing) or gemm (the
backend's microkernels on the panels).

Per figure: median, min and max of --reps repetitions of at least --rep-ms
after a warm-up, GFLOP/s (4·head dim FLOPs per query head and causal
pair), decode's KV GB/s, the roofline's prediction (roofline
PredictAttention: the matrix stage, the catalog's qk and pv on the
placement's target of the --profile machine, and the vector stage, its
softmax at the probed non-linear rate plus the accumulator's rescale; a
prefill at the work the kernel's tiles do (roofline.TiledWork: whole
slivers and tiles, softmax runs at the probe's rate for their row width,
scores in the core's caches, the queries' scale, pack and output passes);
serial: their sum; pipelined: the longer stage at its group's share plus
one tile per pair of workers to fill and drain), and
the fraction of the probed fp32 GEMM ceiling (prefill; target 70%) or,
for decode steps of one token, of the read kernel's GB/s over the same KV
bytes on the same threads, measured right before and after the figure
(--roof-now; target 80%: the profile's level roofs hold for working sets
well inside each level, while a batch's KV may sit at a level's edge,
and a VM's host moves between the probe and the run; --roof-now=false:
the profile's roof of the smallest level that holds the KV). Decode is
measured as an engine's decode step finds its KV cache: cold (--kv-state
cold, the default), each call timed alone after every worker read its
share of 4× the last cache level of other memory, the read kernels beside
it timed the same way and the prediction with the KV in DRAM; --kv-state
warm repeats the calls back to back, the KV as warm as it fits (a batch
whose KV sits at the L3's edge then reads part of it from each).
Sampled outputs are checked against a float64 reference.

Each figure records its noise (the noise column and JSON's noise): the
share of the CPUs its threads got, steal, load, cv, and the core-to-core
round trips right before and after it against the profile's placement
(else one measured as the run begins). A VM's host may move its vCPUs
between dies: the L3 a batch's KV fits in and the DRAM bandwidth move with
them. A figure that fails a test is marked NOISY with the reason and kept;
--wait-placement waits for the placement before each figure.

Writes attention.png (prefill and decode panels), attention.md and
attention.json to --out.`,
		Example: `  bench attention
  bench attention --contexts 1024,2048,4096,8192 --batches 1,4,16 --decode-context 4096
  bench attention --matrix-backend go-fp32 --placement cores,matrix,mixed
  bench attention --ablate kv-packing --out results/attention-ablation
  bench attention --ablate pipeline --contexts 2048
  bench attention --kv-state warm --batches 1,2,4,8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return attentionRun(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "qwen3-0.6b", "model config (name or config.json): heads, KV heads, head dim ("+strings.Join(models.Names(), ", ")+")")
	f.IntSliceVar(&o.Contexts, "contexts", []int{256, 512, 1024, 2048}, "prefill lengths T (context = T)")
	f.IntVar(&o.DecodeContext, "decode-context", 1024, "context of the decode figures")
	f.IntSliceVar(&o.Batches, "batches", []int{1, 2, 4, 8, 16}, "decode batch sizes (sequences, each with its own cache; one new token each)")
	f.IntSliceVar(&o.Widths, "widths", []int{1, 4, 16, 64}, "decode token widths (new tokens of one sequence in one step, at --decode-context)")
	f.StringVar(&o.Placement, "placement", "cores,matrix,mixed", "placements, comma-separated: cores, matrix, mixed")
	f.IntVar(&o.Threads, "threads", 0, "pinned worker threads (0: every allowed CPU)")
	f.StringVar(&o.CoresBackend, "cores-backend", "", coresBackendHelp)
	f.StringVar(&o.MatrixBackend, "matrix-backend", "", matrixBackendHelp)
	f.StringVar(&o.KVDType, "kv-dtype", "fp32", "KV cache element type: fp32, or bf16 (the producer-packed panels in bfloat16, half the bytes; prefill attention converts each tile to fp32, decode reads the bf16 panels in place where AVX-512 runs it; with matrix = amx-bf16 (placements matrix, mixed, auto) the panels take the AMX tile layout and prefill's QKᵀ and P·V run on the tile unit on them in place; not with --ablate kv-packing)")
	f.StringSliceVar(&o.Ablate, "ablate", nil, "ablations: kv-packing (the KV cache row-major, every tile packed inside each call), pipeline (prefill measured serially only, not also pipelined)")
	f.IntVar(&o.Reps, "reps", 5, "timed repetitions after one warm-up, at least 1")
	f.IntVar(&o.RepMS, "rep-ms", 50, "minimum duration of one repetition in ms (at least one call)")
	f.BoolVar(&o.RoofNow, "roof-now", true, "decode steps of one token: measure the read kernel over the same KV bytes on the same threads right before and after each figure and take the fraction of their mean (false: of the profile's roof of the level holding the KV)")
	f.StringVar(&o.KVState, "kv-state", "cold", "decode: cold (each call timed alone after every worker read its share of 4× the last cache level, at least 64 MiB, of other memory: the KV cache comes from DRAM, as in an engine's decode step, whose weights and other layers stream through the caches between one layer's attention and the next; with --roof-now the read kernels over the same bytes are timed the same way) or warm (calls back to back, the KV as warm as it fits: a cache-resident KV)")
	f.StringVar(&o.Profile, "profile", "", "profile.json of 'bench probe' (or a machine file, a published profile) for the prediction and the fractions (default: this host's newest complete probe profile; none: no predictions)")
	f.DurationVar(&o.WaitPlacement, "wait-placement", 0, "with 2 or more threads: before each figure, wait (up to this long in all, e.g. 60s) for the host to put the CPUs back where the reference placement had them (the profile's core-to-core round trips, else those measured as the run begins); a figure measured while they were moved is marked noisy either way (0: do not wait)")
	f.StringVar(&o.Out, "out", "", "output directory (default results/attention-<host>-<yyyymmdd-hhmmss>)")
	o.Fig.register(cmd, false)
	return cmd
}

// opCPUs returns the first threads CPUs in the probes' placement order
// (0: all of them); errors name --threads.
func opCPUs(threads int) ([]int, error) {
	cpus, err := probes.GEMMCPUs()
	if err != nil {
		return nil, fmt.Errorf("--threads: CPU list: %w", err)
	}
	if threads < 0 || threads > len(cpus) {
		return nil, fmt.Errorf("--threads %d: must be between 0 and %d (0: every allowed CPU)", threads, len(cpus))
	}
	if threads == 0 {
		threads = len(cpus)
	}
	return cpus[:threads], nil
}

// opProfile resolves --profile (defaultProfile) into the roofline machine
// and, where the file is a probe profile, the profile of the fractions.
func opProfile(flag string, io IO, cmd string) (*roofline.Machine, *results.Profile, string, error) {
	path := defaultProfile(flag, io, cmd)
	if path == "" {
		return nil, nil, "", nil
	}
	m, err := loadMachine(path)
	if err != nil {
		return nil, nil, "", err
	}
	var p *results.Profile
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		p, _ = results.ReadProfile(path) // a machine file has no probe sections: no fractions
	}
	return m, p, path, nil
}

// opOutDir creates --out (or results/<name>-<host>-<stamp>) and returns it
// with the undo that removes it if nothing is written.
func opOutDir(out, name string) (string, func(), error) {
	if out != "" {
		undo, err := results.MkdirAll(out)
		if err != nil {
			return "", nil, fmt.Errorf("--out %s: %w", out, results.UnwrapPath(err))
		}
		if err := results.CheckWritableDir(out); err != nil {
			undo()
			return "", nil, fmt.Errorf("--out %s: %w", out, err)
		}
		return out, undo, nil
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "host"
	}
	if _, err := results.MkdirAll("results"); err != nil {
		return "", nil, fmt.Errorf("--out: results: %w", results.UnwrapPath(err))
	}
	dir, undo, err := results.MkdirUnique(filepath.Join("results", fmt.Sprintf("%s-%s-%s", name, host, time.Now().Format("20060102-150405"))))
	if err != nil {
		return "", nil, fmt.Errorf("--out: %w", err)
	}
	return dir, undo, nil
}

func attentionRun(ctx context.Context, o *attentionOptions) error {
	if err := o.Fig.parse("attention"); err != nil {
		return err
	}
	kvPack, noPipe := false, false
	for _, a := range o.Ablate {
		switch a {
		case "kv-packing":
			kvPack = true
		case "pipeline":
			noPipe = true
		default:
			return fmt.Errorf("attention: --ablate %q: want kv-packing or pipeline (partition and packing ablate the GEMMs: bench gemm --pack-every-call, --split)", a)
		}
	}
	placements, err := opbench.ParsePlacements(o.Placement)
	if err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	mc, err := models.Load(o.Model)
	if err != nil {
		return fmt.Errorf("attention: --model: %w", err)
	}
	arch, err := mc.Arch()
	if err != nil {
		return fmt.Errorf("attention: --model: %w", err)
	}
	bk, err := opbench.ChooseBackends(o.CoresBackend, o.MatrixBackend)
	if err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	cpus, err := opCPUs(o.Threads)
	if err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	c := opbench.AttentionConfig{Arch: arch, Contexts: o.Contexts, DecodeContext: o.DecodeContext, Batches: o.Batches, Widths: o.Widths,
		Placements: placements, Backends: bk, CPUs: cpus, KVPackPerCall: kvPack, KVDType: o.KVDType, NoPipeline: noPipe, RoofNow: o.RoofNow,
		Timing: opbench.Timing{Reps: o.Reps, RepDuration: time.Duration(o.RepMS) * time.Millisecond}, WaitPlacement: o.WaitPlacement}
	if o.WaitPlacement < 0 {
		return fmt.Errorf("attention: --wait-placement %v: must be ≥ 0 (0: do not wait)", o.WaitPlacement)
	}
	if o.RepMS < 1 || o.RepMS > 1e6 {
		return fmt.Errorf("attention: --rep-ms %d: must be between 1 and 1000000", o.RepMS)
	}
	if o.KVState != "cold" && o.KVState != "warm" {
		return fmt.Errorf("attention: --kv-state %q: want cold or warm", o.KVState)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	if err := c.CheckMemory(); err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	if c.Machine, c.Profile, o.Profile, err = opProfile(o.Profile, o.IO, "attention"); err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	if o.KVState == "cold" {
		c.ColdKVBytes = opbench.ColdEvictBytes(opbench.LLCBytes(c.Machine))
		if err := c.CheckMemory(); err != nil {
			return fmt.Errorf("attention: %w", err)
		}
	}
	dir, undo, err := opOutDir(o.Out, "attention")
	if err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	done := false
	defer func() {
		if !done {
			undo()
		}
	}()
	c.Progress = func(s string) { fmt.Fprintf(o.IO.Err, "%s\n", s) }
	r, err := opbench.RunAttention(ctx, c)
	if err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	ctxLines := attentionContext(r, o.Profile)
	var panels []reports.OpPanel
	for _, ph := range []struct{ axis, phase, x string }{
		{"context", "prefill", "context length T (prompt of T tokens from an empty cache)"},
		{"batch", "decode", fmt.Sprintf("decode batch (sequences at context %d, one new token each)", o.DecodeContext)},
		{"width", "decode", fmt.Sprintf("decode token width (new tokens of one sequence at context %d)", o.DecodeContext)},
	} {
		if s := r.Series(ph.axis); len(s) > 0 {
			panels = append(panels, reports.OpPanel{Title: fmt.Sprintf("%s attention, %s (%d heads of %d, %d KV heads), %d threads", ph.phase, r.Model, r.Heads, r.HeadDim, r.KVHeads, r.Threads),
				XLabel: ph.x, YLabel: "GFLOP/s (fp32, median; bars min-max)", LogX: true, Series: opSeries(s)})
		}
	}
	header, rows, notes := r.Table()
	written, err := writeOpOutputs(dir, "attention", "Attention alone: prefill vs context, decode vs batch (SMEPilot Figs. 10b, 11b)", o.Fig.opts, panels, 3, ctxLines, header, rows, notes, r)
	if err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	done = true
	out := o.IO.Out
	if err := printOpTable(out, ctxLines, header, rows, notes); err != nil {
		return err
	}
	for _, p := range r.Points {
		if p.Fraction > 0 {
			what := "of the probed fp32 GEMM ceiling"
			switch {
			case p.Phase == "decode" && p.RoofNowGBps > 0 && p.KVCold:
				what = fmt.Sprintf("of the read kernel over its %s of KV bytes measured beside it, both from DRAM after the same eviction (%.1f GB/s)", memlimit.FormatBytes(p.KVBytes), p.RoofNowGBps)
			case p.Phase == "decode" && p.RoofNowGBps > 0:
				what = fmt.Sprintf("of the read kernel over its %s of KV bytes measured beside it (%.1f GB/s)", memlimit.FormatBytes(p.KVBytes), p.RoofNowGBps)
			case p.Phase == "decode" && p.KVCold:
				what = "of the probed DRAM read roof (its KV evicted before each call)"
			case p.Phase == "decode":
				what = "of the probed read roof of the level holding its KV bytes"
			}
			verdict := "meets"
			if p.Fraction < p.Target {
				verdict = "below"
			}
			if p.Noise != nil && p.Noise.Noisy {
				verdict += "; NOISY: " + p.Noise.Why
			} else if p.Noise != nil && p.Noise.RoundTripNs > 0 {
				verdict += fmt.Sprintf("; round trip %.0f ns", p.Noise.RoundTripNs)
			}
			fmt.Fprintf(out, "%s %s context %d batch %d: %.0f%% %s (target %.0f%%: %s)\n", p.Phase, p.Placement, p.Context, p.Batch, 100*p.Fraction, what, 100*p.Target, verdict)
		}
	}
	fmt.Fprintf(out, "wrote %s\n", strings.Join(written, ", "))
	return nil
}

// attentionContext is what ran, stated above the table and in the page.
func attentionContext(r *opbench.AttentionReport, profile string) []string {
	l := []string{
		fmt.Sprintf("model %s: %d query heads, %d KV heads, head dim %d; precision %s; KV cache %s", r.Model, r.Heads, r.KVHeads, r.HeadDim, r.Precision, r.KVCache),
		fmt.Sprintf("threads %d; cores = %s; matrix = %s", r.Threads, r.CoresLabel, r.MatrixLabel),
		fmt.Sprintf("median of %d repetitions of ≥ %.0f ms after a warm-up (min, max, cv of the seconds per call)", r.Reps, r.RepSeconds*1e3),
	}
	if profile != "" {
		l = append(l, "roofline and ceilings: "+profile+" (the catalog's unfused qk, softmax and pv: scores counted as materialized)")
	}
	for _, s := range r.Skipped {
		l = append(l, "skipped "+s)
	}
	l = append(l, r.Notes...)
	return append(l, r.PipelineLines()...)
}

// printOpTable prints an operator sweep's context lines, table and
// numbered notes (bench attention, bench gemm --sweep).
func printOpTable(out io.Writer, ctxLines, header []string, rows [][]string, notes []string) error {
	for _, l := range ctxLines {
		fmt.Fprintln(out, l)
	}
	if err := reports.TextTable(out, header, rows); err != nil {
		return err
	}
	for i, n := range notes {
		fmt.Fprintf(out, "[%d] %s\n", i+1, n)
	}
	return nil
}

// opSeries converts opbench's plot lines to reports'.
func opSeries(s []opbench.Series) []reports.OpSeries {
	out := make([]reports.OpSeries, len(s))
	for i, x := range s {
		out[i] = reports.OpSeries(x)
	}
	return out
}

// writeOpOutputs writes name.png (the panels, at most cols per row, and
// --format's other formats), name.md and name.json (v) atomically to dir
// and returns the paths written.
func writeOpOutputs(dir, name, title string, fo reports.FigureOptions, panels []reports.OpPanel, cols int, ctxLines, header []string, rows [][]string, notes []string, v any) ([]string, error) {
	var written []string
	image := ""
	if len(panels) > 0 {
		host, _ := os.Hostname()
		head := strings.Join(append(slices.Clone(ctxLines[:min(2, len(ctxLines))]), host+", "+time.Now().Format("2006-01-02")), "; ")
		f, err := reports.OpSweepFigure(panels, cols, head)
		if err != nil {
			return nil, err
		}
		if written, err = fo.Write(f, filepath.Join(dir, name+".png")); err != nil {
			return written, err
		}
		image = fo.PrimaryPath(name + ".png")
	}
	md, err := reports.OpSweepMarkdown(title, image, ctxLines, header, rows, notes)
	if err != nil {
		return written, err
	}
	mdPath := filepath.Join(dir, name+".md")
	if err := results.WriteFileAtomic(mdPath, []byte(md), 0o644); err != nil {
		return written, err
	}
	written = append(written, mdPath)
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return written, err
	}
	jsPath := filepath.Join(dir, name+".json")
	if err := results.WriteFileAtomic(jsPath, append(data, '\n'), 0o644); err != nil {
		return written, err
	}
	return append(written, jsPath), nil
}
