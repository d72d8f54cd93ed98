package workloads

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
)

// gsmItem is one GSM8K test problem.
type gsmItem struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// lwItem is one LongBench-Write prompt. Length is the required output
// length: Chinese characters for a Chinese prompt, English words otherwise.
type lwItem struct {
	Prompt string `json:"prompt"`
	Type   string `json:"type"`
	Length int    `json:"length"`
}

// readJSONLines decodes one JSON object per non-blank line into a T and
// checks it with valid.
func readJSONLines[T any](r io.Reader, name string, valid func(T) error) ([]T, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []T
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		if err := valid(v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no records", name)
	}
	return out, nil
}

// parseGSM8K reads GSM8K's test.jsonl: {"question", "answer"} per line.
func parseGSM8K(r io.Reader) ([]gsmItem, error) {
	return readJSONLines(r, "gsm8k test.jsonl", func(g gsmItem) error {
		if g.Question == "" || g.Answer == "" {
			return fmt.Errorf("empty question or answer")
		}
		return nil
	})
}

// parseLongWriter reads LongBench-Write's jsonl: {"prompt", "type", "length"}.
func parseLongWriter(r io.Reader) ([]lwItem, error) {
	return readJSONLines(r, "longbench_write.jsonl", func(l lwItem) error {
		if l.Prompt == "" {
			return fmt.Errorf("empty prompt")
		}
		if l.Length <= 0 {
			return fmt.Errorf("length %d: must be ≥ 1", l.Length)
		}
		return nil
	})
}

// isChinese reports whether s contains Han characters; LongBench-Write then
// measures its length in characters rather than words.
func isChinese(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// qaPool is a RULER QA document pool in the shape of RULER's read_squad()
// and read_hotpotqa(): docs, and questions whose gold docs (Context) and,
// for SQuAD, same-article docs (More) index into Docs.
type qaPool struct {
	Dataset string
	Docs    []string
	QAs     []qaItem
}

type qaItem struct {
	Query   string
	Outputs []string
	Context []int
	More    []int
}

// parseQAPool reads squad_qa.json or hotpotqa_qa.json (see ruler/SOURCE.md).
func parseQAPool(r io.Reader) (*qaPool, error) {
	var raw struct {
		Dataset  string   `json:"dataset"`
		Docs     []string `json:"docs"`
		Articles []struct {
			Title string `json:"title"`
			Docs  []int  `json:"docs"`
		} `json:"articles"`
		QAs []struct {
			Query   string   `json:"query"`
			Outputs []string `json:"outputs"`
			Context []int    `json:"context"`
			Article *int     `json:"article"`
		} `json:"qas"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("QA pool: %w", err)
	}
	name := "QA pool " + raw.Dataset
	if len(raw.Docs) == 0 || len(raw.QAs) == 0 {
		return nil, fmt.Errorf("%s: %d docs and %d questions: want at least one of each", name, len(raw.Docs), len(raw.QAs))
	}
	inRange := func(what string, idx []int) error {
		for _, i := range idx {
			if i < 0 || i >= len(raw.Docs) {
				return fmt.Errorf("%s: %s: doc index %d out of range 0..%d", name, what, i, len(raw.Docs)-1)
			}
		}
		return nil
	}
	for i, a := range raw.Articles {
		if err := inRange(fmt.Sprintf("article %d", i), a.Docs); err != nil {
			return nil, err
		}
	}
	p := &qaPool{Dataset: raw.Dataset, Docs: raw.Docs, QAs: make([]qaItem, len(raw.QAs))}
	for i, q := range raw.QAs {
		what := fmt.Sprintf("question %d", i)
		if q.Query == "" || len(q.Outputs) == 0 || len(q.Context) == 0 {
			return nil, fmt.Errorf("%s: %s: needs a query, an answer and a gold doc", name, what)
		}
		if err := inRange(what, q.Context); err != nil {
			return nil, err
		}
		it := qaItem{Query: q.Query, Outputs: q.Outputs, Context: q.Context}
		if q.Article != nil {
			// RULER's read_squad: more_context is the other paragraphs of
			// the same article, in article order.
			if *q.Article < 0 || *q.Article >= len(raw.Articles) {
				return nil, fmt.Errorf("%s: %s: article %d out of range 0..%d", name, what, *q.Article, len(raw.Articles)-1)
			}
			gold := make(map[int]bool, len(q.Context))
			for _, c := range q.Context {
				gold[c] = true
			}
			for _, d := range raw.Articles[*q.Article].Docs {
				if !gold[d] {
					it.More = append(it.More, d)
				}
			}
		}
		p.QAs[i] = it
	}
	return p, nil
}

// rulerTemplates is the part of RULER's templates.json the QA tasks use.
type rulerTemplates struct {
	QA struct {
		TokensToGenerate int    `json:"tokens_to_generate"`
		Template         string `json:"template"`
		AnswerPrefix     string `json:"answer_prefix"`
	}
	DocumentPrompt string
	DocumentJoiner string
	Incremental    int
	Seed           uint64
	NumSamples     int
}

// parseRulerTemplates reads RULER's templates.json.
func parseRulerTemplates(r io.Reader) (*rulerTemplates, error) {
	var raw struct {
		TaskTemplates map[string]struct {
			TokensToGenerate int    `json:"tokens_to_generate"`
			Template         string `json:"template"`
			AnswerPrefix     string `json:"answer_prefix"`
		} `json:"task_templates"`
		Constants struct {
			DocumentPrompt    string         `json:"qa_document_prompt"`
			DocumentJoiner    string         `json:"qa_document_joiner"`
			Seed              uint64         `json:"default_random_seed"`
			NumSamples        int            `json:"default_num_samples"`
			HaystackIncrement map[string]int `json:"haystack_increment"`
		} `json:"constants"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("RULER templates.json: %w", err)
	}
	qa, ok := raw.TaskTemplates["qa"]
	if !ok {
		return nil, fmt.Errorf("RULER templates.json: no \"qa\" task template")
	}
	t := &rulerTemplates{
		DocumentPrompt: raw.Constants.DocumentPrompt,
		DocumentJoiner: raw.Constants.DocumentJoiner,
		Incremental:    raw.Constants.HaystackIncrement["qa_docs"],
		Seed:           raw.Constants.Seed,
		NumSamples:     raw.Constants.NumSamples,
	}
	t.QA.TokensToGenerate, t.QA.Template, t.QA.AnswerPrefix = qa.TokensToGenerate, qa.Template, qa.AnswerPrefix
	switch {
	case !bytes.Contains([]byte(qa.Template), []byte("{context}")) || !bytes.Contains([]byte(qa.Template), []byte("{query}")):
		return nil, fmt.Errorf("RULER templates.json: qa template lacks {context} or {query}")
	case t.DocumentPrompt != "Document {i}:\n{document}":
		return nil, fmt.Errorf("RULER templates.json: qa_document_prompt %q: want \"Document {i}:\\n{document}\"", t.DocumentPrompt)
	case t.DocumentJoiner == "" || t.Incremental <= 0 || qa.TokensToGenerate <= 0 || t.NumSamples <= 0:
		return nil, fmt.Errorf("RULER templates.json: qa_document_joiner, haystack_increment.qa_docs, default_num_samples and tokens_to_generate must be set")
	}
	return t, nil
}
