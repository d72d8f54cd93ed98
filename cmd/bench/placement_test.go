package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"
)

// targetsByRole indexes a run's targets of kernels/gemm by placement
// target.
func targetsByRole(ts []results.SweepTarget) map[string]results.SweepTarget {
	out := map[string]results.SweepTarget{}
	for _, t := range ts {
		if t.Library == "kernels/gemm" {
			out[t.Target] = t
		}
	}
	return out
}

// TestRunPlacementTargets: bench run reports the backends the placements
// chose by capability (gemm.ChoosePair): cores on the cores' fp32 backend,
// matrix on the matrix unit's (or the second backend on the cores, said
// so in the placement line), mixed on both, and the --cores-backend and
// --matrix-backend overrides. Under qemu-aarch64 with SME (scripts/test.sh)
// this is NEON for cores and sme-fp32 for matrix.
func TestRunPlacementTargets(t *testing.T) {
	pair, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	if req := os.Getenv("BENCH_ENGINE_REQUIRE_MATRIX"); req != "" && req != "none" && pair.Matrix.Name != req {
		t.Fatalf("BENCH_ENGINE_REQUIRE_MATRIX=%s, but the matrix target is %s", req, pair.MatrixLabel())
	}
	base := []string{"run", "--weights", stories, "--prompt-tokens", "6", "--gen-tokens", "2", "--profile", "none"}
	runJSON := func(args ...string) runResult {
		t.Helper()
		code, out, errs := run(t, append(append(append([]string{}, base...), "--json"), args...)...)
		if code != 0 {
			t.Fatalf("bench run %v: exit %d: %s", args, code, errs)
		}
		var r runResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := runJSON("--placement", "cores")
	ts := targetsByRole(r.Targets)
	if c := ts["cores"]; c.Backend != pair.Cores.Name || c.Unit != "cores" || c.Precision != "fp32" || c.Calls == 0 {
		t.Errorf("cores: targets %+v, want %s with calls", r.Targets, pair.Cores.Name)
	}
	if _, ok := ts["matrix"]; ok || r.Backend != pair.Cores.Name {
		t.Errorf("cores: backend %s, targets %+v", r.Backend, r.Targets)
	}

	r = runJSON("--placement", "matrix")
	ts = targetsByRole(r.Targets)
	m := ts["matrix"]
	if m.Backend != pair.Matrix.Name || m.Unit != string(pair.Matrix.Unit) || m.Precision != string(pair.Matrix.DType) || m.Calls == 0 ||
		m.Label != pair.MatrixLabel() || ts["cores"].Calls != 0 || r.Backend != pair.Matrix.Name {
		t.Errorf("matrix: backend %s, targets %+v; want %s", r.Backend, r.Targets, pair.MatrixLabel())
	}
	if pair.Matrix.Unit == gemm.Cores && !strings.Contains(m.Label, "on the cores, no matrix unit") {
		t.Errorf("matrix without a matrix unit: label %q", m.Label)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "has no AMX or SME") {
			t.Errorf("hard-coded note %q", n)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "matrix = "+pair.MatrixLabel()) {
		t.Errorf("notes %q lack the matrix target", r.Notes)
	}

	// The text output says what ran where the figures are.
	code, out, errs := run(t, append(append([]string{}, base...), "--placement", "matrix")...)
	want := "placement matrix = " + (results.SweepTarget{Target: "matrix", Backend: pair.Matrix.Name, Unit: string(pair.Matrix.Unit), Note: pair.MatrixNote}).Short()
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "matrix = "+pair.MatrixLabel()+", ") {
		t.Errorf("matrix text (exit %d, %s) lacks %q:\n%s", code, errs, want, out)
	}

	if runtime.NumCPU() >= 2 {
		r = runJSON("--placement", "mixed", "--threads", "2")
		ts = targetsByRole(r.Targets)
		if ts["cores"].Backend != pair.Cores.Name || ts["matrix"].Backend != pair.Matrix.Name || ts["cores"].Calls == 0 || ts["matrix"].Calls == 0 {
			t.Errorf("mixed: targets %+v", r.Targets)
		}
	}

	r = runJSON("--placement", "matrix", "--cores-backend", "go-fp32", "--matrix-backend", "go-int8")
	ts = targetsByRole(r.Targets)
	if ts["cores"].Backend != "go-fp32" || ts["matrix"].Backend != "go-int8" || ts["matrix"].Precision != "int8" || !strings.Contains(ts["matrix"].Note, "chosen by name") {
		t.Errorf("overrides: targets %+v", r.Targets)
	}
}

// TestBackendFlagErrors: an unknown backend, one whose ISA this CPU lacks,
// or a cores backend of the wrong unit or dtype gives one error line
// naming it and the available ones, for bench run and bench sweep.
func TestBackendFlagErrors(t *testing.T) {
	pair, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--cores-backend", "nope"}, []string{`--cores-backend: gemm: cores backend "nope": unknown (available: ` + pair.Cores.Name}},
		{[]string{"--matrix-backend", "nope"}, []string{`--matrix-backend: gemm: matrix backend "nope": unknown (available: `, "go-bf16"}},
		{[]string{"--cores-backend", "go-bf16"}, []string{`cores backend "go-bf16" computes bf16 weights`, "available: " + pair.Cores.Name}},
	}
	check := func(args, want []string) {
		t.Helper()
		for _, cmd := range [][]string{
			{"run", "--weights", stories},
			{"sweep", "--weights", stories, "--dry-run", "--out", t.TempDir()},
		} {
			args := append(append([]string{}, cmd...), args...)
			code, _, errs := run(t, args...)
			if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("bench %v: exit %d, stderr %q: want one error line", args, code, errs)
			}
			for _, w := range append([]string{cmd[0] + ": "}, want...) {
				if !strings.Contains(errs, w) {
					t.Errorf("bench %v: stderr %q lacks %q", args, errs, w)
				}
			}
		}
	}
	for _, c := range cases {
		check(c.args, c.want)
	}
	// A backend this CPU lacks: its ISA disabled for the test.
	name, feature := "avx2-bf16", "avx2"
	if runtime.GOARCH == "arm64" {
		name, feature = "sme-fp32", "sme"
	}
	if _, err := gemm.BackendByName(name); err == nil {
		undo, err := cpu.Disable(feature)
		if err != nil {
			t.Fatal(err)
		}
		defer undo()
	}
	if _, err := gemm.BackendByName(name); err != nil && strings.Contains(err.Error(), "unavailable") {
		check([]string{"--matrix-backend", name}, []string{`matrix backend "` + name + `": unavailable: CPU lacks`, "(available: "})
	}
}

// TestSweepBackendsRecorded: each sweep cell records what ran each target
// (backend, unit, precision, calls), the summary says it, named backends
// join the cell keys and the Slurm jobs' flags.
func TestSweepBackendsRecorded(t *testing.T) {
	pair, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sw")
	args := []string{"sweep", "--weights", stories, "--workloads", "gsm8k", "--requests", "1", "--max-gen-tokens", "2",
		"--max-prompt-tokens", "16", "--batch", "1", "--threads", "1", "--placement", "cores,matrix", "--out", dir, "--quiet"}
	code, out, errs := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	cells, _, err := results.ReadSweepCells(filepath.Join(dir, sweep.CellsFile))
	if err != nil || len(cells) != 2 {
		t.Fatalf("%d cells, %v", len(cells), err)
	}
	for _, c := range cells {
		ts := targetsByRole(c.Targets)
		switch c.Placement {
		case "cores":
			if ts["cores"].Backend != pair.Cores.Name || ts["cores"].Calls == 0 || ts["cores"].Precision != "fp32" {
				t.Errorf("cores cell targets %+v", c.Targets)
			}
		case "matrix":
			if m := ts["matrix"]; m.Backend != pair.Matrix.Name || m.Calls == 0 || m.Precision != string(pair.Matrix.DType) || m.Label != pair.MatrixLabel() {
				t.Errorf("matrix cell targets %+v, want %s", c.Targets, pair.MatrixLabel())
			}
		}
		if !strings.Contains(out, c.PlacementLabel()) {
			t.Errorf("summary lacks %q:\n%s", c.PlacementLabel(), out)
		}
	}

	// Named backends: their own cells (keys), forwarded to Slurm jobs.
	code, out, errs = run(t, append(args[:len(args)-1:len(args)-1], "--dry-run", "--cores-backend", "go-fp32", "--matrix-backend", "go-bf16")...)
	if code != 0 || strings.Count(out, "│ to run") != 2 {
		t.Errorf("named backends: the cells are not new (exit %d, %s):\n%s", code, errs, out)
	}
	jobs := filepath.Join(t.TempDir(), "jobs")
	code, _, errs = run(t, "sweep", "--workloads", "gsm8k", "--batch", "1", "--threads", "1", "--placement", "matrix",
		"--matrix-backend", "go-bf16", "--emit-jobs", "slurm", "--out", jobs)
	if code != 0 {
		t.Fatalf("emit-jobs: exit %d: %s", code, errs)
	}
	if data, _ := os.ReadFile(filepath.Join(jobs, "jobs", "sweep.sbatch")); !strings.Contains(string(data), "--matrix-backend go-bf16") {
		t.Errorf("sweep.sbatch lacks --matrix-backend:\n%s", data)
	}
}
