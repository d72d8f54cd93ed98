package engine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/cpubench/bench/internal/regfile"
	"github.com/cpubench/bench/kernels"
)

// llama2.c checkpoint ("legacy" version 0, as written by llama2.c's
// export.py legacy_export): 7 little-endian int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative
// vocab_size means an unshared classifier follows), then float32 tensors,
// each layer-major: token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1,
// w2, w3, rms_final, freq_cis_real, freq_cis_imag (skipped), and wcls when
// unshared. See testdata/stories260K/SOURCE.md.

// maxLlama2CDim bounds every header value, so that products of them fit an
// int and a corrupt header cannot ask for absurd sizes; maxLlama2CLayers
// bounds n_layers, whose per-layer structs are allocated up front.
const (
	maxLlama2CDim    = 1 << 20
	maxLlama2CLayers = 1024
)

// LoadLlama2C reads the llama2.c checkpoint at path (see ReadLlama2C).
func LoadLlama2C(path string) (*Weights, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	defer f.Close()
	return ReadLlama2C(f, filepath.Base(path))
}

// ReadLlama2C reads a llama2.c checkpoint from r; name (the file's name) is
// used in errors and as the model name. The config takes llama2.c's fixed
// numerics: RoPE theta 10000 on adjacent pairs, RMSNorm eps 1e-5. Errors
// name the header field or tensor and what was expected, and trailing
// bytes after the last tensor are an error. Memory grows with the data
// actually read, never with what a corrupt header claims.
func ReadLlama2C(r io.Reader, name string) (*Weights, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var hdr [7]int32
	var raw [28]byte
	if n, err := io.ReadFull(br, raw[:]); err != nil {
		return nil, fmt.Errorf("engine: %s: header: want 28 bytes, file ends after %d", name, n)
	}
	for i := range hdr {
		hdr[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	fields := [7]string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	shared := hdr[5] > 0
	if hdr[5] < 0 && hdr[5] != math.MinInt32 {
		hdr[5] = -hdr[5]
	}
	for i, v := range hdr {
		if v < 1 || v > maxLlama2CDim {
			return nil, fmt.Errorf("engine: %s: header %s = %d: must be between 1 and %d", name, fields[i], v, maxLlama2CDim)
		}
	}
	if hdr[2] > maxLlama2CLayers {
		return nil, fmt.Errorf("engine: %s: header n_layers = %d: must be at most %d", name, hdr[2], maxLlama2CLayers)
	}
	dim, hidden, layers, heads, kvHeads, vocab, seq := int(hdr[0]), int(hdr[1]), int(hdr[2]), int(hdr[3]), int(hdr[4]), int(hdr[5]), int(hdr[6])
	switch {
	case dim%heads != 0:
		return nil, fmt.Errorf("engine: %s: header dim %d: not a multiple of n_heads %d", name, dim, heads)
	case heads%kvHeads != 0:
		return nil, fmt.Errorf("engine: %s: header n_heads %d: not a multiple of n_kv_heads %d", name, heads, kvHeads)
	case (dim/heads)%2 != 0:
		return nil, fmt.Errorf("engine: %s: header head size dim/n_heads = %d: must be even", name, dim/heads)
	}
	c := Config{
		Name: name, Dim: dim, Intermediate: hidden, Layers: layers, Heads: heads, KVHeads: kvHeads,
		HeadDim: dim / heads, Vocab: vocab, MaxSeq: seq,
		RoPETheta: 10000, RoPELayout: kernels.RoPEAdjacent, RMSEps: 1e-5, TiedEmbeddings: shared,
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w := &Weights{Config: c, Layers: make([]LayerWeights, layers)}
	rd := &floatReader{r: br, name: name}
	kv := c.KVDim()
	rd.read(&w.Embed, "token_embedding", -1, vocab*dim)
	// Each layer-major array holds one tensor per layer, back to back.
	each := func(name string, n int, dst func(l *LayerWeights) *[]float32) {
		for i := range w.Layers {
			rd.read(dst(&w.Layers[i]), name, i, n)
		}
	}
	each("rms_att", dim, func(l *LayerWeights) *[]float32 { return &l.AttnNorm })
	each("wq", dim*dim, func(l *LayerWeights) *[]float32 { return &l.Wq })
	each("wk", kv*dim, func(l *LayerWeights) *[]float32 { return &l.Wk })
	each("wv", kv*dim, func(l *LayerWeights) *[]float32 { return &l.Wv })
	each("wo", dim*dim, func(l *LayerWeights) *[]float32 { return &l.Wo })
	each("rms_ffn", dim, func(l *LayerWeights) *[]float32 { return &l.FFNNorm })
	each("w1", hidden*dim, func(l *LayerWeights) *[]float32 { return &l.Gate })
	each("w2", dim*hidden, func(l *LayerWeights) *[]float32 { return &l.Down })
	each("w3", hidden*dim, func(l *LayerWeights) *[]float32 { return &l.Up })
	rd.read(&w.FinalNorm, "rms_final", -1, dim)
	rd.skip("freq_cis_real", seq*c.HeadDim/2)
	rd.skip("freq_cis_imag", seq*c.HeadDim/2)
	if !shared {
		rd.read(&w.LMHead, "wcls", -1, vocab*dim)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		return nil, fmt.Errorf("engine: %s: %d bytes after the last tensor (%s): header does not describe this file", name, n, map[bool]string{true: "rms_final and freq_cis", false: "wcls"}[shared])
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// floatReader reads little-endian float32 tensors, keeping the first error.
type floatReader struct {
	r    io.Reader
	name string
	err  error
	buf  []byte
}

// chunkFloats bounds each read, so allocation follows the bytes present.
const chunkFloats = 1 << 16

func (fr *floatReader) fail(what string, layer, want, got int) {
	t := tensor{name: what, layer: layer}
	fr.err = fmt.Errorf("engine: %s: %s: want %d floats, file ends after %d", fr.name, t, want, got)
}

func (fr *floatReader) read(dst *[]float32, what string, layer, n int) {
	if fr.err != nil {
		return
	}
	out := make([]float32, 0, min(n, chunkFloats))
	for len(out) < n {
		k := min(n-len(out), chunkFloats)
		if cap(fr.buf) < 4*k {
			fr.buf = make([]byte, 4*chunkFloats)
		}
		b := fr.buf[:4*k]
		got, err := io.ReadFull(fr.r, b)
		for i := 0; i+4 <= got; i += 4 {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				fr.fail(what, layer, n, len(out))
			} else {
				fr.err = fmt.Errorf("engine: %s: %s: %w", fr.name, tensor{name: what, layer: layer}, err)
			}
			return
		}
	}
	*dst = out
}

func (fr *floatReader) skip(what string, n int) {
	if fr.err != nil {
		return
	}
	got, err := io.CopyN(io.Discard, fr.r, 4*int64(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			fr.fail(what, -1, n, int(got/4))
		} else {
			fr.err = fmt.Errorf("engine: %s: tensor %s: %w", fr.name, what, err)
		}
	}
}
