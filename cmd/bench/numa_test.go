package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/numabench"
)

// TestNUMACommand: bench numa measures each policy at each thread count on
// a tiny model, predicts from a profile, lists a policy that cannot run as
// "not run: why", and writes numa.md, numa.json and the figure.
func TestNUMACommand(t *testing.T) {
	model := tinyQwen3Config(t)
	out := filepath.Join(t.TempDir(), "numa")
	prof := "../../results/testdata/profile-amd-epyc-2core-all-sections.json"
	code, stdout, errs := run(t, "numa", "--model", model, "--layers", "1", "--threads", "1", "--policies", "os,tp", "--sync", "b",
		"--tp", "2", "--gen-tokens", "2", "--prompt-tokens", "4", "--reps", "1", "--profile", prof, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"## NUMA policies", "| os ", "| tp sync B", "not run: ", "predicted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	var r numabench.Result
	data, err := os.ReadFile(filepath.Join(out, "numa.json"))
	if err != nil || json.Unmarshal(data, &r) != nil {
		t.Fatalf("numa.json: %v", err)
	}
	if len(r.Points) != 2 || r.Points[0].Policy != "os" || !(r.Points[0].DecodeTokS > 0) || !(r.Points[0].PredDecodeTokS > 0) ||
		r.Points[1].NotRun == "" || r.Layers != 1 {
		t.Errorf("points %+v", r.Points)
	}
	for _, f := range []string{"numa.md", "numa-threads.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestNUMACommandBadInput: one error line naming the value.
func TestNUMACommandBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "spread"}, `--policies "spread": want os, interleave, local or tp`},
		{[]string{"--sync", "c"}, `--sync "c": want a or b`},
		{[]string{"--reps", "0"}, "--reps 0: must be ≥ 1"},
		{[]string{"--threads", "0"}, "--threads 0: must be ≥ 1"},
		{[]string{"--tp", "-1"}, "--tp -1"},
		{[]string{"--threads", "4096", "--profile", "none"}, "--threads 4096: want 1.."},
	} {
		code, _, errs := run(t, append([]string{"numa"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
}
