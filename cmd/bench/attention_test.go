package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/opbench"
)

func TestAttentionCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errs := run(t, "attention", "--profile", "none", "--out", dir, "--contexts", "16,40", "--batches", "1,2",
		"--decode-context", "24", "--widths", "3", "--reps", "1", "--rep-ms", "1", "--matrix-backend", "go-fp32", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"threads 1", "skipped mixed: does not apply with 1 thread", "attention.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "attention.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r opbench.AttentionReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Schema != opbench.AttentionSchema || len(r.Points) != 2*5 {
		t.Errorf("report: schema %q, %d points", r.Schema, len(r.Points))
	}
	for _, f := range []string{"attention.png", "attention.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestAttentionColdKV: --kv-state cold (the default) times the decode
// steps and the read kernels beside them after an eviction, and every
// output says so; warm says nothing of it.
func TestAttentionColdKV(t *testing.T) {
	for _, state := range []string{"", "warm"} {
		dir := filepath.Join(t.TempDir(), "out")
		args := []string{"attention", "--profile", "none", "--out", dir, "--contexts", "16", "--batches", "2",
			"--decode-context", "24", "--widths", "2", "--reps", "1", "--rep-ms", "1", "--placement", "cores", "--threads", "1"}
		if state != "" {
			args = append(args, "--kv-state", state)
		}
		code, out, errs := run(t, args...)
		if code != 0 {
			t.Fatalf("--kv-state %q: exit %d: %s", state, code, errs)
		}
		for _, want := range []string{"decode (KV cold)", "both from DRAM after the same eviction", "both cold: each call timed alone after every worker read its share of"} {
			if strings.Contains(out, want) != (state == "") {
				t.Errorf("--kv-state %q: output has %q: %v, want %v:\n%s", state, want, !(state == ""), state == "", out)
			}
		}
	}
}

func TestAttentionBadInput(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--placement gpu", `--placement "gpu"`},
		{"--kv-state hot", `--kv-state "hot"`},
		{"--contexts 0", "--contexts 0"},
		{"--decode-context -1", "--decode-context -1"},
		{"--batches 0", "--batches 0"},
		{"--widths 5000", "--widths 5000"},
		{"--matrix-backend nosuch", `"nosuch"`},
		{"--ablate partition", `--ablate "partition"`},
		{"--threads 100000", "--threads 100000"},
		{"--model nosuch", "nosuch"},
		{"--kv-dtype fp16", `--kv-dtype: engine: KV cache dtype "fp16"`},
		{"--kv-dtype bf16 --ablate kv-packing", "kv-packing"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		code, _, errs := run(t, append([]string{"attention", "--profile", "none", "--out", dir}, strings.Fields(c.args)...)...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.HasPrefix(errs, "bench attention: ") {
			t.Errorf("%s: exit %d, stderr %q", c.args, code, errs)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: left %s", c.args, dir)
		}
	}
}
