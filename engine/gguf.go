package engine

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
)

// GGUF model files (llama.cpp's format; specification: ggml-org/ggml
// docs/gguf.md, reader: llama.cpp ggml/src/gguf.cpp). Little-endian:
//
//	"GGUF", uint32 version (2 or 3), uint64 tensor count, uint64 key count
//	keys:    string key, uint32 value type, value (strings are a uint64
//	         length and bytes; an array is uint32 element type, uint64
//	         count, elements)
//	tensors: string name, uint32 n_dims (≤ 4), uint64 ne[n_dims] (fastest-
//	         varying first), uint32 ggml type, uint64 offset (from the data
//	         section, a multiple of the alignment)
//	padding to general.alignment (default 32), then the data section.
//
// Version 3 only added big-endian files, which are rejected here; version
// 1 (32-bit counts) is too old to meet.
//
// The header and metadata reader is ours, not github.com/gpustack/
// gguf-parser-go (checked at v0.28.1): that package's import graph is 221
// packages, among them net/http, golang.org/x/crypto/ssh (Ollama registry
// auth), henvic/httpretty and json-iterator, and it adds 15 modules to
// go.mod; its only local entry point takes a path, not an io.ReaderAt
// (so no fuzzing over bytes), and it keeps every array element as an
// `any`. What the engine needs from the header (a dozen scalar keys, the
// tensor table, skipping the tokenizer arrays) is the small reader below;
// reading and dequantizing tensor data would be ours either way.

// ggmlType is a tensor's element type (ggml.h enum ggml_type).
type ggmlType uint32

// The tensor types ReadGGUF reads.
const (
	ggmlF32  ggmlType = 0
	ggmlF16  ggmlType = 1
	ggmlQ4_0 ggmlType = 2
	ggmlQ8_0 ggmlType = 8
	ggmlQ4_K ggmlType = 12
	ggmlQ6_K ggmlType = 14
	ggmlBF16 ggmlType = 30
	ggmlTQ10 ggmlType = 34 // TQ1_0
	ggmlTQ20 ggmlType = 35 // TQ2_0
)

// ggmlSupported lists the types ReadGGUF reads, for messages.
const ggmlSupported = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0, TQ1_0"

// ggmlTypeNames names ggml's types for messages (ggml.h; 4, 5 and 31–33,
// 36–38 were removed from ggml).
var ggmlTypeNames = map[ggmlType]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS",
	24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
	34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}

func (t ggmlType) String() string {
	if s, ok := ggmlTypeNames[t]; ok {
		return fmt.Sprintf("%s (ggml type %d)", s, uint32(t))
	}
	return fmt.Sprintf("ggml type %d (unknown)", uint32(t))
}

// block returns the elements and bytes of one block of t (1 element for
// the float types), ok false for a type ReadGGUF does not decode.
func (t ggmlType) block() (elems, nbytes int, ok bool) {
	switch t {
	case ggmlF32:
		return 1, 4, true
	case ggmlF16, ggmlBF16:
		return 1, 2, true
	case ggmlQ8_0:
		return q8Block, 2 + q8Block, true
	case ggmlQ4_0:
		return q8Block, 2 + q8Block/2, true
	}
	if qf, ok := t.quantFormat(); ok {
		return qf.GGUFBlockLen(), qf.GGUFBlockBytes(), true
	}
	return 0, 0, false
}

// quantFormat is the kernels/quant format of a block-quantized type (ok
// false for the float types).
func (t ggmlType) quantFormat() (quant.Format, bool) {
	switch t {
	case ggmlQ8_0:
		return quant.Q8_0, true
	case ggmlQ4_0:
		return quant.Q4_0, true
	case ggmlQ4_K:
		return quant.Q4_K, true
	case ggmlQ6_K:
		return quant.Q6_K, true
	case ggmlTQ20:
		return quant.TQ2_0, true
	case ggmlTQ10:
		return quant.TQ1_0, true
	}
	return "", false
}

// q8Block is the Q8_0 and Q4_0 block length (ggml-common.h QK8_0 =
// QK4_0): an fp16 scale d and 32 quants, each value d·q (Q8_0: int8 q;
// Q4_0: 4-bit q − 8).
const q8Block = 32

// ggufValueType is a metadata value's type (gguf.md gguf_metadata_value_type).
type ggufValueType uint32

const (
	ggufUint8 ggufValueType = iota
	ggufInt8
	ggufUint16
	ggufInt16
	ggufUint32
	ggufInt32
	ggufFloat32
	ggufBool
	ggufString
	ggufArray
	ggufUint64
	ggufInt64
	ggufFloat64
)

var ggufValueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64"}

func (t ggufValueType) String() string {
	if int(t) < len(ggufValueTypeNames) {
		return ggufValueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// size is the encoded size of a fixed-size value, 0 for string and array.
func (t ggufValueType) size() int {
	switch t {
	case ggufUint8, ggufInt8, ggufBool:
		return 1
	case ggufUint16, ggufInt16:
		return 2
	case ggufUint32, ggufInt32, ggufFloat32:
		return 4
	case ggufUint64, ggufInt64, ggufFloat64:
		return 8
	}
	return 0
}

// ggufValue is one metadata value; arrays keep only their element type
// and length (the engine needs no array's contents).
type ggufValue struct {
	typ  ggufValueType
	u    uint64 // unsigned types and bool
	i    int64  // signed types
	f    float64
	s    string
	elem ggufValueType // array element type
	n    uint64        // array length
}

func (v ggufValue) String() string {
	switch v.typ {
	case ggufString:
		return fmt.Sprintf("%q", v.s)
	case ggufArray:
		return fmt.Sprintf("an array of %d %s", v.n, v.elem)
	case ggufFloat32, ggufFloat64:
		return fmt.Sprint(v.f)
	case ggufInt8, ggufInt16, ggufInt32, ggufInt64:
		return fmt.Sprint(v.i)
	case ggufBool:
		return fmt.Sprint(v.u != 0)
	}
	return fmt.Sprint(v.u)
}

// ggufTensor is one entry of the tensor table.
type ggufTensor struct {
	name   string
	ne     []uint64 // dimensions, fastest-varying first
	typ    ggmlType
	off    int64 // absolute file offset of the data
	nbytes int64
	used   bool
}

// ggufFile is a parsed header: metadata and tensor table.
type ggufFile struct {
	name    string
	r       io.ReaderAt
	size    int64
	version uint32
	meta    map[string]ggufValue
	tensors map[string]*ggufTensor
	order   []*ggufTensor // file order
}

// Limits on what a header may declare, so that sizes computed from it fit
// an int and a corrupt header cannot ask for absurd allocations.
const (
	maxGGUFInt       = 1 << 30 // any integer metadata used as a size
	maxGGUFAlignment = 1 << 20
	ggufDefaultAlign = 32
)

// Minimum encoded sizes, used to refuse counts the file cannot hold
// before anything is allocated for them.
const (
	minGGUFKVBytes     = 8 + 4 + 1         // empty key, type, 1-byte value
	minGGUFTensorBytes = 8 + 4 + 8 + 4 + 8 // empty name, n_dims, ne[0], type, offset
)

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
	for _, t := range h.f.order {
		if i, ok := ggufLayer(t.name); ok && layers > 0 && i >= layers {
			continue
		}
		elems := int64(1)
		for _, n := range t.ne {
			elems *= int64(n)
		}
		qf, quantized := t.typ.quantFormat()
		matrix := len(t.ne) >= 2 && t.name != "token_embd.weight"
		packed := max(t.nbytes, int64(qf.BytesPerWeight()*float64(elems)))
		switch {
		case t.name == "token_embd.weight":
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
			largest = max(largest, t.nbytes)
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

// errf formats an error about f.
func (f *ggufFile) errf(format string, args ...any) error {
	return fmt.Errorf("engine: %s: "+format, append([]any{f.name}, args...)...)
}

// ggufReader reads the header sequentially, tracking the offset.
type ggufReader struct {
	r    *bufio.Reader
	pos  int64
	size int64
	b    [8]byte
}

// errTruncated reports a read past the end of the file.
var errTruncated = errors.New("truncated file")

// need fails unless n more bytes remain.
func (g *ggufReader) need(n uint64) error {
	if rem := uint64(g.size - g.pos); n > rem {
		return fmt.Errorf("%w: needs %d bytes at offset %d, only %d remain", errTruncated, n, g.pos, rem)
	}
	return nil
}

func (g *ggufReader) read(n int) ([]byte, error) {
	if err := g.need(uint64(n)); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(g.r, g.b[:n]); err != nil {
		return nil, fmt.Errorf("at offset %d: %w", g.pos, err)
	}
	g.pos += int64(n)
	return g.b[:n], nil
}

func (g *ggufReader) u32() (uint32, error) {
	b, err := g.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (g *ggufReader) u64() (uint64, error) {
	b, err := g.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a length-prefixed string, refusing a length past the file.
func (g *ggufReader) str() (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if err := g.need(n); err != nil {
		return "", fmt.Errorf("string of %d bytes: %w", n, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(g.r, b); err != nil {
		return "", fmt.Errorf("at offset %d: %w", g.pos, err)
	}
	g.pos += int64(n)
	return string(b), nil
}

// skip discards n bytes.
func (g *ggufReader) skip(n uint64) error {
	if err := g.need(n); err != nil {
		return err
	}
	if _, err := g.r.Discard(int(n)); err != nil {
		return fmt.Errorf("at offset %d: %w", g.pos, err)
	}
	g.pos += int64(n)
	return nil
}

// value reads one metadata value of type t (arrays of arrays are refused,
// as llama.cpp's reader does).
func (g *ggufReader) value(t ggufValueType) (ggufValue, error) {
	v := ggufValue{typ: t}
	switch t {
	case ggufString:
		s, err := g.str()
		v.s = s
		return v, err
	case ggufArray:
		et, err := g.u32()
		if err != nil {
			return v, err
		}
		v.elem = ggufValueType(et)
		if v.n, err = g.u64(); err != nil {
			return v, err
		}
		switch sz := v.elem.size(); {
		case v.elem == ggufString:
			if v.n > uint64(g.size-g.pos)/8 {
				return v, fmt.Errorf("array of %d strings: %w: only %d bytes remain", v.n, errTruncated, g.size-g.pos)
			}
			for range v.n {
				n, err := g.u64()
				if err == nil {
					err = g.skip(n)
				}
				if err != nil {
					return v, fmt.Errorf("array of %d strings: %w", v.n, err)
				}
			}
		case sz > 0:
			if v.n > uint64(g.size-g.pos)/uint64(sz) {
				return v, fmt.Errorf("array of %d %s: %w: only %d bytes remain", v.n, v.elem, errTruncated, g.size-g.pos)
			}
			if err := g.skip(v.n * uint64(sz)); err != nil {
				return v, err
			}
		case v.elem == ggufArray:
			return v, errors.New("arrays of arrays are not supported")
		default:
			return v, fmt.Errorf("array of unknown value type %d", et)
		}
		return v, nil
	}
	sz := t.size()
	if sz == 0 {
		return v, fmt.Errorf("unknown value type %d", uint32(t))
	}
	b, err := g.read(sz)
	if err != nil {
		return v, err
	}
	var u uint64
	for i := sz - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	switch t {
	case ggufInt8:
		v.i = int64(int8(u))
	case ggufInt16:
		v.i = int64(int16(u))
	case ggufInt32:
		v.i = int64(int32(u))
	case ggufInt64:
		v.i = int64(u)
	case ggufFloat32:
		v.f = float64(math.Float32frombits(uint32(u)))
	case ggufFloat64:
		v.f = math.Float64frombits(u)
	default:
		v.u = u
	}
	return v, nil
}

// parseGGUF reads the header, metadata and tensor table of a GGUF file and
// checks that every tensor's data lies inside the file, aligned, and
// overlaps no other.
func parseGGUF(r io.ReaderAt, size int64, name string) (*ggufFile, error) {
	f := &ggufFile{name: name, r: r, size: size, meta: map[string]ggufValue{}, tensors: map[string]*ggufTensor{}}
	if size < 0 {
		return nil, f.errf("size %d: must be ≥ 0", size)
	}
	g := &ggufReader{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(min(size, 1<<16))), size: size}
	magic, err := g.read(4)
	if err != nil {
		return nil, f.errf("not a GGUF file: %w", err)
	}
	if string(magic) == "FUGG" {
		return nil, f.errf("big-endian GGUF (magic \"FUGG\") is not supported")
	}
	if string(magic) != "GGUF" {
		return nil, f.errf("not a GGUF file: magic %q, want \"GGUF\"", magic)
	}
	if f.version, err = g.u32(); err != nil {
		return nil, f.errf("header: %w", err)
	}
	switch v := f.version; {
	case v == 2 || v == 3:
	case v == 1:
		return nil, f.errf("GGUF version 1 is not supported (want 2 or 3; version 1 had 32-bit counts: convert the model again)")
	case bits.ReverseBytes32(v) == 2 || bits.ReverseBytes32(v) == 3:
		return nil, f.errf("big-endian GGUF (version %d) is not supported", bits.ReverseBytes32(v))
	default:
		return nil, f.errf("GGUF version %d is not supported (want 2 or 3)", v)
	}
	nt, err := g.u64()
	if err != nil {
		return nil, f.errf("header: %w", err)
	}
	nkv, err := g.u64()
	if err != nil {
		return nil, f.errf("header: %w", err)
	}
	rem := uint64(size - g.pos)
	if nkv > rem/minGGUFKVBytes || nt > rem/minGGUFTensorBytes || nkv*minGGUFKVBytes+nt*minGGUFTensorBytes > rem {
		return nil, f.errf("header: %d metadata keys and %d tensors cannot fit in the %d bytes after the header: %w", nkv, nt, rem, errTruncated)
	}
	for i := range nkv {
		key, err := g.str()
		if err != nil {
			return nil, f.errf("metadata key %d of %d: %w", i, nkv, err)
		}
		t, err := g.u32()
		if err != nil {
			return nil, f.errf("metadata %s: %w", key, err)
		}
		v, err := g.value(ggufValueType(t))
		if err != nil {
			return nil, f.errf("metadata %s: %w", key, err)
		}
		if _, dup := f.meta[key]; dup {
			return nil, f.errf("metadata %s: duplicate key", key)
		}
		f.meta[key] = v
	}
	align := uint64(ggufDefaultAlign)
	if v, ok := f.meta["general.alignment"]; ok {
		a, err := f.intValue("general.alignment", v)
		if err != nil {
			return nil, err
		}
		if a == 0 || a&(a-1) != 0 || a > maxGGUFAlignment {
			return nil, f.errf("metadata general.alignment = %d: must be a power of two between 1 and %d", a, maxGGUFAlignment)
		}
		align = uint64(a)
	}
	for i := range nt {
		tname, err := g.str()
		if err != nil {
			return nil, f.errf("tensor info %d of %d: %w", i, nt, err)
		}
		t, err := g.tensorInfo(tname, align)
		if err != nil {
			return nil, f.errf("tensor %s: %w", tname, err)
		}
		if _, dup := f.tensors[tname]; dup {
			return nil, f.errf("tensor %s: duplicate name", tname)
		}
		f.tensors[tname] = t
		f.order = append(f.order, t)
	}
	// The data section starts at the next multiple of the alignment;
	// tensor offsets are relative to it.
	data := (uint64(g.pos) + align - 1) / align * align
	for _, t := range f.order {
		rel := uint64(t.off)
		if rel > uint64(size) || data > uint64(size)-rel || uint64(t.nbytes) > uint64(size)-data-rel {
			return nil, f.errf("tensor %s: %d bytes of data at offset %d (data section at %d) run past the end of the file (%d bytes): %w",
				t.name, t.nbytes, rel, data, size, errTruncated)
		}
		t.off = int64(data + rel)
	}
	byOff := slices.Clone(f.order)
	slices.SortStableFunc(byOff, func(a, b *ggufTensor) int { return cmp.Compare(a.off, b.off) })
	for i := 1; i < len(byOff); i++ {
		if a, b := byOff[i-1], byOff[i]; a.off+a.nbytes > b.off {
			return nil, f.errf("tensors %s (bytes %d to %d) and %s (from byte %d) overlap", a.name, a.off, a.off+a.nbytes, b.name, b.off)
		}
	}
	return f, nil
}

// tensorInfo reads one tensor-table entry after its name; off is left
// relative to the data section.
func (g *ggufReader) tensorInfo(name string, align uint64) (*ggufTensor, error) {
	nd, err := g.u32()
	if err != nil {
		return nil, err
	}
	if nd < 1 || nd > 4 {
		return nil, fmt.Errorf("%d dimensions: want 1 to 4", nd)
	}
	t := &ggufTensor{name: name, ne: make([]uint64, nd)}
	n := uint64(1)
	for i := range t.ne {
		if t.ne[i], err = g.u64(); err != nil {
			return nil, err
		}
		hi, lo := bits.Mul64(n, t.ne[i])
		if t.ne[i] == 0 || hi != 0 || lo > math.MaxInt64/8 {
			return nil, fmt.Errorf("shape %v: every dimension must be ≥ 1 and the element count below 2^60", t.ne[:i+1])
		}
		n = lo
	}
	typ, err := g.u32()
	if err != nil {
		return nil, err
	}
	t.typ = ggmlType(typ)
	off, err := g.u64()
	if err != nil {
		return nil, err
	}
	be, bb, ok := t.typ.block()
	switch {
	case !ok:
		return nil, fmt.Errorf("%s is not supported (supported: %s)", t.typ, ggmlSupported)
	case t.ne[0]%uint64(be) != 0:
		return nil, fmt.Errorf("%s: ne[0] = %d is not a multiple of the block size %d", t.typ, t.ne[0], be)
	case off%align != 0:
		return nil, fmt.Errorf("data offset %d is not a multiple of the alignment %d", off, align)
	case off > math.MaxInt64:
		return nil, fmt.Errorf("data offset %d is beyond any file", off)
	}
	t.nbytes = int64(n / uint64(be) * uint64(bb))
	t.off = int64(off)
	return t, nil
}

// intValue converts an integer metadata value to an int in [0, maxGGUFInt].
func (f *ggufFile) intValue(key string, v ggufValue) (int, error) {
	switch v.typ {
	case ggufUint8, ggufUint16, ggufUint32, ggufUint64:
		if v.u <= maxGGUFInt {
			return int(v.u), nil
		}
	case ggufInt8, ggufInt16, ggufInt32, ggufInt64:
		if v.i >= 0 && v.i <= maxGGUFInt {
			return int(v.i), nil
		}
	case ggufArray:
		return 0, f.errf("metadata %s: %s, want one integer (per-layer values are not supported)", key, v)
	default:
		return 0, f.errf("metadata %s: a %s (%s), want an integer", key, v.typ, v)
	}
	return 0, f.errf("metadata %s = %s: must be between 0 and %d", key, v, maxGGUFInt)
}

// metaInt returns the integer at key, or def when it is absent and not
// required.
func (f *ggufFile) metaInt(key string, def int, required bool) (int, error) {
	v, ok := f.meta[key]
	if !ok {
		if required {
			return 0, f.errf("missing metadata key %s", key)
		}
		return def, nil
	}
	return f.intValue(key, v)
}

// metaFloat returns the float32 or float64 at key, or def when absent and not
// required.
func (f *ggufFile) metaFloat(key string, def float64, required bool) (float64, error) {
	v, ok := f.meta[key]
	switch {
	case !ok && required:
		return 0, f.errf("missing metadata key %s", key)
	case !ok:
		return def, nil
	case v.typ != ggufFloat32 && v.typ != ggufFloat64:
		return 0, f.errf("metadata %s: a %s (%s), want a float", key, v.typ, v)
	}
	return v.f, nil
}

// metaString returns the string at key ("" and false when absent).
func (f *ggufFile) metaString(key string) (string, bool, error) {
	v, ok := f.meta[key]
	if !ok {
		return "", false, nil
	}
	if v.typ != ggufString {
		return "", false, f.errf("metadata %s: a %s (%s), want a string", key, v.typ, v)
	}
	return v.s, true, nil
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
	c := Config{Name: f.name, RoPELayout: kernels.RoPEHalf, QKNorm: true}
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
	if _, ok := f.meta[k("attention.key_length")]; !ok && c.Dim%c.Heads != 0 {
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
	emb := f.tensors["token_embd.weight"]
	if emb == nil {
		return Config{}, f.errf("missing tensor token_embd.weight")
	}
	if len(emb.ne) < 2 || slices.ContainsFunc(emb.ne[2:], func(n uint64) bool { return n != 1 }) || emb.ne[0] != uint64(c.Dim) {
		return Config{}, f.errf("tensor token_embd.weight: shape %v, want [%d vocab] ([dim, vocab])", emb.ne, c.Dim)
	}
	if emb.ne[1] > maxGGUFInt {
		return Config{}, f.errf("tensor token_embd.weight: vocab %d: must be at most %d", emb.ne[1], maxGGUFInt)
	}
	c.Vocab = int(emb.ne[1])
	if n, err := f.metaInt(k("vocab_size"), c.Vocab, false); err != nil {
		return Config{}, err
	} else if n != c.Vocab {
		return Config{}, f.errf("metadata %s = %d, but token_embd.weight has %d rows", k("vocab_size"), n, c.Vocab)
	}
	_, hasHead := f.tensors["output.weight"]
	c.TiedEmbeddings = !hasHead
	// Each layer has several tensors: this bounds the per-layer structs
	// allocated before any is read.
	if c.Layers > len(f.order) {
		return Config{}, f.errf("metadata %s = %d: the file has only %d tensors", k("block_count"), c.Layers, len(f.order))
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
		for _, t := range f.order {
			if i, ok := ggufLayer(t.name); ok && i >= layers {
				t.used = true
			}
		}
		c.Layers = layers
	}
	ld := &ggufLoader{f: f}
	d, q, kv, hd := c.Dim, c.QDim(), c.KVDim(), c.HeadDim
	w := &Weights{Config: c, Layers: make([]LayerWeights, c.Layers)}
	w.Embed = ld.get("token_embd.weight", "dim, vocab", d, c.Vocab)
	if emb := f.tensors["token_embd.weight"]; c.TiedEmbeddings && ld.err == nil {
		if qf, ok := emb.typ.quantFormat(); ok {
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
	if _, ok := f.tensors["rope_freqs.weight"]; ok {
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
	for _, t := range f.order {
		if !t.used {
			return nil, f.errf("tensor %s: not part of a %s model as the engine runs it (refusing rather than ignoring it)",
				t.name, f.meta["general.architecture"].s)
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
func (ld *ggufLoader) tensor(name, dims string, want ...int) *ggufTensor {
	if ld.err != nil {
		return nil
	}
	f := ld.f
	t := f.tensors[name]
	if t == nil {
		ld.err = f.errf("missing tensor %s", name)
		return nil
	}
	t.used = true
	for i := range max(len(want), len(t.ne)) {
		w, g := uint64(1), uint64(1)
		if i < len(want) {
			w = uint64(want[i])
		}
		if i < len(t.ne) {
			g = t.ne[i]
		}
		if w != g {
			ld.err = f.errf("tensor %s: shape %v, want %v ([%s]; GGUF lists dims fastest-varying first)", name, t.ne, want, dims)
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
	if qf, ok := t.typ.quantFormat(); ok {
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
func (ld *ggufLoader) quantized(t *ggufTensor, qf quant.Format, parts int) []*quant.Matrix {
	data := make([]byte, t.nbytes)
	if n, err := ld.f.r.ReadAt(data, t.off); n < len(data) {
		ld.err = ld.f.errf("tensor %s: reading %d bytes at offset %d: got %d: %w", t.name, len(data), t.off, n, err)
		return nil
	}
	k := int(t.ne[0])
	rows := int(t.nbytes/int64(qf.GGUFBlockBytes())) * qf.GGUFBlockLen() / k / parts
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
			ld.err = ld.f.errf("tensor %s: %s%w", t.name, what, err)
			return nil
		}
		out[x] = m
	}
	return out
}

// read dequantizes t's data in chunks of whole blocks.
func (ld *ggufLoader) read(t *ggufTensor) ([]float32, error) {
	be, bb, _ := t.typ.block()
	out := make([]float32, t.nbytes/int64(bb)*int64(be))
	chunk := int64(ggufChunk / bb * bb)
	if need := min(chunk, t.nbytes); int64(cap(ld.buf)) < need {
		ld.buf = make([]byte, need)
	}
	o := out
	for done := int64(0); done < t.nbytes; {
		b := ld.buf[:min(chunk, t.nbytes-done)]
		if n, err := ld.f.r.ReadAt(b, t.off+done); n < len(b) {
			return nil, fmt.Errorf("reading %d bytes at offset %d: got %d: %w", len(b), t.off+done, n, err)
		}
		done += int64(len(b))
		if qf, ok := t.typ.quantFormat(); ok && qf.GGUFBlockLen() != q8Block {
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
		o = o[dequantize(o, b, t.typ):]
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
func dequantize(dst []float32, src []byte, typ ggmlType) int {
	switch typ {
	case ggmlF32:
		n := len(src) / 4
		for i := range dst[:n] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return n
	case ggmlF16:
		n := len(src) / 2
		for i := range dst[:n] {
			dst[i] = quant.FP16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return n
	case ggmlBF16:
		n := len(src) / 2
		for i := range dst[:n] {
			dst[i] = gemm.BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return n
	case ggmlQ8_0:
		// As ggml-quants.c dequantize_row_q8_0: y = d·q in float32.
		nb := len(src) / (2 + q8Block)
		for b := range nb {
			blk := src[b*(2+q8Block) : (b+1)*(2+q8Block)]
			d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
			y := dst[b*q8Block : (b+1)*q8Block]
			for j, q := range blk[2:] {
				y[j] = d * float32(int8(q))
			}
		}
		return nb * q8Block
	case ggmlQ4_0:
		// As ggml-quants.c dequantize_row_q4_0: element j = d·((qs[j] &
		// 0xF) − 8), element j+16 = d·((qs[j] >> 4) − 8).
		const bb = 2 + q8Block/2
		nb := len(src) / bb
		for b := range nb {
			blk := src[b*bb : (b+1)*bb]
			d := quant.FP16ToFloat32(binary.LittleEndian.Uint16(blk))
			y := dst[b*q8Block : (b+1)*q8Block]
			for j, q := range blk[2:] {
				y[j] = d * float32(int(q&0x0f)-8)
				y[j+q8Block/2] = d * float32(int(q>>4)-8)
			}
		}
		return nb * q8Block
	}
	panic("engine: dequantize: unsupported type " + typ.String())
}
