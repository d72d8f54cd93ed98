package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/roofline"
)

const fixtureProfile = "../../results/testdata/profile-amd-epyc-2core-all-sections.json"

func TestRunPhaseFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--decode-config", "cpus=4096"}, "run: --decode-config: topotree: configuration \"cpus=4096\": CPUs 4096 are outside the allowed set"},
		{[]string{"--prefill-config", "spread(1,core)"}, `run: --prefill-config: topotree: configuration "spread(1,core)": unknown transform "spread(1,core)" (allowed: all, cpus=LIST`},
		{[]string{"--decode-config", "idle-per-l3:2"}, `configuration "idle-per-l3:2": unknown transform`}, // whether plain idle-per-l3 applies depends on the machine (an L3 shared by its cores)
		{[]string{"--decode-config", "config=99"}, "configurations (config=1 to config="},
		{[]string{"--decode-config", "cpus=x"}, `"x" is not a CPU list`},
		{[]string{"--configs", "best"}, `run: --configs "best": the only value is auto`},
		{[]string{"--configs", "auto", "--decode-config", "all"}, "give it without --prefill-config"},
		{[]string{"--configs", "auto", "--configs-try", "0"}, "--configs-try 0: must be ≥ 1"},
		{[]string{"--configs", "auto", "--profile", "none"}, "run: --configs auto: needs a profile"},
		{[]string{"--decode-config", "all", "--threads", "1"}, "run: --threads 1: the per-phase configurations set the threads"},
		{[]string{"--decode-config", "all", "--placement", "mixed"}, "run: --placement mixed: per-phase configurations run placement cores or matrix"},
		{[]string{"--decode-config", "all", "--numa", "tp"}, "needs --numa tp"},
	} {
		args := append([]string{"run", "--weights", stories, "--prompt-tokens", "4", "--gen-tokens", "1"}, c.args...)
		code, _, errs := run(t, args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q, want it to contain %q", c.args, code, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: error is not one line: %q", c.args, errs)
		}
	}
}

// TestRunPhaseConfigs: prefill on every CPU and decode on the first; the
// decode operator rows report 1 thread and are predicted at 1 thread.
func TestRunPhaseConfigs(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 allowed CPUs (have %v, %v)", cpus, err)
	}
	code, out, errs := run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "8", "--gen-tokens", "3",
		"--prefill-config", "all", "--decode-config", "cpus="+strconv.Itoa(cpus[0]), "--profile", fixtureProfile, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Phases == nil || r.Phases.Prefill.Threads != len(cpus) || r.Phases.Decode.Threads != 1 || r.Phases.Decode.Spec != "cpus="+strconv.Itoa(cpus[0]) {
		t.Fatalf("phases %+v", r.Phases)
	}
	for _, op := range r.Ops {
		want := map[roofline.Phase]int{roofline.Prefill: len(cpus), roofline.Decode: 1}[op.Phase]
		if op.Threads != want || op.PredictedS == nil {
			t.Errorf("%s %s: %d threads (want %d), predicted %v", op.Phase, op.Op, op.Threads, want, op.PredictedS)
		}
	}
	// The default run has no phases and no threads column.
	code, out, errs = run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "8", "--gen-tokens", "3")
	if code != 0 || strings.Contains(out, "configuration:") || strings.Contains(out, "| threads") {
		t.Errorf("default run (exit %d, %s) speaks of configurations:\n%s", code, errs, out)
	}
}

func TestRunConfigsAuto(t *testing.T) {
	code, out, errs := run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "8", "--gen-tokens", "3",
		"--configs", "auto", "--configs-try", "1", "--profile", fixtureProfile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"--configs auto: TP-degree-1 configurations ranked", "| prefill (TTFT) | 1 ", "| decode (TPOT)  | 1 ",
		"prefill configuration: ", "decode configuration: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// One try: the chosen rows are the predicted best (rank 1).
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), "| yes    |") && !strings.Contains(l, "| 1    |") {
			t.Errorf("chosen row is not rank 1: %s", l)
		}
	}
}

// TestTopoMeasure: the core-location experiment on this machine's tree
// runs "all cores" and lists every Fig. 3(a) preset, measured or not
// applicable with why; its bad flags are one line each.
func TestTopoMeasure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cl")
	code, out, errs := run(t, "topo", "--measure", "--model", tinyQwen3Config(t), "--layers", "1", "--prompt-tokens", "8",
		"--gen-tokens", "2", "--reps", "1", "--roofline", fixtureProfile, "--out", dir, "--format", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"## Core location (Sandwich Fig. 3)", "| all cores ", "| idle-per-l3 ", "| fast-numa ", "predicted: roofline of"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"corelocation.md", "corelocation.json", "corelocation.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--measure", "--shape", "core=4"}, "topo: --measure runs the engine on this machine"},
		{[]string{"--measure", "--remove", "idle-per-node"}, "give no --remove or --configs"},
		{[]string{"--measure", "--reps", "0"}, "topo: --reps 0: must be ≥ 1"},
		{[]string{"--out", "x"}, "topo: --out and --roofline belong to --measure"},
	} {
		code, _, errs := run(t, append([]string{"topo"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench topo %v: exit %d, stderr %q, want one line with %q", c.args, code, errs, c.want)
		}
	}
}
