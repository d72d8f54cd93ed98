package engine

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/gguf"
	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
)

// GGUF model files (llama.cpp's format): package gguf reads the header,
// metadata and tensor table and checks the layout; this file maps them to
// the engine's model (Config, Weights) and reads and dequantizes the
// tensor data.

// ggufFile is a parsed header with what the mapping keeps beside it: the
// file to read tensor data from and the tensors the model uses.
type ggufFile struct {
	*gguf.File
	r    io.ReaderAt
	used map[*gguf.Tensor]bool
}

// parseGGUF reads the header, metadata and tensor table (gguf.Parse).
func parseGGUF(r io.ReaderAt, size int64, name string) (*ggufFile, error) {
	gf, err := gguf.Parse(r, size, name)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &ggufFile{File: gf, r: r, used: map[*gguf.Tensor]bool{}}, nil
}

// quantFormat is the kernels/quant format of a block-quantized type (ok
// false for the float types).
func quantFormat(t gguf.Type) (quant.Format, bool) {
	switch t {
	case gguf.Q8_0:
		return quant.Q8_0, true
	case gguf.Q4_0:
		return quant.Q4_0, true
	case gguf.Q4_K:
		return quant.Q4_K, true
	case gguf.Q6_K:
		return quant.Q6_K, true
	case gguf.TQ2_0:
		return quant.TQ2_0, true
	case gguf.TQ1_0:
		return quant.TQ1_0, true
	}
	return "", false
}

// LoadGGUF reads the GGUF file at path (see ReadGGUF).
func LoadGGUF(path string) (*Weights, error) { return LoadGGUFLayers(path, 0) }

// LoadGGUFLayers reads the GGUF file at path with only its first layers
// decoder layers (see ReadGGUFLayers).
func LoadGGUFLayers(path string, layers int) (*Weights, error) {
	var w *Weights
	err := withFile(path, func(r io.ReaderAt, size int64) error {
		var err error
		w, err = ReadGGUFLayers(r, size, filepath.Base(path), layers)
		return err
	})
	return w, err
}

// withFile opens path and calls f on it.
func withFile(path string, f func(r io.ReaderAt, size int64) error) error {
	fh, err := regfile.Open(path)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return f(fh, st.Size())
}

// GGUFHeader is what a GGUF file's header says of its model, read without
// its tensor data (LoadGGUFHeader).
type GGUFHeader struct {
	// Config is the model's config, every layer (see ReadGGUF).
	Config Config
	f      *ggufFile
}

// LoadGGUFHeader reads the header, metadata and tensor table of the GGUF
// file at path and the Config they give, checking what ReadGGUF checks
// before it reads tensor data.
func LoadGGUFHeader(path string) (*GGUFHeader, error) {
	var h *GGUFHeader
	err := withFile(path, func(r io.ReaderAt, size int64) error {
		f, err := parseGGUF(r, size, filepath.Base(path))
		if err != nil {
			return err
		}
		c, err := f.config()
		if err != nil {
			return err
		}
		f.r = nil // the file closes: only the table is kept
		h = &GGUFHeader{Config: c, f: f}
		return nil
	})
	return h, err
}

// ResidentBytes estimates the memory, in bytes, that loading the file's
// first layers decoder layers (0: all) and building a Model with
// placement cores take: float tensors at 4 bytes per value, plus a second
// 4 bytes for each float matrix (the packed copy New makes; the tied
// embedding table when token_embd is float); quantized matrices at their
// packed size (quant.Format.BytesPerWeight: as in the file for Q8_0, Q4_0
// and Q4_K, a little more for Q6_K, TQ2_0 and TQ1_0, which are held as
// int2), plus a token_embd in those formats dequantized to float32; plus
// the largest quantized tensor once more (read whole before packing).
func (h *GGUFHeader) ResidentBytes(layers int) int64 {
	var total, largest int64
	for _, t := range h.f.Order {
		if i, ok := ggufLayer(t.Name); ok && layers > 0 && i >= layers {
			continue
		}
		elems := t.Elements()
		qf, quantized := quantFormat(t.Type)
		matrix := len(t.Shape) >= 2 && t.Name != "token_embd.weight"
		packed := max(t.Size, int64(qf.BytesPerWeight()*float64(elems)))
		switch {
		case t.Name == "token_embd.weight":
			total += 4 * elems
			if h.Config.TiedEmbeddings {
				if quantized {
					total += packed
				} else {
					total += 4 * elems
				}
			}
		case matrix && quantized:
			total += packed
		case matrix:
			total += 8 * elems
		default:
			total += 4 * elems
		}
		if quantized {
			largest = max(largest, t.Size)
		}
	}
	return total + largest
}

// ReadGGUF reads a GGUF file (version 2 or 3, little-endian) of size bytes
// from r into Weights; name (the file's name) is used in errors and as
// Config.Name.
//
// Architectures (general.architecture) llama, qwen3 and qwen3moe are
// supported; the config comes from the keys <arch>.embedding_length (Dim),
// .feed_forward_length (Intermediate; optional for qwen3moe), .block_count,
// .attention.head_count, .attention.head_count_kv (default head_count),
// .attention.key_length (HeadDim; default embedding_length/head_count),
// .context_length (MaxSeq), .rope.freq_base (default 10000 for llama, 1e6
// for qwen3 and qwen3moe, as in HF transformers' configs) and
// .attention.layer_norm_rms_epsilon; qwen3moe adds .expert_count,
// .expert_used_count and .expert_feed_forward_length, every layer is MoE
// and the top-k weights are renormalized (llama.cpp
// src/models/qwen3moe.cpp calls build_moe_ffn with norm_w true on every
// layer). Vocab is token_embd.weight's ne[1]; the LM head is tied when
// output.weight is absent. QKNorm is set for qwen3 and qwen3moe. Checked
// when present: .attention.value_length and .rope.dimension_count (must
// equal the head dim: no partial rotary), .vocab_size, .expert_gating_func
// (softmax only), general.alignment (a power of two; default 32).
//
// RoPE layout: llama.cpp applies its "normal" RoPE (adjacent pairs) to
// arch llama and NEOX RoPE (pairs offset by head_dim/2) to qwen3 and
// qwen3moe (llama.cpp src/llama-model.cpp llama_model_rope_type). Its
// converter permutes the q and k rows of HF Llama checkpoints so that
// adjacent pairs apply (convert_hf_to_gguf.py LlamaModel.permute), and
// stores Qwen3's unpermuted; so llama gives kernels.RoPEAdjacent and the
// Qwen3 architectures kernels.RoPEHalf, with the weights as stored.
//
// Tensors (llama.cpp names: token_embd, output_norm, output and blk.N.
// attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm,
// attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down, or ffn_gate_inp and
// the 3-D ffn_gate_exps, ffn_up_exps, ffn_down_exps split into one slab
// per expert) may be F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0 or
// TQ1_0. The linear weight matrices (all but token_embd, the norms and
// rope_freqs) in a quantized type stay quantized: quant.FromGGUF packs their blocks as stored into the
// Weights' Q fields (an [out][in] quant.Matrix; a 3-D slab one per
// expert), their float32 field left nil. Every other tensor is
// dequantized exactly into float32 (F32 bit for bit; Q8_0 as d·q and Q4_0
// as d·(q − 8), as ggml's dequantize_row_q8_0 and _q4_0, the others as
// their dequantize_row_*). token_embd in a quantized type is both
// dequantized (Embed, for the gather) and, when the
// head is tied, kept quantized as LMHeadQ. A GGUF matrix of ne = [in,
// out] is our [out][in] row-major matrix as stored: token_embd and output
// [Dim, Vocab], attn_q [Dim, QDim], attn_k and attn_v [Dim, KVDim],
// attn_output [QDim, Dim], ffn_gate and ffn_up [Dim, Intermediate], ffn_down
// [Intermediate, Dim], ffn_gate_inp [Dim, Experts], ffn_gate_exps and
// ffn_up_exps [Dim, MoEIntermediate, Experts], ffn_down_exps [MoEIntermediate, Dim,
// Experts], norms [Dim] or [HeadDim]. The model is read into memory: 4
// bytes per value of the float types, 34/32 (Q8_0) or 18/32 (Q4_0) per
// weight of the quantized matrices (GGUFHeader.ResidentBytes estimates
// the total before anything is read).
//
// Errors name what is wrong and what was expected: wrong magic,
// unsupported version or byte order, a truncated header, an unsupported
// architecture, a missing or ill-typed key, a missing tensor, a tensor of
// a type not listed above (naming the type), a shape that does not match
// the config (naming the tensor and both shapes), data beyond the end of
// the file or overlapping another tensor, an unused tensor (the engine
// refuses what it would otherwise ignore, e.g. biases), and rope_freqs
// (Llama 3 RoPE scaling, stored as per-frequency factors, is not mapped
// yet) or any rope.scaling type but "none". Memory grows with the file:
// a count or size the file cannot hold is an error before anything is
// allocated for it.
func ReadGGUF(r io.ReaderAt, size int64, name string) (*Weights, error) {
	return ReadGGUFLayers(r, size, name, 0)
}

// ReadGGUFLayers is ReadGGUF with only the first layers decoder layers
// (0: all): the tensors of later layers are checked in the tensor table
// but not read, and the Config says Layers = layers. Errors: those of
// ReadGGUF, and layers above the file's block_count.
func ReadGGUFLayers(r io.ReaderAt, size int64, name string, layers int) (*Weights, error) {
	f, err := parseGGUF(r, size, name)
	if err != nil {
		return nil, err
	}
	c, err := f.config()
	if err != nil {
		return nil, err
	}
	return f.weights(c, layers)
}

// errf formats an error about f ("engine: NAME: ...").
func (f *ggufFile) errf(format string, args ...any) error {
	return fmt.Errorf("engine: %w", f.Errorf(format, args...))
}

// engineErr prefixes a gguf error with "engine: " (nil stays nil).
func engineErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("engine: %w", err)
}

// metaInt returns the integer at key, or def when it is absent and not
// required (gguf.File.MetaInt).
func (f *ggufFile) metaInt(key string, def int, required bool) (int, error) {
	n, err := f.MetaInt(key, def, required)
	return n, engineErr(err)
}

// metaFloat returns the float32 or float64 at key, or def when absent and not
// required (gguf.File.MetaFloat).
func (f *ggufFile) metaFloat(key string, def float64, required bool) (float64, error) {
	x, err := f.MetaFloat(key, def, required)
	return x, engineErr(err)
}

// metaString returns the string at key ("" and false when absent).
func (f *ggufFile) metaString(key string) (string, bool, error) {
	v, ok, err := f.MetaString(key)
	return v, ok, engineErr(err)
}

// ggufArchs are the supported general.architecture values.
var ggufArchs = []string{"llama", "qwen3", "qwen3moe"}

// config builds the Config from the metadata and the shape of token_embd
// (see ReadGGUF).
func (f *ggufFile) config() (Config, error) {
	arch, ok, err := f.metaString("general.architecture")
	switch {
	case err != nil:
		return Config{}, err
	case !ok:
		return Config{}, f.errf("missing metadata key general.architecture (supported: %s)", strings.Join(ggufArchs, ", "))
	case !slices.Contains(ggufArchs, arch):
		return Config{}, f.errf("architecture %q is not supported (supported: %s)", arch, strings.Join(ggufArchs, ", "))
	}
	k := func(s string) string { return arch + "." + s }
	c := Config{Name: f.Name, RoPELayout: kernels.RoPEHalf, QKNorm: true}
	theta := 1e6 // HF Qwen3 and Qwen3-MoE rope_theta default
	if arch == "llama" {
		c.RoPELayout, c.QKNorm, theta = kernels.RoPEAdjacent, false, 10000
	}
	ints := []struct {
		dst      *int
		key      string
		required bool
	}{
		{&c.Dim, "embedding_length", true},
		{&c.Intermediate, "feed_forward_length", arch != "qwen3moe"},
		{&c.Layers, "block_count", true},
		{&c.Heads, "attention.head_count", true},
		{&c.MaxSeq, "context_length", true},
	}
	for _, x := range ints {
		if *x.dst, err = f.metaInt(k(x.key), 0, x.required); err != nil {
			return Config{}, err
		}
	}
	if c.Heads < 1 {
		return Config{}, f.errf("metadata %s = %d: must be ≥ 1", k("attention.head_count"), c.Heads)
	}
	if c.KVHeads, err = f.metaInt(k("attention.head_count_kv"), c.Heads, false); err != nil {
		return Config{}, err
	}
	if _, ok := f.Meta[k("attention.key_length")]; !ok && c.Dim%c.Heads != 0 {
		return Config{}, f.errf("missing metadata key %s, and embedding_length %d is not a multiple of head_count %d", k("attention.key_length"), c.Dim, c.Heads)
	}
	if c.HeadDim, err = f.metaInt(k("attention.key_length"), c.Dim/c.Heads, false); err != nil {
		return Config{}, err
	}
	for _, key := range []string{"attention.value_length", "rope.dimension_count"} {
		if v, err := f.metaInt(k(key), c.HeadDim, false); err != nil {
			return Config{}, err
		} else if v != c.HeadDim {
			return Config{}, f.errf("metadata %s = %d: the engine needs it equal to the head dim %d", k(key), v, c.HeadDim)
		}
	}
	if c.RoPETheta, err = f.metaFloat(k("rope.freq_base"), theta, false); err != nil {
		return Config{}, err
	}
	eps, err := f.metaFloat(k("attention.layer_norm_rms_epsilon"), 0, true)
	if err != nil {
		return Config{}, err
	}
	c.RMSEps = float32(eps)
	if typ, ok, err := f.metaString(k("rope.scaling.type")); err != nil {
		return Config{}, err
	} else if ok && typ != "none" {
		return Config{}, f.errf("metadata %s = %q: RoPE scaling is not supported yet", k("rope.scaling.type"), typ)
	}
	if s, err := f.metaFloat(k("rope.scale_linear"), 1, false); err != nil {
		return Config{}, err
	} else if s != 1 {
		return Config{}, f.errf("metadata %s = %v: linear RoPE scaling is not supported", k("rope.scale_linear"), s)
	}
	if arch == "qwen3moe" {
		c.NormTopK, c.SparseStep = true, 1
		for _, x := range []struct {
			dst *int
			key string
		}{{&c.Experts, "expert_count"}, {&c.TopK, "expert_used_count"}, {&c.MoEIntermediate, "expert_feed_forward_length"}} {
			if *x.dst, err = f.metaInt(k(x.key), 0, true); err != nil {
				return Config{}, err
			}
		}
		if c.Experts < 1 {
			return Config{}, f.errf("metadata %s = %d: must be ≥ 1", k("expert_count"), c.Experts)
		}
		if g, err := f.metaInt(k("expert_gating_func"), 1, false); err != nil {
			return Config{}, err
		} else if g != 1 {
			return Config{}, f.errf("metadata %s = %d: only softmax gating (1) is supported", k("expert_gating_func"), g)
		}
	} else if n, err := f.metaInt(k("expert_count"), 0, false); err != nil {
		return Config{}, err
	} else if n > 0 {
		return Config{}, f.errf("metadata %s = %d: mixture of experts in architecture %s is not supported (only in qwen3moe)", k("expert_count"), n, arch)
	}
	emb := f.Tensors["token_embd.weight"]
	if emb == nil {
		return Config{}, f.errf("missing tensor token_embd.weight")
	}
	if len(emb.Shape) < 2 || slices.ContainsFunc(emb.Shape[2:], func(n uint64) bool { return n != 1 }) || emb.Shape[0] != uint64(c.Dim) {
		return Config{}, f.errf("tensor token_embd.weight: shape %v, want [%d vocab] ([dim, vocab])", emb.Shape, c.Dim)
	}
	if emb.Shape[1] > gguf.MaxInt {
		return Config{}, f.errf("tensor token_embd.weight: vocab %d: must be at most %d", emb.Shape[1], gguf.MaxInt)
	}
	c.Vocab = int(emb.Shape[1])
	if n, err := f.metaInt(k("vocab_size"), c.Vocab, false); err != nil {
		return Config{}, err
	} else if n != c.Vocab {
		return Config{}, f.errf("metadata %s = %d, but token_embd.weight has %d rows", k("vocab_size"), n, c.Vocab)
	}
	_, hasHead := f.Tensors["output.weight"]
	c.TiedEmbeddings = !hasHead
	// Each layer has several tensors: this bounds the per-layer structs
	// allocated before any is read.
	if c.Layers > len(f.Order) {
		return Config{}, f.errf("metadata %s = %d: the file has only %d tensors", k("block_count"), c.Layers, len(f.Order))
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ggufChunk bounds one read of tensor data.
const ggufChunk = 1 << 20

// weights reads every tensor the config needs for its first layers
// decoder layers (0: all; the tensors of later layers are skipped, not
// read), checking shapes, and refuses tensors left over. Linear weight
// matrices in a quantized type stay quantized (quant.FromGGUF); every other
// tensor is dequantized to float32.
func (f *ggufFile) weights(c Config, layers int) (*Weights, error) {
	if layers < 0 || layers > c.Layers {
		return nil, f.errf("layers %d: must be between 0 (all) and the file's %d", layers, c.Layers)
	}
	if layers > 0 && layers < c.Layers {
		for _, t := range f.Order {
			if i, ok := ggufLayer(t.Name); ok && i >= layers {
				f.used[t] = true
			}
		}
		c.Layers = layers
	}
	ld := &ggufLoader{f: f}
	d, q, kv, hd := c.Dim, c.QDim(), c.KVDim(), c.HeadDim
	w := &Weights{Config: c, Layers: make([]LayerWeights, c.Layers)}
	w.Embed = ld.get("token_embd.weight", "dim, vocab", d, c.Vocab)
	if emb := f.Tensors["token_embd.weight"]; c.TiedEmbeddings && ld.err == nil {
		if qf, ok := quantFormat(emb.Type); ok {
			// The tied head runs on the table's quantized data.
			if ms := ld.quantized(emb, qf, 1); ms != nil {
				w.LMHeadQ = ms[0]
			}
		}
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
		l.AttnNorm = ld.get(b("attn_norm"), "dim", d)
		l.Wq, l.WqQ = ld.linear(b("attn_q"), "dim, heads·head dim", d, q)
		l.Wk, l.WkQ = ld.linear(b("attn_k"), "dim, kv heads·head dim", d, kv)
		l.Wv, l.WvQ = ld.linear(b("attn_v"), "dim, kv heads·head dim", d, kv)
		l.Wo, l.WoQ = ld.linear(b("attn_output"), "heads·head dim, dim", q, d)
		if c.QKNorm {
			l.QNorm = ld.get(b("attn_q_norm"), "head dim", hd)
			l.KNorm = ld.get(b("attn_k_norm"), "head dim", hd)
		}
		l.FFNNorm = ld.get(b("ffn_norm"), "dim", d)
		if !c.IsMoE(i) {
			l.Gate, l.GateQ = ld.linear(b("ffn_gate"), "dim, hidden", d, c.Intermediate)
			l.Up, l.UpQ = ld.linear(b("ffn_up"), "dim, hidden", d, c.Intermediate)
			l.Down, l.DownQ = ld.linear(b("ffn_down"), "hidden, dim", c.Intermediate, d)
			continue
		}
		e, mh := c.Experts, c.MoEIntermediate
		l.Router, l.RouterQ = ld.linear(b("ffn_gate_inp"), "dim, experts", d, e)
		gate, gateQ := ld.slabs(b("ffn_gate_exps"), "dim, expert hidden, experts", d, mh, e)
		up, upQ := ld.slabs(b("ffn_up_exps"), "dim, expert hidden, experts", d, mh, e)
		down, downQ := ld.slabs(b("ffn_down_exps"), "expert hidden, dim, experts", mh, d, e)
		if ld.err != nil {
			break
		}
		l.Experts = make([]ExpertWeights, e)
		for x := range l.Experts {
			l.Experts[x] = ExpertWeights{Gate: gate[x], Up: up[x], Down: down[x], GateQ: gateQ[x], UpQ: upQ[x], DownQ: downQ[x]}
		}
	}
	w.FinalNorm = ld.get("output_norm.weight", "dim", d)
	if _, ok := f.Tensors["rope_freqs.weight"]; ok {
		// Llama 3 rope_scaling as llama.cpp's converter stores it: one
		// divisor per frequency (kernels.RoPEScaling.FreqFactors).
		ff := ld.get("rope_freqs.weight", "head dim / 2", hd/2)
		if ld.err == nil {
			s := &kernels.RoPEScaling{FreqFactors: make([]float64, len(ff))}
			for i, v := range ff {
				s.FreqFactors[i] = float64(v)
			}
			w.Config.RoPEScaling = s
		}
	}
	if !c.TiedEmbeddings {
		w.LMHead, w.LMHeadQ = ld.linear("output.weight", "dim, vocab", d, c.Vocab)
	}
	if ld.err != nil {
		return nil, ld.err
	}
	for _, t := range f.Order {
		if !f.used[t] {
			return nil, f.errf("tensor %s: not part of a %s model as the engine runs it (refusing rather than ignoring it)",
				t.Name, f.Meta["general.architecture"].S)
		}
	}
	w.PackSeconds = ld.packSeconds
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// ggufLayer returns N of a tensor named blk.N.*.
func ggufLayer(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok || num == "" || len(num) > 9 {
		return 0, false
	}
	n := 0
	for _, ch := range num {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = 10*n + int(ch-'0')
	}
	return n, true
}

// ggufLoader reads tensors, keeping the first error.
type ggufLoader struct {
	f           *ggufFile
	buf         []byte
	err         error
	packSeconds float64 // time in quant.FromGGUF
}

// tensor returns the tensor called name after checking its shape against
// want (GGUF order, fastest-varying first; dims describes it), marked
// used; nil after an error.
func (ld *ggufLoader) tensor(name, dims string, want ...int) *gguf.Tensor {
	if ld.err != nil {
		return nil
	}
	f := ld.f
	t := f.Tensors[name]
	if t == nil {
		ld.err = f.errf("missing tensor %s", name)
		return nil
	}
	f.used[t] = true
	for i := range max(len(want), len(t.Shape)) {
		w, g := uint64(1), uint64(1)
		if i < len(want) {
			w = uint64(want[i])
		}
		if i < len(t.Shape) {
			g = t.Shape[i]
		}
		if w != g {
			ld.err = f.errf("tensor %s: shape %v, want %v ([%s]; GGUF lists dims fastest-varying first)", name, t.Shape, want, dims)
			return nil
		}
	}
	return t
}

// get checks the tensor's shape against want (see tensor) and returns its
// data as float32.
func (ld *ggufLoader) get(name, dims string, want ...int) []float32 {
	t := ld.tensor(name, dims, want...)
	if t == nil {
		return nil
	}
	out, err := ld.read(t)
	if err != nil {
		ld.err = ld.f.errf("tensor %s: %w", name, err)
		return nil
	}
	return out
}

// linear reads a weight matrix of GGUF shape want = [in, out]: Q8_0 and
// Q4_0 data stay quantized (an out×in quant.Matrix), the float types are
// dequantized to row-major [out][in] float32.
func (ld *ggufLoader) linear(name, dims string, want ...int) ([]float32, *quant.Matrix) {
	fs, qs := ld.slabs(name, dims, want...)
	if ld.err != nil {
		return nil, nil
	}
	return fs[0], qs[0]
}

// slabs reads a matrix or a 3-D stack of matrices of GGUF shape want =
// [in, out] or [in, out, count] as count matrices (one expert each), in
// the form linear gives: slab x is elements [x·in·out, (x+1)·in·out).
func (ld *ggufLoader) slabs(name, dims string, want ...int) ([][]float32, []*quant.Matrix) {
	t := ld.tensor(name, dims, want...)
	if t == nil {
		return nil, nil
	}
	count := 1
	if len(want) > 2 {
		count = want[2]
	}
	fs, qs := make([][]float32, count), make([]*quant.Matrix, count)
	if qf, ok := quantFormat(t.Type); ok {
		if ms := ld.quantized(t, qf, count); ms != nil {
			copy(qs, ms)
		}
		return fs, qs
	}
	all, err := ld.read(t)
	if err != nil {
		ld.err = ld.f.errf("tensor %s: %w", name, err)
		return nil, nil
	}
	n := want[0] * want[1]
	for x := range fs {
		s := x * n
		fs[x] = all[s : s+n : s+n]
	}
	return fs, qs
}

// quantized packs t's blocks of format qf as parts matrices of ne[0]
// columns, cut along the slowest dimensions (one per expert of a 3-D
// slab): nil and ld.err set on an error (a NaN or infinite scale, naming
// the tensor, the expert and the block).
func (ld *ggufLoader) quantized(t *gguf.Tensor, qf quant.Format, parts int) []*quant.Matrix {
	data := make([]byte, t.Size)
	if n, err := ld.f.r.ReadAt(data, t.Offset); n < len(data) {
		ld.err = ld.f.errf("tensor %s: reading %d bytes at offset %d: got %d: %w", t.Name, len(data), t.Offset, n, err)
		return nil
	}
	k := int(t.Shape[0])
	rows := int(t.Size/int64(qf.GGUFBlockBytes())) * qf.GGUFBlockLen() / k / parts
	per := len(data) / parts
	start := time.Now()
	defer func() { ld.packSeconds += time.Since(start).Seconds() }()
	out := make([]*quant.Matrix, parts)
	for x := range out {
		m, err := quant.FromGGUF(qf, data[x*per:(x+1)*per], rows, k)
		if err != nil {
			what := ""
			if parts > 1 {
				what = fmt.Sprintf("expert %d: ", x)
			}
			ld.err = ld.f.errf("tensor %s: %s%w", t.Name, what, err)
			return nil
		}
		out[x] = m
	}
	return out
}

// read dequantizes t's data in chunks of whole blocks.
func (ld *ggufLoader) read(t *gguf.Tensor) ([]float32, error) {
	be, bb, _ := t.Type.Block()
	out := make([]float32, t.Size/int64(bb)*int64(be))
	chunk := int64(ggufChunk / bb * bb)
	if need := min(chunk, t.Size); int64(cap(ld.buf)) < need {
		ld.buf = make([]byte, need)
	}
	o := out
	for done := int64(0); done < t.Size; {
		b := ld.buf[:min(chunk, t.Size-done)]
		if n, err := ld.f.r.ReadAt(b, t.Offset+done); n < len(b) {
			return nil, fmt.Errorf("reading %d bytes at offset %d: got %d: %w", len(b), t.Offset+done, n, err)
		}
		done += int64(len(b))
		if qf, ok := quantFormat(t.Type); ok && qf.GGUFBlockLen() != gguf.QK {
			// The 256-weight formats, through their kernels/quant
			// decoder (quant.FromGGUF: one row per block), as ggml's
			// dequantize_row_q4_K, _q6_K, _tq2_0, _tq1_0.
			n, err := dequantizeSuper(o, b, qf)
			if err != nil {
				return nil, err
			}
			o = o[n:]
			continue
		}
		o = o[dequantize(o, b, t.Type):]
	}
	return out, nil
}

// dequantizeSuper decodes src (whole 256-weight blocks of qf) into dst and
// returns the number of values written; errors: a NaN or infinite scale.
func dequantizeSuper(dst []float32, src []byte, qf quant.Format) (int, error) {
	nb := len(src) / qf.GGUFBlockBytes()
	m, err := quant.FromGGUF(qf, src, nb, qf.GGUFBlockLen())
	if err != nil {
		return 0, err
	}
	return copy(dst, m.Dequantize()), nil
}

// dequantize decodes src (whole blocks of typ) into dst and returns the
// number of values written.
func dequantize(dst []float32, src []byte, typ gguf.Type) int {
	switch typ {
	case gguf.F32:
		n := len(src) / 4
		for i := range dst[:n] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return n
	case gguf.F16:
		n := len(src) / 2
		for i := range dst[:n] {
			dst[i] = quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return n
	case gguf.BF16:
		n := len(src) / 2
		for i := range dst[:n] {
			dst[i] = gemm.BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return n
	case gguf.Q8_0:
		// As ggml-quants.c dequantize_row_q8_0: y = d·q in float32.
		nb := len(src) / (2 + gguf.QK)
		for b := range nb {
			blk := src[b*(2+gguf.QK) : (b+1)*(2+gguf.QK)]
			d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
			y := dst[b*gguf.QK : (b+1)*gguf.QK]
			for j, q := range blk[2:] {
				y[j] = d * float32(int8(q))
			}
		}
		return nb * gguf.QK
	case gguf.Q4_0:
		// As ggml-quants.c dequantize_row_q4_0: element j = d·((qs[j] &
		// 0xF) − 8), element j+16 = d·((qs[j] >> 4) − 8).
		const bb = 2 + gguf.QK/2
		nb := len(src) / bb
		for b := range nb {
			blk := src[b*bb : (b+1)*bb]
			d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
			y := dst[b*gguf.QK : (b+1)*gguf.QK]
			for j, q := range blk[2:] {
				y[j] = d * float32(int(q&0x0f)-8)
				y[j+gguf.QK/2] = d * float32(int(q>>4)-8)
			}
		}
		return nb * gguf.QK
	}
	panic("engine: dequantize: unsupported type " + typ.String())
}
