package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCounters: `bench run --counters` prints the counters per phase,
// or one line saying why they are unavailable (as on a VM without a
// PMU), and --counters-plot draws a figure either way.
func TestRunCounters(t *testing.T) {
	png := filepath.Join(t.TempDir(), "counters.png")
	code, out, errs := run(t, "run", "--weights", stories, "--prompt-tokens", "8", "--gen-tokens", "2", "--counters", "--counters-plot", png)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	unavailable := strings.Contains(out, "hardware counters: unavailable: ")
	if !unavailable && !(strings.Contains(out, "hardware counters (") && strings.Contains(out, "IPC")) {
		t.Errorf("output has neither counters nor the unavailable line:\n%s", out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("--counters-plot: %v", err)
	}
	code, out, errs = run(t, "run", "--weights", stories, "--prompt-tokens", "8", "--gen-tokens", "2", "--counters", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Counters *struct {
			Unavailable string `json:"unavailable"`
			Phases      []struct {
				Name string `json:"name"`
			} `json:"phases"`
		} `json:"counters"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Counters == nil {
		t.Fatalf("json: %v counters %v", err, r.Counters)
	}
	if !strings.HasPrefix(r.Counters.Unavailable, "unavailable: ") && len(r.Counters.Phases) != 2 {
		t.Errorf("counters %+v: want unavailable or prefill and decode", r.Counters)
	}
	code, _, errs = run(t, "run", "--weights", stories, "--counters-plot", "x.gif")
	if code != 1 || !strings.Contains(errs, `--counters-plot: perfcount: plot x.gif: extension ".gif" (want .png, .svg or .pdf)`) {
		t.Errorf("bad plot path: exit %d, %q", code, errs)
	}
}
