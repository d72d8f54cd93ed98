package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNullMaxPositions: a config.json whose max_position_embeddings is
// null (engine.MissingKeyError, chosen by type, not by its message) runs
// with positions sized to the run, and says so.
func TestRunNullMaxPositions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny-null-maxpos.json")
	cfg := `{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 96,
		"max_position_embeddings": null, "rope_theta": 1000000, "rms_norm_eps": 1e-06, "tie_word_embeddings": true}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "run", "--model", path, "--weights", "synthetic", "--layers", "1",
		"--prompt-tokens", "4", "--gen-tokens", "2", "--batch", "1", "--threads", "1", "--placement", "cores", "--profile", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out+errs, "positions sized to this run") {
		t.Errorf("no note on the sized positions:\n%s\n%s", out, errs)
	}
}
