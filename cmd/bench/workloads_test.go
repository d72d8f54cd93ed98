package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cpubench/bench/workloads"
)

func TestWorkloadsTable(t *testing.T) {
	code, out, errs := run(t, "workloads", "--requests", "50")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range append(workloads.Names(), "prompt mean", "output mean", "p99", "GSM8K test", "RULER qa_1 SQuAD + qa_2 HotpotQA") {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWorkloadsJSON(t *testing.T) {
	code, out, errs := run(t, "workloads", "ruler-4k", "gsm8k", "--requests", "40", "--arrival", "poisson:2", "--seed", "9", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got:\n%s", out)
	}
	for i, name := range []string{"ruler-4k", "gsm8k"} {
		var s workloads.Summary
		if err := json.Unmarshal([]byte(lines[i]), &s); err != nil {
			t.Fatal(err)
		}
		if s.Name != name || s.Requests != 40 || s.Arrival != "poisson:2" || s.Seed != 9 || s.Duration <= 0 || s.Prompt.Mean <= 0 {
			t.Errorf("summary %d: %+v", i, s)
		}
	}
}

func TestWorkloadsDump(t *testing.T) {
	code, out, errs := run(t, "workloads", "--dump", "longwriter", "--requests", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("want 5 requests, got:\n%s", out)
	}
	for i, l := range lines {
		var r workloads.Request
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != i || r.Workload != "longwriter" || !strings.HasPrefix(r.Source, "longwriter/") || r.OutputTokens <= 0 || r.Arrival != 0 {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}

func TestWorkloadsErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"workloads", "--requests", "0"}, "workloads: --requests 0: must be ≥ 1"},
		{[]string{"workloads", "--requests", "x"}, "--requests"},
		{[]string{"workloads", "--arrival", "poisson"}, `workloads: --arrival "poisson": want "closed" or "poisson:RATE"`},
		{[]string{"workloads", "--arrival", "poisson:0"}, `--arrival "poisson:0": rate "0" must be a positive number`},
		{[]string{"workloads", "--arrival", "open"}, `--arrival "open"`},
		{[]string{"workloads", "--seed", "-1"}, "--seed"},
		{[]string{"workloads", "sharegpt"}, `workloads: unknown workload "sharegpt" (valid: gsm8k, longwriter, ruler-4k, ruler-8k)`},
		{[]string{"workloads", "--dump", "ruler"}, `workloads: --dump: unknown workload "ruler"`},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q, want it to contain %q", c.args, code, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: error is not one line: %q", c.args, errs)
		}
	}
}
