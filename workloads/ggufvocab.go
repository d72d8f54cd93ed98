package workloads

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// GGUFVocab is a byte-level BPE tokenizer as GGUF's tokenizer.ggml.* keys
// hold it (llama.cpp's convert_hf_to_gguf): the token strings by id, their
// llama.cpp types (1 normal, 3 control for special added tokens, 4 user
// defined for the other added tokens, 5 unused for padding ids), and the
// merges as "a b".
type GGUFVocab struct {
	Tokens []string
	Types  []int32
	Merges []string
	// EOS is the id of <|endoftext|>.
	EOS int
}

// Qwen3GGUFVocab returns the embedded Qwen3 tokenizer as GGUF vocab padded
// to n tokens (a model's vocab_size, e.g. 151936 for Qwen3-0.6B, is larger
// than the tokenizer's 151669 ids; the rest are "[PAD<id>]", unused).
// Errors: n smaller than the tokenizer, or a corrupt embedded file.
func Qwen3GGUFVocab(n int) (*GGUFVocab, error) {
	return loadGzip(dataFS, "data/tokenizers/qwen3/tokenizer.json.gz", func(r io.Reader) (*GGUFVocab, error) {
		return ggufVocab(r, n)
	})
}

func ggufVocab(r io.Reader, n int) (*GGUFVocab, error) {
	var hf struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int    `json:"vocab"`
			Merges []json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.NewDecoder(r).Decode(&hf); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	top := len(hf.Model.Vocab)
	for _, a := range hf.AddedTokens {
		top = max(top, a.ID+1)
	}
	if n < top {
		return nil, fmt.Errorf("tokenizer.json: %d ids do not fit a vocab of %d", top, n)
	}
	v := &GGUFVocab{Tokens: make([]string, n), Types: make([]int32, n), EOS: -1}
	for tok, id := range hf.Model.Vocab {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("tokenizer.json: vocab entry %q: id %d out of range", tok, id)
		}
		v.Tokens[id], v.Types[id] = tok, 1
	}
	for _, a := range hf.AddedTokens {
		if a.ID < 0 || a.ID >= n {
			return nil, fmt.Errorf("tokenizer.json: added token %q: id %d out of range", a.Content, a.ID)
		}
		v.Tokens[a.ID], v.Types[a.ID] = a.Content, 4
		if a.Special {
			v.Types[a.ID] = 3
		}
		if a.Content == "<|endoftext|>" {
			v.EOS = a.ID
		}
	}
	for id := range v.Tokens {
		if v.Types[id] == 0 {
			v.Tokens[id], v.Types[id] = fmt.Sprintf("[PAD%d]", id), 5
		}
	}
	if v.EOS < 0 {
		return nil, fmt.Errorf("tokenizer.json: no <|endoftext|> token")
	}
	for i, m := range hf.Model.Merges {
		// A merge is "a b" (older files) or ["a", "b"].
		var s string
		var pair []string
		switch {
		case json.Unmarshal(m, &s) == nil:
		case json.Unmarshal(m, &pair) == nil && len(pair) == 2:
			s = strings.Join(pair, " ")
		default:
			return nil, fmt.Errorf("tokenizer.json: merge %d: %s", i, m)
		}
		v.Merges = append(v.Merges, s)
	}
	return v, nil
}
