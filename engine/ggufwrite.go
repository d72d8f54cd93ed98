package engine

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/cpubench/bench/gguf"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
)

// GGUFVocab is the tokenizer metadata llama.cpp needs in a GGUF file
// (tokenizer.ggml.*): Model "gpt2" (byte-level BPE) with Pre "qwen2" for
// Qwen tokenizers; Tokens[i] is token i's string, Types[i] its llama.cpp
// token type (1 normal, 3 control, 4 user defined, 5 unused), Merges the
// BPE merges as "a b".
type GGUFVocab struct {
	Model, Pre string
	Tokens     []string
	Types      []int32
	Merges     []string
	BOS, EOS   int
}

// GGUFFormats are the tensor formats WriteSyntheticGGUF writes.
var GGUFFormats = []string{"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k", "tq2_0", "tq1_0"}

// WriteSyntheticGGUF writes a GGUF v3 file at path (atomically: a temporary
// file renamed at the end) holding a dense llama or qwen3 model of shape c
// (c.Layers layers) with random weights: every matrix, token_embd included,
// drawn uniform in ±0.035 (σ ≈ 0.02, as Synthetic) from seed and stored in
// format (one of GGUFFormats; quantized by quant.Quantize: q8_0/q4_0 and
// the ternary formats as ggml's reference quantizers do, q4_k/q6_k with
// simplified ones), the norms 1 in F32, and the tokenizer vocab v (its token
// count must equal c.Vocab). llama.cpp's llama-bench and bench run read it;
// the weights are meaningless, so only speed is comparable. Errors: an MoE
// or otherwise unsupported config, an unknown format, a vocab of the wrong
// size, or the file system's.
func WriteSyntheticGGUF(path string, c Config, format string, v GGUFVocab, seed uint64) error {
	return WriteSyntheticGGUFContext(context.Background(), path, c, format, v, seed)
}

// WriteSyntheticGGUFContext is WriteSyntheticGGUF stopped with ctx's error
// when ctx is done (checked before each chunk of 1024 rows): the temporary
// file is then removed and path left as it was.
func WriteSyntheticGGUFContext(ctx context.Context, path string, c Config, format string, v GGUFVocab, seed uint64) (err error) {
	arch := "qwen3"
	if !c.QKNorm {
		arch = "llama"
	}
	if c.Experts > 0 {
		return fmt.Errorf("engine: gguf: MoE configs are not supported by the writer")
	}
	if len(v.Tokens) != c.Vocab || len(v.Types) != c.Vocab {
		return fmt.Errorf("engine: gguf: the tokenizer has %d tokens, the model's vocab is %d", len(v.Tokens), c.Vocab)
	}
	typ, ok := map[string]gguf.Type{"f32": gguf.F32, "f16": gguf.F16, "bf16": gguf.BF16, "q8_0": gguf.Q8_0, "q4_0": gguf.Q4_0,
		"q4_k": gguf.Q4_K, "q6_k": gguf.Q6_K, "tq2_0": gguf.TQ2_0, "tq1_0": gguf.TQ1_0}[strings.ToLower(format)]
	if !ok {
		return fmt.Errorf("engine: gguf: format %q: want one of %s", format, strings.Join(GGUFFormats, ", "))
	}
	if qf, ok := quantFormat(typ); ok {
		if bl := qf.GGUFBlockLen(); c.Dim%bl != 0 || c.Intermediate%bl != 0 || c.QDim()%bl != 0 {
			return fmt.Errorf("engine: gguf: %s needs every row length a multiple of %d (dim %d, hidden %d, q dim %d)", format, bl, c.Dim, c.Intermediate, c.QDim())
		}
	}
	type tinfo struct {
		name string
		ne   []uint64 // ne[0] = row length (in), ne[1] = rows (out)
		typ  gguf.Type
		norm bool // a norm weight: all 1
	}
	var ts []tinfo
	mat := func(name string, in, out int) {
		ts = append(ts, tinfo{name, []uint64{uint64(in), uint64(out)}, typ, false})
	}
	vec := func(name string, n int) { ts = append(ts, tinfo{name, []uint64{uint64(n)}, gguf.F32, true}) }
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Intermediate
	mat("token_embd.weight", d, c.Vocab)
	vec("output_norm.weight", d)
	if !c.TiedEmbeddings {
		mat("output.weight", d, c.Vocab)
	}
	for i := range c.Layers {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
		vec(b("attn_norm"), d)
		mat(b("attn_q"), d, q)
		mat(b("attn_k"), d, kv)
		mat(b("attn_v"), d, kv)
		mat(b("attn_output"), q, d)
		if c.QKNorm {
			vec(b("attn_q_norm"), c.HeadDim)
			vec(b("attn_k_norm"), c.HeadDim)
		}
		vec(b("ffn_norm"), d)
		mat(b("ffn_gate"), d, h)
		mat(b("ffn_up"), d, h)
		mat(b("ffn_down"), h, d)
	}
	size := func(t tinfo) uint64 {
		n := t.ne[0]
		if len(t.ne) > 1 {
			n *= t.ne[1]
		}
		switch t.typ {
		case gguf.F32:
			return 4 * n
		case gguf.F16, gguf.BF16:
			return 2 * n
		}
		qf, _ := quantFormat(t.typ)
		return n / uint64(qf.GGUFBlockLen()) * uint64(qf.GGUFBlockBytes())
	}

	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("engine: gguf: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	g := &ggufOut{w: bw}
	const align = 32
	kvs := []struct {
		key string
		val any
	}{
		{"general.architecture", arch},
		{"general.name", "bench synthetic " + c.Name},
		{"general.alignment", uint32(align)},
		{arch + ".block_count", uint32(c.Layers)},
		{arch + ".context_length", uint32(max(c.MaxSeq, 1))},
		{arch + ".embedding_length", uint32(d)},
		{arch + ".feed_forward_length", uint32(h)},
		{arch + ".attention.head_count", uint32(c.Heads)},
		{arch + ".attention.head_count_kv", uint32(c.KVHeads)},
		{arch + ".attention.key_length", uint32(c.HeadDim)},
		{arch + ".attention.value_length", uint32(c.HeadDim)},
		{arch + ".rope.dimension_count", uint32(c.HeadDim)},
		{arch + ".rope.freq_base", float32(c.RoPETheta)},
		{arch + ".attention.layer_norm_rms_epsilon", c.RMSEps},
		{"tokenizer.ggml.model", v.Model},
		{"tokenizer.ggml.pre", v.Pre},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.token_type", v.Types},
		{"tokenizer.ggml.merges", v.Merges},
		{"tokenizer.ggml.bos_token_id", uint32(v.BOS)},
		{"tokenizer.ggml.eos_token_id", uint32(v.EOS)},
		{"tokenizer.ggml.padding_token_id", uint32(v.EOS)},
		{"tokenizer.ggml.add_bos_token", false},
	}
	g.bytes([]byte("GGUF"))
	g.u32(3)
	g.u64(uint64(len(ts)))
	g.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		g.str(kv.key)
		g.value(kv.val)
	}
	var off uint64
	for _, t := range ts {
		g.str(t.name)
		g.u32(uint32(len(t.ne)))
		for _, n := range t.ne {
			g.u64(n)
		}
		g.u32(uint32(t.typ))
		g.u64(off)
		off = (off + size(t) + align - 1) / align * align
	}
	g.pad(align)
	rng := seed*0x9e3779b97f4a7c15 + 1
	next := func() float32 { // xorshift64*, uniform in [-0.035, 0.035)
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return (float32((rng*2685821657736338717)>>40)/(1<<24) - 0.5) * 0.07
	}
	var buf []byte
	for _, t := range ts {
		n := int(t.ne[0])
		rows := 1
		if len(t.ne) > 1 {
			rows = int(t.ne[1])
		}
		buf = buf[:0]
		if t.norm {
			for range n * rows {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(1))
			}
		} else {
			// Rows in chunks, so a 151936-row table never sits in memory as
			// float32.
			const chunk = 1024
			for r0 := 0; r0 < rows; r0 += chunk {
				if err := ctx.Err(); err != nil {
					return err
				}
				nr := min(chunk, rows-r0)
				w := make([]float32, nr*n)
				for i := range w {
					w[i] = next()
				}
				switch t.typ {
				case gguf.F32:
					for _, x := range w {
						buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
					}
				case gguf.F16:
					for _, x := range w {
						buf = binary.LittleEndian.AppendUint16(buf, quant.Float32ToFP16(x))
					}
				case gguf.BF16:
					for _, x := range w {
						buf = binary.LittleEndian.AppendUint16(buf, gemm.Float32ToBF16(x))
					}
				default:
					fm, _ := quantFormat(t.typ)
					m, err := quant.Quantize(fm, w, nr, n)
					if err != nil {
						return fmt.Errorf("engine: gguf: %s: %w", t.name, err)
					}
					buf = m.AppendGGUF(buf)
				}
			}
		}
		g.bytes(buf)
		g.pad(align)
	}
	if g.err != nil {
		return fmt.Errorf("engine: gguf: %s: %w", path, g.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("engine: gguf: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("engine: gguf: %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("engine: gguf: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("engine: gguf: %w", err)
	}
	return nil
}

// ggufOut writes GGUF's little-endian encoding, keeping the first error.
type ggufOut struct {
	w   io.Writer
	n   uint64
	err error
}

func (g *ggufOut) bytes(b []byte) {
	if g.err == nil {
		_, g.err = g.w.Write(b)
		g.n += uint64(len(b))
	}
}
func (g *ggufOut) u32(v uint32) { g.bytes(binary.LittleEndian.AppendUint32(nil, v)) }
func (g *ggufOut) u64(v uint64) { g.bytes(binary.LittleEndian.AppendUint64(nil, v)) }
func (g *ggufOut) str(s string) { g.u64(uint64(len(s))); g.bytes([]byte(s)) }
func (g *ggufOut) pad(align uint64) {
	if r := g.n % align; r != 0 {
		g.bytes(make([]byte, align-r))
	}
}

// value writes a metadata value with its type: uint32, float32, bool,
// string, []string or []int32.
func (g *ggufOut) value(v any) {
	switch x := v.(type) {
	case uint32:
		g.u32(uint32(gguf.Uint32))
		g.u32(x)
	case float32:
		g.u32(uint32(gguf.Float32))
		g.u32(math.Float32bits(x))
	case bool:
		g.u32(uint32(gguf.Bool))
		b := byte(0)
		if x {
			b = 1
		}
		g.bytes([]byte{b})
	case string:
		g.u32(uint32(gguf.String))
		g.str(x)
	case []string:
		g.u32(uint32(gguf.Array))
		g.u32(uint32(gguf.String))
		g.u64(uint64(len(x)))
		for _, s := range x {
			g.str(s)
		}
	case []int32:
		g.u32(uint32(gguf.Array))
		g.u32(uint32(gguf.Int32))
		g.u64(uint64(len(x)))
		for _, n := range x {
			g.u32(uint32(n))
		}
	default:
		panic(fmt.Sprintf("ggufOut.value: %T", v))
	}
}
