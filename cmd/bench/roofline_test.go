package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/roofline"
)

func runRoofline(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errw bytes.Buffer
	code := Execute(append([]string{"roofline"}, args...), strings.NewReader(""), &out, &errw)
	return code, out.String(), errw.String()
}

func TestRooflineDecodeTable(t *testing.T) {
	code, out, errs := runRoofline(t, "--profile", "m4-pro", "--model", "qwen3-0.6b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"## qwen3-0.6b on m4-pro: decode B=1 T=1 C=1024",
		"| cores  | cores  | 1.85 TFLOP/s | 247 GB/s  | 7.49",
		"| sme    | matrix | 2.92 TFLOP/s | 224 GB/s  | 13.04",
		"qk_norm", "memory-bound", "model: one decode step",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Every table row is a valid Markdown row: no stray separators.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| dense") && strings.Count(line, "|") != 13 {
			t.Errorf("bad row (%d bars): %s", strings.Count(line, "|"), line)
		}
	}
}

func TestRooflinePrefillJSONAndPNG(t *testing.T) {
	dir := t.TempDir()
	js, pngPath := filepath.Join(dir, "a.json"), filepath.Join(dir, "a.png")
	code, out, errs := runRoofline(t, "--profile", "m4-pro", "--model", "llama-3.2-1b", "--phase", "prefill",
		"--tokens", "1024", "--json", js, "--png", pngPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "compute-bound | mixed (N: sme") {
		t.Errorf("prefill FFN not mixed:\n%s", out)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var a roofline.Analysis
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Request.Context != 1024 || len(a.Layers) != 1 || a.Model.Time <= 0 || a.Model.Times["cores"] <= a.Model.Time {
		t.Errorf("json: %+v %+v", a.Request, a.Model)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Error(err)
	}
}

func TestRooflineJSONStdout(t *testing.T) {
	code, out, errs := runRoofline(t, "--profile", "lnl", "--model", "llama-3.2-1b", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var a roofline.Analysis
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if !strings.Contains(strings.Join(a.Notes, "\n"), "no measured compute ceiling") {
		t.Errorf("notes: %v", a.Notes)
	}
}

func TestRooflineSweep(t *testing.T) {
	code, out, errs := runRoofline(t, "--profile", "m4-pro", "--model", "llama-3.2-3b", "--sweep", "batch=1..64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"| dense | gate_proj | 8        | memory-bound (cores) | ridge-crossing (sme)  |",
		"| dense | gate_proj | 14       | ridge-crossing (sme) | compute-bound (mixed) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sweep lacks %q:\n%s", want, out)
		}
	}
}

func TestRooflineProfileFiles(t *testing.T) {
	dir := t.TempDir()
	machine := filepath.Join(dir, "m.json")
	os.WriteFile(machine, []byte(`{"schema":"bench.machine/v1","name":"box","targets":[
		{"name":"cores","kind":"cores","ceilings_gflops":{"fp16":1000},"bandwidth_gbps":100,"tile":{"m":8,"n":16}},
		{"name":"amx","kind":"matrix","ceilings_gflops":{"fp16":4000},"bandwidth_gbps":90,"tile":{"m":16,"n":32}},
		{"name":"both","kind":"mixed","ceilings_gflops":{"fp16":4500},"bandwidth_gbps":100,"components":["amx","cores"]}],
		"roofs":[{"level":"L2","gbps":800}],"nonlinear":{"gelems_per_s":5}}`), 0o644)
	code, out, errs := runRoofline(t, "--profile", machine, "--model", "llama-3.2-1b", "--phase", "prefill", "--tokens", "300")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "| L2     | roof") || !strings.Contains(out, "both (N: amx 1632 + cores 416)") {
		t.Errorf("machine file output:\n%s", out)
	}
	profile := filepath.Join(dir, "profile.json")
	os.WriteFile(profile, []byte(`{"schema":"bench.profile/v1","host":"h","memory":{"levels":[
		{"level":"DRAM","kernel":"read","threads":4,"gbps":{"median":50,"n":3}}]}}`), 0o644)
	code, out, errs = runRoofline(t, "--profile", profile, "--model", "qwen3-0.6b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "no measured compute ceiling") || !strings.Contains(out, "no-ceiling") {
		t.Errorf("probe profile output:\n%s", out)
	}
}

func TestRooflineBadInput(t *testing.T) {
	dir := t.TempDir()
	badModel := filepath.Join(dir, "config.json")
	os.WriteFile(badModel, []byte(`{"hidden_size":512,"num_hidden_layers":2,"vocab_size":10}`), 0o644)
	badProfile := filepath.Join(dir, "p.json")
	os.WriteFile(badProfile, []byte(`{"schema":"bench.profile/v1","host":"h"}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "qwen3-0.6b"}, "roofline: --profile: required"},
		{[]string{"--profile", "m4-pro"}, "roofline: --model: required"},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--batch", "0"}, "roofline: --batch 0: must be ≥ 1"},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--tokens", "0"}, "roofline: --tokens 0: must be ≥ 1"},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--phase", "prefill", "--tokens", "512", "--context", "100"},
			"roofline: --context 100: must be ≥ --tokens 512"},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--phase", "train"}, `roofline: --phase "train"`},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--dtype", "fp7"}, `roofline: --dtype: dtype "fp7"`},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--routing", "zipf:-1"}, "roofline: --routing"},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--sweep", "beam=1..4"}, "roofline: --sweep"},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "--act-dtype", "fp32"}, "no compute ceiling for fp32 (has fp16)"},
		{[]string{"--profile", "m4-pro", "--model", badModel}, badModel + `: missing key "num_attention_heads"`},
		{[]string{"--profile", badProfile, "--model", "qwen3-0.6b"}, badProfile + `: missing key "memory"`},
		{[]string{"--profile", "m5-max", "--model", "qwen3-0.6b"}, "not a file, and no published profile"},
		{[]string{"--profile", "m4-pro", "--model", "gpt-5"}, `model "gpt-5": not a shipped config`},
		{[]string{"--profile", "m4-pro", "--model", "qwen3-0.6b", "extra"}, "unknown command"},
		{[]string{"--profile", "m4-pro", "--ebw-plot", filepath.Join(dir, "f.png")}, "roofline: --ebw-plot: machine m4-pro: no up-convert γ per core type"},
		{[]string{"--profile", "lnl", "--ebw-plot", filepath.Join(dir, "f.tiff")}, `roofline: --ebw-plot "`},
	} {
		code, _, errs := runRoofline(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}

// The options struct gets the phase defaults; RunE only validates.
func TestRooflineOptionDefaults(t *testing.T) {
	var got *rooflineOptions
	cmd := newCmdRoofline(IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(o *rooflineOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--profile", "m4-pro", "--model", "x", "--phase", "prefill"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Tokens != 512 || got.Context != 512 || got.routing.Kind != "uniform" {
		t.Errorf("prefill defaults: %+v", got)
	}
	cmd = newCmdRoofline(IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(o *rooflineOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--profile", "m4-pro", "--model", "x"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Tokens != 1 || got.Context != 1024 {
		t.Errorf("decode defaults: %+v", got)
	}
}

// `bench roofline --profile lnl --dtype int1` reproduces the low-bit GEMV
// paper's ≈37 GB/s modeled 1-bit total on LNL (§IV-B) and calls the GEMVs
// up-convert-bound; int2 gets the full 97 GB/s; --ebw-plot writes Fig. 4.
func TestRooflineLNLQuantRoof(t *testing.T) {
	code, out, errs := runRoofline(t, "--profile", "lnl", "--model", "meta-llama-3-8b", "--dtype", "int1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"int1 GEMV memory roof, low-bit GEMV paper Eq. 3 per core type (B = 4",
		"| P         | 4     | 4.1 | 3.18 (published) | 2.4", "| 6.36 ", "| 2.93 ", "int1 GEMV weight roof: 37.2 GB/s of 97 GB/s",
		"| gate_proj ", "up-convert-bound"} {
		if !strings.Contains(out, want) {
			t.Errorf("int1 output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runRoofline(t, "--profile", "lnl", "--model", "meta-llama-3-8b", "--dtype", "int2")
	if code != 0 || !strings.Contains(out, "int2 GEMV weight roof: 97 GB/s of 97 GB/s read bandwidth (100%)") || strings.Contains(out, "up-convert-bound") {
		t.Errorf("int2: exit %d %s\n%s", code, errs, out)
	}
	dir := t.TempDir()
	fig := filepath.Join(dir, "fig4.png")
	code, out, errs = runRoofline(t, "--profile", "lnl", "--ebw-plot", fig)
	if code != 0 || !strings.Contains(out, "| int1 | 37.2 GB/s |") {
		t.Fatalf("--ebw-plot: exit %d %s\n%s", code, errs, out)
	}
	f, err := os.Open(fig)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s: %v", fig, err)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "fig4.md")); err != nil || !strings.Contains(string(md), "![ebw per core against β per core](fig4.png)") {
		t.Errorf("fig4.md: %v\n%s", err, md)
	}
}

// TestRooflineDefaultActOnProbedProfile: a probed x86 profile has no fp16
// ceiling (no AVX512_FP16); the README's example must still work with the
// defaults, falling back to bf16 and saying so, while an explicit
// --act-dtype fp16 stays an error.
func TestRooflineDefaultActOnProbedProfile(t *testing.T) {
	dir := t.TempDir()
	machine := filepath.Join(dir, "m.json")
	os.WriteFile(machine, []byte(`{"schema":"bench.machine/v1","name":"zen","targets":[
		{"name":"cores","kind":"cores","ceilings_gflops":{"fp32":160,"bf16":300},"bandwidth_gbps":30,"tile":{"m":12,"n":32}}]}`), 0o644)
	code, out, errs := runRoofline(t, "--profile", machine, "--model", "qwen3-0.6b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "no fp16 compute ceiling; --act-dtype defaults to bf16") || !strings.Contains(out, "(ceilings at bf16)") {
		t.Errorf("stderr %q\nstdout:\n%s", errs, out)
	}
	if code, _, errs := runRoofline(t, "--profile", machine, "--model", "qwen3-0.6b", "--act-dtype", "fp16"); code == 0 || !strings.Contains(errs, "no compute ceiling for fp16") {
		t.Errorf("explicit fp16: exit %d, %q", code, errs)
	}
}

// TestRooflineNUMANodes: --numa-nodes prints the policies' predictions on
// the 4-node Kunpeng-920 beside ArcLight's published figures, and a
// machine without a NUMA matrix is one error line.
func TestRooflineNUMANodes(t *testing.T) {
	code, out, errs := runRoofline(t, "--profile", "kunpeng-920", "--model", "qwen3-4b", "--dtype", "q4_0", "--numa-nodes", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"threads spread over 4 node(s)", "| os ", "| interleave", "| tp         | b", "404", "published: ArcLight", "46%"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, _, errs = runRoofline(t, "--profile", "m4-pro", "--model", "qwen3-4b", "--numa-nodes", "2")
	if code == 0 || !strings.Contains(errs, "--numa-nodes: roofline: machine m4-pro has no NUMA matrix") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("m4-pro: exit %d, %q", code, errs)
	}
}
