package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/models"
	"github.com/cpubench/bench/roofline"
)

func init() { subcommands = append(subcommands, newRunCmd) }

// runOptions are the flag values of `bench run` plus its IO.
type runOptions struct {
	IO IO

	Model        string
	Weights      string
	Layers       int
	PromptTokens int
	GenTokens    int
	Profile      string
	Seed         uint64
	JSON         bool
}

// runPrecision is the dtype of the engine's weights, activations and KV
// cache, and so the ceilings the prediction uses.
const runPrecision = "fp32"

func newRunCmd(streams IO) *cobra.Command { return newCmdRun(streams, nil) }

// newCmdRun builds the command; tests pass runF to capture the options.
func newCmdRun(streams IO, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "run --model M --weights synthetic|FILE.bin [--layers N] [--prompt-tokens T] [--gen-tokens G] [--profile P]",
		Short: "Run the engine's forward pass: TTFT, TPOT and per-operator times against the roofline",
		Long: `Builds a model in the engine (fp32 weights packed once for the best gemm
backend), prefills --prompt-tokens seeded random token ids in one call, then
decodes --gen-tokens tokens greedily, one at a time. Reports TTFT (the
prefill's seconds, with the first token's argmax), TPOT (mean seconds per
decode step), tokens/s of both phases, the packing time, and per operator
and phase: calls, measured seconds summed over the layers run and per
layer, and with --profile the roofline's predicted seconds for the same
shapes at fp32 (decode summed over each step's context) and measured /
predicted.

--weights synthetic draws N(0, 0.02) weights (norms 1) at the exact shapes
of --model: a shipped config (` + strings.Join(models.Names(), ", ") + `)
or a HuggingFace config.json path; dense models only. A shipped config's
RoPE θ and RMSNorm ε are not exposed by package models, so they take
timing-neutral defaults (θ 1e6, ε 1e-6; no RoPE scaling). --weights FILE.bin
reads a llama2.c checkpoint, whose config is in the file (no --model).
--layers N instantiates only the first N decoder layers (0: all); times are
then for N layers and the per-layer columns say what one layer costs.
--profile is a profile.json, a bench.machine/v1 file or a published profile.`,
		Example: `  bench run --weights engine/testdata/stories260K/stories260K.bin --prompt-tokens 64 --gen-tokens 32
  bench run --model qwen3-0.6b --weights synthetic --layers 2 --prompt-tokens 128 --gen-tokens 16 --profile results/host/profile.json
  bench run --model llama-3.2-1b --layers 1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Model, "model", "", "model for synthetic weights: shipped config name or path to a HuggingFace config.json")
	f.StringVar(&opts.Weights, "weights", "synthetic", "synthetic, or the path of a llama2.c checkpoint (.bin)")
	f.IntVar(&opts.Layers, "layers", 0, "decoder layers to instantiate (0: all)")
	f.IntVar(&opts.PromptTokens, "prompt-tokens", 128, "prompt tokens prefilled in one call (T)")
	f.IntVar(&opts.GenTokens, "gen-tokens", 32, "tokens decoded greedily after the prefill (G)")
	f.StringVar(&opts.Profile, "profile", "", "machine for the predicted times: profile.json, bench.machine/v1 file or published profile name")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the synthetic weights and the prompt's token ids")
	f.BoolVar(&opts.JSON, "json", false, "print one JSON object instead of tables")
	return cmd
}

// validate checks flag values only; it reads no files.
func (o *runOptions) validate(cmd *cobra.Command) error {
	switch {
	case o.Weights == "":
		return errors.New("run: --weights: must be synthetic or a llama2.c checkpoint path")
	case o.Weights == "synthetic" && o.Model == "":
		return errors.New("run: --model: required with --weights synthetic (one of " + strings.Join(models.Names(), ", ") + ", or a config.json path)")
	case o.Weights != "synthetic" && cmd.Flags().Changed("model"):
		return fmt.Errorf("run: --model %s: not used with --weights %s (a llama2.c checkpoint carries its config)", o.Model, o.Weights)
	case o.Layers < 0:
		return fmt.Errorf("run: --layers %d: must be ≥ 0 (0: all)", o.Layers)
	case o.PromptTokens < 1:
		return fmt.Errorf("run: --prompt-tokens %d: must be ≥ 1", o.PromptTokens)
	case o.GenTokens < 0:
		return fmt.Errorf("run: --gen-tokens %d: must be ≥ 0", o.GenTokens)
	}
	return nil
}

// runOp is one operator's measured and predicted time in one phase.
type runOp struct {
	Phase string `json:"phase"`
	Op    string `json:"op"`
	// PerLayer is true for decoder-layer operators (false for embed,
	// final_norm, lm_head).
	PerLayer bool `json:"per_layer"`
	// Calls is the forward calls that ran the operator (per layer).
	Calls int `json:"calls"`
	// MeasuredS is summed over calls and over the layers run.
	MeasuredS         float64  `json:"measured_s"`
	MeasuredLayerS    float64  `json:"measured_per_layer_s,omitempty"`
	PredictedS        *float64 `json:"predicted_s,omitempty"`
	PredictedLayerS   *float64 `json:"predicted_per_layer_s,omitempty"`
	MeasuredPredicted *float64 `json:"measured_over_predicted,omitempty"`
}

// runResult is the JSON object of `bench run --json`.
type runResult struct {
	Model         string   `json:"model"`
	Weights       string   `json:"weights"`
	Seed          uint64   `json:"seed"`
	Backend       string   `json:"backend"`
	Layers        int      `json:"layers"`
	ModelLayers   int      `json:"model_layers"`
	PromptTokens  int      `json:"prompt_tokens"`
	GenTokens     int      `json:"gen_tokens"`
	TTFTS         float64  `json:"ttft_s"`
	TPOTS         float64  `json:"tpot_s,omitempty"`
	PrefillTokS   float64  `json:"prefill_tokens_per_s"`
	DecodeTokS    float64  `json:"decode_tokens_per_s,omitempty"`
	PackS         float64  `json:"pack_s"`
	Profile       string   `json:"profile,omitempty"`
	Machine       string   `json:"machine,omitempty"`
	PredictedTTFT *float64 `json:"predicted_ttft_s,omitempty"`
	PredictedTPOT *float64 `json:"predicted_tpot_s,omitempty"`
	Ops           []runOp  `json:"operators"`
	Notes         []string `json:"notes,omitempty"`
}

// runWeights builds the weights the options ask for, and the model's full
// layer count.
func runWeights(o *runOptions) (*engine.Weights, int, []string, error) {
	var notes []string
	if o.Weights != "synthetic" {
		w, err := engine.LoadLlama2C(o.Weights)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--weights: %w", err)
		}
		full := w.Config.Layers
		if o.Layers > full {
			return nil, 0, nil, fmt.Errorf("--layers %d: the model has %d", o.Layers, full)
		}
		if o.Layers > 0 {
			w.Layers = w.Layers[:o.Layers]
			w.Config.Layers = o.Layers
		}
		return w, full, notes, nil
	}
	var cfg engine.Config
	if _, err := os.Stat(o.Model); err == nil || strings.ContainsAny(o.Model, `/\`) {
		data, err := os.ReadFile(o.Model)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
		if cfg, err = engine.FromHF(data, o.Model); err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
	} else {
		mc, err := models.Load(o.Model)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
		ex := engine.HFExtras{RoPETheta: 1e6, RMSEps: 1e-6, MaxSeq: o.PromptTokens + o.GenTokens}
		if cfg, err = engine.FromModel(mc, ex); err != nil {
			return nil, 0, nil, fmt.Errorf("--model: %w", err)
		}
		notes = append(notes, "shipped config: RoPE θ 1e6 and RMSNorm ε 1e-6 are defaults (package models does not carry them); they do not change the timings")
	}
	if o.Layers > cfg.Layers {
		return nil, 0, nil, fmt.Errorf("--layers %d: model %s has %d", o.Layers, cfg.Name, cfg.Layers)
	}
	w, err := engine.Synthetic(cfg, o.Layers, o.Seed)
	if err != nil {
		return nil, 0, nil, err
	}
	return w, cfg.Layers, notes, nil
}

// runArch is the roofline architecture of an engine config.
func runArch(c engine.Config) roofline.Arch {
	return roofline.Arch{Name: c.Name, Hidden: c.Dim, Intermediate: c.Hidden, Layers: c.Layers, Heads: c.Heads,
		KVHeads: c.KVHeads, HeadDim: c.HeadDim, Vocab: c.Vocab, QKNorm: c.QKNorm, TiedEmbeddings: c.TiedEmbeddings}
}

// runPredict adds the roofline's predicted seconds of every operator, per
// phase, for the layers run: one prefill of T tokens, and G decode steps at
// contexts T+1..T+G. It returns the predicted prefill and mean decode step.
func runPredict(m *roofline.Machine, arch roofline.Arch, T, G int) (map[[2]string]float64, float64, float64, error) {
	pred := map[[2]string]float64{}
	add := func(phase string, tokens, context int) (float64, error) {
		r := roofline.Request{Phase: phase, Batch: 1, Tokens: tokens, Context: context,
			Weight: runPrecision, Act: runPrecision, KV: runPrecision, Routing: roofline.Routing{Kind: "uniform"}}
		a, err := roofline.Analyze(m, arch, r, runPrecision)
		if err != nil {
			return 0, err
		}
		for _, l := range a.Layers {
			for _, p := range l.Ops {
				pred[[2]string{phase, p.Name}] += p.Time * float64(l.Count)
			}
		}
		for _, p := range a.Head {
			pred[[2]string{phase, p.Name}] += p.Time
		}
		return a.Model.Time, nil
	}
	ttft, err := add(roofline.Prefill, T, T)
	if err != nil {
		return nil, 0, 0, err
	}
	var dec float64
	for i := 1; i <= G; i++ {
		t, err := add(roofline.Decode, 1, T+i)
		if err != nil {
			return nil, 0, 0, err
		}
		dec += t
	}
	if G > 0 {
		dec /= float64(G)
	}
	return pred, ttft, dec, nil
}

func runRun(o *runOptions) error {
	var machine *roofline.Machine
	if o.Profile != "" {
		var err error
		if machine, err = loadMachine(o.Profile); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	w, full, notes, err := runWeights(o)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	c := w.Config
	T, G := o.PromptTokens, o.GenTokens
	if T+G > c.MaxSeq {
		return fmt.Errorf("run: --prompt-tokens %d + --gen-tokens %d: more than the model's %d positions", T, G, c.MaxSeq)
	}
	m, err := engine.New(w, engine.Options{})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	s, err := m.NewSession(T + G)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x70c5))
	prompt := make([]int, T)
	for i := range prompt {
		prompt[i] = rng.IntN(c.Vocab)
	}
	// One untimed warm-up request (prefill + one decode step) first, so the
	// figures exclude first-touch page faults and cold caches; then reset
	// the KV cache and the operator timers.
	if wl, err := s.Prefill(prompt); err != nil {
		return fmt.Errorf("run: warm-up prefill: %w", err)
	} else if G > 0 {
		if _, err := s.Decode(engine.Argmax(wl)); err != nil {
			return fmt.Errorf("run: warm-up decode: %w", err)
		}
	}
	s.Reset()
	s.ResetTimings()
	notes = append(notes, "timed after one untimed warm-up request (prefill + 1 decode step)")
	start := time.Now()
	logits, err := s.Prefill(prompt)
	if err != nil {
		return fmt.Errorf("run: prefill: %w", err)
	}
	tok := engine.Argmax(logits)
	ttft := time.Since(start).Seconds()
	var decode float64
	for i := range G {
		start = time.Now()
		if logits, err = s.Decode(tok); err != nil {
			return fmt.Errorf("run: decode step %d: %w", i+1, err)
		}
		tok = engine.Argmax(logits)
		decode += time.Since(start).Seconds()
	}

	res := runResult{Model: c.Name, Weights: o.Weights, Seed: o.Seed, Backend: m.Backend.Name, Layers: c.Layers,
		ModelLayers: full, PromptTokens: T, GenTokens: G, TTFTS: ttft, PrefillTokS: float64(T) / ttft,
		PackS: m.PackSeconds, Notes: notes}
	if G > 0 {
		res.TPOTS = decode / float64(G)
		res.DecodeTokS = float64(G) / decode
	}
	if c.Layers < full {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of the model's %d layers instantiated: times are for %d layer(s); per-layer columns are one layer", c.Layers, full, c.Layers))
	}
	var pred map[[2]string]float64
	if machine != nil {
		var pt, pd float64
		if pred, pt, pd, err = runPredict(machine, runArch(c), T, G); err != nil {
			return fmt.Errorf("run: --profile %s: %w", o.Profile, err)
		}
		res.Profile, res.Machine, res.PredictedTTFT = o.Profile, machine.Name, &pt
		if G > 0 {
			res.PredictedTPOT = &pd
		}
	} else {
		res.Notes = append(res.Notes, "no profile: no prediction (pass --profile)")
	}

	idx := map[[2]string]int{}
	for _, t := range s.Timings() {
		k := [2]string{t.Phase, t.Op}
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
	for i := range res.Ops {
		op := &res.Ops[i]
		if op.PerLayer {
			op.MeasuredLayerS = op.MeasuredS / float64(c.Layers)
		}
		p, ok := pred[[2]string{op.Phase, op.Op}]
		if !ok {
			continue
		}
		op.PredictedS = &p
		if op.PerLayer {
			pl := p / float64(c.Layers)
			op.PredictedLayerS = &pl
		}
		if p > 0 {
			r := op.MeasuredS / p
			op.MeasuredPredicted = &r
		}
	}

	if o.JSON {
		data, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		_, err = o.IO.Out.Write(append(data, '\n'))
		return err
	}
	return writeRun(o.IO.Out, &res)
}

func writeRun(w io.Writer, r *runResult) error {
	fmt.Fprintf(w, "## %s, %s weights (seed %d), backend %s: prompt %d tokens, %d generated greedily\n\n",
		r.Model, r.Weights, r.Seed, r.Backend, r.PromptTokens, r.GenTokens)
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
	t := newMarkdown(w, "metric", "measured", "predicted")
	t.Append([]string{fmt.Sprintf("TTFT (prefill of %d)", r.PromptTokens), fmtTime(r.TTFTS), opt(r.PredictedTTFT, fmtTime)})
	if r.GenTokens > 0 {
		t.Append([]string{fmt.Sprintf("TPOT (mean of %d decode steps)", r.GenTokens), fmtTime(r.TPOTS), opt(r.PredictedTPOT, fmtTime)})
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
	if r.Machine != "" {
		fmt.Fprintf(w, "predicted: roofline of %s at %s\n\n", r.Machine, runPrecision)
	}
	t = newMarkdown(w, "phase", "operator", "calls", "measured", "measured/layer", "predicted", "predicted/layer", "measured/predicted")
	for _, op := range r.Ops {
		ml := "—"
		if op.PerLayer {
			ml = fmtTime(op.MeasuredLayerS)
		}
		t.Append([]string{op.Phase, op.Op, fmt.Sprint(op.Calls), fmtTime(op.MeasuredS), ml,
			opt(op.PredictedS, fmtTime), opt(op.PredictedLayerS, fmtTime), opt(op.MeasuredPredicted, ratio)})
	}
	if err := t.Render(); err != nil {
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
