package numabench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
	"github.com/cpubench/bench/sweep"
)

// Options are what `bench numa` runs.
type Options struct {
	// Model is a shipped config name or a config.json path; Layers the
	// decoder layers instantiated (0: all); Seed the synthetic weights'.
	Model  string
	Layers int
	Seed   uint64
	// PromptTokens is the prompt prefilled (ArcLight §4: 15; A.2: 300),
	// GenTokens the decode steps timed after it (ArcLight: 256).
	PromptTokens, GenTokens int
	// Threads are the thread counts (nil: 1, 2, 4, … and every allowed
	// CPU).
	Threads []int
	// Policies are the NUMA policies (nil: os, interleave, local, tp);
	// Syncs tp's synchronization modes (nil: a and b); TPDegree tp's
	// groups (0: one per NUMA node of the threads).
	Policies []engine.NUMAPolicy
	Syncs    []engine.SyncMode
	TPDegree int
	// Reps is the timed repetitions per configuration (0: 3), after one
	// untimed warm-up.
	Reps int
	// Machine is the profile the predictions come from (nil: none).
	Machine *roofline.Machine
	// Out is the directory of numa.md, numa.json and the figure ("": no
	// files; the Markdown goes to W only).
	Out     string
	Figures reports.FigureOptions
	// W receives the Markdown, Log the progress lines.
	W, Log  io.Writer
	Context context.Context
}

// Point is one configuration's measurement.
type Point struct {
	Policy  string `json:"policy"`
	Sync    string `json:"sync,omitempty"`
	TP      int    `json:"tp_degree,omitempty"`
	Threads int    `json:"threads"`
	CPUs    []int  `json:"cpus,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
	// NotRun says why the configuration did not run ("" when it did).
	NotRun string `json:"not_run,omitempty"`
	// Decode and prefill tokens per second: median of Reps, min and max.
	DecodeTokS    float64 `json:"decode_tok_s,omitempty"`
	DecodeMinTokS float64 `json:"decode_min_tok_s,omitempty"`
	DecodeMaxTokS float64 `json:"decode_max_tok_s,omitempty"`
	PrefillTokS   float64 `json:"prefill_tok_s,omitempty"`
	PrefillMin    float64 `json:"prefill_min_tok_s,omitempty"`
	PrefillMax    float64 `json:"prefill_max_tok_s,omitempty"`
	// Predicted tokens per second (0: no prediction) and what model gave
	// them.
	PredDecodeTokS  float64 `json:"predicted_decode_tok_s,omitempty"`
	PredPrefillTokS float64 `json:"predicted_prefill_tok_s,omitempty"`
	PredModel       string  `json:"prediction_model,omitempty"`
	Backend         string  `json:"backend,omitempty"`

	prec engine.Precision // what ran, for the prediction
}

// Result is a run's points and notes.
type Result struct {
	Model        string   `json:"model"`
	Layers       int      `json:"layers"`
	PromptTokens int      `json:"prompt_tokens"`
	GenTokens    int      `json:"gen_tokens"`
	Reps         int      `json:"reps"`
	Machine      string   `json:"machine,omitempty"`
	Nodes        int      `json:"numa_nodes"`
	Points       []Point  `json:"points"`
	Notes        []string `json:"notes,omitempty"`
	Files        []string `json:"-"`
}

func (o *Options) defaults() error {
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.W == nil {
		o.W = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Reps == 0 {
		o.Reps = 3
	}
	if o.PromptTokens == 0 {
		o.PromptTokens = 15
	}
	if o.GenTokens == 0 {
		o.GenTokens = 32
	}
	switch {
	case o.Reps < 1:
		return fmt.Errorf("numa: --reps %d: must be ≥ 1", o.Reps)
	case o.PromptTokens < 1:
		return fmt.Errorf("numa: --prompt-tokens %d: must be ≥ 1", o.PromptTokens)
	case o.GenTokens < 1:
		return fmt.Errorf("numa: --gen-tokens %d: must be ≥ 1", o.GenTokens)
	case o.Layers < 0:
		return fmt.Errorf("numa: --layers %d: must be ≥ 0 (0: all)", o.Layers)
	}
	if len(o.Policies) == 0 {
		o.Policies = engine.NUMAPolicies()
	}
	if len(o.Syncs) == 0 {
		o.Syncs = []engine.SyncMode{engine.SyncA, engine.SyncB}
	}
	allowed := len(allowedCPUs())
	if len(o.Threads) == 0 {
		for t := 1; t < allowed; t *= 2 {
			o.Threads = append(o.Threads, t)
		}
		o.Threads = append(o.Threads, allowed)
	}
	for _, t := range o.Threads {
		if t < 1 || t > allowed {
			return fmt.Errorf("numa: --threads %d: want 1..%d (the CPUs this process may run on)", t, allowed)
		}
	}
	return nil
}

// allowedCPUs are the CPUs this process may run on.
func allowedCPUs() []int {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		return []int{0}
	}
	return cpus
}

// nodeOf maps CPUs to NUMA nodes from the live topology (nil when it
// cannot be read: every CPU is then node 0).
func nodeOf() map[int]int {
	t, err := topology.ReadTopology(topology.LiveRoots())
	if err != nil {
		return nil
	}
	m := map[int]int{}
	for _, n := range t.Nodes {
		for _, c := range n.CPUs {
			m[c] = n.ID
		}
	}
	return m
}

func nodesOf(cpus []int, nodes map[int]int) int {
	seen := map[int]bool{}
	for _, c := range cpus {
		seen[nodes[c]] = true
	}
	return max(len(seen), 1)
}

// Run measures every policy (and tp sync mode) at every thread count and
// writes the table, the figure and the JSON. A stopped or failed run
// leaves none of its files.
func Run(o Options) (_ *Result, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w, full, wnotes, err := sweep.ResolveWeights(sweep.WeightSpec{Model: o.Model, Weights: "synthetic", Layers: o.Layers, Seed: o.Seed,
		PromptTokens: o.PromptTokens, GenTokens: o.GenTokens + 1})
	if err != nil {
		return nil, fmt.Errorf("numa: %w", err)
	}
	cfg := w.Config
	layers := cfg.Layers
	if n := o.PromptTokens + o.GenTokens + 1; n > cfg.MaxSeq {
		return nil, fmt.Errorf("numa: --prompt-tokens + --gen-tokens %d: more than model %s's %d positions", n, cfg.Name, cfg.MaxSeq)
	}
	r := &Result{Model: cfg.Name, Layers: layers, PromptTokens: o.PromptTokens, GenTokens: o.GenTokens, Reps: o.Reps, Notes: wnotes}
	if layers < full {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of the model's %d layers instantiated", layers, full))
	}
	defer func() {
		if err != nil {
			for _, f := range r.Files {
				os.Remove(f)
			}
		}
	}()
	nodes := nodeOf()
	r.Nodes = nodesOf(allowedCPUs(), nodes)
	if o.Machine != nil {
		r.Machine = o.Machine.Name
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0xa7c1))
	prompt := make([]int, o.PromptTokens)
	for i := range prompt {
		prompt[i] = rng.IntN(cfg.Vocab)
	}
	for _, pol := range o.Policies {
		syncs := []engine.SyncMode{""}
		if pol == engine.NUMATP {
			syncs = o.Syncs
		}
		for _, s := range syncs {
			for _, t := range o.Threads {
				if err := o.Context.Err(); err != nil {
					return nil, err
				}
				fmt.Fprintf(o.Log, "numa: %s%s, %d thread(s), %d reps\n", pol, syncLabel(s), t, o.Reps)
				p, err := measure(&o, w, prompt, pol, s, t, nodes)
				if err != nil {
					return nil, err
				}
				predict(&o, r, cfg, &p)
				r.Points = append(r.Points, p)
			}
		}
	}
	if r.Nodes == 1 {
		r.Notes = append(r.Notes, "one NUMA node here: the policies place memory on the same node, so they differ only by their own costs (tp's Scatter/Gather and barriers); the speedups ArcLight reports need 2 or 4 nodes (bench roofline --numa-nodes N predicts them from a profile's NUMA matrix)")
	}
	var md bytes.Buffer
	if err := writeMarkdown(&md, r); err != nil {
		return nil, err
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, fmt.Errorf("numa: --out: %w", err)
		}
		fig, err := figure(r)
		if err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
		files, err := o.Figures.Write(fig, filepath.Join(o.Out, "numa-threads"))
		if err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
		r.Files = append(r.Files, files...)
		fmt.Fprintf(&md, "\n![decode and prefill tok/s vs threads per NUMA policy](%s)\n", filepath.Base(o.Figures.PrimaryPath(filepath.Join(o.Out, "numa-threads"))))
		js, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
		for _, f := range []struct {
			name string
			data []byte
		}{{"numa.json", append(js, '\n')}, {"numa.md", md.Bytes()}} {
			p := filepath.Join(o.Out, f.name)
			if err := results.WriteFileAtomic(p, f.data, 0o644); err != nil {
				return nil, fmt.Errorf("numa: %w", err)
			}
			r.Files = append(r.Files, p)
		}
	}
	if _, err := o.W.Write(md.Bytes()); err != nil {
		return nil, err
	}
	return r, o.Context.Err()
}

func syncLabel(s engine.SyncMode) string {
	if s == "" {
		return ""
	}
	return " sync " + strings.ToUpper(string(s))
}

// measure builds the model under one policy and thread count and times
// Reps requests (prefill of the prompt, then GenTokens greedy decode
// steps; sweep.MeasurePhaseTimes, each after an untimed warm-up). A policy the engine refuses is a
// Point with NotRun; a stopped context is an error.
func measure(o *Options, w *engine.Weights, prompt []int, pol engine.NUMAPolicy, s engine.SyncMode, threads int, nodes map[int]int) (Point, error) {
	p := Point{Policy: string(pol), Sync: string(s), Threads: threads}
	eo := engine.Options{Threads: threads, NUMA: pol, Sync: s, Context: o.Context}
	if pol == engine.NUMATP {
		eo.TPDegree = o.TPDegree
		p.TP = o.TPDegree
	}
	m, err := engine.New(w, eo)
	if err != nil {
		if cerr := o.Context.Err(); cerr != nil {
			return p, cerr
		}
		p.NotRun = err.Error()
		return p, nil
	}
	defer m.Close()
	p.CPUs, p.Backend = m.CPUs(), m.Backends()
	p.Nodes = nodesOf(p.CPUs, nodes)
	var pre, dec []float64
	for range o.Reps {
		ttft, tpot, err := sweep.MeasurePhaseTimes(m, [][]int{prompt}, o.GenTokens)
		if err != nil {
			return p, fmt.Errorf("numa: %s%s, %d thread(s): %w", pol, syncLabel(s), threads, err)
		}
		pre, dec = append(pre, float64(len(prompt))/ttft), append(dec, 1/tpot)
	}
	if o.Machine != nil {
		p.prec, _ = m.PredictionPrecision(o.Machine)
	}
	p.PrefillTokS, p.PrefillMin, p.PrefillMax = medianMinMax(pre)
	p.DecodeTokS, p.DecodeMinTokS, p.DecodeMaxTokS = medianMinMax(dec)
	return p, nil
}

func medianMinMax(x []float64) (med, lo, hi float64) {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

// predict fills the point's prediction: on one node the engine's
// per-operator model at the threads that ran (the same for every policy),
// on several nodes roofline.NUMAPredict for its policy over the nodes its
// CPUs span (decode only).
func predict(o *Options, r *Result, cfg engine.Config, p *Point) {
	if o.Machine == nil || p.NotRun != "" {
		return
	}
	c := cfg
	c.Layers = r.Layers
	if p.Nodes <= 1 {
		_, ttft, tpot, err := sweep.PredictPhases(o.Machine, c, p.prec, 1, o.PromptTokens, o.GenTokens, p.Threads, p.Threads)
		if err != nil || ttft <= 0 || tpot <= 0 {
			return
		}
		p.PredPrefillTokS, p.PredDecodeTokS = float64(o.PromptTokens)/ttft, 1/tpot
		p.PredModel = "roofline per operator at the threads that ran (one node)"
		return
	}
	rq := roofline.Request{Phase: roofline.Decode, Batch: 1, Tokens: 1, Context: o.PromptTokens + o.GenTokens/2,
		Weight: "fp32", Act: "fp32", KV: "fp32", Routing: roofline.Routing{Kind: "uniform"}}
	ps, _, err := o.Machine.NUMAPredict(c.Arch(), rq, "fp32", p.Nodes)
	if err != nil {
		return
	}
	for _, x := range ps {
		if x.Policy == p.Policy && x.Sync == p.Sync {
			p.PredDecodeTokS = x.TokPerS
			p.PredModel = fmt.Sprintf("roofline.NUMAPredict over %d nodes (whole decode step at the policy's roof)", p.Nodes)
		}
	}
}

func label(p Point) string {
	s := p.Policy
	if p.Sync != "" {
		s += " sync " + strings.ToUpper(p.Sync)
	}
	return s
}

func writeMarkdown(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "## NUMA policies: %s, %d layer(s), prompt %d, %d decode steps, median of %d (ArcLight §4, Figs. 9–13)\n\n",
		r.Model, r.Layers, r.PromptTokens, r.GenTokens, r.Reps)
	var rows [][]string
	f := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.4g", v)
	}
	for _, p := range r.Points {
		if p.NotRun != "" {
			rows = append(rows, []string{label(p), fmt.Sprint(p.Threads), "-", "not run: " + p.NotRun, "", "", "", ""})
			continue
		}
		rows = append(rows, []string{label(p), fmt.Sprint(p.Threads), topology.FormatCPUList(p.CPUs) + fmt.Sprintf(" (%d node(s))", p.Nodes),
			fmt.Sprintf("%s (%s–%s)", f(p.DecodeTokS), f(p.DecodeMinTokS), f(p.DecodeMaxTokS)), f(p.PredDecodeTokS),
			fmt.Sprintf("%s (%s–%s)", f(p.PrefillTokS), f(p.PrefillMin), f(p.PrefillMax)), f(p.PredPrefillTokS), p.Backend})
	}
	if err := reports.MarkdownTable(w, []string{"policy", "threads", "CPUs", "decode tok/s (min–max)", "predicted", "prefill tok/s (min–max)", "predicted", "backend"}, rows); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	return nil
}

// figure draws decode and prefill tok/s against threads, one line per
// policy (and tp sync mode), predictions dashed (Figs. 10–13).
func figure(r *Result) (reports.Figure, error) {
	panel := func(title string, meas func(Point) (float64, float64, float64), pred func(Point) float64) reports.OpPanel {
		pn := reports.OpPanel{Title: title, XLabel: "threads", YLabel: "tokens/s", LogX: true}
		var order []string
		by := map[string]*[2]reports.OpSeries{}
		for _, p := range r.Points {
			if p.NotRun != "" {
				continue
			}
			l := label(p)
			s, ok := by[l]
			if !ok {
				s = &[2]reports.OpSeries{{Label: l, Group: l}, {Label: l + " (predicted)", Group: l, Predicted: true}}
				by[l] = s
				order = append(order, l)
			}
			y, lo, hi := meas(p)
			s[0].X, s[0].Y, s[0].Lo, s[0].Hi = append(s[0].X, float64(p.Threads)), append(s[0].Y, y), append(s[0].Lo, lo), append(s[0].Hi, hi)
			if v := pred(p); v > 0 {
				s[1].X, s[1].Y = append(s[1].X, float64(p.Threads)), append(s[1].Y, v)
			}
		}
		for _, l := range order {
			pn.Series = append(pn.Series, by[l][0])
			if len(by[l][1].X) > 0 {
				pn.Series = append(pn.Series, by[l][1])
			}
		}
		return pn
	}
	dec := panel("decode (Figs. 10, 11)", func(p Point) (float64, float64, float64) { return p.DecodeTokS, p.DecodeMinTokS, p.DecodeMaxTokS },
		func(p Point) float64 { return p.PredDecodeTokS })
	pre := panel("prefill (Fig. 13)", func(p Point) (float64, float64, float64) { return p.PrefillTokS, p.PrefillMin, p.PrefillMax },
		func(p Point) float64 { return p.PredPrefillTokS })
	host, _ := os.Hostname()
	header := fmt.Sprintf("%s, %d layer(s), synthetic fp32, prompt %d, %d decode steps, median of %d, bars min–max; %d NUMA node(s); %s, %s",
		r.Model, r.Layers, r.PromptTokens, r.GenTokens, r.Reps, r.Nodes, host, time.Now().Format("2006-01-02"))
	return reports.OpSweepFigure([]reports.OpPanel{dec, pre}, 2, header)
}
