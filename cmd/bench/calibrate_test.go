package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestCalibrateBadInput: bad flags give one error line naming the value,
// before anything is measured.
func TestCalibrateBadInput(t *testing.T) {
	fix := filepath.Join("..", "..", "results", "testdata", "profile-amd-epyc-2core-all-sections.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "--profile", fix, "--out", "x.json", "--write"}, "bench calibrate: --out and --write: give one"},
		{[]string{"calibrate", "--profile", fix, "--reps", "0"}, "bench calibrate: --reps 0"},
		{[]string{"calibrate", "--profile", fix, "--rep-ms", "0"}, "bench calibrate: --rep-ms 0"},
		{[]string{"calibrate", "--profile", fix, "--wait-placement", "-1m"}, "bench calibrate: --wait-placement -1m0s: must be ≥ 0"},
		{[]string{"calibrate", "--profile", "/nonexistent/profile.json"}, "bench calibrate: --profile: "},
		{[]string{"calibrate", "--profile", fix, "--out", "/nonexistent/dir/p.json"}, "bench calibrate: /nonexistent/dir/p.json: "},
		{[]string{"calibrate", "--profile", fix, "--threads", "999"}, "bench calibrate: --threads 999"},
	} {
		code, _, errs := run(t, c.args...)
		if code != 1 || !strings.HasPrefix(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("bench %v: exit %d, stderr %q, want one line starting %q", c.args, code, errs, c.want)
		}
	}
}

// TestCalibrateQuick: --quick --out writes a profile whose calibration
// section reads back, and the report files; nothing timed is asserted.
func TestCalibrateQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("measures")
	}
	fix := filepath.Join("..", "..", "results", "testdata", "profile-amd-epyc-2core-all-sections.json")
	dir := t.TempDir()
	out := filepath.Join(dir, "p2.json")
	code, stdout, errs := run(t, "calibrate", "--profile", fix, "--quick", "--threads", "1", "--out", out, "--report-dir", filepath.Join(dir, "rep"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "held-out relative error p90") {
		t.Errorf("no target line:\n%s", stdout)
	}
	p, err := results.ReadProfile(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Calibration == nil || p.Calibration.Schema != results.CalibrationSchemaV2 || len(p.Calibration.Classes) == 0 {
		t.Fatalf("calibration section %+v", p.Calibration)
	}
	for _, f := range []string{"calibration.md", "calibration-cdf.png", "calibration.json"} {
		if st, err := os.Stat(filepath.Join(dir, "rep", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
