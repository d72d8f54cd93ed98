package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayoutNoMeasure: `bench layout --no-measure` prints Table 2 (the
// paper's rows at FLOP/B 4) and the capacity table.
func TestLayoutNoMeasure(t *testing.T) {
	code, out, errs := run(t, "layout", "--no-measure", "--capacity-models", "llama-3.2-1b,qwen3-0.6b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"Table 2 at FLOP/B 4", "| 8        | 2t   | 1t   | 3t     | 5t                | 250%", "llama-3.2-1b", "qwen3-0.6b", "non-cacheable"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestLayoutMeasured: a small measured run on stories-sized shapes writes
// its files.
func TestLayoutMeasured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errs := run(t, "layout", "--capacity-models", "qwen3-0.6b", "--model", "llama-160m-chat-v1", "--layers", "1", "--inputs", "1,4",
		"--reps", "1", "--policies", "duplicate,owr", "--gantt-policy", "owr", "--gantt-tokens", "4", "--threads", "1", "--profile", "none", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "measured/model") {
		t.Errorf("no TTFT table:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "layout.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Measured []struct {
			Policy string  `json:"policy"`
			TTFT   float64 `json:"ttft_s"`
		} `json:"measured"`
	}
	if err := json.Unmarshal(data, &r); err != nil || len(r.Measured) != 4 {
		t.Errorf("layout.json: %v, %d points", err, len(r.Measured))
	}
	for _, f := range []string{"layout-ttft.png", "layout-timeline.png", "layout-capacity.png", "layout.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestLayoutRunFlags: `bench run --weight-layout` runs each policy and
// reports its resident bytes; bad values are one error line.
func TestLayoutRunFlags(t *testing.T) {
	code, out, errs := run(t, "run", "--weights", stories, "--prompt-tokens", "8", "--gen-tokens", "2", "--weight-layout", "owr", "--threads", "1", "--profile", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"weight layout owr (PIM-SHERPA)", "rearrangement buffers", "process VmRSS", "rearrangement bandwidth"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = run(t, "run", "--weights", stories, "--prompt-tokens", "4", "--gen-tokens", "1", "--weight-layout", "duplicate", "--json", "--profile", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Layout == nil || r.Layout.Policy != "duplicate" || r.Layout.PrefillBytes <= 0 {
		t.Errorf("--json: %v, %+v", err, r.Layout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--weights", stories, "--weight-layout", "swizzle"}, `weight layout "swizzle"`},
		{[]string{"run", "--weights", stories, "--copy-threads", "1"}, "--copy-threads 1: only with --weight-layout ddb"},
		{[]string{"run", "--weights", stories, "--weight-layout", "ddb", "--copy-threads", "-1"}, "--copy-threads -1"},
		{[]string{"run", "--weights", stories, "--weight-layout", "ddb", "--threads", "1", "--copy-threads", "1", "--profile", "none"}, "leave no compute thread"},
		{[]string{"run", "--model", "qwen3-0.6b", "--layers", "1", "--weight-layout", "owr", "--weight-dtype", "q8_0"}, "policy unsupported by weight format q8_0"},
		{[]string{"run", "--weights", stories, "--weight-layout", "owr", "--placement", "mixed"}, "placement cores only"},
		{[]string{"layout", "--flop-per-byte", "0"}, "--flop-per-byte 0"},
		{[]string{"layout", "--policies", "owr,bad"}, `--policies "bad"`},
		{[]string{"layout", "--inputs", "0"}, "input length 0"},
		{[]string{"layout", "--capacity-dtype", "int4", "--no-measure"}, `--capacity-dtype "int4"`},
		{[]string{"layout", "--no-measure", "--format", "tiff"}, `--format "tiff"`},
		{[]string{"layout", "--no-measure", "--capacity-models", "nope"}, "nope"},
	} {
		code, _, errs := run(t, tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want one line containing %q", tc.args, code, errs, tc.want)
		}
	}
}
