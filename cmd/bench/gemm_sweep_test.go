package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/opbench"
)

func TestGEMMSweepCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errs := run(t, "gemm", "--sweep", "--model", "llama-160m-chat-v1", "--profile", "none", "--out", dir, "--lengths", "8",
		"--batches", "1", "--reps", "1", "--rep-ms", "1", "--threads", "1", "--placement", "cores,matrix")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "gemm-sweep.png") || !strings.Contains(out, "down_proj") {
		t.Errorf("output:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "gemm-sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r opbench.GEMMSweepReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Schema != opbench.GEMMSweepSchema || len(r.Points) != 2*2*2 {
		t.Errorf("report: schema %q, %d points", r.Schema, len(r.Points))
	}
	if _, err := os.Stat(filepath.Join(dir, "gemm-sweep.md")); err != nil {
		t.Error(err)
	}
}

func TestGEMMSweepBadInput(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--sweep --placement gpu", `--placement "gpu"`},
		{"--sweep --lengths 0", "--lengths 0"},
		{"--sweep --batches -2", "--batches -2"},
		{"--sweep --m 4", "--m: not with --sweep"},
		{"--sweep --split 1:1", "--split: not with --sweep"},
		{"--sweep --backend-b nosuch", `"nosuch"`},
		{"--sweep --model nosuch", "nosuch"},
		{"--sweep --threads 1,2", "--threads [1 2]"},
		{"--lengths 8", "--lengths: only with --sweep"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		code, _, errs := run(t, append([]string{"gemm", "--profile", "none", "--out", dir}, strings.Fields(c.args)...)...)
		if !strings.Contains(c.args, "--sweep") {
			code, _, errs = run(t, append([]string{"gemm"}, strings.Fields(c.args)...)...)
		}
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q", c.args, code, errs)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: left %s", c.args, dir)
		}
	}
}
