package results

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

func testCell(key string, batch int) *SweepCell {
	pred := 0.002
	return &SweepCell{
		Schema: SweepSchema, Key: key, Model: "qwen3-0.6b", Weights: "synthetic", Layers: 2, ModelLayers: 28,
		Workload: "gsm8k", Batch: batch, Threads: 2, Placement: "mixed", Backends: "avx2-fp32+avx2-bf16",
		Config: SweepConfig{Requests: 2, Arrival: "closed", Seed: 1, MaxGenTokens: 32, MaxPrompt: 2048,
			SLOTTFTS: 2, SLOTPOTS: 0.28, GoVersion: "go1.26"},
		Host: "h1", OS: "linux", Arch: "amd64", CPU: "AMD EPYC 7B13 64-Core Processor", Date: "2026-11-21T16:00:00Z",
		Requests: []SweepRequest{
			{ID: 0, PromptTokens: 90, OutputTokens: 32, TTFTS: 0.1, TPOTS: 0.05, LatencyS: 1.65, MetSLO: true},
			{ID: 1, PromptTokens: 80, OutputTokens: 1, TTFTS: 0.2, LatencyS: 0.2, MetSLO: true},
		},
		TTFT:    Dist{Mean: 0.15, P50: 0.1, P90: 0.2, P99: 0.2, N: 2},
		TPOT:    Dist{Mean: 0.05, P50: 0.05, P90: 0.05, P99: 0.05, N: 1},
		Latency: Dist{Mean: 0.925, P50: 0.2, P90: 1.65, P99: 1.65, N: 2},
		WallS:   1.85, OutputTokS: 33 / 1.85, PrefillTokS: 700, SLOAttained: 1, GoodputReqS: 2 / 1.85,
		Ops: []SweepOp{{Phase: "decode", Op: "lm_head", Calls: 31, MeasuredS: 0.9, PredictedS: &pred}},
	}
}

func TestSweepCellsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	if _, _, err := ReadSweepCells(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	a, b := testCell("k/a", 1), testCell("k/b", 4)
	b.Schema = "" // filled in
	for _, c := range []*SweepCell{a, b} {
		if err := AppendSweepCell(path, c); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != 2 || data[len(data)-1] != '\n' {
		t.Fatalf("%d lines:\n%s", n, data)
	}
	cells, skipped, err := ReadSweepCells(path)
	if err != nil || len(skipped) != 0 || len(cells) != 2 {
		t.Fatalf("cells %d, skipped %v, err %v", len(cells), skipped, err)
	}
	if cells[1].Key != "k/b" || cells[1].Schema != SweepSchema || cells[1].Batch != 4 || *cells[0].Ops[0].PredictedS != 0.002 ||
		cells[0].CPU != a.CPU || cells[0].Requests[1].OutputTokens != 1 {
		t.Errorf("round trip: %+v", cells[1])
	}
	bad := testCell("", 1)
	if err := AppendSweepCell(path, bad); err == nil || !strings.Contains(err.Error(), `missing key "key"`) {
		t.Errorf("invalid cell appended: %v", err)
	}
}

// TestSweepCellsCorruptLines: a truncated last line, a garbage line in the
// middle, a cell of another schema and one missing a key are skipped with
// file:line errors; appending after a truncated line starts a new line;
// quarantining saves the bad lines before rewriting the file.
func TestSweepCellsCorruptLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cells.jsonl")
	var buf bytes.Buffer
	line := func(c *SweepCell) []byte {
		f := filepath.Join(t.TempDir(), "x")
		if err := AppendSweepCell(f, c); err != nil {
			t.Fatal(err)
		}
		d, _ := os.ReadFile(f)
		return d
	}
	buf.Write(line(testCell("k/1", 1)))                                                                  // line 1: good
	buf.WriteString("{{not json\n")                                                                      // line 2: garbage
	buf.Write(bytes.Replace(line(testCell("k/3", 1)), []byte(SweepSchema), []byte("bench.sweep/v9"), 1)) // line 3: schema
	buf.WriteString("\n")                                                                                // line 4: blank
	buf.Write(bytes.Replace(line(testCell("k/5", 1)), []byte(`"batch":1`), []byte(`"batch":"one"`), 1))  // line 5: type
	buf.Write(line(testCell("k/6", 2)))                                                                  // line 6: good
	trunc := line(testCell("k/7", 1))
	buf.Write(trunc[:len(trunc)/2]) // line 7: truncated, no newline
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cells, skipped, err := ReadSweepCells(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || cells[0].Key != "k/1" || cells[1].Key != "k/6" {
		t.Fatalf("cells %v", cells)
	}
	want := []string{
		path + `:2: invalid JSON at byte 2`,
		path + `:3: schema "bench.sweep/v9": want "bench.sweep/v1"`,
		path + `:5: key "batch": string is not a valid int`,
		path + `:7: truncated last line (an interrupted write?)`,
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %v", skipped)
	}
	for i, w := range want {
		if !strings.HasPrefix(skipped[i].Error(), w) {
			t.Errorf("skipped[%d] = %q, want prefix %q", i, skipped[i], w)
		}
	}

	// Appending after the truncated line keeps the new cell whole.
	if err := AppendSweepCell(path, testCell("k/8", 1)); err != nil {
		t.Fatal(err)
	}
	cells, skipped2, _ := ReadSweepCells(path)
	if len(cells) != 3 || cells[2].Key != "k/8" || len(skipped2) != 4 {
		t.Fatalf("after append: %d cells, skipped %v", len(cells), skipped2)
	}
	if !strings.Contains(skipped2[3].Error(), ":7: invalid JSON") {
		t.Errorf("line 7 is no longer last but still bad: %v", skipped2[3])
	}

	before, _ := os.ReadFile(path)
	now := time.Date(2026, 11, 21, 16, 30, 0, 0, time.UTC)
	saved, err := QuarantineSweepLines(path, skipped2, now)
	if err != nil {
		t.Fatal(err)
	}
	if saved != path+".corrupt-20261121-163000" {
		t.Errorf("saved to %s", saved)
	}
	moved, _ := os.ReadFile(saved)
	after, _ := os.ReadFile(path)
	// Nothing lost: every line of the old file is in one of the two.
	for i, l := range bytes.Split(bytes.TrimSuffix(before, []byte("\n")), []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if !bytes.Contains(moved, l) && !bytes.Contains(after, l) {
			t.Errorf("line %d lost: %.60s", i+1, l)
		}
	}
	if bytes.Count(moved, []byte("\n")) != 4 || bytes.Count(after, []byte("\n")) != 3 {
		t.Errorf("moved %d lines, kept %d; want 4 and 3", bytes.Count(moved, []byte("\n")), bytes.Count(after, []byte("\n")))
	}
	cells, skipped3, _ := ReadSweepCells(path)
	if len(cells) != 3 || len(skipped3) != 0 {
		t.Errorf("after quarantine: %d cells, skipped %v", len(cells), skipped3)
	}
	// A second quarantine in the same second does not overwrite the first.
	os.WriteFile(path, append(after, []byte("junk\n")...), 0o644)
	_, sk, _ := ReadSweepCells(path)
	saved2, err := QuarantineSweepLines(path, sk, now)
	if err != nil || saved2 == saved {
		t.Errorf("second quarantine: %s, %v", saved2, err)
	}
	// A file changed since it was read is left alone.
	os.WriteFile(path, append(after, []byte("junk\n")...), 0o644)
	_, sk, _ = ReadSweepCells(path)
	os.WriteFile(path, append(after, []byte("other\n")...), 0o644)
	if _, err := QuarantineSweepLines(path, sk, now); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Errorf("changed file: %v", err)
	}
	if s, err := QuarantineSweepLines(path, nil, now); s != "" || err != nil {
		t.Errorf("nothing to move: %q, %v", s, err)
	}
}

// checkBenchfmt checks text against the Go benchmark data format
// (golang.org/design/14313-benchmark-format) as golang.org/x/perf/benchfmt
// reads it: every line is blank, a configuration line "key: value" (key
// starting lower case, with no spaces or upper case), a "Unit" metadata
// line, or a result line "BenchmarkName iterations value unit..." with an
// even number (≥ 4) of fields. It returns the result lines' fields.
func checkBenchfmt(t *testing.T, text string) [][]string {
	t.Helper()
	var results [][]string
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n := i + 1
		switch {
		case l == "":
		case strings.HasPrefix(l, "Benchmark"):
			f := strings.Fields(l)
			if len(f) < 4 || len(f)%2 != 0 {
				t.Errorf("line %d: %d fields, want an even number ≥ 4: %q", n, len(f), l)
				continue
			}
			if r := []rune(f[0]); len(r) < 10 || !unicode.IsUpper(r[9]) {
				t.Errorf("line %d: name %q: want Benchmark + upper case", n, f[0])
			}
			if _, err := strconv.Atoi(f[1]); err != nil {
				t.Errorf("line %d: iterations %q: %v", n, f[1], err)
			}
			for j := 2; j < len(f); j += 2 {
				if _, err := strconv.ParseFloat(f[j], 64); err != nil {
					t.Errorf("line %d: value %q: %v", n, f[j], err)
				}
				if f[j+1] == "" {
					t.Errorf("line %d: empty unit", n)
				}
			}
			results = append(results, f)
		case strings.HasPrefix(l, "Unit "):
			f := strings.Fields(l)
			for _, kv := range f[2:] {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					t.Errorf("line %d: unit metadata %q is not key=value", n, kv)
				}
			}
		default:
			key, val, ok := strings.Cut(l, ":")
			if !ok || key == "" || !unicode.IsLower([]rune(key)[0]) || strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsUpper(r) }) >= 0 {
				t.Errorf("line %d: neither a result, a unit nor a configuration line: %q", n, l)
			}
			if val != "" && val[0] != ' ' {
				t.Errorf("line %d: no space after %q", n, key+":")
			}
		}
	}
	return results
}

func TestWriteBenchstat(t *testing.T) {
	a, b, c := testCell("k/a", 1), testCell("k/b", 4), testCell("k/c", 1)
	b.TPOT = Dist{}                          // no TPOT units
	c.Host, c.CPU = "h2", ""                 // another host, CPU unknown
	c.Model = "/models/My Model/config.json" // escaped in the name
	c.Ablation = "partition"
	var buf bytes.Buffer
	if err := WriteBenchstat(&buf, []SweepCell{*a, *b, *c}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	res := checkBenchfmt(t, text)
	if len(res) != 3 {
		t.Fatalf("%d result lines:\n%s", len(res), text)
	}
	wantName := "BenchmarkSweep/model=qwen3-0.6b/layers=2/workload=gsm8k/arrival=closed/batch=1/threads=2/placement=mixed/ablate=none-2"
	if res[0][0] != wantName || res[0][1] != "2" {
		t.Errorf("first result %q %q, want %q 2", res[0][0], res[0][1], wantName)
	}
	if !strings.Contains(res[2][0], "/model=%2Fmodels%2FMy%20Model%2Fconfig.json/") || !strings.Contains(res[2][0], "/ablate=partition-2") {
		t.Errorf("third name %q", res[2][0])
	}
	units := func(f []string) map[string]string {
		m := map[string]string{}
		for j := 2; j < len(f); j += 2 {
			m[f[j+1]] = f[j]
		}
		return m
	}
	u := units(res[0])
	for unit, want := range map[string]string{"sec/op": "0.925", "ttft-p50-sec": "0.1", "tpot-p99-sec": "0.05", "latency-p90-sec": "1.65",
		"slo-attainment": "1", "tok/s": strconv.FormatFloat(33/1.85, 'g', -1, 64), "goodput-req/s": strconv.FormatFloat(2/1.85, 'g', -1, 64)} {
		if u[unit] != want {
			t.Errorf("%s = %q, want %q", unit, u[unit], want)
		}
	}
	if _, ok := units(res[1])["tpot-p50-sec"]; ok {
		t.Errorf("TPOT units for a cell without TPOT samples: %v", res[1])
	}
	for _, w := range []string{"goos: linux\n", "goarch: amd64\n", "cpu: AMD EPYC 7B13 64-Core Processor\n", "pkg: " + BenchstatPkg + "\n",
		"host: h1\n", "slo-tpot-sec: 0.28\n", "Unit tok/s better=higher\n", "cpu:\nhost: h2\n"} {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}
	if strings.Count(text, "host:") != 2 || strings.Count(text, "goos:") != 1 {
		t.Errorf("configuration lines repeated:\n%s", text)
	}
}

// TestPlacementLabel: the label is generated from what ran (targets with
// calls), says where the matrix target has no matrix unit, and falls back
// to the placement name for cells without targets.
func TestPlacementLabel(t *testing.T) {
	cores := SweepTarget{Target: "cores", Library: "kernels/gemm", Backend: "avx2-fp32", Unit: "cores", Precision: "fp32", Calls: 3}
	bf16 := SweepTarget{Target: "matrix", Library: "kernels/gemm", Backend: "avx2-bf16", Unit: "cores", Precision: "bf16", Note: "no matrix unit", Calls: 3}
	sme := SweepTarget{Target: "matrix", Library: "kernels/gemm", Backend: "sme-fp32", Unit: "matrix", ISA: "sme", Precision: "fp32", Calls: 3}
	named := SweepTarget{Target: "matrix", Library: "kernels/gemm", Backend: "neon-bf16", Unit: "cores", Precision: "bf16",
		Note: "chosen by name; the matrix unit's sme-fp32 is not used", Calls: 3}
	quant := SweepTarget{Target: "cores", Library: "kernels/quant", Backend: "avx2", Unit: "cores", Precision: "q4_0", Calls: 3}
	idle := func(t SweepTarget) SweepTarget { t.Calls = 0; return t }
	for _, c := range []struct {
		placement string
		targets   []SweepTarget
		want      string
	}{
		{"cores", nil, "cores"},
		{"cores", []SweepTarget{cores}, "cores = avx2-fp32"},
		{"matrix", []SweepTarget{idle(cores), bf16}, "matrix = avx2-bf16 on the cores, no matrix unit"},
		{"matrix", []SweepTarget{idle(cores), sme}, "matrix = sme-fp32 on the matrix unit"},
		{"matrix", []SweepTarget{idle(cores), named}, "matrix = neon-bf16 on the cores (named)"},
		{"mixed", []SweepTarget{cores, sme}, "mixed = avx2-fp32 + sme-fp32 on the matrix unit"},
		{"auto", []SweepTarget{cores, idle(bf16)}, "auto = avx2-fp32 (cores only)"},
		{"auto", []SweepTarget{idle(cores), bf16}, "auto = avx2-bf16 on the cores, no matrix unit (matrix only)"},
		{"cores", []SweepTarget{quant}, "cores = q4_0 on kernels/quant avx2"},
		{"auto", []SweepTarget{idle(cores), idle(sme)}, "auto = avx2-fp32 + sme-fp32 on the matrix unit"},
	} {
		cell := SweepCell{Placement: c.placement, Targets: c.targets}
		if got := cell.PlacementLabel(); got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.placement, c.targets, got, c.want)
		}
	}
}

// TestSweepOpCompared: a prediction is held against the operator's time
// less its interrupted calls' excess where the cell has it, else against
// its measured time.
func TestSweepOpCompared(t *testing.T) {
	u := 0.4
	if got := (SweepOp{MeasuredS: 0.9, UninterruptedS: &u, InterruptedCalls: 2}).Compared(); got != 0.4 {
		t.Errorf("with uninterrupted_s: %v; want 0.4", got)
	}
	if got := (SweepOp{MeasuredS: 0.9}).Compared(); got != 0.9 {
		t.Errorf("without: %v; want measured_s 0.9", got)
	}
}
