package workloads

import (
	"strings"
	"testing"
	"testing/iotest"
)

// TestParsersRejectCorrupt feeds bad data to every parser: each must fail
// with one line that names the file and what was wrong.
func TestParsersRejectCorrupt(t *testing.T) {
	gsm := func(s string) error { _, err := parseGSM8K(strings.NewReader(s)); return err }
	lw := func(s string) error { _, err := parseLongWriter(strings.NewReader(s)); return err }
	qa := func(s string) error { _, err := parseQAPool(strings.NewReader(s)); return err }
	tm := func(s string) error { _, err := parseRulerTemplates(strings.NewReader(s)); return err }
	const goodQA = `{"dataset":"x","docs":["a","b"],"articles":[{"title":"t","docs":[0,1]}],"qas":[{"query":"q","outputs":["a"],"context":[0],"article":0}]}`
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"gsm8k not JSON", gsm("{\"question\":\"q\",\"answer\":\"a\"}\nnot json\n"), "gsm8k test.jsonl line 2: invalid character"},
		{"gsm8k empty answer", gsm(`{"question":"q","answer":""}`), "line 1: empty question or answer"},
		{"gsm8k empty file", gsm("\n\n"), "gsm8k test.jsonl: no records"},
		{"gsm8k truncated", gsm(`{"question":"q","ans`), "line 1: unexpected end of JSON"},
		{"longwriter zero length", lw(`{"prompt":"p","type":"x","length":0}`), "length 0: must be ≥ 1"},
		{"longwriter length string", lw(`{"prompt":"p","type":"x","length":"5"}`), "longbench_write.jsonl line 1: json: cannot unmarshal string"},
		{"QA not JSON", qa("PK\x03\x04"), "QA pool: invalid character"},
		{"QA doc out of range", qa(strings.Replace(goodQA, `"context":[0]`, `"context":[7]`, 1)), "question 0: doc index 7 out of range 0..1"},
		{"QA article out of range", qa(strings.Replace(goodQA, `"article":0}`, `"article":3}`, 1)), "article 3 out of range"},
		{"QA no answer", qa(strings.Replace(goodQA, `"outputs":["a"]`, `"outputs":[]`, 1)), "needs a query, an answer and a gold doc"},
		{"QA no docs", qa(`{"dataset":"x","docs":[],"qas":[]}`), "0 docs and 0 questions"},
		{"templates no qa", tm(`{"task_templates":{}}`), `no "qa" task template`},
		{"templates not JSON", tm(`]`), "RULER templates.json: invalid character"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || strings.Contains(c.err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line containing %q", c.name, c.err, c.want)
		}
	}
	if _, err := parseQAPool(strings.NewReader(goodQA)); err != nil {
		t.Errorf("good QA pool: %v", err)
	}
	if _, err := parseGSM8K(iotest.ErrReader(iotest.ErrTimeout)); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("read error: %v", err)
	}
}

// TestEmbeddedData checks the shipped pools parse with the sizes their
// SOURCE.md files state.
func TestEmbeddedData(t *testing.T) {
	gsm, err := loadGzip(dataFS, "data/gsm8k/test.jsonl.gz", parseGSM8K)
	if err != nil || len(gsm) != 1319 {
		t.Errorf("GSM8K: %d items, %v; want 1319", len(gsm), err)
	}
	sq, err := loadGzip(dataFS, "data/ruler/squad_qa.json.gz", parseQAPool)
	if err != nil || len(sq.Docs) != 646 || len(sq.QAs) != 2910 {
		t.Fatalf("SQuAD pool: %v", err)
	}
	hp, err := loadGzip(dataFS, "data/ruler/hotpotqa_qa.json.gz", parseQAPool)
	if err != nil || len(hp.Docs) != 991 || len(hp.QAs) != 100 {
		t.Fatalf("HotpotQA pool: %v", err)
	}
	if q := sq.QAs[0]; len(q.Context) != 1 || len(q.More) != 38 {
		t.Errorf("SQuAD question 0: %d gold docs, %d more; want 1 and 38 (Normans has 39 paragraphs)", len(q.Context), len(q.More))
	}
	for _, name := range []string{"data/SOURCE.md", "data/LICENSE-Apache-2.0.txt", "data/gsm8k/SOURCE.md", "data/longwriter/SOURCE.md", "data/ruler/SOURCE.md", "data/tokenizers/qwen3/SOURCE.md"} {
		if _, err := dataFS.Open(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
