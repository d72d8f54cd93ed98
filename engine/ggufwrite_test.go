package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels/quant"
)

// The writer's files load back: the config from the metadata, every matrix
// in the format written (the quantized formats kept quantized), norms 1, and the
// tokenizer's size checked.
func TestWriteSyntheticGGUF(t *testing.T) {
	c := Config{Name: "tiny", Dim: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 40, MaxSeq: 128,
		RoPETheta: 1e6, RMSEps: 1e-6, QKNorm: true, TiedEmbeddings: true}
	v := GGUFVocab{Model: "gpt2", Pre: "qwen2", BOS: 0, EOS: 1}
	for i := range c.Vocab {
		v.Tokens = append(v.Tokens, fmt.Sprintf("t%d", i))
		v.Types = append(v.Types, 1)
	}
	for _, f := range GGUFFormats {
		c := c
		if qf, err := quant.ParseFormat(f); err == nil && qf.GGUFBlockLen() > quant.BlockLen {
			// Rows of whole 256-weight blocks.
			c.Dim, c.Intermediate, c.HeadDim = 256, 512, 64
			if err := WriteSyntheticGGUF(filepath.Join(t.TempDir(), "x.gguf"), Config{Dim: 64, Intermediate: 96, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40}, f, v, 3); err == nil ||
				!strings.Contains(err.Error(), "multiple of 256") {
				t.Errorf("%s at dim 64: %v", f, err)
			}
		}
		path := filepath.Join(t.TempDir(), f+".gguf")
		if err := WriteSyntheticGGUF(path, c, f, v, 3); err != nil {
			t.Fatal(err)
		}
		w, err := LoadGGUF(path)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		g := w.Config
		if g.Dim != c.Dim || g.Intermediate != c.Intermediate || g.Layers != 2 || g.Heads != 4 || g.KVHeads != 2 || g.HeadDim != c.HeadDim || g.Vocab != c.Vocab || !g.QKNorm || !g.TiedEmbeddings {
			t.Fatalf("%s: config %+v", f, g)
		}
		l := w.Layers[1]
		_, err = quant.ParseFormat(f)
		quantized := err == nil
		if quantized != (l.WqQ != nil && l.DownQ != nil && w.LMHeadQ != nil) || (quantized && string(l.UpQ.Format) != f) {
			t.Errorf("%s: quantized matrices %v %v %v", f, l.WqQ, l.DownQ, w.LMHeadQ)
		}
		if l.AttnNorm[0] != 1 || l.KNorm[c.HeadDim-1] != 1 || w.FinalNorm[0] != 1 {
			t.Errorf("%s: norms not 1", f)
		}
		if e := w.Embed[len(w.Embed)-1]; (e == 0 && !strings.HasPrefix(f, "tq")) || e > 0.04 || e < -0.04 { // ternary: 0 is a level
			t.Errorf("%s: embedding value %v outside ±0.035 (+ rounding)", f, e)
		}
	}
	if err := WriteSyntheticGGUF(filepath.Join(t.TempDir(), "x.gguf"), c, "q3_k", v, 1); err == nil || !strings.Contains(err.Error(), `"q3_k"`) {
		t.Errorf("format q3_k: %v", err)
	}
	v.Tokens = v.Tokens[:10]
	if err := WriteSyntheticGGUF(filepath.Join(t.TempDir(), "x.gguf"), c, "f32", v, 1); err == nil || !strings.Contains(err.Error(), "10 tokens") {
		t.Errorf("short vocab: %v", err)
	}
}
