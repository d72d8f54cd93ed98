package workloads

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

func qwen(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Qwen3()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestQwen3Load loads the embedded tokenizer and reports the time.
func TestQwen3Load(t *testing.T) {
	tok := qwen(t)
	t.Logf("Qwen3 tokenizer loaded in %v (gunzip + JSON + ranks)", Qwen3LoadTime())
	if got, want := tok.VocabSize(), 151643+26; got != want {
		t.Errorf("VocabSize = %d, want %d", got, want)
	}
	sp := tok.SpecialTokens()
	if len(sp) != 26 || sp[0] != "<|endoftext|>" || sp[1] != "<|im_start|>" || sp[2] != "<|im_end|>" {
		t.Errorf("SpecialTokens = %q", sp)
	}
	// The load time is recorded once loaded (how long is a benchmark's
	// business, not a test's).
	if d := Qwen3LoadTime(); d <= 0 {
		t.Errorf("Qwen3LoadTime = %v after loading", d)
	} else {
		t.Logf("loading took %v", d)
	}
}

// TestReferenceIDs compares with the ids the HF tokenizer produced
// (testdata/reference_ids.jsonl, from tokenizers/qwen3).
func TestReferenceIDs(t *testing.T) {
	tok := qwen(t)
	for i, line := range readLines(t, "testdata/reference_ids.jsonl") {
		var ref struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal(line, &ref); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if got := tok.Encode(ref.Text); !slices.Equal(got, ref.IDs) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", ref.Text, got, ref.IDs)
		}
	}
}

// TestReferenceCounts compares every count in
// testdata/reference_counts.jsonl: GSM8K questions and answers and
// LongBench-Write prompts, 2,758 texts.
func TestReferenceCounts(t *testing.T) {
	tok := qwen(t)
	gsm, err := loadGzip(dataFS, "data/gsm8k/test.jsonl.gz", parseGSM8K)
	if err != nil {
		t.Fatal(err)
	}
	f, err := dataFS.Open("data/longwriter/longbench_write.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lw, err := parseLongWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	type ref struct {
		File                       string
		Line                       int
		Question, Answer, Prompt   string
		QuestionN, AnswerN, PrompN int
	}
	var refs []ref
	for i, line := range readLines(t, "testdata/reference_counts.jsonl") {
		var r struct {
			File           string `json:"file"`
			Line           int    `json:"line"`
			QuestionTokens *int   `json:"question_tokens"`
			AnswerTokens   *int   `json:"answer_tokens"`
			PromptTokens   *int   `json:"prompt_tokens"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("reference line %d: %v", i, err)
		}
		switch {
		case r.File == "gsm8k/test.jsonl" && r.QuestionTokens != nil && r.AnswerTokens != nil:
			refs = append(refs, ref{File: r.File, Line: r.Line, Question: gsm[r.Line].Question, Answer: gsm[r.Line].Answer, QuestionN: *r.QuestionTokens, AnswerN: *r.AnswerTokens})
		case r.File == "longwriter/longbench_write.jsonl" && r.PromptTokens != nil:
			refs = append(refs, ref{File: r.File, Line: r.Line, Prompt: lw[r.Line].Prompt, PrompN: *r.PromptTokens})
		default:
			t.Fatalf("reference line %d: unexpected record %s", i, line)
		}
	}
	if len(refs) != len(gsm)+len(lw) {
		t.Fatalf("%d references for %d GSM8K + %d LongBench-Write items", len(refs), len(gsm), len(lw))
	}
	var texts []string
	var want []int
	for _, r := range refs {
		if r.Prompt != "" {
			texts, want = append(texts, r.Prompt), append(want, r.PrompN)
		} else {
			texts, want = append(texts, r.Question, r.Answer), append(want, r.QuestionN, r.AnswerN)
		}
	}
	got := countAll(tok, texts)
	bad := 0
	for i := range texts {
		if got[i] != want[i] {
			if bad++; bad <= 10 {
				t.Errorf("Count(%.60q) = %d, want %d", texts[i], got[i], want[i])
			}
		}
	}
	t.Logf("%d texts, %d mismatches", len(texts), bad)
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, append([]byte(nil), l...))
		}
	}
	return out
}

// A minimal valid tokenizer.json: the 256 byte symbols, one merge-free
// two-byte token and one added token.
func tinyTokenizerJSON(mut func(m map[string]any)) string {
	vocab := map[string]int{}
	for b, r := range byteDecoderInverse() {
		vocab[string(r)] = b
	}
	vocab["ab"] = 256
	m := map[string]any{
		"added_tokens": []map[string]any{{"id": 257, "content": "<|x|>"}},
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\S+|\s+`}},
			map[string]any{"type": "ByteLevel"},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{}},
	}
	if mut != nil {
		mut(m)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func byteDecoderInverse() [256]rune {
	var out [256]rune
	for r, b := range byteDecoder() {
		out[b] = r
	}
	return out
}

func TestLoadTokenizerTiny(t *testing.T) {
	tok, err := LoadTokenizer(strings.NewReader(tinyTokenizerJSON(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("ab a<|x|>"); !slices.Equal(got, []int{256, ' ', 'a', 257}) {
		t.Errorf("Encode = %v", got)
	}
}

func TestLoadTokenizerErrors(t *testing.T) {
	model := func(f func(mm map[string]any)) func(map[string]any) {
		return func(m map[string]any) { f(m["model"].(map[string]any)) }
	}
	cases := []struct {
		name, json, want string
	}{
		{"not JSON", "<html>", "invalid character"},
		{"truncated", tinyTokenizerJSON(nil)[:100], "unexpected end of JSON"},
		{"wordpiece", tinyTokenizerJSON(model(func(m map[string]any) { m["type"] = "WordPiece" })), `model type "WordPiece"`},
		{"no vocab", tinyTokenizerJSON(model(func(m map[string]any) { m["vocab"] = map[string]int{} })), "vocab has 0 entries"},
		{"not byte-level", tinyTokenizerJSON(model(func(m map[string]any) { m["vocab"].(map[string]int)["€"] = 258 })), "not a byte-level symbol"},
		{"duplicate id", tinyTokenizerJSON(model(func(m map[string]any) { m["vocab"].(map[string]int)["ba"] = 256 })), "id 256 used by both"},
		{"no regex", tinyTokenizerJSON(func(m map[string]any) { delete(m, "pre_tokenizer") }), "no Split pre-tokenizer regex"},
		{"bad regex", tinyTokenizerJSON(func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(\S+`}}
		}), "pre-tokenizer regex"},
		{"NFKC", tinyTokenizerJSON(func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFKC"} }), `normalizer "NFKC"`},
		{"added id clash", tinyTokenizerJSON(func(m map[string]any) {
			m["added_tokens"] = []map[string]any{{"id": 256, "content": "<|x|>"}}
		}), "reuses id 256"},
	}
	for _, c := range cases {
		_, err := LoadTokenizer(strings.NewReader(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line containing %q", c.name, err, c.want)
		}
	}
}

// TestLoadGzipCorrupt feeds a file that is not gzip, and a truncated one.
func TestLoadGzipCorrupt(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(tinyTokenizerJSON(nil)))
	zw.Close()
	fsys := memFS{"plain.gz": []byte("not gzip data"), "cut.gz": gz.Bytes()[:gz.Len()/2]}
	for name, want := range map[string]string{"plain.gz": "gzip: invalid header", "cut.gz": "unexpected EOF", "missing.gz": "file does not exist"} {
		_, err := loadGzip(fsys, name, LoadTokenizer)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", name, err, want)
		}
	}
}

func BenchmarkCount(b *testing.B) {
	tok := qwen(b)
	p, err := loadGzip(dataFS, "data/ruler/squad_qa.json.gz", parseQAPool)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Join(p.Docs[:40], "\n\n")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Count(text)
	}
}

func TestQwen3GGUFVocab(t *testing.T) {
	v, err := Qwen3GGUFVocab(151936)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != 151936 || len(v.Types) != 151936 || len(v.Merges) < 150000 || v.EOS != 151643 {
		t.Fatalf("%d tokens, %d merges, eos %d", len(v.Tokens), len(v.Merges), v.EOS)
	}
	if v.Tokens[151644] != "<|im_start|>" || v.Types[151644] != 3 || v.Types[151667] != 4 || v.Tokens[151935] != "[PAD151935]" || v.Types[151935] != 5 || v.Types[0] != 1 {
		t.Errorf("tokens %q/%d %d %q/%d %d", v.Tokens[151644], v.Types[151644], v.Types[151667], v.Tokens[151935], v.Types[151935], v.Types[0])
	}
	if v.Merges[0] != "Ġ Ġ" {
		t.Errorf("first merge %q", v.Merges[0])
	}
	if _, err := Qwen3GGUFVocab(1000); err == nil {
		t.Error("a vocab of 1000 accepted")
	}
}
