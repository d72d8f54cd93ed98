package reports

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The hand-written fixture in llama-bench's -o json and -o jsonl layouts
// (every field llama-bench writes) reads the same either way.
func TestParseLlamaBench(t *testing.T) {
	var got [2]*Baseline
	for i, f := range []string{"testdata/llama-bench-fixture.json", "testdata/llama-bench-fixture.jsonl"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got[i], err = ParseLlamaBench(data, f); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got[0].Rows, got[1].Rows) || len(got[0].Rows) != 4 {
		t.Fatalf("json %+v\njsonl %+v", got[0].Rows, got[1].Rows)
	}
	r := got[0].Rows[1]
	if r.Format() != "q8_0" || r.Test() != "tg16" || r.NThreads != 1 || r.AvgTS != 20 || r.StddevTS != 0.25 || got[0].Rows[0].Test() != "pp128" {
		t.Errorf("row %+v: format %s test %s", r, r.Format(), r.Test())
	}
	for _, c := range []struct{ in, want string }{
		{"", "f.json: empty"},
		{"[{]", "f.json: not llama-bench JSON"},
		{"{\"n_threads\": 1}\n{", "f.json:2: not llama-bench JSONL"},
		{"[]", "f.json: no llama-bench tests"},
		{`[{"model_type":"x Q8_0","n_threads":0,"n_prompt":1,"avg_ts":1}]`, "f.json: test 1 (x Q8_0): n_threads 0"},
		{`[{"n_threads":1,"n_prompt":0,"n_gen":0,"avg_ts":1}]`, "n_prompt 0, n_gen 0"},
		{`[{"n_threads":1,"n_prompt":8,"avg_ts":-3}]`, "avg_ts -3: must be > 0"},
	} {
		_, err := ParseLlamaBench([]byte(c.in), "f.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.in, err, c.want)
		}
	}
	if (LlamaBenchRow{ModelType: "llama 8B F32"}).Format() != "fp32" || (LlamaBenchRow{ModelType: "qwen3 0.6B BF16"}).Format() != "bf16" {
		t.Error("F32/BF16 names")
	}
}

// With a baseline, the report draws the batch-1 cells' prefill and decode
// tok/s beside llama.cpp's and names the file and the weight formats.
func TestSweepBaseline(t *testing.T) {
	data, err := os.ReadFile("testdata/llama-bench-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	bl, err := ParseLlamaBench(data, "testdata/llama-bench-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	cells := synthCells()
	for i := range cells {
		cells[i].PrefillTokS = 50
	}
	dir := t.TempDir()
	s, err := Sweep(cells, dir, SweepOptions{Baseline: bl})
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "baseline.png"))
	mdb, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	md := squeeze(string(mdb))
	for _, want := range []string{"## Beside llama.cpp (llama-bench)", "![Prefill and decode tokens/s beside llama.cpp](baseline.png)",
		"testdata/llama-bench-fixture.json", "| decode | 2 | llama.cpp tg16 · q8_0 (llama-bench-fixture.json) | 30 | 0.5 |",
		"| prefill | 2 | bench cores · tiny fp32 · gsm8k · m1 | 50 |", "| decode | 2 | bench mixed · tiny fp32 · gsm8k · m2 | 100 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", md)
	}
	found := false
	for _, p := range s.Plots {
		found = found || p.File == "baseline.png"
	}
	if !found {
		t.Errorf("plots %v", s.Plots)
	}
}
