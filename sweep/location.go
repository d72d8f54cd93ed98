package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// LocationOptions are the inputs of CoreLocation (Sandwich Fig. 3):
// `bench topo --measure`.
type LocationOptions struct {
	// Model, Layers and Seed: synthetic fp32 weights (ResolveWeights).
	Model  string
	Layers int
	Seed   uint64
	// PromptTokens is the prompt prefilled, GenTokens the decode steps
	// timed after it; Reps the timed repetitions per experiment (median
	// kept), after one untimed warm-up.
	PromptTokens, GenTokens, Reps int
	// Experiments are the core-location experiments, the first the
	// all-cores reference (topotree.Locations, converted by the command);
	// one with NotApplicable set is listed, not run.
	Experiments []LocationRun
	// Machine gives the predictions (nil: none).
	Machine *roofline.Machine
	// Out is the directory of corelocation.md, corelocation.json and the
	// figure ("": the Markdown goes to W only).
	Out     string
	Figures reports.FigureOptions
	W, Log  io.Writer
	Context context.Context
}

// LocationRun is one core-location experiment and what it measured.
type LocationRun struct {
	Name          string `json:"name"`
	Spec          string `json:"spec"`
	CPUs          []int  `json:"cpus,omitempty"`
	Idle          []int  `json:"idle,omitempty"`
	NotApplicable string `json:"not_applicable,omitempty"`
	Threads       int    `json:"threads,omitempty"`
	// Decode and prefill tokens per second (median of Reps) and relative
	// to the all-cores run; the roofline's, likewise (0: none).
	DecodeTokS      float64 `json:"decode_tok_s,omitempty"`
	PrefillTokS     float64 `json:"prefill_tok_s,omitempty"`
	DecodeRel       float64 `json:"decode_vs_all,omitempty"`
	PrefillRel      float64 `json:"prefill_vs_all,omitempty"`
	PredDecodeTokS  float64 `json:"predicted_decode_tok_s,omitempty"`
	PredPrefillTokS float64 `json:"predicted_prefill_tok_s,omitempty"`
	PredDecodeRel   float64 `json:"predicted_decode_vs_all,omitempty"`
	PredPrefillRel  float64 `json:"predicted_prefill_vs_all,omitempty"`
}

// LocationResult is CoreLocation's table.
type LocationResult struct {
	Model        string        `json:"model"`
	Layers       int           `json:"layers"`
	PromptTokens int           `json:"prompt_tokens"`
	GenTokens    int           `json:"gen_tokens"`
	Reps         int           `json:"reps"`
	Machine      string        `json:"machine,omitempty"`
	Runs         []LocationRun `json:"experiments"`
	Notes        []string      `json:"notes,omitempty"`
	Files        []string      `json:"-"`
}

// CoreLocation runs Sandwich Fig. 3's core-location experiment on the
// engine: for each applicable experiment, a Model whose pool runs on the
// experiment's active CPUs only (its idle CPUs get no worker) prefills
// the prompt and decodes GenTokens steps, Reps times; the table gives
// decode and prefill tok/s, each relative to the all-cores run (the
// first experiment), with the roofline's prediction at the experiment's
// thread count (PredictPhases; the roofline has no notion of which cores
// are idle, only how many work). Markdown to W; with Out, also
// corelocation.md, corelocation.json and the figure (reports
// CoreLocationFigure), written atomically. Errors: bad options, the
// engine's, the context's.
func CoreLocation(o LocationOptions) (_ *LocationResult, err error) {
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.W == nil {
		o.W = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch {
	case len(o.Experiments) == 0 || o.Experiments[0].NotApplicable != "" || len(o.Experiments[0].CPUs) == 0:
		return nil, errors.New("core location: the first experiment must be the all-cores run")
	case o.PromptTokens < 1 || o.GenTokens < 1 || o.Reps < 1:
		return nil, fmt.Errorf("core location: prompt %d, decode steps %d, reps %d: each must be ≥ 1", o.PromptTokens, o.GenTokens, o.Reps)
	}
	w, full, wnotes, err := ResolveWeights(WeightSpec{Model: o.Model, Weights: "synthetic", Layers: o.Layers, Seed: o.Seed,
		PromptTokens: o.PromptTokens, GenTokens: o.GenTokens + 1})
	if err != nil {
		return nil, fmt.Errorf("core location: %w", err)
	}
	cfg := w.Config
	if n := o.PromptTokens + o.GenTokens + 1; n > cfg.MaxSeq {
		return nil, fmt.Errorf("core location: prompt + decode steps %d: more than model %s's %d positions", n, cfg.Name, cfg.MaxSeq)
	}
	r := &LocationResult{Model: cfg.Name, Layers: cfg.Layers, PromptTokens: o.PromptTokens, GenTokens: o.GenTokens, Reps: o.Reps, Notes: wnotes}
	if cfg.Layers < full {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of the model's %d layers instantiated", cfg.Layers, full))
	}
	if o.Machine != nil {
		r.Machine = o.Machine.Name
	}
	defer func() {
		if err != nil {
			for _, f := range r.Files {
				os.Remove(f)
			}
		}
	}()
	rng := rand.New(rand.NewPCG(o.Seed, 0x10ca7e))
	prompt := make([]int, o.PromptTokens)
	for i := range prompt {
		prompt[i] = rng.IntN(cfg.Vocab)
	}
	for _, e := range o.Experiments {
		if err := o.Context.Err(); err != nil {
			return nil, err
		}
		if e.NotApplicable == "" {
			fmt.Fprintf(o.Log, "core location: %s on CPUs %s, %d reps\n", e.Name, topology.FormatCPUList(e.CPUs), o.Reps)
			if err := measureLocation(&o, w, prompt, &e); err != nil {
				return nil, fmt.Errorf("core location: %s: %w", e.Name, err)
			}
		}
		r.Runs = append(r.Runs, e)
	}
	base := r.Runs[0]
	for i := range r.Runs {
		e := &r.Runs[i]
		if e.NotApplicable != "" {
			continue
		}
		rel := func(v, b float64) float64 {
			if v > 0 && b > 0 {
				return v / b
			}
			return 0
		}
		e.DecodeRel, e.PrefillRel = rel(e.DecodeTokS, base.DecodeTokS), rel(e.PrefillTokS, base.PrefillTokS)
		e.PredDecodeRel, e.PredPrefillRel = rel(e.PredDecodeTokS, base.PredDecodeTokS), rel(e.PredPrefillTokS, base.PredPrefillTokS)
	}
	r.Notes = append(r.Notes, "each experiment runs on a pool of its active CPUs only (worker 0 on the first); the idle CPUs get no worker of this process",
		"the roofline predicts from the thread count alone: it cannot tell which cores are idle (Sandwich's point is that the location matters)")
	var md bytes.Buffer
	if err := writeLocationMarkdown(&md, r); err != nil {
		return nil, err
	}
	if o.Out != "" {
		if err := writeLocationFiles(&o, r, &md); err != nil {
			return nil, err
		}
	}
	if _, err := o.W.Write(md.Bytes()); err != nil {
		return nil, err
	}
	return r, o.Context.Err()
}

// measureLocation measures e on a Model of e's CPUs: decode and prefill
// tok/s, the median of Reps, and the prediction at its threads.
func measureLocation(o *LocationOptions, w *engine.Weights, prompt []int, e *LocationRun) error {
	m, err := engine.New(w, engine.Options{Context: o.Context, PrefillCPUs: e.CPUs, DecodeCPUs: e.CPUs})
	if err != nil {
		return err
	}
	defer m.Close()
	e.Threads = m.PhaseThreads(engine.Decode)
	var dec, pre []float64
	for range o.Reps {
		ttft, tpot, err := MeasurePhaseTimes(m, [][]int{prompt}, o.GenTokens)
		if err != nil {
			return err
		}
		pre, dec = append(pre, float64(len(prompt))/ttft), append(dec, 1/tpot)
	}
	slices.Sort(dec)
	slices.Sort(pre)
	e.DecodeTokS, e.PrefillTokS = dec[len(dec)/2], pre[len(pre)/2]
	if o.Machine != nil {
		prec, _ := m.PredictionPrecision(o.Machine)
		if _, ttft, tpot, err := PredictPhases(o.Machine, m.Config, prec, 1, len(prompt), o.GenTokens, e.Threads, e.Threads); err == nil && ttft > 0 && tpot > 0 {
			e.PredPrefillTokS, e.PredDecodeTokS = float64(len(prompt))/ttft, 1/tpot
		}
	}
	return nil
}

func writeLocationMarkdown(w io.Writer, r *LocationResult) error {
	fmt.Fprintf(w, "## Core location (Sandwich Fig. 3): %s, %d layer(s), prompt %d, %d decode steps, median of %d\n\n",
		r.Model, r.Layers, r.PromptTokens, r.GenTokens, r.Reps)
	f := func(v float64) string {
		if v <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.4g", v)
	}
	var rows [][]string
	for _, e := range r.Runs {
		if e.NotApplicable != "" {
			rows = append(rows, []string{e.Name, "—", "—", "not applicable: " + e.NotApplicable, "", "", "", "", ""})
			continue
		}
		rows = append(rows, []string{e.Name, topology.FormatCPUList(e.CPUs), topology.FormatCPUList(e.Idle),
			f(e.DecodeTokS), f(e.DecodeRel), f(e.PredDecodeRel), f(e.PrefillTokS), f(e.PrefillRel), f(e.PredPrefillRel)})
	}
	if err := reports.MarkdownTable(w, []string{"experiment", "active CPUs", "idle CPUs", "decode tok/s", "vs all cores", "predicted vs all",
		"prefill tok/s", "vs all cores", "predicted vs all"}, rows); err != nil {
		return err
	}
	if r.Machine != "" {
		fmt.Fprintf(w, "\npredicted: roofline of %s at each experiment's thread count\n", r.Machine)
	} else {
		fmt.Fprintf(w, "\nno profile: no predictions\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	return nil
}

// LocationBars are r's applicable experiments as the figure's bars.
func (r *LocationResult) LocationBars() []reports.CoreLocationBar {
	var bars []reports.CoreLocationBar
	for _, e := range r.Runs {
		if e.NotApplicable == "" {
			bars = append(bars, reports.CoreLocationBar{Name: e.Name, Decode: e.DecodeRel, Prefill: e.PrefillRel,
				PredDecode: e.PredDecodeRel, PredPrefill: e.PredPrefillRel})
		}
	}
	return bars
}

func writeLocationFiles(o *LocationOptions, r *LocationResult, md *bytes.Buffer) error {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("core location: --out: %w", err)
	}
	host, _ := os.Hostname()
	title := fmt.Sprintf("Core location (Sandwich Fig. 3): %s, %d layer(s), synthetic fp32, prompt %d, %d decode steps, median of %d; %s, %s",
		r.Model, r.Layers, r.PromptTokens, r.GenTokens, r.Reps, host, time.Now().Format("2006-01-02"))
	fig, err := reports.CoreLocationFigure(r.LocationBars(), title)
	if err != nil {
		return fmt.Errorf("core location: %w", err)
	}
	base := filepath.Join(o.Out, "corelocation")
	files, err := o.Figures.Write(fig, base)
	if err != nil {
		return fmt.Errorf("core location: %w", err)
	}
	r.Files = append(r.Files, files...)
	fmt.Fprintf(md, "\n![tok/s relative to all cores per core-location experiment](%s)\n", filepath.Base(o.Figures.PrimaryPath(base)))
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("core location: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"corelocation.json", append(js, '\n')}, {"corelocation.md", md.Bytes()}} {
		p := filepath.Join(o.Out, f.name)
		if err := results.WriteFileAtomic(p, f.data, 0o644); err != nil {
			return fmt.Errorf("core location: %w", err)
		}
		r.Files = append(r.Files, p)
	}
	return nil
}
