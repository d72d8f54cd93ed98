package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBench stands in for `bench run` under scripts/fidelity.sh: it writes
// the run file named by --json=FILE, its operators' measured seconds taken
// from the next line of $FAKE_DIR/measured ("attention embed" seconds, one
// line a run, and optionally embed's uninterrupted seconds), every
// prediction 1 s.
const fakeBench = `#!/usr/bin/env bash
set -eu
for a in "$@"; do case $a in --json=*) f=${a#--json=} ;; esac; done
n=$(cat "$FAKE_DIR/n" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$FAKE_DIR/n"
read -r att emb unint < <(sed -n "${n}p" "$FAKE_DIR/measured")
extra=""; if [ -n "${unint:-}" ]; then extra=", \"uninterrupted_s\": $unint, \"interrupted_calls\": 2"; fi
cat > "$f" <<EOF
{"model": "qwen3-0.6b", "layers": 2, "placement": "cores", "prompt_tokens": 128, "batch": 1, "gen_tokens": 8,
 "noise": {"noisy": false}, "ttft_s": 1.0, "predicted_ttft_s": 1.0, "tpot_s": 1.2, "predicted_tpot_s": 1.0,
 "operators": [
  {"phase": "prefill", "op": "attention", "measured_s": $att, "predicted_s": 1},
  {"phase": "decode", "op": "embed", "measured_s": $emb, "predicted_s": 1$extra}]}
EOF
`

// TestFidelitySummary runs scripts/fidelity.sh over a fake bench (two runs
// of one configuration) and checks its summary: the rows and time within
// ±10%, TTFT and TPOT, the host's repeatability (each run against the
// other), and each worst operator's rows that repeat within ±10%.
func TestFidelitySummary(t *testing.T) {
	// attention 1.00 and 1.05 (within ±10% of its prediction and of each
	// other); embed 2 and 4 (neither).
	out := runFidelity(t, "1.0 2.0\n1.05 4.0\n")
	for _, want := range []string{
		"runs: 2 counted, 0 noisy",
		"operator rows within ±10%: 2 of 4 = 50%",
		"operator time within ±10%: 25% of 8050 ms measured",
		"TTFT measured/predicted: 1 1 (2 of 2 within",
		"TPOT measured/predicted: 1.2 1.2 (0 of 2 within",
		"repeatability of this host, every run (noisy ones included) (1 configuration run 2 or more times): each run against the median of the other runs of its configuration, operator rows 2 of 4 = 50%",
		"worst operators (measured/predicted, share of measured time; repeats: of its rows in every run, noisy ones included, those within ±10% of the median of the other runs of their configuration):",
		"  decode embed: 3, 74.5%; repeats 0 of 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "prefill attention:") {
		t.Errorf("attention (2.05 s against 2 predicted) listed among the worst operators:\n%s", out)
	}
}

// TestFidelityUninterrupted: a run's uninterrupted_s (its time less its
// interrupted calls' excess), where present, is what the summary compares
// and sums: embed 2.0 s measured, 1.05 uninterrupted, counts within ±10%.
func TestFidelityUninterrupted(t *testing.T) {
	out := runFidelity(t, "1.0 2.0 1.05\n1.05 4.0\n")
	for _, want := range []string{
		"operator rows within ±10%: 3 of 4 = 75%",
		"operator time within ±10%: 43% of 7100 ms measured",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// runFidelity runs scripts/fidelity.sh over fakeBench, two runs of one
// configuration whose measured seconds are measured's two lines, and
// returns its output.
func runFidelity(t *testing.T, measured string) string {
	t.Helper()
	for _, c := range []string{"bash", "jq", "sed"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not found (scripts/test.sh installs jq)", c)
		}
	}
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench")
	if err := os.WriteFile(bench, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "measured"), []byte(measured), 0o644); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(prof, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../fidelity.sh", prof, filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), "BENCH="+bench, "FAKE_DIR="+dir, "LAYERS=2", "PLACEMENTS=cores",
		"PROMPTS=128", "BATCHES=1", "REPEATS=2", "RUN_REPEATS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fidelity.sh: %v\n%s", err, out)
	}
	return string(out)
}
