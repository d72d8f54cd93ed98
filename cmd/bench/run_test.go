package main

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const stories = "../../engine/testdata/stories260K/stories260K.bin"

func TestRunStories260K(t *testing.T) {
	code, out, errs := run(t, "run", "--weights", stories, "--prompt-tokens", "8", "--gen-tokens", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"TTFT (prefill of 8)", "TPOT (mean of 3 decode steps)", "decode tokens/s", "packing",
		"| decode  | q_proj", "| prefill | lm_head", "no profile: no prediction"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "instantiated") {
		t.Errorf("all layers run, yet the output speaks of instantiated layers:\n%s", out)
	}
}

func TestRunJSONWithProfile(t *testing.T) {
	code, out, errs := run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "4", "--gen-tokens", "2",
		"--profile", "../../results/testdata/profile-amd-epyc-2core-all-sections.json", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("--json is not one line:\n%s", out)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Layers != 2 || r.ModelLayers != 5 || r.PromptTokens != 4 || r.GenTokens != 2 || !(r.TTFTS > 0) || !(r.TPOTS > 0) ||
		r.PredictedTTFT == nil || r.PredictedTPOT == nil || r.Machine == "" {
		t.Errorf("result %+v", r)
	}
	seen := 0
	for _, op := range r.Ops {
		if op.PredictedS == nil || op.MeasuredPredicted == nil {
			t.Errorf("%s %s: no prediction", op.Phase, op.Op)
			continue
		}
		if op.Op == "down_proj" {
			seen++
			if !op.PerLayer || op.PredictedLayerS == nil || op.MeasuredLayerS != op.MeasuredS/2 {
				t.Errorf("%s down_proj: %+v", op.Phase, op)
			}
			if want := map[string]int{"prefill": 1, "decode": 2}[op.Phase]; op.Calls != want {
				t.Errorf("%s down_proj: %d calls, want %d", op.Phase, op.Calls, want)
			}
		}
	}
	if seen != 2 {
		t.Errorf("down_proj in %d phases, want 2", seen)
	}
}

func TestRunSyntheticQwen3(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("draws and packs a 151936×1024 LM head: minutes under -race (the purego pass runs it)")
	}
	code, out, errs := run(t, "run", "--model", "qwen3-0.6b", "--weights", "synthetic", "--layers", "1",
		"--prompt-tokens", "8", "--gen-tokens", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"qwen3-0.6b, synthetic weights", "layers: 1 of 28 instantiated", "TTFT", "TPOT",
		"| decode  | qk_norm", "measured/layer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--weights", stories, "--prompt-tokens", "0"}, "run: --prompt-tokens 0: must be ≥ 1"},
		{[]string{"run", "--weights", stories, "--gen-tokens", "-1"}, "run: --gen-tokens -1: must be ≥ 0"},
		{[]string{"run", "--weights", stories, "--layers", "-2"}, "run: --layers -2: must be ≥ 0"},
		{[]string{"run", "--weights", stories, "--layers", "9"}, "--layers 9: the model has 5"},
		{[]string{"run", "--weights", stories, "--model", "qwen3-0.6b"}, "run: --model qwen3-0.6b: not used with"},
		{[]string{"run"}, "run: --model: required with --weights synthetic"},
		{[]string{"run", "--weights", ""}, "run: --weights: must be synthetic"},
		{[]string{"run", "--model", "gpt-5"}, `model "gpt-5": not a shipped config`},
		{[]string{"run", "--model", "qwen3-30b-a3b"}, "pass --layers N"},
		{[]string{"run", "--weights", "nope.bin"}, "run: --weights: engine: open nope.bin"},
		{[]string{"run", "--weights", stories, "--prompt-tokens", "500"}, "more than the model's"},
		{[]string{"run", "--weights", stories, "--profile", "no-such-machine"}, "--profile no-such-machine"},
		{[]string{"run", "--weights", stories, "--batch", "0"}, "run: --batch 0: must be ≥ 1"},
		{[]string{"run", "--weights", stories, "--threads", "-1"}, "run: --threads -1"},
		{[]string{"run", "--weights", stories, "--placement", "gpu"}, `placement "gpu"`},
		{[]string{"run", "--weights", stories, "--placement", "auto"}, "--placement auto: needs --profile"},
		{[]string{"run", "--weights", stories, "--ablate", "speed"}, `--ablate "speed"`},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q, want it to contain %q", c.args, code, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: error is not one line: %q", c.args, errs)
		}
	}
}

// TestRunBatchPlacements: batched decode under each placement and the
// ablations runs and reports what it ran; with a profile, the speed checks
// are there.
func TestRunBatchPlacements(t *testing.T) {
	prof := "../../results/testdata/profile-amd-epyc-2core-all-sections.json"
	for _, args := range [][]string{
		{"--placement", "cores", "--profile", prof},
		{"--placement", "matrix"},
		{"--placement", "mixed", "--threads", "2", "--ablate", "packing"},
		{"--placement", "mixed", "--threads", "2", "--ablate", "partition"},
		{"--placement", "auto", "--profile", prof},
	} {
		if runtime.NumCPU() < 2 && slices.Contains(args, "mixed") {
			continue
		}
		a := append([]string{"run", "--weights", stories, "--prompt-tokens", "6", "--gen-tokens", "3", "--batch", "3", "--json"}, args...)
		code, out, errs := run(t, a...)
		if code != 0 {
			t.Fatalf("bench %v: exit %d: %s", a, code, errs)
		}
		var r runResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Batch != 3 || r.Placement != args[1] || !(r.DecodeTokS > 0) || r.Threads < 1 {
			t.Errorf("%v: %+v", args, r)
		}
		if args[1] == "mixed" && !strings.Contains(r.Backend, "+") {
			t.Errorf("%v: backend %q, want two", args, r.Backend)
		}
		if slices.Contains(args, "--profile") {
			var what []string
			for _, c := range r.Checks {
				what = append(what, c.What)
			}
			for _, want := range []string{"decode step vs memory-roof bound", "prefill q_proj (layer 0) vs standalone GEMM", "engine overhead outside operators, decode"} {
				if !slices.Contains(what, want) {
					t.Errorf("%v: checks %q lack %q", args, what, want)
				}
			}
		}
	}
}

// TestRunGGUF: --model FILE.gguf runs the file's weights; with --weights
// synthetic it takes only the file's shapes.
func TestRunGGUF(t *testing.T) {
	const gguf = "../../engine/testdata/stories260K/stories260K-f16.gguf"
	code, out, errs := run(t, "run", "--model", gguf, "--prompt-tokens", "4", "--gen-tokens", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Weights != gguf || r.Layers != 5 || !(r.TPOTS > 0) {
		t.Errorf("result %+v", r)
	}
	code, out, errs = run(t, "run", "--model", gguf, "--weights", "synthetic", "--prompt-tokens", "4", "--gen-tokens", "1", "--json")
	if code != 0 {
		t.Fatalf("synthetic: exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Weights != "synthetic" || r.Layers != 5 {
		t.Errorf("synthetic at the GGUF's shapes: %+v, %v", r, err)
	}
}
