package models

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/roofline"
)

// TestWeightsMatchParameterCounts cross-checks the roofline catalog's
// weight bytes against each shipped file's num_parameters_computed
// (computed independently when the configs were collected, and matching
// every count a source states): layers × per-layer weights + final norm =
// non-embedding parameters. MoE models are run with 16 tokens so uniform
// routing activates every expert.
func TestWeightsMatchParameterCounts(t *testing.T) {
	for _, n := range Names() {
		c, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.Arch()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := configFS.ReadFile("configs/" + n + ".json")
		var counts struct {
			N struct {
				NonEmbedding float64 `json:"non_embedding"`
			} `json:"num_parameters_computed"`
		}
		if err := json.Unmarshal(data, &counts); err != nil {
			t.Fatal(err)
		}
		b := 1
		if a.Experts > 0 {
			b = 16
		}
		cat, err := roofline.BuildCatalog(a, roofline.Request{Phase: roofline.Decode, Batch: b, Tokens: 1, Context: 1,
			Weight: "bf16", Act: "bf16", KV: "bf16", Routing: roofline.Routing{Kind: "uniform"}})
		if err != nil {
			t.Fatal(err)
		}
		got := float64(a.Dim) // final norm
		for _, l := range cat.Layers {
			got += float64(l.Count) * roofline.Sum(l.Ops).Bytes.Weights / 2
		}
		if got != counts.N.NonEmbedding {
			t.Errorf("%s: catalog weights %.0f, file says %.0f non-embedding parameters", n, got, counts.N.NonEmbedding)
		}
	}
}

func TestLoadByNameAndPath(t *testing.T) {
	c, err := Load("Qwen3-0.6B")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Arch()
	if a.HeadDim != 128 || !a.QKNorm || a.KVHeads != 8 || c.DType() != "bf16" {
		t.Errorf("qwen3-0.6b: %+v", a)
	}
	moe, _ := Load("qwen3-30b-a3b")
	if a, _ := moe.Arch(); a.MoELayers != 48 || a.Experts != 128 || a.MoEIntermediate != 768 {
		t.Errorf("qwen3-30b-a3b: %+v", a)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	// A minimal HF Llama config: head_dim and num_key_value_heads default.
	os.WriteFile(p, []byte(`{"model_type":"llama","hidden_size":512,"intermediate_size":1024,"num_hidden_layers":2,
		"num_attention_heads":8,"vocab_size":1000}`), 0o644)
	c, err = Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := c.Arch(); a.HeadDim != 64 || a.KVHeads != 8 || a.QKNorm || a.Name != p {
		t.Errorf("user config: %+v", a)
	}
	// ReadConfig gives the same bytes and names as Load.
	if data, name, err := ReadConfig("Qwen3-0.6B"); err != nil || name != "qwen3-0.6b" || !strings.Contains(string(data), `"rope_theta"`) {
		t.Errorf("ReadConfig(Qwen3-0.6B) = %d bytes, %q, %v", len(data), name, err)
	}
	if data, name, err := ReadConfig(p); err != nil || name != p || !strings.Contains(string(data), `"hidden_size":512`) {
		t.Errorf("ReadConfig(%s) = %d bytes, %q, %v", p, len(data), name, err)
	}
	if _, _, err := ReadConfig("no-such-model"); err == nil || !strings.Contains(err.Error(), "not a shipped config") {
		t.Errorf("ReadConfig(no-such-model) = %v", err)
	}
}

func TestBadConfigs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ json, want string }{
		{`{"hidden_size":512}`, `config.json: missing key "num_hidden_layers"`},
		{`{"hidden_size":512,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10}`, `config.json: missing key "intermediate_size"`},
		{`{"hidden_size":null,"num_hidden_layers":2}`, `missing key "hidden_size"`},
		{`{"hidden_size":512,"num_hidden_layers":0,"num_attention_heads":8,"vocab_size":10}`, `num_hidden_layers = 0: must be ≥ 1`},
		{`{"hidden_size":500,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10,"intermediate_size":4}`, `missing key "head_dim"`},
		{`{"hidden_size":512,"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":3,"vocab_size":10}`, `not a multiple`},
		{`{"hidden_size":512,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10,"num_experts":8,"moe_intermediate_size":64}`, `missing key "num_experts_per_tok"`},
		{`{"hidden_size":"big"}`, `config.json: json: cannot unmarshal`},
		{`{`, `config.json: unexpected end of JSON input`},
	} {
		p := filepath.Join(dir, "config.json")
		os.WriteFile(p, []byte(c.json), 0o644)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.json, err, c.want)
		}
	}
	if _, err := Load("no-such-model"); err == nil || !strings.Contains(err.Error(), "qwen3-0.6b") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}
