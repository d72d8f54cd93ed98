package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
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
			if want := map[roofline.Phase]int{roofline.Prefill: 1, roofline.Decode: 2}[op.Phase]; op.Calls != want {
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
		{[]string{"run", "--weights", "nope.bin"}, "run: --weights nope.bin: no such file or directory"},
		{[]string{"run", "--weights", stories, "--prompt-tokens", "500"}, "more than the model's"},
		{[]string{"run", "--weights", stories, "--profile", "no-such-machine"}, "--profile no-such-machine"},
		{[]string{"run", "--weights", stories, "--batch", "0"}, "run: --batch 0: must be ≥ 1"},
		{[]string{"run", "--weights", stories, "--repeats", "0"}, "run: --repeats 0: must be ≥ 1"},
		{[]string{"run", "--weights", stories, "--repeats", "2", "--counters"}, "run: --repeats 2 with --counters"},
		{[]string{"run", "--weights", stories, "--threads", "-1"}, "run: --threads -1"},
		{[]string{"run", "--weights", stories, "--wait-placement", "-1s"}, "run: --wait-placement -1s: must be ≥ 0"},
		{[]string{"run", "--weights", stories, "--wait-placement", "soon"}, `invalid argument "soon" for "--wait-placement"`},
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
		{"--placement", "cores", "--ablate", "kv-packing"},
		{"--placement", "cores", "--ablate", "pipeline"},
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

// tinyQwen3Config writes a small Qwen3 config.json (every matrix's input
// dim a multiple of 32, so that q8_0 and q4_0 take it) and returns its path.
func tinyQwen3Config(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny-qwen3.json")
	cfg := `{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
		"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 96,
		"max_position_embeddings": 64, "rope_theta": 1000000, "rms_norm_eps": 1e-06, "tie_word_embeddings": true}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunWeightDType: --weight-dtype q4_0 and q8_0 run synthetic weights
// quantized end to end, say what ran (format, quant backend, resident
// bytes), predict with the format's bytes, and refuse placements that
// cannot run them; a bad dtype is one error line naming it.
func TestRunWeightDType(t *testing.T) {
	model := tinyQwen3Config(t)
	prof := "../../results/testdata/profile-amd-epyc-2core-all-sections.json"
	var bytesPer = map[string]int64{}
	for _, dt := range []string{"fp32", "q8_0", "q4_0"} {
		code, out, errs := run(t, "run", "--model", model, "--weights", "synthetic", "--weight-dtype", dt, "--layers", "2",
			"--prompt-tokens", "6", "--gen-tokens", "2", "--batch", "2", "--profile", prof, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", dt, code, errs)
		}
		var r runResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		bytesPer[dt] = r.WeightBytes
		if r.WeightDType != dt || r.Layers != 2 || r.ModelLayers != 3 || !(r.TPOTS > 0) || r.PredictedTPOT == nil ||
			!strings.Contains(r.Precision, "weights "+dt) || (dt != "fp32") != (r.QuantBackend != "") {
			t.Errorf("%s: %+v", dt, r)
		}
		var roof string
		for _, c := range r.Checks {
			if c.What == "decode step vs memory-roof bound" {
				roof = c.Detail
			}
		}
		if !strings.Contains(roof, dt+" weights + KV per step") {
			t.Errorf("%s: roof check %q", dt, roof)
		}
		// Eq. 4 from a second, bf16 decode of the same steps: every figure
		// measured, the bound the formula at them.
		if a := r.Amdahl; (dt == "fp32") != (a == nil) {
			t.Errorf("%s: amdahl %+v", dt, a)
		} else if a != nil && (!(a.Alpha > 0 && a.Alpha <= 1 && a.X > 0 && a.Measured > 0) || a.X != a.GEMVBF16S/a.GEMVS ||
			a.Bound != roofline.AmdahlSpeedup(a.Alpha, a.X) || !strings.Contains(a.Reference, "bf16")) {
			t.Errorf("%s: amdahl %+v", dt, a)
		}
	}
	// fp32 holds a raw and a packed copy (8 bytes per weight); the
	// quantized formats their packed blocks, plus the fp32 embedding table.
	if !(bytesPer["q4_0"] < bytesPer["q8_0"] && bytesPer["q8_0"] < bytesPer["fp32"]/3) {
		t.Errorf("resident bytes %v", bytesPer)
	}
	code, out, errs := run(t, "run", "--model", model, "--weight-dtype", "q4_0", "--prompt-tokens", "4", "--gen-tokens", "1", "--profile", "none")
	if code != 0 {
		t.Fatalf("tables: exit %d: %s", code, errs)
	}
	for _, want := range []string{"weights: q4_0 (kernels/quant backend ", "activations quantized to int8 per 32-element block as llama.cpp does",
		"MB resident", "| decode  | q_proj", "| prefill | lm_head", "Amdahl bound (low-bit GEMV paper Eq. 4), measured: the same 1 decode steps",
		"- α = ", "- x = ", "measured GEMV speedup of q4_0 over bf16 weights", "- bound s = 1/((1−α) + α/x) = ", "measured end-to-end decode speedup"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// stories260K's w2 matrices have a K that is not a multiple of 32: they
	// stay fp32 and the run says so (engine.Quantize, as llama.cpp does).
	if code, out, errs := run(t, "run", "--weights", stories, "--weight-dtype", "q8_0", "--prompt-tokens", "4", "--gen-tokens", "1", "--profile", "none", "--amdahl=false"); code != 0 || !strings.Contains(out, "kept fp32, K not a multiple of the block length 32") {
		t.Errorf("stories260K q8_0: exit %d %s\n%s", code, errs, out)
	}
	if code, out, _ := run(t, "run", "--model", model, "--weight-dtype", "q4_0", "--prompt-tokens", "4", "--gen-tokens", "1", "--profile", "none", "--amdahl=false"); code != 0 || strings.Contains(out, "Amdahl") {
		t.Errorf("--amdahl=false: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--weight-dtype", "q3_k"}, `run: --weight-dtype: engine: weight dtype "q3_k": want fp32, q8_0, q4_0`},
		{[]string{"--weight-dtype", "q4_0", "--placement", "mixed", "--threads", "2"},
			"engine: placement mixed with q4_0 weights: not supported (quantized weights run on the cores' quant backend)"},
		{[]string{"--weight-dtype", "q8_0", "--ablate", "packing"}, "ablation packing with q8_0 weights: not supported"},
	} {
		a := append([]string{"run", "--model", model, "--prompt-tokens", "4", "--gen-tokens", "1", "--profile", "none"}, c.args...)
		code, _, errs := run(t, a...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: exit %d, stderr %q, want one line containing %q", a, code, errs, c.want)
		}
	}
}

// A llama2.c checkpoint whose FFN down projection has K = 172 runs at
// q8_0: that matrix stays fp32 (as llama.cpp's quantizer falls back) and
// the output says so.
func TestRunQuantizeKeepsOddK(t *testing.T) {
	code, out, errs := run(t, "run", "--weights", stories, "--weight-dtype", "q8_0", "--prompt-tokens", "8", "--gen-tokens", "4", "--threads", "1", "--amdahl=false")
	if code != 0 || !strings.Contains(out+errs, "kept fp32, K not a multiple of the block length 32") || !strings.Contains(out+errs, "w2 (5 matrices)") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestRunKVDType: --kv-dtype bf16 runs with a bf16 KV cache and says so
// (JSON kv_dtype, the prediction's precision, the note); a bad dtype, or
// bf16 with the kv-packing ablation, is one error line naming it.
func TestRunKVDType(t *testing.T) {
	model := tinyQwen3Config(t)
	prof := "../../results/testdata/profile-amd-epyc-2core-all-sections.json"
	code, out, errs := run(t, "run", "--model", model, "--layers", "2", "--prompt-tokens", "6", "--gen-tokens", "2", "--batch", "2",
		"--kv-dtype", "bf16", "--profile", prof, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.KVDType != "bf16" || !strings.Contains(r.Precision, "KV cache bf16") || !strings.Contains(strings.Join(r.Notes, "\n"), "KV cache: bf16 panels") {
		t.Errorf("kv dtype %q, precision %q, notes %q", r.KVDType, r.Precision, r.Notes)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kv-dtype", "fp16"}, `"fp16"`},
		{[]string{"--kv-dtype", "bf16", "--ablate", "kv-packing"}, "kv-packing"},
	} {
		args := append([]string{"run", "--model", model, "--layers", "1", "--prompt-tokens", "4", "--gen-tokens", "1", "--profile", "none"}, c.args...)
		code, _, errs := run(t, args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want one line naming %s", c.args, code, errs, c.want)
		}
	}
}

// A run on fewer threads than the profile's workers is predicted at its
// own threads (the cores target scaled), and says so: its predicted TTFT
// is longer than the all-thread run's, with the same profile.
func TestRunPredictsAtRunThreads(t *testing.T) {
	ttft := map[string]float64{}
	for _, th := range []string{"1", "2"} {
		code, out, errs := run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "8", "--gen-tokens", "1", "--threads", th,
			"--profile", "../../results/testdata/profile-amd-epyc-2core-all-sections.json", "--json")
		if code != 0 {
			t.Fatalf("--threads %s: exit %d: %s", th, code, errs)
		}
		var r runResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.PredictedTTFT == nil {
			t.Fatalf("--threads %s: no prediction", th)
		}
		ttft[th] = *r.PredictedTTFT
		noted := strings.Contains(strings.Join(r.Notes, "\n"), "predicted at the run's 1 threads")
		if noted != (th == "1") {
			t.Errorf("--threads %s: note of the scaled prediction %v: %q", th, noted, r.Notes)
		}
	}
	if !(ttft["1"] > ttft["2"]) {
		t.Errorf("predicted TTFT at 1 thread %v, at 2 %v: want the 1-thread one longer", ttft["1"], ttft["2"])
	}
}

// --repeats N times N requests and keeps, per operator, the median
// request's time with the range: the median lies within the range, the
// operators still sum to the phases, and TTFT is the median request's.
func TestRunRepeats(t *testing.T) {
	code, out, errs := run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "4", "--gen-tokens", "2", "--repeats", "3",
		"--profile", "../../results/testdata/profile-amd-epyc-2core-all-sections.json", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Repeats != 3 || !(r.TTFTS > 0) || !(r.TPOTS > 0) {
		t.Errorf("repeats %d, TTFT %v, TPOT %v", r.Repeats, r.TTFTS, r.TPOTS)
	}
	for _, c := range r.Checks {
		if c.What == "engine overhead outside operators, decode" && !(c.RefS >= 0 && c.RefS < c.MeasuredS) {
			t.Errorf("decode time outside the operators %v of %v: want within [0, wall)", c.RefS, c.MeasuredS)
		}
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "3 timed requests") }) {
		t.Errorf("no note on the repeats: %q", r.Notes)
	}
	for _, op := range r.Ops {
		if op.MeasuredMinS == nil || op.MeasuredMaxS == nil {
			t.Errorf("%s %s: no range", op.Phase, op.Op)
			continue
		}
		if !(*op.MeasuredMinS <= op.MeasuredS && op.MeasuredS <= *op.MeasuredMaxS) || !(*op.MeasuredMinS > 0) {
			t.Errorf("%s %s: median %v outside its range [%v, %v]", op.Phase, op.Op, op.MeasuredS, *op.MeasuredMinS, *op.MeasuredMaxS)
		}
		if op.Calls != 1 && op.Phase == roofline.Prefill {
			t.Errorf("%s %s: %d calls in one request's prefill", op.Phase, op.Op, op.Calls)
		}
	}
}

func TestMedianTimings(t *testing.T) {
	tm := func(phase roofline.Phase, op string, layer int, s float64) engine.Timing {
		return engine.Timing{Phase: phase, Op: op, Layer: layer, Seconds: s, Calls: 1}
	}
	// Three requests: q_proj's layer sums 3, 9 and 5 (median: request 2's
	// entries); embed 4, 1, 2 (median: request 2's).
	reqs := [][]engine.Timing{
		{tm(roofline.Prefill, "embed", -1, 4), tm(roofline.Prefill, "q_proj", 0, 1), tm(roofline.Prefill, "q_proj", 1, 2)},
		{tm(roofline.Prefill, "embed", -1, 1), tm(roofline.Prefill, "q_proj", 0, 4), tm(roofline.Prefill, "q_proj", 1, 5)},
		{tm(roofline.Prefill, "embed", -1, 2), tm(roofline.Prefill, "q_proj", 1, 3), tm(roofline.Prefill, "q_proj", 0, 2)},
	}
	ts, rng := medianTimings(reqs)
	got := map[string]float64{}
	for _, x := range ts {
		got[fmt.Sprint(x.Op, x.Layer)] = x.Seconds
	}
	want := map[string]float64{"embed-1": 2, "q_proj0": 2, "q_proj1": 3}
	if !maps.Equal(got, want) {
		t.Errorf("median request's entries %v, want %v", got, want)
	}
	if r := rng[[2]string{"prefill", "q_proj"}]; r != [2]float64{3, 9} {
		t.Errorf("q_proj range %v, want [3 9]", r)
	}
	// Two requests: the mean of the two, entry by entry.
	ts, _ = medianTimings(reqs[:2])
	if ts[1].Seconds != 2.5 || ts[2].Seconds != 3.5 || ts[0].Seconds != 2.5 {
		t.Errorf("two requests: %+v", ts)
	}
	if ts, rng := medianTimings(reqs[:1]); len(ts) != 3 || rng != nil {
		t.Errorf("one request: %v, range %v", ts, rng)
	}
	if m := results.Summarize([]float64{3, 1, 2}).Median; m != 2 {
		t.Errorf("median %v", m)
	}
}

// TestUninterrupted: per operator, the median over requests of its time
// less its interrupted calls' excess, summed over layers, and its
// interrupted calls over every request; the line names the operators that
// had any.
func TestUninterrupted(t *testing.T) {
	tm := func(layer int, s, excess float64, calls int) engine.Timing {
		return engine.Timing{Phase: roofline.Decode, Op: "attn_norm", Layer: layer, Seconds: s, Calls: 8,
			InterruptedCalls: calls, InterruptedSeconds: excess}
	}
	reqs := [][]engine.Timing{
		{tm(0, 20e-6, 0, 0), tm(1, 100e-6, 80e-6, 1)}, // 40 µs uninterrupted
		{tm(0, 22e-6, 0, 0), tm(1, 20e-6, 0, 0)},      // 42
		{tm(0, 90e-6, 70e-6, 2), tm(1, 24e-6, 0, 0)},  // 44
	}
	med, calls := uninterrupted(reqs)
	k := [2]string{"decode", "attn_norm"}
	if math.Abs(med[k]-42e-6) > 1e-12 || calls[k] != 3 {
		t.Errorf("uninterrupted %v s, %d calls; want 42 µs, 3", med[k], calls[k])
	}
	u := med[k]
	ops := []runOp{{Phase: roofline.Decode, Op: "attn_norm", MeasuredS: 66e-6, UninterruptedS: &u, InterruptedCalls: 3},
		{Phase: roofline.Decode, Op: "rope", MeasuredS: 30e-6}}
	l := interruptedLine(ops)
	if !strings.Contains(l, "decode attn_norm 3 (24 µs of 66 µs)") || strings.Contains(l, "rope") {
		t.Errorf("line %q; want attn_norm's 3 calls, 24 µs of 66 µs, and no rope", l)
	}
	if ops[0].compared() != u || ops[1].compared() != 30e-6 {
		t.Errorf("compared %v, %v; want the uninterrupted 42 µs and rope's measured 30 µs", ops[0].compared(), ops[1].compared())
	}
	if interruptedLine(ops[1:]) != "" {
		t.Errorf("a line for no interrupted call")
	}
}
