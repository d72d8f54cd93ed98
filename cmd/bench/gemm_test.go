package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/results"
)

// parseGEMM runs the command's flag parsing and validation only.
func parseGEMM(t *testing.T, args ...string) (*GEMMOptions, error) {
	t.Helper()
	var got *GEMMOptions
	var out, errb bytes.Buffer
	cmd := newCmdGEMM(IO{In: strings.NewReader(""), Out: &out, Err: &errb}, func(_ context.Context, o *GEMMOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return got, err
}

func TestGEMMFlags(t *testing.T) {
	o, err := parseGEMM(t)
	if err != nil {
		t.Fatal(err)
	}
	best, _ := gemm.Best(gemm.FP32)
	if o.backend.Name != best.Name || o.N != 3072 || o.K != 3072 || len(o.M) != 5 || o.Reps != 5 {
		t.Errorf("defaults: %+v", o)
	}
	// A backend implies its dtype.
	bf, _ := gemm.Best(gemm.BF16)
	o, err = parseGEMM(t, "--backend", bf.Name)
	if err != nil || o.DType != "bf16" {
		t.Fatalf("--backend %s: dtype %v, err %v", bf.Name, o, err)
	}
	if runtime.NumCPU() >= 2 {
		o, err = parseGEMM(t, "--split", "1:1")
		if err != nil || o.splitA != 1 || o.splitB != 1 || o.backendB.DType != gemm.BF16 {
			t.Fatalf("--split 1:1: %+v, %v", o, err)
		}
	}
}

func TestGEMMFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"gemm", "--m", "0"}, "gemm: --m 0: must be ≥ 1"},
		{[]string{"gemm", "--m", "x"}, "--m"},
		{[]string{"gemm", "--n", "-3"}, "--n -3"},
		{[]string{"gemm", "--k", "0"}, "--k 0"},
		{[]string{"gemm", "--dtype", "fp8"}, `--dtype "fp8"`},
		{[]string{"gemm", "--backend", "mmx-fp32"}, "--backend mmx-fp32"},
		{[]string{"gemm", "--backend", "go-bf16", "--dtype", "fp32"}, "computes bf16 weights, not --dtype fp32"},
		{[]string{"gemm", "--threads", "0"}, "--threads 0"},
		{[]string{"gemm", "--threads", "999"}, "--threads 999: must be between 1 and"},
		{[]string{"gemm", "--reps", "0"}, "--reps 0"},
		{[]string{"gemm", "--rep-ms", "0"}, "--rep-ms 0"},
		{[]string{"gemm", "--split", "2"}, `--split "2"`},
		{[]string{"gemm", "--split", "1:0"}, `--split "1:0"`},
		{[]string{"gemm", "--split", "500:500"}, "--split 500:500"},
		{[]string{"gemm", "--backend-b", "go-bf16"}, "only with --split"},
		{[]string{"gemm", "--split", "1:1", "--pack-every-call"}, "--pack-every-call"},
		{[]string{"gemm", "--split", "1:1", "--threads", "1"}, "not with --split"},
		{[]string{"gemm", "--m", "1", "--n", "8", "--k", "8", "--profile", "/nonexistent/profile.json"}, "--profile /nonexistent/profile.json"},
		{[]string{"gemm", "--dtype", "q3_k"}, `--dtype "q3_k"`},
		{[]string{"gemm", "--dtype", "q8_0", "--backend", "go-fp32"}, "--dtype q8_0 needs a quantized backend"},
		{[]string{"gemm", "--dtype", "fp32,q8_0", "--backend", "go-fp32"}, "only with one --dtype"},
		{[]string{"gemm", "--backend", "mmx-q8_0"}, `backend "mmx": unknown`},
		{[]string{"gemm", "--backend", "go-q8_0", "--dtype", "q4_0"}, "computes q8_0 weights, not --dtype q4_0"},
		{[]string{"gemm", "--dtype", "q4_0", "--pack-every-call"}, "--pack-every-call: not with --dtype q4_0"},
		{[]string{"gemm", "--dtype", "q4_0", "--k", "40", "--m", "1"}, "multiple of 32"},
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

// A real run at a small shape: the table says no fraction without a
// profile, JSON lines decode as results.GEMMResult, a profile gives
// fractions of its ceilings, and pack-every-call is labelled.
func TestGEMMRun(t *testing.T) {
	small := []string{"gemm", "--m", "1,7,20", "--n", "40", "--k", "24", "--reps", "2", "--rep-ms", "1"}
	code, out, errs := run(t, small...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"GFLOP/s median", "packing ", "no profile: fraction not computed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = run(t, append(small, "--json", "--threads", "1")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d JSON lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var g results.GEMMResult
		if err := json.Unmarshal([]byte(l), &g); err != nil || g.GFLOPS.Median <= 0 || g.GFLOPS.N != 2 || g.N != 40 || g.Checksum == 0 {
			t.Errorf("line %s: %+v, %v", l, g, err)
		}
	}

	p := &results.Profile{Schema: results.SchemaV1, Host: "test", CreatedAt: time.Now(),
		Compute: &results.Compute{Peaks: []results.ComputePeak{{Kernel: "fake_fma_fp32", Precision: "fp32", Unit: "GFLOP/s", Threads: 1, Rate: results.Stat{Median: 1e6}}}},
		Memory:  &results.Memory{Levels: []results.LevelBandwidth{{Level: "DRAM", Kernel: "read", Threads: 1, WorkingSetBytes: 1 << 30, GBps: results.Stat{Median: 1e6}}}},
	}
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := results.WriteProfile(path, p); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, append(small, "--profile", path)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"compute ceiling fake_fma_fp32, 1 threads", "DRAM read roof, 1 threads"} {
		if !strings.Contains(out, want) {
			t.Errorf("--profile output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = run(t, append(small, "--pack-every-call")...)
	if code != 0 || !strings.Contains(out, "pack-every-call (SMEPilot §5.4 ablation)") {
		t.Errorf("--pack-every-call: exit %d %s\n%s", code, errs, out)
	}
}

// Quantized formats beside the float ones in one table, each backend named
// <backend>-<format>, the activation quantization stated, Y checked.
func TestGEMMQuantRun(t *testing.T) {
	code, out, errs := run(t, "gemm", "--m", "1,5", "--n", "37", "--k", "96", "--reps", "2", "--rep-ms", "1", "--dtype", "fp32,q8_0,q4_0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"-q8_0", "-q4_0", "activations quantized per 32-element block", "1.0625 B/weight", "0.5625 B/weight"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// M 20 ≥ quant.PrefillMinM: where the backend has a prefill path it
	// runs and is checked; --no-prefill runs the GEMV tiles and says so.
	code, out, errs = run(t, "gemm", "--m", "20", "--n", "70", "--k", "128", "--reps", "1", "--rep-ms", "1", "--dtype", "q4_0,int1")
	if code != 0 || (quant.Best().PrefillTileM > 0 && !strings.Contains(out, "column order")) {
		t.Errorf("M 20: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = run(t, "gemm", "--m", "20", "--n", "70", "--k", "128", "--reps", "1", "--rep-ms", "1", "--dtype", "q4_0", "--no-prefill")
	if code != 0 || !strings.Contains(out, "GEMV tiles at every M (--no-prefill)") {
		t.Errorf("--no-prefill: exit %d %s\n%s", code, errs, out)
	}
	code, out, errs = run(t, "gemm", "--m", "3", "--n", "8", "--k", "64", "--reps", "1", "--rep-ms", "1", "--backend", "go-q4_0", "--json")
	var g results.GEMMResult
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.Backend != "go-q4_0" || g.DType != "q4_0" || g.WeightGBps <= 0 {
		t.Fatalf("--backend go-q4_0 --json: exit %d %s\n%s", code, errs, out)
	}
}

func TestGEMMSplitRun(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	args := []string{"gemm", "--m", "1,30", "--n", "64", "--k", "24", "--reps", "2", "--rep-ms", "1", "--split", "1:1"}
	code, out, errs := run(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var s results.MatrixSplit
		if err := json.Unmarshal([]byte(l), &s); err != nil || s.Ratio <= 0 || s.BackendA == s.BackendB || s.Makespan.N != 2 {
			t.Errorf("line %s: %+v, %v", l, s, err)
		}
	}
	code, out, errs = run(t, args...)
	if code != 0 || !strings.Contains(out, "makespan/ideal") || !strings.Contains(out, "α chosen") {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
}

// --shapes measures each N×K in turn; --plot writes the Figs. 5–7 PNG (and,
// with --format pdf, a PDF beside it) and
// its table from the M = 1 rows; with a profile the quantized rows get a
// fraction of their ebw (matrix.quant_ebw, Eq. 3).
func TestGEMMShapesPlot(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "gemv.png")
	code, out, errs := run(t, "gemm", "--m", "1", "--shapes", "37x96,40x64", "--reps", "1", "--rep-ms", "1", "--dtype", "fp32,q8_0,int1", "--plot", plot, "--format", "pdf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"│ 1 │ 37 │ 96 │", "│ 1 │ 40 │ 64 │", "fraction of ebw", "wrote " + plot} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s: %v", plot, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "gemv.pdf")); err != nil || !bytes.HasPrefix(data, []byte("%PDF")) {
		t.Errorf("--format pdf: gemv.pdf: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "gemv.md"))
	if err != nil || !strings.Contains(string(md), "(gemv.png)") || !strings.Contains(string(md), "| shape N×K | fp32 GB/s | q8_0 GB/s | int1 GB/s |") || !strings.Contains(string(md), "| 40×64 |") {
		t.Errorf("gemv.md: %v\n%s", err, md)
	}
	p := &results.Profile{Schema: results.SchemaV1, Matrix: &results.Matrix{QuantEBW: []results.QuantEBW{{Format: "int1", Backend: "x-int1", GammaCycles: 8, ClockHz: 3e9,
		Points: []results.QuantEBWPoint{{Threads: 1, BetaBytesPerCycle: 9, EBWGBps: 12, Limit: results.LimitUpConvert}}}}}}
	if ebw, of, _ := gemvEBW(results.GEMMResult{DType: "int1", Backend: "x-int1", Threads: 1}, p, nil); ebw != 12 || !strings.Contains(of, "up-convert-bound") {
		t.Errorf("ebw %v %q", ebw, of)
	}
	if _, _, why := gemvEBW(results.GEMMResult{DType: "q4_0", Backend: "x-q4_0", Threads: 1}, p, nil); !strings.Contains(why, "no q4_0 ebw at 1 threads") {
		t.Errorf("why %q", why)
	}
	// Another backend's GEMV is not compared with x's γ; with its own
	// record, measured by the command, it is.
	y := results.GEMMResult{DType: "int1", Backend: "y-int1", Threads: 1}
	if ebw, _, why := gemvEBW(y, p, nil); ebw != 0 || !strings.Contains(why, "x-int1's, another up-convert sequence") {
		t.Errorf("y-int1 against x-int1's record: ebw %v, why %q", ebw, why)
	}
	mine := results.QuantEBW{Format: "int1", Backend: "y-int1", GammaCycles: 16, ClockHz: 3e9, GammaMethod: "measured beside the figures by this command (the profile has no γ of this backend): test",
		Points: []results.QuantEBWPoint{{Threads: 1, BetaBytesPerCycle: 9, EBWGBps: 6, Limit: results.LimitUpConvert}}}
	if ebw, of, _ := gemvEBW(y, p, []results.QuantEBW{mine}); ebw != 6 || !strings.Contains(of, "γ measured by this command") {
		t.Errorf("y-int1 with its own record: ebw %v, %q", ebw, of)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shapes", "37x"}, `gemm: --shapes: "37x": want NxK`},
		{[]string{"--shapes", "paper", "--n", "64"}, "gemm: --shapes paper: not with --n or --k"},
		{[]string{"--m", "4", "--plot", plot}, "needs M = 1 in --m"},
		{[]string{"--plot", filepath.Join(dir, "x.tiff")}, `gemm: --plot "`},
		{[]string{"--plot", plot, "--format", "png,tiff"}, `gemm: --format "tiff": want png, pdf or svg`},
		{[]string{"--plot", plot, "--width", "wide"}, `gemm: --width "wide": want column or page`},
	} {
		code, _, errs := run(t, append([]string{"gemm"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}
