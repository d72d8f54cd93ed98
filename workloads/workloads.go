package workloads

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"unicode"
)

// Tokens per unit of LongBench-Write's required length, measured with the
// Qwen3 tokenizer (TestLongWriterRatios re-measures them):
//   - English: tokens per [a-zA-Z]+ word of Wikipedia prose, over the 646
//     SQuAD paragraphs in data/ruler (113,205 tokens / 85,643 words);
//   - Chinese: tokens per Han character over the 61 Chinese LongBench-Write
//     prompts (6,227 tokens / 7,433 characters).
//
// LongWriter's evaluation counts a response's length the same way (Han
// characters plus [a-zA-Z]+ words), so output tokens = length × ratio.
const (
	TokensPerEnglishWord = 1.32
	TokensPerChineseChar = 0.84
)

// Workload describes one request source.
type Workload struct {
	Name    string `json:"name"`
	Dataset string `json:"dataset"` // short name of the data set
	Source  string `json:"source"`  // the data set and where it is from
	Prompt  string `json:"prompt"`  // how a prompt is built
	Output  string `json:"output"`  // what the output token count is
}

var catalog = []Workload{
	{
		Name:    "gsm8k",
		Dataset: "GSM8K test",
		Source:  "GSM8K test split, 1,319 problems (openai/grade-school-math@3101c7d, MIT)",
		Prompt:  "the question in Qwen's chat template",
		Output:  "tokens of the reference answer",
	},
	{
		Name:    "longwriter",
		Dataset: "LongBench-Write",
		Source:  "LongBench-Write, 120 prompts (THUDM/LongWriter@3fcfdff, Apache-2.0)",
		Prompt:  "the prompt in Qwen's chat template",
		Output:  fmt.Sprintf("required length × %.2f tokens/word (English) or × %.2f tokens/character (Chinese)", TokensPerEnglishWord, TokensPerChineseChar),
	},
	{
		Name:    "ruler-4k",
		Dataset: "RULER qa_1 SQuAD + qa_2 HotpotQA",
		Source:  "RULER qa_1 (SQuAD v2.0 dev) and qa_2 (HotpotQA dev), alternating (NVIDIA/RULER@c3f5e3b, CC BY-SA 4.0)",
		Prompt:  "RULER's QA template and answer prefix, documents sized so prompt + 32 ≤ 4096",
		Output:  "tokens of the first gold answer",
	},
	{
		Name:    "ruler-8k",
		Dataset: "RULER qa_1 SQuAD + qa_2 HotpotQA",
		Source:  "RULER qa_1 (SQuAD v2.0 dev) and qa_2 (HotpotQA dev), alternating (NVIDIA/RULER@c3f5e3b, CC BY-SA 4.0)",
		Prompt:  "RULER's QA template and answer prefix, documents sized so prompt + 32 ≤ 8192",
		Output:  "tokens of the first gold answer",
	},
}

// Names returns the workload names in listing order.
func Names() []string {
	out := make([]string, len(catalog))
	for i, w := range catalog {
		out[i] = w.Name
	}
	return out
}

// Lookup returns the description of the named workload.
func Lookup(name string) (Workload, error) {
	for _, w := range catalog {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("unknown workload %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// sample is one request before it gets an id and an arrival time.
type sample struct {
	source         string
	prompt, output int
}

// lazy holds a value computed once.
type lazy[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (l *lazy[T]) get(f func() (T, error)) (T, error) {
	l.once.Do(func() { l.v, l.err = f() })
	return l.v, l.err
}

// The pools, built on first use. A workload's strata are drawn from in turn
// (RULER alternates qa_1 and qa_2).
var (
	gsm8kPool, longwriterPool lazy[[]sample]
	squadQA, hotpotQA         lazy[*rulerQA]
	rulerPools                [2][2]lazy[[]sample] // [4K, 8K][qa_1, qa_2]
)

func strata(name string) ([][]sample, error) {
	switch name {
	case "gsm8k":
		p, err := gsm8kPool.get(gsm8kSamples)
		return [][]sample{p}, err
	case "longwriter":
		p, err := longwriterPool.get(longwriterSamples)
		return [][]sample{p}, err
	case "ruler-4k", "ruler-8k":
		k, budget := 0, 4096
		if name == "ruler-8k" {
			k, budget = 1, 8192
		}
		out := make([][]sample, 2)
		errc := make(chan error, 2)
		for j, qa := range []*lazy[*rulerQA]{&squadQA, &hotpotQA} {
			go func() {
				var err error
				out[j], err = rulerPools[k][j].get(func() ([]sample, error) {
					r, err := qa.get(func() (*rulerQA, error) { return loadRulerQA(j) })
					if err != nil {
						return nil, err
					}
					s, err := r.samples(budget, r.tmpl.NumSamples)
					if err != nil {
						return nil, fmt.Errorf("workloads: %s: %w", name, err)
					}
					return s, nil
				})
				errc <- err
			}()
		}
		// The first error only: both strata may fail alike, and errors
		// stay one line.
		err1, err2 := <-errc, <-errc
		return out, cmp.Or(err1, err2)
	}
	_, err := Lookup(name)
	return nil, err
}

var rulerTmpl lazy[*rulerTemplates]

func loadRulerQA(which int) (*rulerQA, error) {
	tmpl, err := rulerTmpl.get(func() (*rulerTemplates, error) {
		f, err := dataFS.Open("data/ruler/templates.json")
		if err != nil {
			return nil, fmt.Errorf("workloads: %w", err)
		}
		defer f.Close()
		t, err := parseRulerTemplates(f)
		if err != nil {
			return nil, fmt.Errorf("workloads: %w", err)
		}
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	file := [...]string{"ruler/squad_qa.json", "ruler/hotpotqa_qa.json"}[which]
	pool, err := loadGzip(dataFS, "data/"+file+".gz", parseQAPool)
	if err != nil {
		return nil, err
	}
	tok, err := Qwen3()
	if err != nil {
		return nil, err
	}
	r, err := newRulerQA(tmpl, pool, tok, file)
	if err != nil {
		return nil, fmt.Errorf("workloads: %w", err)
	}
	return r, nil
}

// QwenChat wraps a user message in Qwen's chat template with the assistant
// turn opened (add_generation_prompt=True, no system message).
func QwenChat(user string) string {
	return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n"
}

func gsm8kSamples() ([]sample, error) {
	items, err := loadGzip(dataFS, "data/gsm8k/test.jsonl.gz", parseGSM8K)
	if err != nil {
		return nil, err
	}
	tok, err := Qwen3()
	if err != nil {
		return nil, err
	}
	texts := make([]string, 0, 2*len(items))
	for _, it := range items {
		texts = append(texts, QwenChat(it.Question), it.Answer)
	}
	n := countAll(tok, texts)
	out := make([]sample, len(items))
	for i := range items {
		out[i] = sample{source: fmt.Sprintf("gsm8k/test.jsonl:%d", i), prompt: n[2*i], output: n[2*i+1]}
	}
	return out, nil
}

func longwriterSamples() ([]sample, error) {
	f, err := dataFS.Open("data/longwriter/longbench_write.jsonl")
	if err != nil {
		return nil, fmt.Errorf("workloads: %w", err)
	}
	defer f.Close()
	items, err := parseLongWriter(f)
	if err != nil {
		return nil, fmt.Errorf("workloads: %w", err)
	}
	tok, err := Qwen3()
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(items))
	for i, it := range items {
		texts[i] = QwenChat(it.Prompt)
	}
	n := countAll(tok, texts)
	out := make([]sample, len(items))
	for i, it := range items {
		out[i] = sample{
			source: fmt.Sprintf("longwriter/longbench_write.jsonl:%d", i),
			prompt: n[i],
			output: lengthTokens(it),
		}
	}
	return out, nil
}

// lengthTokens converts a LongBench-Write required length to tokens.
func lengthTokens(it lwItem) int {
	r := TokensPerEnglishWord
	if isChinese(it.Prompt) {
		r = TokensPerChineseChar
	}
	return int(math.Round(float64(it.Length) * r))
}

// lengthUnits counts text the way LongWriter's evaluation does: Han
// characters plus [a-zA-Z]+ words.
func lengthUnits(s string) (han, words int) {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			han++
		}
	}
	return han, len(asciiWord.FindAllStringIndex(s, -1))
}

var asciiWord = regexp.MustCompile(`[a-zA-Z]+`)

// countAll counts the tokens of each text on all CPUs.
func countAll(tok *Tokenizer, texts []string) []int {
	out := make([]int, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(texts); i += workers {
				out[i] = tok.Count(texts[i])
			}
		}()
	}
	wg.Wait()
	return out
}
