package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bench gguf writes a file bench run reads back quantized, at the shapes of
// a small config with Qwen3's vocab; bad flags give one error line.
func TestGGUFCmd(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "small.json")
	if err := os.WriteFile(cfg, []byte(`{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
		"intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
		"vocab_size": 151936, "max_position_embeddings": 256, "rope_theta": 1000000, "rms_norm_eps": 1e-6,
		"tie_word_embeddings": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "small-q4_0.gguf")
	code, stdout, errs := run(t, "gguf", "--model", cfg, "--format", "q4_0", "--layers", "1", "--out", out)
	if code != 0 || !strings.Contains(stdout, "1 layers, q4_0 weights") {
		t.Fatalf("exit %d: %s%s", code, stdout, errs)
	}
	code, stdout, errs = run(t, "run", "--weights", out, "--prompt-tokens", "8", "--gen-tokens", "2", "--profile", "none")
	if code != 0 || !strings.Contains(stdout, "q4_0") {
		t.Fatalf("bench run on the written file: exit %d: %s%s", code, stdout, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gguf", "--model", cfg}, "--out: required"},
		{[]string{"gguf", "--model", cfg, "--format", "q3_k", "--out", out}, `"q3_k"`},
		{[]string{"gguf", "--model", cfg, "--layers", "5", "--out", out}, "--layers 5"},
		{[]string{"gguf", "--model", "nosuch-model", "--out", out}, "--model"},
		{[]string{"gguf", "--model", cfg, "--out", filepath.Join(dir, "no", "such", "dir.gguf")}, "no such file"},
	} {
		code, _, errs := run(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: exit %d, stderr %q, want one line with %q", c.args, code, errs, c.want)
		}
	}
}
