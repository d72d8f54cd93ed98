// Package models holds the architecture configs of the LLMs bench models
// (HuggingFace config.json keys, embedded from configs/, provenance in
// SOURCE.md) and loads them by name ("qwen3-0.6b") or from a user's
// config.json. It converts a config into roofline.Arch; it does no
// measurement and imports only the pure roofline package and
// internal/regfile (a config path that is a named pipe or a device is
// refused, not read).
package models

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/roofline"
)

// maxConfigBytes is the largest config.json read (real ones are a few kB).
const maxConfigBytes = 16 << 20

//go:embed configs/*.json
var configFS embed.FS

// Config is the subset of a HuggingFace config.json that shapes the
// operators, plus the extra keys of the shipped files (model_id, qk_norm).
// Pointer fields distinguish a missing or null key from zero.
type Config struct {
	ModelID           string   `json:"model_id"`
	ModelType         *string  `json:"model_type"`
	Architectures     []string `json:"architectures"`
	HiddenSize        *int     `json:"hidden_size"`
	IntermediateSize  *int     `json:"intermediate_size"`
	NumHiddenLayers   *int     `json:"num_hidden_layers"`
	NumAttentionHeads *int     `json:"num_attention_heads"`
	NumKeyValueHeads  *int     `json:"num_key_value_heads"`
	HeadDim           *int     `json:"head_dim"`
	VocabSize         *int     `json:"vocab_size"`
	TieWordEmbeddings *bool    `json:"tie_word_embeddings"`
	TorchDType        *string  `json:"torch_dtype"`
	// QKNorm is not an HF key: the shipped files set it; for a user's
	// config it is inferred from model_type (qwen3, qwen3_moe).
	QKNorm *bool `json:"qk_norm"`
	// MoE keys (Qwen3-MoE / Mixtral spelling).
	NumExperts          *int  `json:"num_experts"`
	NumLocalExperts     *int  `json:"num_local_experts"`
	NumExpertsPerTok    *int  `json:"num_experts_per_tok"`
	MoEIntermediateSize *int  `json:"moe_intermediate_size"`
	DecoderSparseStep   *int  `json:"decoder_sparse_step"`
	MLPOnlyLayers       []int `json:"mlp_only_layers"`
	// Name is the config's name: the shipped name or the file path.
	Name string `json:"-"`
}

// Names lists the shipped model configs.
func Names() []string {
	ents, _ := configFS.ReadDir("configs")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Load returns a shipped config by name (case-insensitive, ".json"
// optional) or, when nameOrPath names an existing file or contains a path
// separator, the config.json at that path.
func Load(nameOrPath string) (*Config, error) {
	key := strings.TrimSuffix(strings.ToLower(nameOrPath), ".json")
	if data, err := configFS.ReadFile(path.Join("configs", key+".json")); err == nil && !strings.ContainsAny(nameOrPath, `/\`) {
		return Parse(data, key)
	}
	if _, err := os.Stat(nameOrPath); err != nil {
		if strings.ContainsAny(nameOrPath, `/\`) || strings.HasSuffix(nameOrPath, ".json") {
			return nil, fmt.Errorf("model %s: %w", nameOrPath, err)
		}
		return nil, fmt.Errorf("model %q: not a shipped config (have %s) nor a file", nameOrPath, strings.Join(Names(), ", "))
	}
	data, err := regfile.ReadFile(nameOrPath, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", nameOrPath, err)
	}
	return Parse(data, filepath.Clean(nameOrPath))
}

// ReadConfig returns the bytes of a shipped config (by name, as Load) or of
// the config.json at a path, and the name Load would give it, for readers
// of keys Config does not carry (engine.FromHF: rope_theta, rms_norm_eps).
func ReadConfig(nameOrPath string) ([]byte, string, error) {
	key := strings.TrimSuffix(strings.ToLower(nameOrPath), ".json")
	if data, err := configFS.ReadFile(path.Join("configs", key+".json")); err == nil && !strings.ContainsAny(nameOrPath, `/\`) {
		return data, key, nil
	}
	if _, err := Load(nameOrPath); err != nil {
		return nil, "", err
	}
	data, err := regfile.ReadFile(nameOrPath, maxConfigBytes)
	if err != nil {
		return nil, "", fmt.Errorf("model %s: %w", nameOrPath, err)
	}
	return data, filepath.Clean(nameOrPath), nil
}

// Parse decodes config.json bytes; name is used in messages and as the
// model name.
func Parse(data []byte, name string) (*Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("model config %s: %w", name, err)
	}
	c.Name = name
	if _, err := c.Arch(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Arch converts the config to the roofline's architecture struct. A
// missing or null required key is an error naming the key and the file.
// Defaults follow transformers: num_key_value_heads = num_attention_heads,
// head_dim = hidden_size / num_attention_heads.
func (c *Config) Arch() (roofline.Arch, error) {
	a := roofline.Arch{Name: c.Name}
	need := func(key string, p *int) (int, error) {
		if p == nil {
			return 0, fmt.Errorf("model config %s: missing key %q", c.Name, key)
		}
		if *p < 1 {
			return 0, fmt.Errorf("model config %s: %s = %d: must be ≥ 1", c.Name, key, *p)
		}
		return *p, nil
	}
	var err error
	if a.Dim, err = need("hidden_size", c.HiddenSize); err != nil {
		return a, err
	}
	if a.Layers, err = need("num_hidden_layers", c.NumHiddenLayers); err != nil {
		return a, err
	}
	if a.Heads, err = need("num_attention_heads", c.NumAttentionHeads); err != nil {
		return a, err
	}
	if a.Vocab, err = need("vocab_size", c.VocabSize); err != nil {
		return a, err
	}
	a.KVHeads = a.Heads
	if c.NumKeyValueHeads != nil {
		if a.KVHeads, err = need("num_key_value_heads", c.NumKeyValueHeads); err != nil {
			return a, err
		}
	}
	if a.Heads%a.KVHeads != 0 {
		return a, fmt.Errorf("model config %s: num_attention_heads %d is not a multiple of num_key_value_heads %d", c.Name, a.Heads, a.KVHeads)
	}
	if c.HeadDim != nil {
		if a.HeadDim, err = need("head_dim", c.HeadDim); err != nil {
			return a, err
		}
	} else {
		if a.Dim%a.Heads != 0 {
			return a, fmt.Errorf("model config %s: missing key \"head_dim\" and hidden_size %d is not a multiple of num_attention_heads %d", c.Name, a.Dim, a.Heads)
		}
		a.HeadDim = a.Dim / a.Heads
	}
	if c.TieWordEmbeddings != nil {
		a.TiedEmbeddings = *c.TieWordEmbeddings
	}
	mt := ""
	if c.ModelType != nil {
		mt = *c.ModelType
	}
	if c.QKNorm != nil {
		a.QKNorm = *c.QKNorm
	} else {
		a.QKNorm = mt == "qwen3" || mt == "qwen3_moe"
	}
	experts := c.NumExperts
	if experts == nil {
		experts = c.NumLocalExperts
	}
	if experts != nil && *experts > 0 {
		key := "num_experts"
		if c.NumExperts == nil {
			key = "num_local_experts"
		}
		if a.Experts, err = need(key, experts); err != nil {
			return a, err
		}
		if a.ExpertsPerToken, err = need("num_experts_per_tok", c.NumExpertsPerTok); err != nil {
			return a, err
		}
		mi := c.MoEIntermediateSize
		if mi == nil {
			mi = c.IntermediateSize // Mixtral: experts use intermediate_size
		}
		if a.MoEIntermediate, err = need("moe_intermediate_size", mi); err != nil {
			return a, err
		}
		step := 1
		if c.DecoderSparseStep != nil {
			if step, err = need("decoder_sparse_step", c.DecoderSparseStep); err != nil {
				return a, err
			}
		}
		only := map[int]bool{}
		for _, l := range c.MLPOnlyLayers {
			only[l] = true
		}
		// transformers Qwen3-MoE: layer i is sparse iff i ∉ mlp_only_layers
		// and (i+1) % decoder_sparse_step == 0.
		for i := 0; i < a.Layers; i++ {
			if !only[i] && (i+1)%step == 0 {
				a.MoELayers++
			}
		}
	}
	if a.MoELayers < a.Layers {
		if a.Intermediate, err = need("intermediate_size", c.IntermediateSize); err != nil {
			return a, err
		}
	} else if c.IntermediateSize != nil {
		a.Intermediate = *c.IntermediateSize
	}
	if err := a.Validate(); err != nil {
		return a, err
	}
	return a, nil
}

// DType returns torch_dtype in the roofline's spelling ("bf16"), or "" when
// the config does not give it.
func (c *Config) DType() string {
	if c.TorchDType == nil {
		return ""
	}
	switch *c.TorchDType {
	case "bfloat16":
		return "bf16"
	case "float16":
		return "fp16"
	case "float32":
		return "fp32"
	}
	return *c.TorchDType
}
