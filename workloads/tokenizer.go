package workloads

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pkoukk/tiktoken-go"
	"golang.org/x/text/unicode/norm"
)

// Tokenizer is a byte-level BPE tokenizer read from a HuggingFace
// tokenizer.json (the format of Qwen2/Qwen3 and GPT-2). It encodes the way
// HF `tokenizers` does with add_special_tokens=false: NFC-normalize, split
// out the added tokens (<|im_start|>, <|im_end|>, <|endoftext|>, ...), split
// the rest with the pre-tokenizer regex, then merge the bytes of each piece
// by BPE rank. The vocabulary ids are the ranks: Qwen's ids are in merge
// order, so the merges list is not needed.
//
// A Tokenizer is safe for concurrent use.
type Tokenizer struct {
	bpe     *tiktoken.Tiktoken
	special map[string]int
	vocab   int
	pattern string
	nfc     bool
}

// hfTokenizer is the part of tokenizer.json a Tokenizer needs. The merges
// (most of the file) are skipped.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer *struct {
		Type string `json:"type"`
	} `json:"normalizer"`
	PreTokenizer *hfPreTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type  string         `json:"type"`
		Vocab map[string]int `json:"vocab"`
	} `json:"model"`
}

type hfPreTokenizer struct {
	Type          string                  `json:"type"`
	Pattern       *struct{ Regex string } `json:"pattern"`
	UseRegex      *bool                   `json:"use_regex"`
	Pretokenizers []hfPreTokenizer        `json:"pretokenizers"`
}

// splitRegex returns the pattern of the first Split pre-tokenizer.
func (p *hfPreTokenizer) splitRegex() string {
	if p == nil {
		return ""
	}
	if p.Type == "Split" && p.Pattern != nil {
		return p.Pattern.Regex
	}
	for i := range p.Pretokenizers {
		if re := p.Pretokenizers[i].splitRegex(); re != "" {
			return re
		}
	}
	return ""
}

// byteDecoder inverts GPT-2's bytes_to_unicode: byte-level BPE writes each
// byte as a printable rune (printable Latin-1 bytes as themselves, the other
// 68 bytes as U+0100 + n in byte order).
func byteDecoder() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}

// LoadTokenizer reads a HuggingFace byte-level BPE tokenizer.json.
func LoadTokenizer(r io.Reader) (*Tokenizer, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	var hf hfTokenizer
	if err := json.Unmarshal(raw, &hf); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	raw = nil
	if hf.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q: want BPE", hf.Model.Type)
	}
	if len(hf.Model.Vocab) < 256 {
		return nil, fmt.Errorf("tokenizer.json: vocab has %d entries: want at least the 256 bytes", len(hf.Model.Vocab))
	}
	pattern := hf.PreTokenizer.splitRegex()
	if pattern == "" {
		return nil, fmt.Errorf("tokenizer.json: no Split pre-tokenizer regex")
	}
	nfc := false
	if hf.Normalizer != nil {
		switch hf.Normalizer.Type {
		case "NFC":
			nfc = true
		default:
			return nil, fmt.Errorf("tokenizer.json: normalizer %q not supported (only NFC)", hf.Normalizer.Type)
		}
	}

	dec := byteDecoder()
	ranks := make(map[string]int, len(hf.Model.Vocab))
	// seen[id] is the vocab entry with that id; ids are dense from 0.
	seen := make([]string, len(hf.Model.Vocab)+len(hf.AddedTokens))
	used := make([]bool, len(seen))
	var buf []byte
	for tok, id := range hf.Model.Vocab {
		if id < 0 || id >= len(seen) {
			return nil, fmt.Errorf("tokenizer.json: vocab entry %q: id %d out of range 0..%d", tok, id, len(seen)-1)
		}
		buf = buf[:0]
		for _, c := range tok {
			b, ok := dec[c]
			if !ok {
				return nil, fmt.Errorf("tokenizer.json: vocab entry %q (id %d): rune %U is not a byte-level symbol", tok, id, c)
			}
			buf = append(buf, b)
		}
		if used[id] {
			return nil, fmt.Errorf("tokenizer.json: id %d used by both %q and %q", id, seen[id], tok)
		}
		seen[id], used[id] = tok, true
		ranks[string(buf)] = id
	}
	for b := 0; b < 256; b++ {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("tokenizer.json: vocab lacks byte 0x%02x", b)
		}
	}
	special := make(map[string]int, len(hf.AddedTokens))
	set := make(map[string]any, len(hf.AddedTokens))
	for _, a := range hf.AddedTokens {
		if a.Content == "" {
			return nil, fmt.Errorf("tokenizer.json: added token %d is empty", a.ID)
		}
		if a.ID < 0 || a.ID >= len(seen) {
			return nil, fmt.Errorf("tokenizer.json: added token %q: id %d out of range 0..%d", a.Content, a.ID, len(seen)-1)
		}
		if used[a.ID] {
			return nil, fmt.Errorf("tokenizer.json: added token %q reuses id %d of %q", a.Content, a.ID, seen[a.ID])
		}
		seen[a.ID], used[a.ID] = a.Content, true
		special[a.Content] = a.ID
		set[a.Content] = true
	}
	core, err := tiktoken.NewCoreBPE(ranks, special, pattern)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: pre-tokenizer regex: %w", err)
	}
	enc := &tiktoken.Encoding{Name: "hf-bpe", PatStr: pattern, MergeableRanks: ranks, SpecialTokens: special}
	return &Tokenizer{
		bpe:     tiktoken.NewTiktoken(core, enc, set),
		special: special,
		vocab:   len(ranks) + len(special),
		pattern: pattern,
		nfc:     nfc,
	}, nil
}

// Encode returns the token ids of text. Added tokens written in the text
// (such as <|im_start|>) become their single ids, as in a chat template.
func (t *Tokenizer) Encode(text string) []int {
	if t.nfc {
		text = norm.NFC.String(text)
	}
	if !t.hasSpecial(text) {
		return t.bpe.EncodeOrdinary(text)
	}
	return t.bpe.Encode(text, []string{"all"}, nil)
}

// Count returns len(t.Encode(text)).
func (t *Tokenizer) Count(text string) int { return len(t.Encode(text)) }

// VocabSize is the number of ids: the BPE vocabulary plus added tokens.
func (t *Tokenizer) VocabSize() int { return t.vocab }

// SpecialTokens returns the added tokens sorted by id.
func (t *Tokenizer) SpecialTokens() []string {
	out := make([]string, 0, len(t.special))
	for s := range t.special {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return t.special[out[i]] < t.special[out[j]] })
	return out
}

func (t *Tokenizer) hasSpecial(text string) bool {
	if !strings.Contains(text, "<") {
		return false
	}
	for s := range t.special {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

var qwen3 struct {
	once sync.Once
	tok  *Tokenizer
	err  error
	took time.Duration
}

// Qwen3 returns the embedded Qwen3 tokenizer (data/tokenizers/qwen3), loaded
// on first use and cached.
func Qwen3() (*Tokenizer, error) {
	qwen3.once.Do(func() {
		start := time.Now()
		qwen3.tok, qwen3.err = loadGzip(dataFS, "data/tokenizers/qwen3/tokenizer.json.gz", LoadTokenizer)
		qwen3.took = time.Since(start)
	})
	return qwen3.tok, qwen3.err
}

// Qwen3LoadTime is how long the first Qwen3 call took to load the
// tokenizer (0 before it is loaded).
func Qwen3LoadTime() time.Duration { return qwen3.took }

// loadGzip opens a gzip-compressed embedded file and parses it with parse.
func loadGzip[T any](fsys fsOpener, path string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := fsys.Open(path)
	if err != nil {
		return zero, fmt.Errorf("workloads: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return zero, fmt.Errorf("workloads: %s: %w", path, err)
	}
	v, err := parse(zr)
	if err != nil {
		return zero, fmt.Errorf("workloads: %s: %w", path, err)
	}
	return v, nil
}
