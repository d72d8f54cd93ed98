package layouts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// NonCacheableNote is printed with every layout report: what the engine's
// rearrangement reads, and how the paper's non-cacheable source is
// modelled instead.
const NonCacheableNote = "Linux user space cannot map memory non-cacheable (no uncached mmap without a driver; page attributes are the kernel's), " +
	"so the engine's rearrangement reads cacheable memory. The paper's non-cacheable source (PIM-SHERPA §6: about 2× slower than cacheable) " +
	"is modelled as one more pass over the weights at the probe's non-temporal (write_nt) DRAM bandwidth, where the profile has it."

// Options configure Run. Zero values take the defaults named.
type Options struct {
	// FLOPPerByte is Table 2's arithmetic intensity (4: the paper's rows);
	// Table2Lengths its input lengths (roofline.Table2Lengths).
	FLOPPerByte   float64
	Table2Lengths []int
	// CapacityModels are model configs (shipped names or config.json
	// paths; all shipped ones) counted at CapacityDType, bf16 (the
	// paper's, default) or fp32 (the engine's).
	CapacityModels []string
	CapacityDType  string
	// NoMeasure prints Table 2 and the capacities only.
	NoMeasure bool
	// Model is the engine's model for the TTFT experiment (qwen3-0.6b),
	// with synthetic weights of seed Seed and Layers decoder layers (2;
	// 0: all).
	Model  string
	Layers int
	Seed   uint64
	// Inputs are the prompt lengths (1, 8, 32, 128, 512), each prefilled
	// Reps times (3, the median taken) per policy in Policies (all).
	Inputs   []int
	Reps     int
	Policies []engine.WeightLayout
	// Threads (0: every allowed CPU) and CopyThreads (ddb, 0: 1) as
	// engine.Options.
	Threads, CopyThreads int
	// GanttPolicy (ddb) and GanttTokens (64) pick the prefill drawn as a
	// per-thread timeline.
	GanttPolicy engine.WeightLayout
	GanttTokens int
	// Profile is a probe profile (nil: none): the weight read bandwidth
	// of the model and the non-temporal bandwidth of the non-cacheable
	// source; ProfileName names it in the output.
	Profile     *results.Profile
	ProfileName string
	// Out is the directory for layout.md, layout.json and the figures
	// ("": Markdown on W only, no files); Figures their formats and width.
	Out     string
	Figures reports.FigureOptions
	// W receives the Markdown report; Log progress lines (nil: none).
	W, Log  io.Writer
	Context context.Context
}

// Measured is one policy's prefill at one input length, per prefill:
// TTFT (median of the repetitions), the decoder-layer linear operators'
// timers (copy and waits included, as they run inside them), and the
// policy's rearrangement figures (engine.LayoutStats per prefill).
type Measured struct {
	Policy         string  `json:"policy"`
	InputSL        int     `json:"input_sl"`
	TTFTS          float64 `json:"ttft_s"` // median of the repetitions
	TTFTMinS       float64 `json:"ttft_min_s"`
	TTFTMaxS       float64 `json:"ttft_max_s"`
	LinearS        float64 `json:"linear_s"`
	CopyS          float64 `json:"copy_s"`
	CopyBytes      float64 `json:"copy_bytes"`
	WaitS          float64 `json:"wait_s"`
	PreloadS       float64 `json:"preload_s"`
	PredictedS     float64 `json:"predicted_s"`
	ResidentBytes  int64   `json:"resident_weight_bytes"`
	RSSBytes       int64   `json:"vm_rss_bytes,omitempty"`
	ComputeThreads int     `json:"compute_threads"`
	CopyThreads    int     `json:"copy_threads,omitempty"`
	CopyGroups     int     `json:"copy_groups,omitempty"` // ddb's copy groups over all layers
}

// PolicyModel is Table 2's model calibrated for one policy on this
// machine (roofline.LayoutModel) and where its rates came from.
type PolicyModel struct {
	Policy string               `json:"policy"`
	Model  roofline.LayoutModel `json:"model"`
	Source string               `json:"source"`
}

// Result is everything Run measured and modelled.
type Result struct {
	FLOPPerByte float64                   `json:"flop_per_byte"`
	Table2      []roofline.OWRRow         `json:"table2"`
	CapacityDT  string                    `json:"capacity_dtype"`
	Capacity    []roofline.LayoutCapacity `json:"capacity"`
	Model       string                    `json:"model,omitempty"`
	Layers      int                       `json:"layers,omitempty"`
	Backend     string                    `json:"backend,omitempty"` // the gemm backend of the prefill GEMMs
	WeightBytes float64                   `json:"prefill_weight_bytes,omitempty"`
	Measured    []Measured                `json:"measured,omitempty"`
	// EqualThreads is duplicate measured on ddb's compute thread count
	// (the ddb-vs-duplicate check: same compute, ddb's copy
	// threads extra), when that differs from Measured's duplicate.
	EqualThreads []Measured    `json:"duplicate_at_ddb_compute_threads,omitempty"`
	Models       []PolicyModel `json:"models,omitempty"`
	// Crossover is the input length from which ddb's copy is hidden
	// (ddb's model), CrossoverNC the same with a non-cacheable source
	// modelled (0: no write_nt figure in the profile).
	Crossover   float64              `json:"crossover_sl,omitempty"`
	CrossoverNC float64              `json:"crossover_sl_noncacheable,omitempty"`
	NTGBps      float64              `json:"write_nt_gbps,omitempty"`
	Trace       []reports.LayoutSpan `json:"trace,omitempty"`
	Notes       []string             `json:"notes"`
	Files       []string             `json:"files,omitempty"`
}

// layerLinears are the decoder-layer linear operators whose weights the
// policies rearrange.
var layerLinears = []string{engine.OpQProj, engine.OpKProj, engine.OpVProj, engine.OpOProj, engine.OpGateProj, engine.OpUpProj, engine.OpDownProj}

func (o *Options) defaults() error {
	if o.FLOPPerByte == 0 {
		o.FLOPPerByte = 4
	}
	if !(o.FLOPPerByte > 0) || math.IsInf(o.FLOPPerByte, 0) {
		return fmt.Errorf("layout: --flop-per-byte %v: must be > 0 and finite", o.FLOPPerByte)
	}
	if len(o.Table2Lengths) == 0 {
		o.Table2Lengths = roofline.Table2Lengths
	}
	if len(o.CapacityModels) == 0 {
		o.CapacityModels = models.Names()
	}
	switch o.CapacityDType {
	case "":
		o.CapacityDType = "bf16"
	case "bf16", "fp32":
	default:
		return fmt.Errorf("layout: --capacity-dtype %q: want bf16 or fp32", o.CapacityDType)
	}
	if o.Model == "" {
		o.Model = "qwen3-0.6b"
	}
	if o.Layers < 0 {
		return fmt.Errorf("layout: --layers %d: must be ≥ 0 (0: all)", o.Layers)
	}
	if len(o.Inputs) == 0 {
		o.Inputs = []int{1, 8, 32, 128, 512}
	}
	for _, n := range append(slices.Clone(o.Inputs), o.Table2Lengths...) {
		if n < 1 {
			return fmt.Errorf("layout: input length %d: must be ≥ 1", n)
		}
	}
	if o.Reps == 0 {
		o.Reps = 3
	}
	if o.Reps < 1 {
		return fmt.Errorf("layout: --reps %d: must be ≥ 1", o.Reps)
	}
	if len(o.Policies) == 0 {
		o.Policies = engine.WeightLayouts()
	}
	for _, p := range o.Policies {
		if _, err := engine.ParseWeightLayout(string(p)); err != nil || p == "" {
			return fmt.Errorf("layout: --policies %q: want duplicate, owr or ddb", p)
		}
	}
	if o.Threads < 0 || o.CopyThreads < 0 {
		return fmt.Errorf("layout: --threads %d, --copy-threads %d: must be ≥ 0", o.Threads, o.CopyThreads)
	}
	if o.GanttPolicy == "" {
		o.GanttPolicy = engine.LayoutDDB
	}
	if _, err := engine.ParseWeightLayout(string(o.GanttPolicy)); err != nil {
		return fmt.Errorf("layout: --gantt-policy: %w", err)
	}
	if o.GanttTokens == 0 {
		o.GanttTokens = 64
	}
	if o.GanttTokens < 1 {
		return fmt.Errorf("layout: --gantt-tokens %d: must be ≥ 1", o.GanttTokens)
	}
	if o.W == nil {
		o.W = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	return nil
}

// Run prints Table 2 at o.FLOPPerByte, the resident bytes per policy of
// every capacity model, and (unless NoMeasure) measures TTFT against input
// length per policy on the engine, models it with Table 2 for this
// machine, and draws a prefill's per-thread timeline; Markdown goes to
// o.W and, with o.Out, layout.md, layout.json and the figures are written
// there (atomically). Errors: bad options (one line naming the value), a
// model that cannot load or run a policy, a write error, or the context's.
func Run(o Options) (_ *Result, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	r := &Result{FLOPPerByte: o.FLOPPerByte, CapacityDT: o.CapacityDType, Notes: []string{NonCacheableNote}}
	defer func() {
		if err != nil { // a stopped or failed run leaves none of its files
			for _, f := range r.Files {
				os.Remove(f)
			}
		}
	}()
	var md bytes.Buffer
	rows, err := roofline.OWRTable(o.FLOPPerByte, o.Table2Lengths)
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	r.Table2 = rows
	if err := writeTable2(&md, rows, o.FLOPPerByte); err != nil {
		return nil, err
	}
	bpw := map[string]float64{"bf16": 2, "fp32": 4}[o.CapacityDType]
	for _, name := range o.CapacityModels {
		mc, err := models.Load(name)
		if err != nil {
			return nil, fmt.Errorf("layout: --capacity-models %s: %w", name, err)
		}
		a, err := mc.Arch()
		if err != nil {
			return nil, fmt.Errorf("layout: --capacity-models %s: %w", name, err)
		}
		c, err := roofline.LayoutCapacityOf(a, bpw)
		if err != nil {
			return nil, fmt.Errorf("layout: --capacity-models %s: %w", name, err)
		}
		r.Capacity = append(r.Capacity, c)
	}
	if err := writeCapacity(&md, r.Capacity, o.CapacityDType); err != nil {
		return nil, err
	}
	if o.Out != "" {
		fig, err := reports.LayoutCapacityFigure(r.Capacity, o.CapacityDType)
		if err != nil {
			return nil, fmt.Errorf("layout: %w", err)
		}
		if err := o.figure(r, &md, fig, "layout-capacity", "resident weight bytes per policy"); err != nil {
			return nil, err
		}
	}
	if !o.NoMeasure {
		if err := measure(&o, r, &md); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(&md, "\nnote: %s\n", NonCacheableNote)
	for _, n := range r.Notes[1:] {
		fmt.Fprintf(&md, "\nnote: %s\n", n)
	}
	if o.Out != "" {
		js, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("layout: %w", err)
		}
		for _, f := range []struct {
			name string
			data []byte
		}{{"layout.json", append(js, '\n')}, {"layout.md", md.Bytes()}} {
			p := filepath.Join(o.Out, f.name)
			if err := results.WriteFileAtomic(p, f.data, 0o644); err != nil {
				return nil, fmt.Errorf("layout: %w", err)
			}
			r.Files = append(r.Files, p)
		}
	}
	if _, err := o.W.Write(md.Bytes()); err != nil {
		return nil, err
	}
	if err := o.Context.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// figure writes fig as name in o.Out and embeds it in the Markdown.
func (o *Options) figure(r *Result, md *bytes.Buffer, fig reports.Figure, name, alt string) error {
	files, err := o.Figures.Write(fig, filepath.Join(o.Out, name))
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	r.Files = append(r.Files, files...)
	fmt.Fprintf(md, "\n![%s](%s)\n", alt, filepath.Base(o.Figures.PrimaryPath(filepath.Join(o.Out, name))))
	return nil
}

func writeTable2(w io.Writer, rows []roofline.OWRRow, fpb float64) error {
	fmt.Fprintf(w, "## PIM-SHERPA Table 2 at FLOP/B %.4g (units of t, one weight pass from DRAM)\n\n", fpb)
	tf := func(v float64) string {
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".") + "t"
	}
	var body [][]string
	for _, x := range rows {
		body = append(body, []string{fmt.Sprint(x.InputSL), tf(x.GEMM), tf(x.DRAM), tf(x.Online), tf(x.Sum), fmt.Sprintf("%.0f%%", x.SumPct), tf(x.Max), fmt.Sprintf("%.0f%%", x.MaxPct)})
	}
	if err := reports.MarkdownTable(w, []string{"input SL", "GEMM", "DRAM", "online", "SUM(GEMM, online)", "SUM vs GEMM", "MAX(GEMM, online)", "MAX vs GEMM"}, body); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGEMM = max(1, SL/(FLOP/B))·t; online rearrangement = 3t (read the non-cacheable weight, read the destination into cache, write it back); "+
		"the copy is hidden (MAX = GEMM) from SL = 3·FLOP/B = %.4g.\n", roofline.OWRCrossover(fpb))
	return nil
}

func writeCapacity(w io.Writer, caps []roofline.LayoutCapacity, dt string) error {
	fmt.Fprintf(w, "\n## Resident weight bytes per layout policy, %s weights (PIM-SHERPA Figs. 4, 9)\n\n", dt)
	gb := func(v float64) string { return fmt.Sprintf("%.4g", v/1e9) }
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	var body [][]string
	for _, c := range caps {
		body = append(body, []string{c.Model, gb(c.Decode), gb(c.Prefill), gb(c.Duplicate), gb(c.OWR), gb(c.DDB), pct(c.OWRSaving), pct(c.DDBSaving),
			gb(c.PaperWD), pct(c.OWRSavingWD), pct(c.DDBSavingWD), fmt.Sprintf("%.3f", c.OWRLinears), fmt.Sprintf("%.3f", c.DDBLinears)})
	}
	if err := reports.MarkdownTable(w, []string{"model", "decode layout GB", "prefill layout GB", "duplicate GB", "owr GB", "ddb GB",
		"owr saves", "ddb saves", "paper's WD GB", "owr saves vs WD", "ddb saves vs WD", "owr/duplicate, linears", "ddb/duplicate, linears"}, body); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nduplicate = decode layout (every weight) + prefill layout (the decoder layers' linears; the LM head and embedding stay in the decode layout); "+
		"owr adds one buffer for the largest decoder-layer matrix, ddb two buffers of the largest matrix (§4.1: twice the FF layer; copy groups of consecutive matrices that fit one buffer, Fig. 5). "+
		"The paper's WD keeps every weight twice; panel padding not counted. "+
		"The linears columns are the resident bytes of the decoder layers' linears (the weights with two layouts) over duplicate's: (prefill layout + buffers) / (2 × prefill layout).")
	return nil
}

// measure runs the TTFT experiment and the timeline, and models them.
func measure(o *Options, r *Result, md *bytes.Buffer) error {
	mc, err := models.Load(o.Model)
	if err != nil {
		return fmt.Errorf("layout: --model: %w", err)
	}
	data, name, err := models.ReadConfig(o.Model)
	if err != nil {
		return fmt.Errorf("layout: --model: %w", err)
	}
	maxIn := slices.Max(append(slices.Clone(o.Inputs), o.GanttTokens))
	cfg, err := engine.FromHF(data, name)
	if err != nil {
		ex := engine.HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: maxIn}
		if cfg, err = engine.FromModel(mc, ex); err != nil {
			return fmt.Errorf("layout: --model: %w", err)
		}
	}
	if o.Layers > cfg.Layers {
		return fmt.Errorf("layout: --layers %d: model %s has %d", o.Layers, cfg.Name, cfg.Layers)
	}
	if cfg.MoELayers() > 0 {
		return fmt.Errorf("layout: --model %s: MoE layers; the weight layout policies run dense models only (--capacity-models counts MoE ones)", cfg.Name)
	}
	if maxIn > cfg.MaxSeq {
		return fmt.Errorf("layout: input length %d: more than model %s's %d positions", maxIn, cfg.Name, cfg.MaxSeq)
	}
	layers := cfg.Layers
	if o.Layers > 0 {
		layers = o.Layers
	}
	sized := cfg
	sized.Layers = layers
	// The fp32 weights and, under duplicate, their panels, before anything
	// is drawn.
	if err := memlimit.Check(fmt.Sprintf("--model %s with %d layers: synthetic fp32 weights and packed copies", cfg.Name, layers),
		memlimit.Mul(1).TimesFloat(2*4*float64(sized.Params()))); err != nil {
		return fmt.Errorf("layout: %w: pass --layers N to instantiate fewer", err)
	}
	w, err := engine.Synthetic(cfg, o.Layers, o.Seed)
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	r.Model, r.Layers = cfg.Name, layers
	d, q, kv, h := float64(cfg.Dim), float64(cfg.QDim()), float64(cfg.KVDim()), float64(cfg.Intermediate)
	params := float64(layers) * (2*q*d + 2*kv*d + 3*h*d)
	r.WeightBytes = 4 * params
	rng := rand.New(rand.NewPCG(o.Seed, 0x1a70))
	prompt := make([]int, maxIn)
	for i := range prompt {
		prompt[i] = rng.IntN(cfg.Vocab)
	}
	var trace []engine.LayoutEvent
	for _, p := range o.Policies {
		eo := engine.Options{Threads: o.Threads, WeightLayout: p, Context: o.Context}
		if p == engine.LayoutDDB {
			eo.CopyThreads = o.CopyThreads
		}
		m, err := engine.New(w, eo)
		if err != nil {
			return fmt.Errorf("layout: %s: %w", p, err)
		}
		r.Backend = m.Backend.Name
		ms, tr, err := measurePolicy(o, m, p, prompt, p == o.GanttPolicy)
		m.Close()
		debug.FreeOSMemory() // the next policy's VmRSS without this one's freed panels
		if err != nil {
			return fmt.Errorf("layout: %s: %w", p, err)
		}
		r.Measured = append(r.Measured, ms...)
		if p == o.GanttPolicy {
			trace = tr
		}
	}
	if err := equalThreads(o, r, w, prompt); err != nil {
		return err
	}
	model(o, r, params)
	if err := writeMeasured(md, r, o); err != nil {
		return err
	}
	if err := writeEqualThreads(md, r); err != nil {
		return err
	}
	for _, e := range trace {
		r.Trace = append(r.Trace, reports.LayoutSpan{Thread: e.Thread, Kind: e.Kind, Op: e.Op, Layer: e.Layer, Start: e.Start, End: e.End})
	}
	if o.Out == "" {
		return nil
	}
	var pts []reports.LayoutTTFT
	for _, x := range r.Measured {
		pts = append(pts, reports.LayoutTTFT{Policy: x.Policy, InputSL: x.InputSL, MeasuredS: x.TTFTS, PredictedS: x.PredictedS, MinS: x.TTFTMinS, MaxS: x.TTFTMaxS})
	}
	fig, err := reports.LayoutTTFTFigure(pts, r.Crossover, fmt.Sprintf("TTFT vs input length per weight layout (PIM-SHERPA Fig. 10), %s, %d layer(s), synthetic fp32, backend %s; %s; median of %d prefills, bars min–max; %s",
		r.Model, r.Layers, r.Backend, threadsLabel(r.Measured), o.Reps, provenance()))
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	if err := o.figure(r, md, fig, "layout-ttft", "TTFT vs input length"); err != nil {
		return err
	}
	if len(r.Trace) > 0 {
		fig, err := reports.LayoutGanttFigure(r.Trace, fmt.Sprintf("%s prefill of %d tokens, per thread (PIM-SHERPA Fig. 11), %s, %d layer(s), synthetic fp32, backend %s; %s", o.GanttPolicy, o.GanttTokens, r.Model, r.Layers, r.Backend, provenance()))
		if err != nil {
			return fmt.Errorf("layout: %w", err)
		}
		if err := o.figure(r, md, fig, "layout-timeline", "per-thread timeline of one prefill"); err != nil {
			return err
		}
	}
	return nil
}

// equalThreads measures duplicate on ddb's compute thread count when
// both ran and duplicate ran on more (r.EqualThreads): ddb's copy
// threads are extra cores, so the comparison of the two at equal compute
// is what says whether the copy is hidden.
func equalThreads(o *Options, r *Result, w *engine.Weights, prompt []int) error {
	ct, dt := policyThreads(r.Measured, engine.LayoutDDB), policyThreads(r.Measured, engine.LayoutDuplicate)
	if ct == 0 || dt == 0 || ct == dt {
		return nil
	}
	m, err := engine.New(w, engine.Options{Threads: ct, WeightLayout: engine.LayoutDuplicate, Context: o.Context})
	if err != nil {
		return fmt.Errorf("layout: duplicate at %d threads: %w", ct, err)
	}
	defer m.Close()
	ms, _, err := measurePolicy(o, m, engine.LayoutDuplicate, prompt, false)
	if err != nil {
		return fmt.Errorf("layout: duplicate at %d threads: %w", ct, err)
	}
	r.EqualThreads = ms
	return nil
}

// ddbGroups is ddb's copy group count in ms (0: ddb not measured).
func ddbGroups(ms []Measured) int {
	for _, x := range ms {
		if x.Policy == string(engine.LayoutDDB) {
			return x.CopyGroups
		}
	}
	return 0
}

// policyThreads is the compute threads policy p ran with in ms (0: not
// measured).
func policyThreads(ms []Measured, p engine.WeightLayout) int {
	for _, x := range ms {
		if x.Policy == string(p) {
			return x.ComputeThreads
		}
	}
	return 0
}

// writeEqualThreads prints ddb's TTFT over duplicate's at equal compute
// threads per input length, and whether it is within 10% from the
// model's crossover on (the target).
func writeEqualThreads(w io.Writer, r *Result) error {
	dup := map[int]Measured{}
	base := r.EqualThreads
	if len(base) == 0 && policyThreads(r.Measured, engine.LayoutDDB) == policyThreads(r.Measured, engine.LayoutDuplicate) {
		base = r.Measured
	}
	for _, x := range base {
		if x.Policy == string(engine.LayoutDuplicate) {
			dup[x.InputSL] = x
		}
	}
	var body [][]string
	met, counted := 0, 0
	for _, x := range r.Measured {
		d, ok := dup[x.InputSL]
		if x.Policy != string(engine.LayoutDDB) || !ok || d.TTFTS <= 0 {
			continue
		}
		ratio := x.TTFTS / d.TTFTS
		hidden, within := "no", "—"
		if r.Crossover > 0 && float64(x.InputSL) >= r.Crossover {
			hidden, within = "yes", "no"
			counted++
			if ratio <= 1.10 {
				within = "yes"
				met++
			}
		}
		body = append(body, []string{fmt.Sprint(x.InputSL), fmt.Sprint(x.ComputeThreads), fmt.Sprintf("%.4g", 1e3*d.TTFTS), fmt.Sprintf("%.4g", 1e3*x.TTFTS),
			fmt.Sprintf("%.3f", ratio), hidden, within})
	}
	if len(body) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n## ddb against duplicate at equal compute threads\n\nddb's copy threads are extra cores; duplicate here runs on ddb's compute threads (measured again when it ran on more above). Medians of the same number of prefills.\n\n")
	if err := reports.MarkdownTable(w, []string{"input SL", "compute threads", "duplicate TTFT ms", "ddb TTFT ms", "ddb/duplicate", "SL ≥ crossover", "within 10%"}, body); err != nil {
		return err
	}
	if counted > 0 {
		fmt.Fprintf(w, "\nddb within 10%% of duplicate at %d of %d input lengths from the model's crossover (%.4g tokens) on.\n", met, counted, r.Crossover)
	}
	return nil
}

// measurePolicy times the prefills of one policy and, for the Gantt
// policy, traces one more.
func measurePolicy(o *Options, m *engine.Model, p engine.WeightLayout, prompt []int, gantt bool) ([]Measured, []engine.LayoutEvent, error) {
	b, err := m.NewBatch(1, len(prompt))
	if err != nil {
		return nil, nil, err
	}
	// One untimed warm-up prefill (page faults, cold caches).
	if _, err := b.Prefill(0, prompt[:min(8, len(prompt))]); err != nil {
		return nil, nil, err
	}
	var out []Measured
	for _, sl := range o.Inputs {
		fmt.Fprintf(o.Log, "layout: %s, %d tokens, %d reps\n", p, sl, o.Reps)
		b.ResetTimings()
		m.ResetLayout()
		times := make([]float64, o.Reps)
		for i := range times {
			if err := b.Reset(0); err != nil {
				return nil, nil, err
			}
			st := time.Now()
			if _, err := b.Prefill(0, prompt[:sl]); err != nil {
				return nil, nil, err
			}
			times[i] = time.Since(st).Seconds()
		}
		slices.Sort(times)
		n := float64(o.Reps)
		lin := 0.0
		for _, t := range b.Timings() {
			if t.Phase == roofline.Prefill && slices.Contains(layerLinears, t.Op) {
				lin += t.Seconds
			}
		}
		s := m.Layout()
		x := Measured{Policy: string(p), InputSL: sl, TTFTS: times[len(times)/2], TTFTMinS: times[0], TTFTMaxS: times[len(times)-1], LinearS: lin / n, CopyS: s.CopySeconds / n,
			CopyBytes: float64(s.CopyBytes) / n, WaitS: s.WaitSeconds / n, PreloadS: s.PreloadSeconds / n,
			ResidentBytes: s.ResidentBytes, ComputeThreads: s.ComputeThreads, CopyThreads: s.CopyThreads, CopyGroups: s.CopyGroups}
		if rss, err := engine.ResidentSetBytes(); err == nil {
			x.RSSBytes = rss
		}
		out = append(out, x)
	}
	var trace []engine.LayoutEvent
	if gantt {
		if err := b.Reset(0); err != nil {
			return nil, nil, err
		}
		if _, err := b.Prefill(0, prompt[:o.GanttTokens]); err != nil {
			return nil, nil, err
		}
		trace = m.LayoutTrace()
	}
	return out, trace, nil
}

// model calibrates Table 2's model per policy and fills the predictions:
// each policy's GEMM rate from its own largest-input prefills (the linear
// timers less its copy phases or waits), its copy bandwidth from all its
// prefills, the weight read bandwidth from the profile's DRAM read figure
// (else from duplicate's shortest prefill, a weight pass); the time
// outside the linear operators is taken as measured.
func model(o *Options, r *Result, params float64) {
	W := r.WeightBytes
	read, readSrc := 0.0, ""
	if o.Profile != nil && o.Profile.Memory != nil {
		best := 0
		for _, l := range o.Profile.Memory.Levels {
			if l.Level == "DRAM" && l.Kernel == "read" && l.Threads >= best {
				best, read = l.Threads, l.GBps.Median
			}
		}
		if read > 0 {
			readSrc = fmt.Sprintf("DRAM read %.4g GB/s at %d threads (%s)", read, best, o.ProfileName)
		}
		bestWS := int64(0)
		best = 0
		for _, b := range o.Profile.Memory.WorkingSet {
			if b.Kernel == "write_nt" && (b.Threads > best || b.Threads == best && b.WorkingSetBytes >= bestWS) {
				best, bestWS, r.NTGBps = b.Threads, b.WorkingSetBytes, b.GBps.Median
			}
		}
	}
	by := map[string][]Measured{}
	for _, x := range r.Measured {
		by[x.Policy] = append(by[x.Policy], x)
	}
	gemmOnly := func(x Measured) float64 {
		return math.Max(x.LinearS-x.CopyS*b2f(x.Policy == "owr")-(x.WaitS+x.PreloadS)*b2f(x.Policy == "ddb"), 1e-9)
	}
	if read <= 0 {
		if d := by["duplicate"]; len(d) > 0 {
			read = W / gemmOnly(d[0]) / 1e9
			readSrc = fmt.Sprintf("a weight pass: duplicate's %d-token prefill GEMMs, %.4g GB/s (no profile with a DRAM read figure)", d[0].InputSL, read)
		}
	}
	for _, p := range o.Policies {
		xs := by[string(p)]
		if len(xs) == 0 {
			continue
		}
		last := xs[len(xs)-1]
		for _, x := range xs {
			if x.InputSL > last.InputSL {
				last = x
			}
		}
		gf := 2 * float64(last.InputSL) * params / gemmOnly(last) / 1e9
		cb, cs := 0.0, 0.0
		for _, x := range xs {
			cb, cs = cb+x.CopyBytes, cs+x.CopyS
		}
		copyGBps := math.Inf(1)
		src := fmt.Sprintf("%.4g GFLOP/s from the %d-token prefill GEMMs", gf, last.InputSL)
		if cs > 0 {
			copyGBps = cb / cs / 1e9
			src += fmt.Sprintf("; copy %.4g GB/s measured", copyGBps)
		}
		lm := roofline.LayoutModel{GFLOPS: gf, ReadGBps: read, CopyGBps: copyGBps, BytesPerWeight: 4}
		if read <= 0 {
			lm.ReadGBps = math.Inf(1)
		}
		src += "; read: " + readSrc
		if math.IsInf(lm.CopyGBps, 1) { // duplicate: no copy; the model's GEMM only
			lm.CopyGBps = math.MaxFloat64
		}
		if math.IsInf(lm.ReadGBps, 1) {
			lm.ReadGBps = math.MaxFloat64
		}
		r.Models = append(r.Models, PolicyModel{Policy: string(p), Model: lm, Source: src})
		for i := range r.Measured {
			x := &r.Measured[i]
			if x.Policy != string(p) {
				continue
			}
			row, err := lm.At(x.InputSL, W)
			if err != nil {
				continue
			}
			other := x.TTFTS - x.LinearS
			switch p {
			case engine.LayoutDuplicate:
				x.PredictedS = other + row.GEMM
			case engine.LayoutOWR:
				x.PredictedS = other + row.Sum
			case engine.LayoutDDB:
				// The first group's copy (the preload) and the last
				// group's GEMM are not overlapped; each group between
				// takes the max of its GEMM and the next one's copy.
				// Groups taken as equal shares of the weights.
				U := float64(max(x.CopyGroups, 1))
				x.PredictedS = other + row.Online/U + (U-1)/U*row.Max + row.GEMM/U
			}
		}
		if p == engine.LayoutDDB {
			r.Crossover = lm.Crossover()
			if r.NTGBps > 0 && copyGBps > 0 && !math.IsInf(copyGBps, 0) {
				nc := lm
				nc.CopyGBps = 1 / (1/copyGBps + 1/r.NTGBps)
				r.CrossoverNC = nc.Crossover()
			}
		}
	}
	if r.NTGBps == 0 {
		r.Notes = append(r.Notes, "the profile has no write_nt figure (or no profile was given): the non-cacheable source is not modelled")
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func writeMeasured(w io.Writer, r *Result, o *Options) error {
	fmt.Fprintf(w, "\n## TTFT vs input length per weight layout (PIM-SHERPA Fig. 10): %s, %d layer(s), synthetic fp32 weights\n\n", r.Model, r.Layers)
	fmt.Fprintf(w, "Prefill linear weights: %.4g MB (fp32); median of %d prefills per point after one warm-up. Model = the time outside the linear operators as measured + "+
		"Table 2 in seconds: duplicate GEMM, owr SUM(GEMM, online), ddb the copy of the first copy group (preload) + MAX over the others "+
		"(online/U + (U−1)/U·MAX + GEMM/U, U = %d copy groups of matrices, taken as equal shares).\n\n", r.WeightBytes/1e6, o.Reps, ddbGroups(r.Measured))
	ms := func(v float64) string { return fmt.Sprintf("%.4g", 1e3*v) }
	var body [][]string
	for _, x := range r.Measured {
		ratio := "—"
		if x.PredictedS > 0 {
			ratio = fmt.Sprintf("%.2f", x.TTFTS/x.PredictedS)
		}
		thr := fmt.Sprint(x.ComputeThreads)
		if x.CopyThreads > 0 {
			thr += fmt.Sprintf(" + %d copy", x.CopyThreads)
		}
		body = append(body, []string{x.Policy, fmt.Sprint(x.InputSL), thr, ms(x.TTFTS), ms(x.PredictedS), ratio, ms(x.LinearS), ms(x.CopyS), ms(x.PreloadS), ms(x.WaitS),
			fmt.Sprintf("%.4g", float64(x.ResidentBytes)/1e6), fmt.Sprintf("%.4g", float64(x.RSSBytes)/1e6)})
	}
	if err := reports.MarkdownTable(w, []string{"policy", "input SL", "threads", "TTFT ms", "model ms", "measured/model", "linear ops ms", "copy ms", "preload ms", "wait ms",
		"resident weights MB", "VmRSS MB"}, body); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, pm := range r.Models {
		fmt.Fprintf(w, "- %s: FLOP/B %.4g (GEMM rate / read bandwidth); %s\n", pm.Policy, pm.Model.FLOPPerByte(), pm.Source)
	}
	if r.Crossover > 0 {
		fmt.Fprintf(w, "\nModel crossover (ddb's copy hidden under the GEMMs, GEMM(SL) ≥ online): SL ≈ %.4g tokens.\n", r.Crossover)
	}
	if r.CrossoverNC > 0 {
		fmt.Fprintf(w, "With a non-cacheable source modelled (one more weight pass at the probe's write_nt %.4g GB/s): SL ≈ %.4g tokens.\n", r.NTGBps, r.CrossoverNC)
	}
	fmt.Fprintln(w, "\nTimes are wall-clock on this machine as loaded when measured; ddb's compute runs on the threads its copy threads leave.")
	return nil
}

// threadsLabel says the threads each policy ran with, e.g. "threads:
// duplicate 2, owr 2, ddb 1 + 1 copy".
func threadsLabel(ms []Measured) string {
	var parts []string
	seen := map[string]bool{}
	for _, x := range ms {
		if seen[x.Policy] {
			continue
		}
		seen[x.Policy] = true
		t := fmt.Sprintf("%s %d", x.Policy, x.ComputeThreads)
		if x.CopyThreads > 0 {
			t += fmt.Sprintf(" + %d copy", x.CopyThreads)
		}
		parts = append(parts, t)
	}
	return "threads: " + strings.Join(parts, ", ")
}

// provenance is the machine and the date a figure was measured on.
func provenance() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	return host + ", " + time.Now().Format("2006-01-02")
}
