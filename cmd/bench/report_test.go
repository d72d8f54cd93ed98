package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// reportCell is a minimal valid cell: mean latency lat seconds.
func reportCell(key, host, date, workload, placement string, batch int, lat float64) results.SweepCell {
	return results.SweepCell{Schema: results.SweepSchema, Key: key, Model: "tiny", Weights: "synthetic", Workload: workload,
		Batch: batch, Threads: 1, Placement: placement, Host: host, Date: date,
		Config:     results.SweepConfig{Requests: 2, Arrival: "closed"},
		Requests:   []results.SweepRequest{{ID: 0, LatencyS: lat}, {ID: 1, LatencyS: lat}},
		Latency:    results.Dist{Mean: lat, P50: lat, P90: lat, P99: lat, N: 2},
		OutputTokS: 10 / lat, WallS: 2 * lat,
		Ops: []results.SweepOp{{Phase: "decode", Op: "q_proj", Calls: 1, MeasuredS: lat / 2}, {Phase: "decode", Op: "qk", Calls: 1, MeasuredS: lat / 4}}}
}

// writeCells writes cells (and extra raw lines after them) to dir/cells.jsonl.
func writeCells(t *testing.T, dir string, cells []results.SweepCell, extra ...string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, c := range cells {
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	path := filepath.Join(dir, "cells.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportBadInput(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	os.MkdirAll(empty, 0o755)
	corrupt := filepath.Join(tmp, "corrupt")
	writeCells(t, corrupt, nil, `{"schema":"bench.sweep/v1","key":`, `{"schema":"bench.other/v1","key":"x"}`, ``, `not json`)
	array := filepath.Join(tmp, "array")
	writeCells(t, filepath.Join(array, "cells", "0"), []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "w", "cores", 1, 1)})
	out := filepath.Join(tmp, "out")
	badBaseline := filepath.Join(tmp, "bad.jsonl")
	os.WriteFile(badBaseline, []byte(`{"model_type": "qwen3 0.6B Q8_0", "n_threads": 2, "n_prompt": 0, "n_gen": 16, "avg_ts": 0}`+"\n"), 0o644)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"report", "--out", out}, []string{"need at least one results directory"}},
		{[]string{"report", empty}, []string{"--out DIR is required"}},
		{[]string{"report", filepath.Join(tmp, "nope"), "--out", out}, []string{filepath.Join(tmp, "nope") + ": no such file or directory"}},
		{[]string{"report", empty, "--out", out}, []string{empty + ": no cells.jsonl"}},
		{[]string{"report", "--merge", empty, "--out", out}, []string{empty + ": no cells.jsonl, */cells.jsonl or cells/*/cells.jsonl"}},
		{[]string{"report", array, "--out", out}, []string{array + ": no cells.jsonl, but 1 per-task result(s)", "use --merge"}},
		{[]string{"report", corrupt, "--out", out}, []string{
			"corrupt/cells.jsonl:1: invalid JSON", `corrupt/cells.jsonl:2: schema "bench.other/v1"`, "corrupt/cells.jsonl:4: invalid JSON",
			"no valid cells in " + filepath.Join(corrupt, "cells.jsonl")}},
		{[]string{"report", array, "--merge", "--out", out, "--profile", filepath.Join(tmp, "missing.json")}, []string{"missing.json"}},
		{[]string{"report", array, "--merge", "--out", out, "--baseline", filepath.Join(tmp, "nope.json")}, []string{"report: --baseline " + filepath.Join(tmp, "nope.json") + ": no such file"}},
		{[]string{"report", array, "--merge", "--out", out, "--baseline", badBaseline}, []string{"report: --baseline " + badBaseline + ": test 1 (qwen3 0.6B Q8_0): avg_ts 0: must be > 0"}},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		if code == 0 {
			t.Errorf("bench %v: exit 0", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("bench %v: stderr %q lacks %q", c.args, errs, w)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err == nil {
		t.Error("a failed report wrote report.md")
	}
}

func TestReportFlags(t *testing.T) {
	var got *ReportOptions
	cmd := newCmdReport(IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(o *ReportOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"a", "b", "--out", "o", "--merge", "--precision", "bf16"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Dirs, ",") != "a,b" || got.Out != "o" || !got.Merge || got.Precision != "bf16" || got.Profile != "" {
		t.Fatalf("options %+v", got)
	}
}

func TestReportMergeDedupe(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "sweep")
	d1, d2 := "2026-03-01T10:00:00Z", "2026-03-02T10:00:00Z"
	// Task 0 ran a, b; task 1 reran b later and ran c; task 10 reran a
	// with an older date (it loses). A corrupt line is skipped.
	writeCells(t, filepath.Join(base, "cells", "0"), []results.SweepCell{
		reportCell("a", "n1", d1, "gsm8k", "cores", 1, 2), reportCell("b", "n1", d1, "gsm8k", "matrix", 1, 9)})
	writeCells(t, filepath.Join(base, "cells", "1"), []results.SweepCell{
		reportCell("b", "n2", d2, "gsm8k", "matrix", 1, 1), reportCell("c", "n2", d2, "gsm8k", "cores", 8, 4)}, `{"schema":`)
	writeCells(t, filepath.Join(base, "cells", "10"), []results.SweepCell{reportCell("a", "n3", "2026-02-01T00:00:00Z", "gsm8k", "cores", 1, 7)})
	out := filepath.Join(tmp, "out")
	code, stdout, stderr := run(t, "report", "--merge", base, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{
		filepath.Join("cells", "1", "cells.jsonl") + ":3: invalid JSON",
		`key "b": kept ` + filepath.Join(base, "cells", "1", "cells.jsonl") + " (date " + d2 + "), dropped " + filepath.Join(base, "cells", "0", "cells.jsonl"),
		"later date wins",
		`key "a": kept ` + filepath.Join(base, "cells", "0", "cells.jsonl"),
		"2 duplicate key(s) resolved, 3 cell(s) kept",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if !strings.Contains(stdout, "merged 3 cell(s) from 3 file(s)") || !strings.Contains(stdout, "report.md") {
		t.Errorf("stdout:\n%s", stdout)
	}
	cells, skipped, err := readCells(filepath.Join(out, "cells.jsonl"))
	if err != nil || len(skipped) > 0 {
		t.Fatal(err, skipped)
	}
	lat := map[string]float64{}
	for _, c := range cells {
		lat[c.Key] = c.Latency.Mean
	}
	if len(cells) != 3 || lat["a"] != 2 || lat["b"] != 1 || lat["c"] != 4 {
		t.Fatalf("merged cells %v, want a 2 s (task 0), b 1 s (task 1, later), c 4 s", lat)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "3 cell(s)") || !strings.Contains(string(md), "latency.png") {
		t.Errorf("report.md:\n%s", md)
	}
	// Merging into the same directory again is idempotent.
	code, _, stderr = run(t, "report", "--merge", out, "--out", out)
	if code != 0 {
		t.Fatalf("re-merge: exit %d: %s", code, stderr)
	}
	again, _, _ := readCells(filepath.Join(out, "cells.jsonl"))
	if len(again) != 3 {
		t.Errorf("re-merge kept %d cells, want 3", len(again))
	}
}

func TestReportDuplicateHosts(t *testing.T) {
	tmp := t.TempDir()
	d := "2026-03-01T10:00:00Z"
	a := writeCells(t, filepath.Join(tmp, "a"), []results.SweepCell{reportCell("k", "host-a", d, "gsm8k", "cores", 1, 2)})
	b := writeCells(t, filepath.Join(tmp, "b"), []results.SweepCell{reportCell("k", "host-b", d, "gsm8k", "cores", 1, 3)})
	out := filepath.Join(tmp, "out")
	code, _, stderr := run(t, "report", filepath.Dir(a), filepath.Dir(b), "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, `1 cell(s) repeat a key (e.g. "k" in `+a+" (host host-a) and "+b+" (host host-b))") {
		t.Errorf("stderr:\n%s", stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"machines host-a, host-b", "## Machines compared", "machines.png"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "cells.jsonl")); err == nil {
		t.Error("report without --merge wrote cells.jsonl")
	}
}

func TestReportProfileRegimes(t *testing.T) {
	tmp := t.TempDir()
	d := "2026-03-01T10:00:00Z"
	var cells []results.SweepCell
	for _, b := range []int{1, 64} {
		c := reportCell("k"+string(rune('0'+b%10)), "vm", d, "gsm8k", "cores", b, 2)
		c.Profile = "../../results/testdata/profile-amd-epyc-2core-all-sections.json"
		c.Ops[0].FLOPs, c.Ops[0].Bytes = 2e9*float64(b), 1e9
		cells = append(cells, c)
	}
	other := reportCell("x", "elsewhere", d, "gsm8k", "cores", 1, 2)
	other.Profile = filepath.Join(tmp, "gone.json")
	cells = append(cells, other)
	writeCells(t, filepath.Join(tmp, "in"), cells)
	out := filepath.Join(tmp, "out")
	code, _, stderr := run(t, "report", filepath.Join(tmp, "in"), "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "machine elsewhere: profile "+other.Profile+": no such file or directory; its regimes are not classified") {
		t.Errorf("stderr:\n%s", stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if !strings.Contains(s, "memory-bound") || !strings.Contains(s, "regime map of elsewhere: no machine profile") || strings.Contains(s, "regime map of vm:") {
		t.Errorf("report.md regimes:\n%s", s)
	}
}

// --baseline draws llama-bench's tests (the reports package's hand-written
// fixture) beside the cells and names the file.
func TestReportBaseline(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "sweep")
	writeCells(t, dir, []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "w", "cores", 1, 1)})
	out := filepath.Join(tmp, "out")
	fix := "../../reports/testdata/llama-bench-fixture.jsonl"
	code, stdout, errs := run(t, "report", dir, "--out", out, "--baseline", fix)
	if code != 0 || !strings.Contains(stdout, "baseline.png") {
		t.Fatalf("exit %d: %s\n%s", code, errs, stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "llama.cpp tg16 · q8_0 (llama-bench-fixture.jsonl)") || !strings.Contains(string(md), fix) {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(page), "<title>bench sweep report</title>") || strings.Count(string(page), "<svg") < 2 {
		t.Errorf("report.html: %v", err)
	}
}
