package sweep

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/roofline"
)

func fixtureMachine(t *testing.T) *roofline.Machine {
	t.Helper()
	p := "../results/testdata/profile-amd-epyc-2core-all-sections.json"
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := roofline.ParseMachine(data, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var phaseTestConfig = engine.Config{Name: "tiny-phase", Dim: 128, Intermediate: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 300, MaxSeq: 96,
	RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true}

// TestRankConfigs: the candidates are ranked per phase by the roofline's
// time at their thread counts; prefill (compute-bound at T = 64) ranks
// the most threads first.
func TestRankConfigs(t *testing.T) {
	mach := fixtureMachine(t)
	prec := engine.Precision{Weight: "fp32", Act: "fp32", KV: "fp32", Ceiling: "fp32", VectorCeiling: "fp32", Target: roofline.KindCores}
	cands := []PhaseConfig{{Spec: "cpus=0", CPUs: []int{0}}, {Spec: "cpus=0-3", CPUs: []int{0, 1, 2, 3}}, {Spec: "cpus=0-1", CPUs: []int{0, 1}}}
	a, err := RankConfigs(mach, phaseTestConfig, prec, 1, 64, 8, cands, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a.Prefill[0].Spec != "cpus=0-3" || a.Prefill[2].Spec != "cpus=0" {
		t.Errorf("prefill ranking %v: want cpus=0-3 first and cpus=0 last", a.Prefill)
	}
	for _, l := range [][]PhaseTry{a.Prefill, a.Decode} {
		for i := 1; i < len(l); i++ {
			if l[i].PredictedS < l[i-1].PredictedS || l[i].Threads != len(l[i].CPUs) {
				t.Errorf("ranking %v: not ascending by prediction, or threads not the CPUs", l)
			}
		}
	}
	if _, err := RankConfigs(mach, phaseTestConfig, prec, 1, 64, 8, nil, 2); err == nil {
		t.Error("no candidates: no error")
	}
}

// TestAutoConfigsMeasure: with one configuration tried per phase, auto
// measures and chooses the predicted best, and leaves the Model on it.
func TestAutoConfigsMeasure(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Skip(err)
	}
	mach := fixtureMachine(t)
	w, err := engine.Synthetic(phaseTestConfig, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.New(w, engine.Options{PrefillCPUs: cpus, DecodeCPUs: cpus})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prec, _ := m.PredictionPrecision(mach)
	cands := []PhaseConfig{{Spec: "one", CPUs: cpus[:1]}}
	if len(cpus) > 1 {
		cands = append(cands, PhaseConfig{Spec: "all", CPUs: cpus})
	}
	a, err := RankConfigs(mach, phaseTestConfig, prec, 2, 16, 4, cands, 1)
	if err != nil {
		t.Fatal(err)
	}
	prompts := [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}}
	if err := a.Measure(m, prompts, 4); err != nil {
		t.Fatal(err)
	}
	if a.PrefillChoice != 0 || a.DecodeChoice != 0 || a.Prefill[0].MeasuredS == nil || a.Decode[0].MeasuredS == nil || a.DecodeSteps != 4 {
		t.Errorf("auto: choices %d, %d, measured %v %v, steps %d; want the predicted best (0, 0) measured over 4 steps",
			a.PrefillChoice, a.DecodeChoice, a.Prefill[0].MeasuredS, a.Decode[0].MeasuredS, a.DecodeSteps)
	}
	for i := 1; i < len(a.Prefill); i++ {
		if a.Prefill[i].MeasuredS != nil {
			t.Errorf("prefill rank %d measured with --configs-try 1", i+1)
		}
	}
	if m.PhaseThreads(roofline.Prefill) != a.Prefill[0].Threads || m.PhaseThreads(roofline.Decode) != a.Decode[0].Threads {
		t.Errorf("model left on %d/%d threads, want the choices' %d/%d", m.PhaseThreads(roofline.Prefill), m.PhaseThreads(roofline.Decode),
			a.Prefill[0].Threads, a.Decode[0].Threads)
	}
}

func phaseOptions() *Options {
	o := defaults(&bytes.Buffer{}, &bytes.Buffer{})
	o.Placement, o.ConfigsTry = "cores", 2
	o.ResolveConfig = func(spec string, c engine.Config) (PhaseConfig, error) {
		return PhaseConfig{Spec: spec, Label: spec, CPUs: []int{0}, Threads: 1}, nil
	}
	o.ConfigCandidates = func(engine.Config) ([]PhaseConfig, error) { return nil, nil }
	return o
}

// TestValidatePhases: the per-phase settings join the cells' keys and the
// job flags, and conflicting ones are one error line each.
func TestValidatePhases(t *testing.T) {
	o := phaseOptions()
	o.DecodeConfig = "remove(1,core)"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	cells, _, err := o.Cells()
	if err != nil {
		t.Fatal(err)
	}
	if k := cells[0].Key(); !strings.HasSuffix(k, "/prefill=all/decode=remove(1,core)") {
		t.Errorf("key %s: want the configurations at its end", k)
	}
	if a := strings.Join(o.args(false), " "); !strings.Contains(a, "--prefill-config all --decode-config remove(1,core)") || strings.Contains(a, "--threads") {
		t.Errorf("job flags %q: want the configurations and no --threads", a)
	}
	if a := strings.Join(o.args(false), " "); strings.Contains(a, "--wait-placement") {
		t.Errorf("job flags %q: --wait-placement without one", a)
	}
	o.WaitPlacement = time.Minute
	if a := strings.Join(o.args(false), " "); !strings.Contains(a, "--wait-placement 1m0s") {
		t.Errorf("job flags %q: want --wait-placement 1m0s (each job waits as the sweep would)", a)
	}
	for _, c := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Configs = "best" }, `sweep: --configs "best": the only value is auto`},
		{func(o *Options) { o.Configs, o.DecodeConfig = "auto", "all" }, "give it without --prefill-config"},
		{func(o *Options) { o.DecodeConfig, o.ThreadsGiven, o.Threads = "all", true, "1" }, "sweep: --threads 1: the per-phase configurations set the threads"},
		{func(o *Options) { o.DecodeConfig, o.Placement = "all", "cores,mixed" }, "sweep: --placement mixed: per-phase configurations run placement cores or matrix"},
		{func(o *Options) { o.Configs, o.Profile = "auto", "" }, "sweep: --configs auto: needs --profile"},
	} {
		o := phaseOptions()
		c.set(o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v: want one line with %q", err, c.want)
		}
	}
}

func tinyConfigPath(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny-qwen3.json")
	cfg := `{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 96,
		"max_position_embeddings": 64, "rope_theta": 1000000, "rms_norm_eps": 1e-06, "tie_word_embeddings": true}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCoreLocation: the experiment runs each applicable experiment on its
// CPUs, relates it to all cores, lists the others as not applicable and
// writes the Markdown, JSON and figure.
func TestCoreLocation(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 allowed CPUs (have %v, %v)", cpus, err)
	}
	dir := t.TempDir()
	var md bytes.Buffer
	r, err := CoreLocation(LocationOptions{Model: tinyConfigPath(t), Seed: 1, PromptTokens: 8, GenTokens: 2, Reps: 1,
		Machine: fixtureMachine(t), Out: dir, Figures: reports.FigureOptions{Formats: []string{"svg"}}, W: &md,
		Experiments: []LocationRun{{Name: "all cores", Spec: "all", CPUs: cpus},
			{Name: "idle-per-node", Spec: "idle-per-node", CPUs: cpus[:1], Idle: cpus[1:]},
			{Name: "idle-per-l3", Spec: "idle-per-l3", NotApplicable: "idle-per-l3: this tree has no l3 level"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 3 || r.Runs[0].DecodeRel != 1 || r.Runs[0].PredDecodeRel != 1 || r.Runs[1].Threads != 1 ||
		!(r.Runs[1].DecodeRel > 0) || !(r.Runs[1].PredPrefillRel > 0) || r.Runs[2].DecodeTokS != 0 {
		t.Errorf("runs %+v", r.Runs)
	}
	for _, want := range []string{"| idle-per-l3 ", "not applicable: idle-per-l3: this tree has no l3 level", "corelocation.svg"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, f := range []string{"corelocation.md", "corelocation.json", "corelocation.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := CoreLocation(LocationOptions{Model: "x", PromptTokens: 1, GenTokens: 1, Reps: 1,
		Experiments: []LocationRun{{Name: "x", NotApplicable: "no"}}}); err == nil || !strings.Contains(err.Error(), "all-cores") {
		t.Errorf("no all-cores run: %v", err)
	}
}
