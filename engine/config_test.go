package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels"
)

func readModelConfig(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "models", "configs", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFromHF(t *testing.T) {
	q, err := FromHF(readModelConfig(t, "qwen3-0.6b"), "qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	if q.Dim != 1024 || q.Intermediate != 3072 || q.Layers != 28 || q.Heads != 16 || q.KVHeads != 8 || q.HeadDim != 128 ||
		q.QDim() != 2048 || q.KVDim() != 1024 || q.Vocab != 151936 || q.MaxSeq != 40960 || q.RoPETheta != 1e6 ||
		q.RoPELayout != kernels.RoPEHalf || q.RoPEScaling != nil || q.RMSEps != 1e-6 || !q.TiedEmbeddings || !q.QKNorm {
		t.Errorf("qwen3-0.6b: %+v", q)
	}
	l, err := FromHF(readModelConfig(t, "llama-3.2-1b"), "llama-3.2-1b")
	if err != nil {
		t.Fatal(err)
	}
	want := kernels.RoPEScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	if l.RoPEScaling == nil || !reflect.DeepEqual(*l.RoPEScaling, want) || l.RoPETheta != 500000 || l.QKNorm || l.HeadDim != 64 || l.KVHeads != 8 || l.RMSEps != 1e-5 {
		t.Errorf("llama-3.2-1b: %+v (scaling %+v)", l, l.RoPEScaling)
	}
	// Every shipped config converts (MoE included) except falcon3-1b, whose
	// max_position_embeddings is null (it differs by variant).
	ents, err := os.ReadDir(filepath.Join("..", "models", "configs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := strings.TrimSuffix(e.Name(), ".json")
		c, err := FromHF(readModelConfig(t, name), name)
		if name == "falcon3-1b" {
			if mk := (*MissingKeyError)(nil); !errors.As(err, &mk) || mk.Key != "max_position_embeddings" || !strings.Contains(err.Error(), "max_position_embeddings") {
				t.Errorf("%s: %v, want a max_position_embeddings error", name, err)
			}
		} else if strings.Contains(name, "a3b") {
			if err != nil || c.Experts != 128 || c.TopK != 8 || c.MoEIntermediate != 768 || !c.NormTopK || c.MoELayers() != 48 {
				t.Errorf("%s: %+v, %v; want 128 experts, top-8, moe hidden 768, norm_topk_prob, 48 MoE layers", name, c, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFromHFErrors(t *testing.T) {
	base := string(readModelConfig(t, "llama-3.2-1b"))
	for _, c := range []struct {
		edit func(string) string
		want string
	}{
		{func(s string) string { return strings.Replace(s, `"rope_theta"`, `"x_rope_theta"`, 1) }, `missing or null key "rope_theta"`},
		{func(s string) string { return strings.Replace(s, `"rms_norm_eps"`, `"x"`, 1) }, `missing or null key "rms_norm_eps"`},
		{func(s string) string { return strings.Replace(s, `"max_position_embeddings"`, `"x"`, 1) }, `missing or null key "max_position_embeddings"`},
		{func(s string) string { return strings.Replace(s, `"rope_type": "llama3"`, `"rope_type": "yarn"`, 1) }, `rope_scaling type "yarn"`},
		{func(s string) string { return strings.Replace(s, `"factor": 32.0`, `"factor": 0`, 1) }, `RoPE scaling`},
		{func(s string) string { return strings.Replace(s, `"rope_theta": 500000.0`, `"rope_theta": 1`, 1) }, `rope theta 1`},
		{func(s string) string { return strings.Replace(s, `"rms_norm_eps": 1e-05`, `"rms_norm_eps": 0`, 1) }, `rms eps 0`},
		{func(s string) string { return strings.Replace(s, `"hidden_size": 2048`, `"hidden_size": 0`, 1) }, `hidden_size = 0`},
	} {
		data := c.edit(base)
		if data == base {
			t.Fatalf("edit for %q changed nothing", c.want)
		}
		if _, err := FromHF([]byte(data), "edited"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromHF: %v, want an error containing %q", err, c.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Name: "m", Dim: 8, Intermediate: 8, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 4, MaxSeq: 4, RoPETheta: 10000, RMSEps: 1e-5}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.KVHeads = 3 }, "heads 2: not a multiple of kv heads 3"},
		{func(c *Config) { c.HeadDim = 3 }, "head dim 3: must be even"},
		{func(c *Config) { c.Vocab = 0 }, "vocab 0"},
		{func(c *Config) { c.RoPELayout = 7 }, "rope layout"},
	} {
		bad := ok
		c.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate: %v, want an error containing %q", err, c.want)
		}
	}
	w := randomWeights(ok, rand.New(rand.NewPCG(1, 1)))
	w.Layers[0].Wk = w.Layers[0].Wk[:3]
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "tensor wk layer 0: 3 floats, want 32") {
		t.Errorf("Weights.Validate: %v", err)
	}
}
