package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/gguf"
	"github.com/cpubench/bench/kernels/quant"
)

// superConfig is a small dense model whose row lengths (dim, hidden, heads
// × head dim) are multiples of GGUF's 256-weight super-blocks.
func superConfig() Config {
	return Config{Name: "tiny-super", Dim: 256, Intermediate: 512, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 40, MaxSeq: 64,
		RoPETheta: 1e6, RMSEps: 1e-6, QKNorm: true, TiedEmbeddings: true}
}

func testVocab(n int) GGUFVocab {
	v := GGUFVocab{Model: "gpt2", Pre: "qwen2", BOS: 0, EOS: 1}
	for i := range n {
		v.Tokens = append(v.Tokens, fmt.Sprintf("t%d", i))
		v.Types = append(v.Types, 1)
	}
	return v
}

// TestGGUFSuperBlock: files written in Q4_K, Q6_K, TQ2_0 and TQ1_0 load
// with every linear kept quantized in that format (the tied head as
// LMHeadQ, the embedding dequantized as ggml does), the packed bytes per
// weight as documented, and the engine on them matches the fp32 engine on
// the same weights dequantized within quantTol (only the activations'
// int8 rounding differs).
func TestGGUFSuperBlock(t *testing.T) {
	c := superConfig()
	for _, f := range []quant.Format{quant.Q4_K, quant.Q6_K, quant.TQ2_0, quant.TQ1_0} {
		t.Run(string(f), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), string(f)+".gguf")
			if err := WriteSyntheticGGUF(path, c, string(f), testVocab(c.Vocab), 4); err != nil {
				t.Fatal(err)
			}
			w, err := LoadGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			fs := w.WeightFormats()
			if len(fs) != 1 || fs[string(f)] == 0 || w.LMHeadQ == nil || w.Layers[1].DownQ.Format != f {
				t.Fatalf("formats %v, head %v", fs, w.LMHeadQ)
			}
			var qbytes int64
			for _, s := range w.linearSlots() {
				qbytes += (*s.q).Bytes()
			}
			if want := f.BytesPerWeight() * float64(fs[string(f)]); math.Abs(float64(qbytes)-want) > 0.01*want {
				t.Errorf("%d packed bytes, want %.0f (%.4f B/weight)", qbytes, want, f.BytesPerWeight())
			}
			// The embedding is the head's blocks dequantized.
			for i, v := range w.LMHeadQ.Dequantize() {
				if v != w.Embed[i] {
					t.Fatalf("embedding %d: %v, head dequantized %v", i, w.Embed[i], v)
				}
			}
			quantized, err := New(w, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer quantized.Close()
			float, err := New(dequantized(w), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer float.Close()
			toks := []int{1, 5, 2, 9, 3, 7}
			sq, _ := quantized.NewSession(0)
			sf, _ := float.NewSession(0)
			gq, err := sq.PrefillAll(toks)
			if err != nil {
				t.Fatal(err)
			}
			gf, err := sf.PrefillAll(toks)
			if err != nil {
				t.Fatal(err)
			}
			V := c.Vocab
			for p := range toks {
				row := gf[p*V : (p+1)*V]
				sc := 1e-3
				for _, v := range row {
					sc = max(sc, math.Abs(float64(v)))
				}
				if d, j := maxAbsDiff(gq[p*V:(p+1)*V], row); d > quantTol*sc {
					t.Errorf("position %d logit %d: quantized engine %v, fp32 engine on the dequantized file %v (scale %.3g)", p, j, gq[p*V+j], row[j], sc)
				}
			}
		})
	}
}

// TestGGUFSuperBlockErrors: a row length that is not a whole number of
// 256-weight blocks, truncated blocks and NaN or infinite scales give one
// error line naming the tensor.
func TestGGUFSuperBlockErrors(t *testing.T) {
	c := tinyConfig("qwen3") // dims of 32: Q4_K rows must be 256
	g := ggufFromWeights(tinyWeights(c, 9), "qwen3", mixedTypes)
	g.tensor("blk.0.ffn_down.weight").typ = gguf.Q4_K
	if _, err := readGGUFBytes(g.bytes(), "q.gguf"); err == nil || !strings.Contains(err.Error(), "blk.0.ffn_down.weight") ||
		!strings.Contains(err.Error(), "not a multiple of the block size 256") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Q4_K rows of 64: %v", err)
	}

	sc := superConfig()
	sc.Layers = 1
	path := filepath.Join(t.TempDir(), "q6.gguf")
	if err := WriteSyntheticGGUF(path, sc, "q6_k", testVocab(sc.Vocab), 4); err != nil {
		t.Fatal(err)
	}
	h, err := LoadGGUFHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := h.f.Tensors["blk.0.ffn_up.weight"].Offset
	for _, tc := range []struct {
		name string
		data func() []byte
		want string
	}{
		{"truncated", func() []byte { return data[:len(data)-1] }, "tensor blk.0.ffn_down.weight: 107520 bytes of data at offset"},
		{"NaN scale", func() []byte {
			b := bytes.Clone(data)
			binary.LittleEndian.PutUint16(b[off+210+208:], 0x7e00) // block 1's d
			return b
		}, "tensor blk.0.ffn_up.weight: quant: q6_k tensor 512×256: row 1 block 0: scale is NaN"},
		{"Inf scale", func() []byte {
			b := bytes.Clone(data)
			binary.LittleEndian.PutUint16(b[off+208:], 0x7c00)
			return b
		}, "tensor blk.0.ffn_up.weight: quant: q6_k tensor 512×256: row 0 block 0: scale is +Inf"},
	} {
		w, err := readGGUFBytes(tc.data(), "q.gguf")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || w != nil {
			t.Errorf("%s: %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
}
