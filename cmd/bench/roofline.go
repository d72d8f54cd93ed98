package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/sweep"
)

func init() { subcommands = append(subcommands, newRooflineCmd) }

// rooflineOptions are the flag values of `bench roofline` plus its IO.
type rooflineOptions struct {
	IO IO

	Profile string
	Model   string
	Phase   string
	Batch   int
	Tokens  int
	Context int
	Weight  string
	Act     string
	KV      string
	Routing string
	Sweep   string
	JSON    string
	PNG     string
	EBWPlot string
	// NUMANodes > 0: predict decode under each NUMA policy on that many
	// nodes (roofline.NUMAPredict) instead of the operator analysis.
	NUMANodes int
	Fig       figureFlags // --format, --width

	// Parsed by RunE.
	actDefault bool // --act-dtype not given: fall back where the machine has no fp16 ceiling
	routing    roofline.Routing
	sweepVar   roofline.SweepVar
	sweepVals  []int
}

func newRooflineCmd(streams IO) *cobra.Command { return newCmdRoofline(streams, nil) }

// newCmdRoofline builds the command; tests pass runF to capture the options.
func newCmdRoofline(streams IO, runF func(*rooflineOptions) error) *cobra.Command {
	opts := &rooflineOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "roofline --profile P --model M [--phase prefill|decode] [--batch B] [--tokens T] [--context C]",
		Short: "Place every LLM operator on the multi-ceiling roofline of a machine",
		Long: `Lists every operator of a decoder layer for a request shape (FLOPs, bytes,
arithmetic intensity), classifies it on the machine's multi-ceiling roofline
(memory-bound, ridge-crossing, compute-bound, non-linear; SMEPilot §3.2) and
places it on the cores, the matrix unit, or both (Eq. 1 split), with the
predicted time on every target and for the plan, per layer and per model.

--profile is a profile.json from 'bench probe' (bench.profile/v1), a
hand-written machine file (bench.machine/v1; see roofline.MachineSchemaV1),
or a published profile: ` + strings.Join(roofline.PublishedNames(), ", ") + ` (aliases arl, arlh, lnl).
--model is a shipped config (` + strings.Join(models.Names(), ", ") + `)
or the path of a HuggingFace config.json.

Defaults: decode of 1 token per sequence at context 1024; prefill of 512
tokens with context = tokens. Units: GFLOP, MB = 1e6 bytes, FLOP/byte,
seconds scaled for display.`,
		Example: `  bench roofline --profile m4-pro --model qwen3-4b --phase decode --batch 8 --context 2048
  bench roofline --profile m4-pro --model llama-3.2-3b --phase prefill --tokens 1024 --png roofline.png
  bench roofline --profile m4-pro --model qwen3-30b-a3b --phase prefill --routing zipf:1.2
  bench roofline --profile m4-pro --model llama-3.2-3b --sweep batch=1..64 --png sweep.png
  bench roofline --profile lnl --model meta-llama-3-8b --dtype int1
  bench roofline --profile lnl --ebw-plot fig4.png
  bench roofline --profile m4-pro --model qwen3-4b --json=qwen3-4b-decode.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if err := checkJSONPath(opts.JSON); err != nil {
				return fmt.Errorf("roofline: %w", err)
			}
			if runF != nil {
				return runF(opts)
			}
			return rooflineRun(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Profile, "profile", "", "machine: profile.json path, bench.machine/v1 path, or published profile name (required)")
	f.StringVar(&opts.Model, "model", "", "model: shipped config name or path to a HuggingFace config.json (required)")
	f.StringVar(&opts.Phase, "phase", string(roofline.Decode), "prefill or decode")
	f.IntVar(&opts.Batch, "batch", 1, "sequences in the batch (B)")
	f.IntVar(&opts.Tokens, "tokens", 0, "new tokens per sequence (T); default 1 for decode, 512 for prefill")
	f.IntVar(&opts.Context, "context", 0, "positions attended to, including the new tokens (C ≥ T); default 1024 for decode, T for prefill")
	f.StringVar(&opts.Weight, "dtype", "fp16", "weight dtype (fp32, bf16, fp16, int8, int4, int2, int1)")
	f.StringVar(&opts.Act, "act-dtype", "fp16", "activation dtype; also the precision whose compute ceiling is used (default fp16, or bf16 then fp32 where the machine has no fp16 ceiling)")
	f.StringVar(&opts.KV, "kv-dtype", "fp16", "KV-cache dtype")
	f.StringVar(&opts.Routing, "routing", "uniform", "MoE routing: uniform, zipf or zipf:S")
	f.StringVar(&opts.Sweep, "sweep", "", "sweep one shape variable and report regime changes: batch=1..64, tokens=128..8k, context=1k..32k, or a list batch=1,8,64")
	addJSONFlag(cmd, &opts.JSON, "the analysis (or the sweep)")
	f.StringVar(&opts.PNG, "png", "", "draw the roofline (or, with --sweep, the sweep) to this file: .png, .pdf or .svg by extension")
	f.StringVar(&opts.EBWPlot, "ebw-plot", "", "draw the low-bit GEMV paper's Fig. 4 for the machine (ebw = min(β, B/γ) per core against β, one line per format and core type) to this file (.png, .pdf or .svg by extension), and its table to the same name with .md; --model is then optional")
	f.IntVar(&opts.NUMANodes, "numa-nodes", 0, "decode only: predict tok/s under each NUMA policy (os, interleave, local, tp with Sync A and B; ArcLight §3) with the threads spread over this many nodes of the machine's NUMA matrix, beside ArcLight's published speedups")
	opts.Fig.register(cmd, true)
	return cmd
}

// validate checks flag values only; it reads no files.
func (o *rooflineOptions) validate(cmd *cobra.Command) error {
	if o.Profile == "" {
		return errors.New("roofline: --profile: required (a profile.json, a bench.machine/v1 file, or one of " + strings.Join(roofline.PublishedNames(), ", ") + ")")
	}
	if err := o.Fig.parse("roofline"); err != nil {
		return err
	}
	for _, fp := range [][2]string{{"png", o.PNG}, {"ebw-plot", o.EBWPlot}} {
		if fp[1] != "" {
			if _, err := o.Fig.forFile("roofline", fp[0], fp[1]); err != nil {
				return err
			}
		}
	}
	switch {
	case o.NUMANodes < 0:
		return fmt.Errorf("roofline: --numa-nodes %d: must be ≥ 1 (0: no NUMA prediction)", o.NUMANodes)
	case o.NUMANodes > 0 && (o.Sweep != "" || o.PNG != ""):
		return fmt.Errorf("roofline: --numa-nodes %d: not with --sweep or --png (a table and --json only)", o.NUMANodes)
	}
	if o.Model == "" && o.EBWPlot == "" {
		return errors.New("roofline: --model: required (one of " + strings.Join(models.Names(), ", ") + ", or a config.json path)")
	}
	if p := roofline.Phase(o.Phase); p != roofline.Prefill && p != roofline.Decode {
		return fmt.Errorf("roofline: --phase %q: must be prefill or decode", o.Phase)
	}
	if o.Batch < 1 {
		return fmt.Errorf("roofline: --batch %d: must be ≥ 1", o.Batch)
	}
	o.actDefault = !cmd.Flags().Changed("act-dtype")
	if !cmd.Flags().Changed("tokens") {
		o.Tokens = 1
		if roofline.Phase(o.Phase) == roofline.Prefill {
			o.Tokens = 512
		}
	}
	if o.Tokens < 1 {
		return fmt.Errorf("roofline: --tokens %d: must be ≥ 1", o.Tokens)
	}
	if !cmd.Flags().Changed("context") {
		o.Context = o.Tokens
		if roofline.Phase(o.Phase) == roofline.Decode && o.Tokens < 1024 {
			o.Context = 1024
		}
	}
	if o.Context < o.Tokens {
		return fmt.Errorf("roofline: --context %d: must be ≥ --tokens %d (the context includes the new tokens)", o.Context, o.Tokens)
	}
	for _, d := range []struct{ flag, v string }{{"dtype", o.Weight}, {"act-dtype", o.Act}, {"kv-dtype", o.KV}} {
		if _, err := roofline.DTypeBytes(d.v); err != nil {
			return fmt.Errorf("roofline: --%s: %w", d.flag, err)
		}
	}
	var err error
	if o.routing, err = roofline.ParseRouting(o.Routing); err != nil {
		return fmt.Errorf("roofline: --routing: %w", err)
	}
	if o.Sweep != "" {
		if o.sweepVar, o.sweepVals, err = roofline.ParseSweep(o.Sweep); err != nil {
			return fmt.Errorf("roofline: --sweep: %w", err)
		}
		if o.sweepVar == roofline.SweepContext && o.sweepVals[0] < o.Tokens {
			return fmt.Errorf("roofline: --sweep %s: context %d < --tokens %d", o.Sweep, o.sweepVals[0], o.Tokens)
		}
	}
	return nil
}

// checkRooflineCounts refuses --batch × --tokens (or a --sweep's largest
// value) whose token counts overflow at the model's shapes
// (roofline.Request.CheckCounts), naming the flags.
func checkRooflineCounts(o *rooflineOptions, r roofline.Request, arch roofline.Arch) error {
	flags := fmt.Sprintf("--batch %d × --tokens %d", r.Batch, r.Tokens)
	if o.Sweep != "" {
		switch top := o.sweepVals[len(o.sweepVals)-1]; o.sweepVar {
		case roofline.SweepBatch:
			r.Batch, flags = top, fmt.Sprintf("--sweep %s (batch %d) × --tokens %d", o.Sweep, top, r.Tokens)
		case roofline.SweepTokens:
			r.Tokens, flags = top, fmt.Sprintf("--batch %d × --sweep %s (tokens %d)", r.Batch, o.Sweep, top)
		}
	}
	if err := r.CheckCounts(arch); err != nil {
		return fmt.Errorf("roofline: %s: %w", flags, err)
	}
	return nil
}

// precision is the ceiling key for an activation dtype.
func precision(act string) string {
	switch strings.ToLower(act) {
	case "bfloat16":
		return "bf16"
	case "float16", "f16":
		return "fp16"
	case "float32", "f32":
		return "fp32"
	}
	return strings.ToLower(act)
}

// loadMachine reads a file if one exists at p, else a published profile.
func loadMachine(p string) (*roofline.Machine, error) {
	data, err := regfile.ReadFile(p, maxInputBytes)
	if err == nil {
		return roofline.ParseMachine(data, p)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("--profile %s: %w", p, results.UnwrapPath(err))
	}
	m, perr := roofline.Published(p)
	if perr != nil {
		if strings.ContainsAny(p, `/\`) || strings.HasSuffix(p, ".json") {
			return nil, fmt.Errorf("--profile %s: %w", p, err)
		}
		return nil, fmt.Errorf("--profile %s: not a file, and %w", p, perr)
	}
	return m, nil
}

func rooflineRun(o *rooflineOptions) error {
	m, err := loadMachine(o.Profile)
	if err != nil {
		return fmt.Errorf("roofline: %w", err)
	}
	if o.EBWPlot != "" {
		if err := writeEBWPlot(o, m); err != nil {
			return err
		}
		if o.Model == "" {
			return nil
		}
	}
	cfg, err := models.Load(o.Model)
	if err != nil {
		return fmt.Errorf("roofline: %w", err)
	}
	arch, err := cfg.Arch()
	if err != nil {
		return fmt.Errorf("roofline: %w", err)
	}
	if o.actDefault && !m.HasCeilings(precision(o.Act)) {
		// A probed x86 profile without AVX512_FP16 has no fp16 ceiling:
		// the default then follows what the machine has (issue #16).
		for _, p := range []string{"bf16", "fp32"} {
			if m.HasCeilings(p) {
				fmt.Fprintf(o.IO.Err, "bench roofline: %s has no %s compute ceiling; --act-dtype defaults to %s (has %s)\n",
					m.Name, precision(o.Act), p, strings.Join(m.Precisions(), ", "))
				o.Act = p
				break
			}
		}
	}
	r := roofline.Request{Phase: roofline.Phase(o.Phase), Batch: o.Batch, Tokens: o.Tokens, Context: o.Context,
		Weight: o.Weight, Act: o.Act, KV: o.KV, Routing: o.routing}
	if err := checkRooflineCounts(o, r, arch); err != nil {
		return err
	}
	prec := precision(o.Act)
	var (
		result any
		table  func(io.Writer) error
		fig    func() (reports.Figure, error)
	)
	if o.NUMANodes > 0 {
		preds, notes, err := m.NUMAPredict(arch, r, prec, o.NUMANodes)
		if err != nil {
			return fmt.Errorf("roofline: --numa-nodes: %w", err)
		}
		result = struct {
			Predictions []roofline.NUMAPrediction `json:"predictions"`
			Notes       []string                  `json:"notes"`
			Published   string                    `json:"published"`
		}{preds, notes, arcLightPublished}
		table = func(w io.Writer) error { return writeNUMAPredict(w, m, arch, r, preds, notes) }
	} else if o.Sweep != "" {
		s, err := roofline.Sweep(m, arch, r, prec, o.sweepVar, o.sweepVals)
		if err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
		result = s
		table = func(w io.Writer) error { return writeSweep(w, m, arch, r, s) }
		fig = func() (reports.Figure, error) {
			return reports.RooflineSweepFigure(s, reports.RooflineSweepTitle(arch.Name, arch.Layers, m.Name, r, s))
		}
	} else {
		a, err := roofline.Analyze(m, arch, r, prec)
		if err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
		result = a
		table = func(w io.Writer) error { return writeAnalysis(w, a) }
		fig = func() (reports.Figure, error) { return reports.RooflineFigure(a) }
	}
	js := newJSONOut(o.JSON, o.IO.Out)
	if js.tables() {
		if err := table(o.IO.Out); err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
	}
	if js.on() {
		data, err := json.MarshalIndent(result, "", "  ")
		if err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
		if err := js.write(append(data, '\n')); err != nil {
			return err
		}
		if err := js.flush(); err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
	}
	if o.PNG != "" {
		fo, err := o.Fig.forFile("roofline", "png", o.PNG)
		if err != nil {
			return err
		}
		f, err := fig()
		if err != nil {
			return fmt.Errorf("roofline: --png: %w", err)
		}
		if _, err := fo.Write(f, o.PNG); err != nil {
			return fmt.Errorf("roofline: --png: %w", err)
		}
	}
	return nil
}

// arcLightPublished is what ArcLight reports for its policies (abstract,
// §4, Fig. 11), to print beside the model's prediction.
const arcLightPublished = "ArcLight (Kunpeng-920, Qwen3-4B Q4_0, decode): TP up to 46% higher throughput than llama.cpp --numa distribute (abstract, §4 Fig. 11, 2 and 4 nodes); Sync B about 5 tok/s more than Sync A (§4)"

func writeNUMAPredict(w io.Writer, m *roofline.Machine, arch roofline.Arch, r roofline.Request, preds []roofline.NUMAPrediction, notes []string) error {
	fmt.Fprintf(w, "NUMA policies: %s, %d layers, %s on %s, threads spread over %d node(s) (ArcLight §3; model: roofline.NUMABandwidth)\n\n",
		arch.Name, arch.Layers, describe(r), m.Name, preds[0].Nodes)
	t := newMarkdown(w, "policy", "sync", "weight roof GB/s", "memory", "compute", "barriers", "TPOT", "tok/s", "vs os")
	for _, p := range preds {
		t.Append([]string{p.Policy, p.Sync, fmt.Sprintf("%.4g", p.RoofGBps), fmtTime(p.MemoryS), fmtTime(p.ComputeS), fmtTime(p.SyncS),
			fmtTime(p.TPOTS), fmt.Sprintf("%.4g", p.TokPerS), fmt.Sprintf("%.2f×", p.Speedup)})
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "note: os is this engine's: weights on the node that loaded them; llama.cpp's distribute places them by first touch, which this model gives local's roof, so the published gain over llama.cpp is not a bandwidth gain in this model\n")
	fmt.Fprintf(w, "published: %s\n", arcLightPublished)
	return nil
}

func describe(r roofline.Request) string {
	s := fmt.Sprintf("%s B=%d T=%d C=%d, weights %s, act %s, KV %s", r.Phase, r.Batch, r.Tokens, r.Context, r.Weight, r.Act, r.KV)
	if r.Routing.Kind != "uniform" {
		s += ", routing " + r.Routing.String()
	}
	return s
}

func newMarkdown(w io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header)
	return t
}

// Display scaling: values are stored in base units and scaled only here.
func fmtSI(v float64, unit string) string {
	if v == 0 {
		return "0"
	}
	for _, s := range []struct {
		f float64
		p string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= s.f {
			return fmt.Sprintf("%.3g %s%s", v/s.f, s.p, unit)
		}
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// fmtTime prints seconds as bench's tables do (sweep.FormatSeconds).
func fmtTime(s float64) string { return sweep.FormatSeconds(s) }

func fmtAI(i float64) string {
	if i >= 100 {
		return fmt.Sprintf("%.0f", i)
	}
	return fmt.Sprintf("%.3g", i)
}

func writeAnalysis(w io.Writer, a *roofline.Analysis) error {
	fmt.Fprintf(w, "## %s on %s: %s (ceilings at %s)\n\n", a.ModelName, a.Machine, describe(a.Request), a.Precision)
	t := newMarkdown(w, "target", "kind", "ceiling", "bandwidth", "ridge (FLOP/B)")
	for _, tg := range a.Targets {
		ceil, ridge := "none", "—"
		if tg.CeilingGFLOPS > 0 {
			ceil, ridge = fmtSI(tg.CeilingGFLOPS*1e9, "FLOP/s"), fmt.Sprintf("%.2f", tg.Ridge)
		}
		t.Append([]string{tg.Name, tg.Kind, ceil, fmtSI(tg.BandwidthGBps*1e9, "B/s"), ridge})
	}
	for _, r := range a.Roofs {
		t.Append([]string{r.Level, "roof", "", fmtSI(r.GBps*1e9, "B/s"), ""})
	}
	if err := t.Render(); err != nil {
		return err
	}
	if q := a.QuantRoof; q != nil {
		fmt.Fprintln(w)
		if err := writeQuantRoof(w, q); err != nil {
			return err
		}
	}
	names := make([]string, len(a.Targets))
	for i, tg := range a.Targets {
		names[i] = tg.Name
	}
	// The per-call terms (roofline calls.go), on machines that have them.
	perCall := a.Head != nil && a.Head[0].Threads > 0
	header := []string{"layer", "operator", "shape", "FLOPs", "bytes", "AI", "regime", "placement"}
	if perCall {
		header = append(header, "threads", "roof", "fixed")
	}
	header = append(append(header, names...), "plan")
	fmt.Fprintln(w)
	t = newMarkdown(w, header...)
	row := func(layer string, p roofline.Placed) []string {
		place := p.Target
		if p.Split != nil {
			place = fmt.Sprintf("%s (%s: %s %d + %s %d)", p.Target, p.Split.Dim, p.Split.MatrixTarget, p.Split.Matrix, p.Split.CoresTarget, p.Split.Cores)
		}
		cells := []string{layer, p.Name, p.Shape, fmtSI(p.FLOPs, ""), fmtSI(p.Bytes.Total(), "B"), fmtAI(p.Intensity), string(p.Regime), place}
		if perCall {
			fixed := "—"
			if p.Calls > 0 {
				fixed = fmtTime(p.FixedSeconds)
				if p.Calls > 1 {
					fixed += fmt.Sprintf(" (%d calls)", p.Calls)
				}
			}
			cells = append(cells, fmt.Sprint(p.Threads), p.Roof, fixed)
		}
		for _, n := range names {
			if v, ok := p.Times[n]; ok {
				cells = append(cells, fmtTime(v))
			} else {
				cells = append(cells, "—")
			}
		}
		return append(cells, fmtTime(p.Time))
	}
	for _, l := range a.Layers {
		lab := fmt.Sprintf("%s ×%d", l.Kind, l.Count)
		for _, p := range l.Ops {
			t.Append(row(lab, p))
		}
	}
	for _, p := range a.Head {
		t.Append(row("head", p))
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newMarkdown(w, append(append([]string{"scope", "FLOPs", "bytes", "AI"}, names...), "plan")...)
	tot := func(scope string, pt roofline.PlanTotals) {
		ai := 0.0
		if pt.Bytes > 0 {
			ai = pt.FLOPs / pt.Bytes
		}
		cells := []string{scope, fmtSI(pt.FLOPs, ""), fmtSI(pt.Bytes, "B"), fmtAI(ai)}
		for _, n := range names {
			if v, ok := pt.Times[n]; ok {
				cells = append(cells, fmtTime(v))
			} else {
				cells = append(cells, "—")
			}
		}
		t.Append(append(cells, fmtTime(pt.Time)))
	}
	for _, l := range a.Layers {
		tot(fmt.Sprintf("one %s layer", l.Kind), l.Totals)
	}
	tot("head (embed, final norm, LM head)", a.HeadTotals)
	if wu := a.WakeUp; wu != nil {
		wt := roofline.PlanTotals{Times: map[string]float64{}, Time: wu.Seconds}
		for _, n := range names {
			wt.Times[n] = wu.Seconds
		}
		tot(fmt.Sprintf("wake-up of the parked pool (once per call, %s, %d threads)", wu.Operator, wu.Threads), wt)
	}
	scope := "model: one decode step"
	if a.Request.Phase == roofline.Prefill {
		scope = "model: prefill"
	}
	tot(scope, a.Model)
	if err := t.Render(); err != nil {
		return err
	}
	notes := a.Notes
	for _, l := range a.Layers {
		if l.IdleExperts > 0 {
			notes = append(notes, fmt.Sprintf("%d of the %s layer's experts receive no token and are not listed", l.IdleExperts, l.Kind))
		}
	}
	notes = append(notes, "target columns: roofline time max(F/π, Q/β) if the operator ran there; non-linear operators run only on the cores; plan: the chosen placement")
	if perCall {
		notes = append(notes, "threads: how many threads the engine runs the operator on (1: on the caller alone, engine/batch.go); roof: the memory level that moves most of its bytes for the call (activations from the smallest level holding them, weights and KV from DRAM unless all of a call's fit a cache); fixed: the worker pool's cost of its parallel calls (dispatch and barrier, probe dispatch section), included in the times: cores time = fixed + max(F/π, Σ bytes/roof of their level)")
	}
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	return nil
}

func writeSweep(w io.Writer, m *roofline.Machine, arch roofline.Arch, r roofline.Request, s *roofline.SweepResult) error {
	v := s.Values
	fmt.Fprintf(w, "## %s on %s: sweep %s = %d..%d (%d values) from %s\n\n", arch.Name, m.Name, s.Var, v[0], v[len(v)-1], len(v), describe(r))
	if len(s.Changes) == 0 {
		fmt.Fprintln(w, "No operator changes regime or placement over the sweep.")
	} else {
		t := newMarkdown(w, "layer", "operator", "at "+string(s.Var), "from", "to")
		for _, c := range s.Changes {
			t.Append([]string{c.Layer, c.Operator, fmt.Sprint(c.At),
				fmt.Sprintf("%s (%s)", c.From, c.FromTgt), fmt.Sprintf("%s (%s)", c.To, c.ToTgt)})
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	for _, n := range m.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	fmt.Fprintf(w, "- a change at value x means the operator is in the new regime from x on (first value of the sweep that shows it)\n")
	return nil
}

// gbUnit names the GB of a quantized roof's GB/s figures.
func gbUnit(q *roofline.QuantRoof) string {
	if q.GBBytes == roofline.GiB {
		return "GB/s as the source counts it: 2^30 bytes"
	}
	return "GB/s = 1e9 bytes/s"
}

// writeQuantRoof prints a quantized GEMV's memory roof per core type:
// the low-bit GEMV paper's Eq. 3 (ebw = min(β, B/γ) bytes/cycle per core)
// times cores and clock, summed over core types (§IV-B).
func writeQuantRoof(w io.Writer, q *roofline.QuantRoof) error {
	fmt.Fprintf(w, "%s GEMV memory roof, low-bit GEMV paper Eq. 3 per core type (B = %g bytes per output vector; %s):\n\n", q.Format, q.BytesPerVector, gbUnit(q))
	t := newMarkdown(w, "core type", "cores", "GHz", "β (B/cycle)", "γ (cycles)", "B/γ (B/cycle)", "ebw (B/cycle)", "limit", "per core (GB/s)", "cores × (GB/s)")
	for _, ct := range q.Types {
		t.Append([]string{ct.Name, fmt.Sprint(ct.Cores), fmt.Sprintf("%.3g", ct.GHz), fmt.Sprintf("%.3g (%s)", ct.Beta, ct.BetaFrom),
			fmt.Sprintf("%.4g", ct.Gamma), fmt.Sprintf("%.3g", ct.UpConvert), fmt.Sprintf("%.3g", ct.EBW), ct.Limit,
			fmt.Sprintf("%.3g", ct.PerCoreGBps), fmt.Sprintf("%.3g", ct.GBps)})
	}
	total := fmt.Sprintf("%.3g", q.SumGBps)
	if q.GBps < q.SumGBps {
		total = fmt.Sprintf("%.3g, capped at the read bandwidth %.3g", q.SumGBps, q.GBps)
	}
	t.Append([]string{"Σ", "", "", "", "", "", "", q.Limit, "", total})
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s GEMV weight roof: %.3g GB/s of %.3g GB/s read bandwidth (%.0f%%); %s\n", q.Format, q.GBps, q.BandwidthGBps, 100*q.GBps/q.BandwidthGBps, roofline.UpConvertBoundNote(q))
	return nil
}

// writeEBWPlot writes the Fig. 4 figure (in the formats of its extension
// and --format) and its Markdown table (beside it, .md) atomically and
// prints the table.
func writeEBWPlot(o *rooflineOptions, m *roofline.Machine) error {
	fo, err := o.Fig.forFile("roofline", "ebw-plot", o.EBWPlot)
	if err != nil {
		return err
	}
	mdName := strings.TrimSuffix(o.EBWPlot, filepath.Ext(o.EBWPlot)) + ".md"
	md, err := reports.EBWMarkdown(m, filepath.Base(fo.PrimaryPath(o.EBWPlot)))
	if err != nil {
		return fmt.Errorf("roofline: --ebw-plot: %w", err)
	}
	f, err := reports.EBWFigure(m)
	if err != nil {
		return fmt.Errorf("roofline: --ebw-plot: %w", err)
	}
	written, err := fo.Write(f, o.EBWPlot)
	if err != nil {
		return fmt.Errorf("roofline: --ebw-plot: %w", err)
	}
	if err := results.WriteFileAtomic(mdName, []byte(md), 0o644); err != nil {
		return fmt.Errorf("roofline: --ebw-plot: %w", err)
	}
	if o.JSON != "-" {
		fmt.Fprint(o.IO.Out, md)
		fmt.Fprintf(o.IO.Out, "\nwrote %s and %s\n", strings.Join(written, ", "), mdName)
	}
	return nil
}
