package layouts

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/affinity"
)

// tinyConfig writes a small Llama config.json for the TTFT experiment.
func tinyConfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "tiny.json")
	js := `{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
	"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 80,
	"max_position_embeddings": 64, "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": false, "hidden_act": "silu"}`
	if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunNoMeasure: Table 2 at FLOP/B 4 and the capacity table, printed.
func TestRunNoMeasure(t *testing.T) {
	var out bytes.Buffer
	r, err := Run(Options{NoMeasure: true, CapacityModels: []string{"llama-3.2-1b"}, W: &out})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"| 16       | 4t   | 1t   | 3t     | 7t                | 175%", "llama-3.2-1b", "non-cacheable"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if len(r.Table2) != 8 || len(r.Capacity) != 1 || r.Measured != nil {
		t.Errorf("result %+v", r)
	}
}

// TestRunMeasured: a tiny model through every policy writes the report,
// JSON and figures, with a prediction for every point and a timeline.
func TestRunMeasured(t *testing.T) {
	cpus, err := affinity.Allowed()
	n := len(cpus)
	if err != nil {
		n = runtime.NumCPU()
	}
	pols := []engine.WeightLayout{engine.LayoutDuplicate, engine.LayoutOWR}
	gantt := engine.LayoutOWR
	if n >= 2 {
		pols, gantt = append(pols, engine.LayoutDDB), engine.LayoutDDB
	}
	dir := t.TempDir()
	var out bytes.Buffer
	r, err := Run(Options{CapacityModels: []string{"qwen3-0.6b"}, Model: tinyConfig(t), Layers: 2, Inputs: []int{1, 4, 16}, Reps: 1,
		Policies: pols, Threads: min(n, 2), GanttPolicy: gantt, GanttTokens: 8, Out: dir, W: &out})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Measured) != 3*len(pols) || len(r.Models) != len(pols) || len(r.Trace) == 0 {
		t.Fatalf("%d measured, %d models, %d spans", len(r.Measured), len(r.Models), len(r.Trace))
	}
	for _, x := range r.Measured {
		if !(x.TTFTS > 0) || !(x.PredictedS > 0) {
			t.Errorf("%+v: want a measured and a predicted time", x)
		}
	}
	for _, f := range []string{"layout.md", "layout.json", "layout-capacity.png", "layout-ttft.png", "layout-timeline.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(out.String(), "measured/model") {
		t.Errorf("no TTFT table:\n%s", out.String())
	}
	// ddb ran on one compute thread, duplicate on two: duplicate is
	// measured again on one for the equal-compute comparison.
	if n >= 2 {
		if len(r.EqualThreads) != 3 || r.EqualThreads[0].ComputeThreads != 1 || r.EqualThreads[0].Policy != string(engine.LayoutDuplicate) {
			t.Errorf("equal-threads duplicate: %+v", r.EqualThreads)
		}
		if !strings.Contains(out.String(), "ddb against duplicate at equal compute threads") {
			t.Errorf("no equal-threads table:\n%s", out.String())
		}
	}
}

// TestRunErrors: bad options are one error line naming the value.
func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{FLOPPerByte: -1}, "--flop-per-byte -1"},
		{Options{CapacityDType: "int4"}, `--capacity-dtype "int4"`},
		{Options{Inputs: []int{0}}, "input length 0"},
		{Options{Reps: -2}, "--reps -2"},
		{Options{Policies: []engine.WeightLayout{"swap"}}, `--policies "swap"`},
		{Options{NoMeasure: true, CapacityModels: []string{"no-such-model"}}, "no-such-model"},
		{Options{Model: "no-such-model", CapacityModels: []string{"qwen3-0.6b"}}, "--model"},
		{Options{Layers: 99, CapacityModels: []string{"qwen3-0.6b"}}, "--layers 99"},
	} {
		_, err := Run(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line containing %q", tc.o, err, tc.want)
		}
	}
}

// TestRunStopped: a run whose context is done returns its error and leaves
// none of its files (the capacity figure is written before measuring).
func TestRunStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	var out bytes.Buffer
	_, err := Run(Options{CapacityModels: []string{"qwen3-0.6b"}, Model: tinyConfig(t), Layers: 1, Inputs: []int{1}, Reps: 1,
		Policies: []engine.WeightLayout{engine.LayoutOWR}, GanttPolicy: engine.LayoutOWR, Out: dir, W: &out, Context: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 || out.Len() != 0 {
		t.Errorf("left %d files, %d bytes of output", len(es), out.Len())
	}
}
