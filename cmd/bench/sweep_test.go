package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/workloads"
)

func TestSweepFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--workloads", "gsm8k,mmlu"}, `unknown workload "mmlu"`},
		{[]string{"--models", "qwen9-1b", "--dry-run"}, `model "qwen9-1b": not a shipped config`},
		{[]string{"--models", "/no/such/config.json", "--dry-run"}, "no such file"},
		{[]string{"--models", "qwen3-0.6b,Qwen3-0.6B", "--dry-run"}, `"qwen3-0.6b" is listed twice`},
		{[]string{"--batch", "1,x"}, `--batch: "1,x": "x" is not an integer`},
		{[]string{"--batch", "4..1"}, "ends before it starts"},
		{[]string{"--batch", "0"}, "batch 0: must be ≥ 1"},
		{[]string{"--placement", "cores,auto"}, "--placement auto: needs --profile"},
		{[]string{"--placement", "gpu"}, `unknown placement "gpu"`},
		{[]string{"--ablate", "fusion"}, `unknown ablation "fusion"`},
		{[]string{"--arrival", "poisson:fast"}, `--arrival "poisson:fast"`},
		{[]string{"--emit-jobs", "pbs"}, "only scheduler supported is slurm"},
		{[]string{"--threads", "100000", "--dry-run"}, "--threads 100000: this process may use"},
		{[]string{"--weights", "/no/such.bin", "--dry-run"}, "--weights: stat /no/such.bin"},
		{[]string{"--weights", stories, "--models", "qwen3-0.6b"}, "not used with --weights"},
		{[]string{"--cell", "99", "--dry-run"}, "--cell 99: the grid has 16 cells (0..15)"},
		{[]string{"--slo-ttft", "-1"}, "--slo-ttft -1"},
		{[]string{"--requests", "0"}, "--requests 0"},
		{[]string{"--wait-placement", "-2s"}, "sweep: --wait-placement -2s: must be ≥ 0"},
		{[]string{"--profile", "/no/profile.json", "--dry-run"}, "--profile /no/profile.json"},
		{[]string{"extra"}, "unknown command"},
	}
	for _, c := range cases {
		code, _, errs := run(t, append([]string{"sweep"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bench sweep %v: exit %d, stderr %q, want it to contain %q", c.args, code, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench sweep %v: error is not one line: %q", c.args, errs)
		}
	}
}

// tinySweep are the flags of a small real sweep on the llama2.c stories260K
// checkpoint: 1 workload × batch 1,2 = 2 cells of 2 requests.
func tinySweep(out string, extra ...string) []string {
	return append([]string{"sweep", "--weights", stories, "--workloads", "gsm8k", "--requests", "2", "--max-gen-tokens", "4",
		"--max-prompt-tokens", "32", "--batch", "1,2", "--threads", "1", "--placement", "cores", "--out", out}, extra...)
}

func TestSweepTinyRealResumeAndCorrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	code, out, errs := run(t, tinySweep(dir)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, w := range []string{"| workload", "| gsm8k", "stories260K"} {
		if !strings.Contains(out, w) {
			t.Errorf("summary lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(errs, "sweep: cell 2/2 (stories260K gsm8k b2 t1 cores): done in") {
		t.Errorf("no per-cell lines on a non-terminal stderr:\n%s", errs)
	}
	cellsPath := filepath.Join(dir, sweep.CellsFile)
	cells, bad, err := results.ReadSweepCells(cellsPath)
	if err != nil || len(bad) != 0 || len(cells) != 2 {
		t.Fatalf("cells %d, bad %v, err %v", len(cells), bad, err)
	}
	c := cells[1]
	if c.Batch != 2 || c.Threads != 1 || c.Layers != 2 || c.ModelLayers != 5 || len(c.Requests) != 2 || c.TTFT.N != 2 ||
		!(c.WallS > 0) || !(c.OutputTokS > 0) || len(c.Ops) == 0 || c.Backends == "" || c.Model != "stories260K" ||
		!strings.Contains(c.Key, "/weights=") || c.Config.Requests != 2 || c.Config.SLOTPOTS != 0.28 || c.Date == "" {
		t.Errorf("cell %+v", c)
	}
	for _, r := range c.Requests {
		if r.PromptTokens > 32 || r.OutputTokens > 4 || !(r.TTFTS > 0) || r.LatencyS < r.TTFTS {
			t.Errorf("request %+v", r)
		}
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "untimed warm-up") {
		t.Errorf("notes %q", c.Notes)
	}
	bench, _ := os.ReadFile(filepath.Join(dir, sweep.BenchFile))
	if n := strings.Count(string(bench), "\nBenchmarkSweep/model=stories260K/layers=2/workload=gsm8k/arrival=closed/batch="); n != 2 {
		t.Errorf("bench.txt has %d result lines:\n%s", n, bench)
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.RunFile)); err != nil {
		t.Error(err)
	}

	// Rerun: nothing runs, nothing changes.
	before, _ := os.ReadFile(cellsPath)
	code, out, errs = run(t, tinySweep(dir)...)
	after, _ := os.ReadFile(cellsPath)
	if code != 0 || !strings.Contains(errs, "resuming: 2 of 2 cells done") || !strings.Contains(errs, "all 2 cells done") || out != "" {
		t.Errorf("rerun: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !bytes.Equal(before, after) {
		t.Error("rerun changed cells.jsonl")
	}

	// A corrupt line: saved, its cell rerun, the other kept as it was.
	lines := bytes.SplitAfter(before, []byte("\n"))
	second := lines[1]
	corrupt := append(append([]byte{}, lines[0]...), second[:len(second)/2]...)
	if err := os.WriteFile(cellsPath, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, tinySweep(dir)...)
	if code != 0 || !strings.Contains(errs, "cells.jsonl:2: truncated last line") || !strings.Contains(errs, "resuming: 1 of 2 cells done") {
		t.Fatalf("corrupt rerun: exit %d, stderr %q", code, errs)
	}
	saved, _ := filepath.Glob(cellsPath + ".corrupt-*")
	if len(saved) != 1 {
		t.Fatalf("corrupt-line files %v", saved)
	}
	if data, _ := os.ReadFile(saved[0]); !bytes.Equal(bytes.TrimSuffix(data, []byte("\n")), second[:len(second)/2]) {
		t.Errorf("saved %q, want the truncated line", data)
	}
	cells, bad, _ = results.ReadSweepCells(cellsPath)
	if len(cells) != 2 || len(bad) != 0 || cells[0].Key != c.Key && cells[1].Key != c.Key {
		t.Errorf("after the rerun: %d cells, bad %v", len(cells), bad)
	}
	now, _ := os.ReadFile(cellsPath)
	if !bytes.HasPrefix(now, lines[0]) {
		t.Error("the intact first line changed")
	}

	// --dry-run reports the cells as done.
	code, out, _ = run(t, tinySweep(dir, "--dry-run")...)
	if code != 0 || strings.Count(out, "│ done") != 2 || !strings.Contains(out, "2 cells × 2 requests = 4 requests (2 cells done") {
		t.Errorf("dry run: exit %d:\n%s", code, out)
	}
}

func TestSweepDryRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	code, out, errs := run(t, "sweep", "--placement", "cores,mixed", "--ablate", "partition", "--threads", "1", "--workloads", "gsm8k,ruler-8k", "--dry-run", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// 2 workloads × 2 batches × (cores: none; mixed: none, partition)
	if !strings.Contains(out, "12 cells × 4 requests = 48 requests (0 cells done") || strings.Count(out, "│ to run") != 12 ||
		!strings.Contains(out, "partition") {
		t.Errorf("dry run:\n%s", out)
	}
	if !strings.Contains(errs, "ablate=partition with placement=cores: skipped") {
		t.Errorf("no note on the skipped combination: %q", errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("--dry-run created %s", dir)
	}
}

// TestSweepEmitSlurmProfile: the job line keeps --profile none (without
// it each task would take the newest probe profile of its node) and a
// named profile, and a task given that line resolves the same profile.
func TestSweepEmitSlurmProfile(t *testing.T) {
	for _, c := range []struct{ flag, want string }{{"none", ""}, {"m4-pro", "m4-pro"}} {
		dir := t.TempDir()
		code, _, errs := run(t, "sweep", "--workloads", "gsm8k", "--batch", "1", "--threads", "1", "--placement", "cores",
			"--profile", c.flag, "--emit-jobs", "slurm", "--out", dir)
		if code != 0 {
			t.Fatalf("--profile %s: exit %d: %s", c.flag, code, errs)
		}
		data, err := os.ReadFile(filepath.Join(dir, "jobs", "sweep.sbatch"))
		if err != nil {
			t.Fatal(err)
		}
		var line []string
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "exec" && f[2] == "sweep" {
				line = f[3:]
			}
		}
		i := slices.Index(line, "--profile")
		if i < 0 || i+1 >= len(line) || line[i+1] != c.flag {
			t.Fatalf("--profile %s: job line %q", c.flag, line)
		}
		var got *sweep.Options
		cmd := newCmdSweep(IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *sweep.Options) error { got = o; return nil })
		cmd.SetArgs(line[:slices.Index(line, "--cell")])
		if err := cmd.Execute(); err != nil {
			t.Fatalf("--profile %s: the job line: %v", c.flag, err)
		}
		if got.Profile != c.want {
			t.Errorf("--profile %s: the task's profile is %q, want %q", c.flag, got.Profile, c.want)
		}
	}
}

func TestSweepEmitSlurm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grid dir")
	code, _, errs := run(t, "sweep", "--workloads", "gsm8k,longwriter", "--batch", "1,4", "--threads", "1", "--placement", "cores",
		"--emit-jobs", "slurm", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	jobs := filepath.Join(dir, "jobs")
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(jobs, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	array, merge, submit, idx := read("sweep.sbatch"), read("merge.sbatch"), read("submit.sh"), read("cells.txt")
	for _, w := range []string{"#SBATCH --array=0-3\n", "#SBATCH --cpus-per-task=1\n", ` sweep --models qwen3-0.6b --weights synthetic --layers 2 --workloads gsm8k,longwriter --batch 1,4 --threads 1 --placement cores `,
		`--cell "$SLURM_ARRAY_TASK_ID" --out '` + filepath.Join(dir, "cells") + `'/"$SLURM_ARRAY_TASK_ID"`, "--max-prompt-tokens 2048", "logs/cell-%a.out"} {
		if !strings.Contains(array, w) {
			t.Errorf("sweep.sbatch lacks %q:\n%s", w, array)
		}
	}
	if !strings.Contains(merge, ` report --merge '`+dir+`' --out '`+dir+`'`) {
		t.Errorf("merge.sbatch:\n%s", merge)
	}
	if !strings.Contains(submit, `--dependency=afterok:"$array" merge.sbatch`) || !strings.Contains(submit, "sbatch --parsable sweep.sbatch") {
		t.Errorf("submit.sh:\n%s", submit)
	}
	if lines := strings.Split(strings.TrimSpace(idx), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[3], "3\tmodel=qwen3-0.6b/layers=2/workload=longwriter/batch=4/") {
		t.Errorf("cells.txt:\n%s", idx)
	}
	if _, err := exec.LookPath("bash"); err == nil {
		for _, f := range []string{"sweep.sbatch", "merge.sbatch", "submit.sh"} {
			if out, err := exec.Command("bash", "-n", filepath.Join(jobs, f)).CombinedOutput(); err != nil {
				t.Errorf("%s: bash -n: %v\n%s", f, err, out)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.CellsFile)); !os.IsNotExist(err) {
		t.Error("--emit-jobs ran cells")
	}
	// The task of cell 3 runs exactly that cell.
	var got *sweep.Options
	cmd := newCmdSweep(IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *sweep.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--workloads", "gsm8k,longwriter", "--batch", "1,4", "--threads", "1", "--placement", "cores", "--cell", "3"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	cells, _, err := got.Cells()
	if err != nil || len(cells) != 1 || cells[0].Index != 3 || cells[0].Workload != "longwriter" || cells[0].Batch != 4 {
		t.Errorf("--cell 3: %+v, %v", cells, err)
	}
}

func withCellEngine(t *testing.T, f func(workloads.Cell, *sweep.Options) (sweep.CellEngine, error)) {
	old := sweep.NewCellEngine
	sweep.NewCellEngine = f
	t.Cleanup(func() { sweep.NewCellEngine = old })
}

// TestSweepInterruptExit: through Execute, a sweep interrupted (its
// engine returns context.Canceled) exits 130; sweep's tests cover what is
// kept and resumed.
func TestSweepInterruptExit(t *testing.T) {
	withCellEngine(t, func(c workloads.Cell, _ *sweep.Options) (sweep.CellEngine, error) {
		return nil, context.Canceled
	})
	code, _, _ := run(t, "sweep", "--workloads", "gsm8k", "--batch", "4", "--threads", "1", "--placement", "cores", "--out", filepath.Join(t.TempDir(), "x"))
	if code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
}

// TestLatestProbeProfile: the newest complete profile of this host's
// probe directories wins (of one second, the highest -N suffix); other
// hosts' and non-probe directories, interrupted probes and incomplete
// profiles (--only machine: no memory section) are passed over, the
// incomplete ones named.
func TestLatestProbeProfile(t *testing.T) {
	host, _ := os.Hostname()
	if host == "" {
		t.Skip("no hostname")
	}
	dir := t.TempDir()
	if _, _, ok := latestProbeProfile(dir); ok {
		t.Error("empty dir: found a profile")
	}
	complete, err := os.ReadFile("../../results/testdata/profile-amd-epyc-2core-all-sections.json")
	if err != nil {
		t.Fatal(err)
	}
	machineOnly := []byte(`{"schema":"bench.profile/v1","host":"h","created_at":"2026-01-01T00:00:00Z","machine":{"cpu_model":"x"}}`)
	for d, data := range map[string][]byte{
		host + "-20260101-120000":     complete,
		host + "-20261121-090000":     complete,
		host + "-20261121-090000-2":   complete,
		"other-20270101-000000":       complete,
		"sweep-" + host + "-20280101": complete,
		host + "-20290101-000000":     nil, // an interrupted probe: no profile.json
		host + "-20300101-000000":     machineOnly,
		host + "-20300101-000000-x":   complete, // not a probe directory
	} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
		if data != nil {
			os.WriteFile(filepath.Join(dir, d, "profile.json"), data, 0o644)
		}
	}
	p, skipped, ok := latestProbeProfile(dir)
	if want := filepath.Join(dir, host+"-20261121-090000-2", "profile.json"); !ok || p != want {
		t.Errorf("latestProbeProfile = %q, %v; want %q", p, ok, want)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], host+"-20300101-000000") || !strings.Contains(skipped[0], `missing key "memory"`) {
		t.Errorf("skipped %q", skipped)
	}
}

// --weight-dtype adds a cell set per format: quantized cells run on the
// cores' quant backend, their records and tables name the format, and the
// combinations the engine refuses are listed as skipped.
func TestSweepWeightDType(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	code, out, errs := run(t, "sweep", "--models", "llama-160m-chat-v1", "--layers", "1", "--workloads", "gsm8k", "--requests", "2",
		"--max-gen-tokens", "3", "--max-prompt-tokens", "16", "--batch", "2", "--threads", "1", "--placement", "cores,mixed",
		"--weight-dtype", "q8_0,fp32", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "wdtype=q8_0 with placement=mixed: skipped") || !strings.Contains(out, "llama-160m-chat-v1 q8_0") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
	cells, bad, err := results.ReadSweepCells(filepath.Join(dir, sweep.CellsFile))
	if err != nil || len(bad) != 0 || len(cells) != 2 {
		t.Fatalf("cells %d, bad %v, err %v", len(cells), bad, err)
	}
	if c := cells[0]; c.WeightDType != "q8_0" || !strings.Contains(c.Key, "/wdtype=q8_0/") || !strings.Contains(strings.Join(c.Notes, "\n"), "kernels/quant backend") {
		t.Errorf("q8_0 cell: dtype %q key %s notes %q", c.WeightDType, c.Key, c.Notes)
	}
	code, _, errs = run(t, "sweep", "--weight-dtype", "q3_x", "--dry-run", "--out", dir)
	if code == 0 || !strings.Contains(errs, `--weight-dtype: engine: weight dtype "q3_x"`) {
		t.Errorf("bad dtype: exit %d, %s", code, errs)
	}
}
