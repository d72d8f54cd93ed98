package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// encodeLlama2C writes w in the llama2.c format (freq_cis zero-filled).
func encodeLlama2C(w *Weights) []byte {
	c := w.Config
	var buf bytes.Buffer
	vocab := int32(c.Vocab)
	if !c.TiedEmbeddings {
		vocab = -vocab
	}
	for _, v := range []int32{int32(c.Dim), int32(c.Intermediate), int32(c.Layers), int32(c.Heads), int32(c.KVHeads), vocab, int32(c.MaxSeq)} {
		binary.Write(&buf, binary.LittleEndian, v)
	}
	put := func(fs []float32) { binary.Write(&buf, binary.LittleEndian, fs) }
	put(w.Embed)
	for _, get := range []func(l *LayerWeights) []float32{
		func(l *LayerWeights) []float32 { return l.AttnNorm }, func(l *LayerWeights) []float32 { return l.Wq },
		func(l *LayerWeights) []float32 { return l.Wk }, func(l *LayerWeights) []float32 { return l.Wv },
		func(l *LayerWeights) []float32 { return l.Wo }, func(l *LayerWeights) []float32 { return l.FFNNorm },
		func(l *LayerWeights) []float32 { return l.Gate }, func(l *LayerWeights) []float32 { return l.Down },
		func(l *LayerWeights) []float32 { return l.Up }} {
		for i := range w.Layers {
			put(get(&w.Layers[i]))
		}
	}
	put(w.FinalNorm)
	put(make([]float32, c.MaxSeq*c.HeadDim)) // freq_cis_real and _imag
	if !c.TiedEmbeddings {
		put(w.LMHead)
	}
	return buf.Bytes()
}

func storiesBytes(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLlama2CRoundTrip: encoding the loaded weights reproduces the file
// except for freq_cis (zeroed by the encoder).
func TestLlama2CRoundTrip(t *testing.T) {
	data := storiesBytes(t)
	enc := encodeLlama2C(loadStories(t))
	if len(enc) != len(data) {
		t.Fatalf("encoded %d bytes, file has %d", len(enc), len(data))
	}
	c := loadStories(t).Config
	fc := 4 * c.MaxSeq * c.HeadDim
	if !bytes.Equal(enc[:len(enc)-fc], data[:len(data)-fc]) {
		t.Error("re-encoded weights differ from the file")
	}
}

func TestLlama2CErrors(t *testing.T) {
	data := storiesBytes(t)
	c := loadStories(t).Config
	d, kv, L := c.Dim, c.KVDim(), c.Layers
	// Offset of wk layer 3: header, embedding, rms_att, wq, 3 wk layers.
	wk3 := 28 + 4*(c.Vocab*d+L*d+L*d*d+3*kv*d)
	header := func(field int, v int32) []byte {
		b := bytes.Clone(data)
		binary.LittleEndian.PutUint32(b[4*field:], uint32(v))
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "engine: stories260K.bin: header: want 28 bytes, file ends after 0"},
		{"short header", data[:10], "header: want 28 bytes, file ends after 10"},
		{"truncated wk", data[:wk3+4*100+2], "engine: stories260K.bin: tensor wk layer 3: want 2048 floats, file ends after 100"},
		{"truncated embedding", data[:28+4*7], "tensor token_embedding: want 32768 floats, file ends after 7"},
		{"truncated rms_final", data[:len(data)-4*c.MaxSeq*c.HeadDim-4], "tensor rms_final: want 64 floats, file ends after 63"},
		{"truncated freq_cis", data[:len(data)-4], "tensor freq_cis_imag: want 2048 floats, file ends after 2047"},
		{"unshared without wcls", header(5, -512), "tensor wcls: want 32768 floats, file ends after 0"},
		{"trailing bytes", append(bytes.Clone(data), 0, 0, 0, 0), "4 bytes after the last tensor"},
		{"dim 0", header(0, 0), "header dim = 0: must be between 1 and"},
		{"negative hidden", header(1, -5), "header hidden_dim = -5"},
		{"layers", header(2, 100000), "header n_layers = 100000: must be at most 1024"},
		{"heads", header(3, 7), "header dim 64: not a multiple of n_heads 7"},
		{"kv heads", header(4, 3), "header n_heads 8: not a multiple of n_kv_heads 3"},
		{"odd head size", header(3, 64), "head size dim/n_heads = 1: must be even"},
		{"vocab", header(5, math.MinInt32), "header vocab_size = -2147483648"},
		{"seq", header(6, 0), "header seq_len = 0"},
		{"huge", header(0, 1<<20), "tensor token_embedding: want 536870912 floats"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ReadLlama2C(bytes.NewReader(tc.data), "stories260K.bin")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadLlama2C = %v, %v; want an error containing %q", w != nil, err, tc.want)
			}
		})
	}
	if _, err := LoadLlama2C("testdata/nonexistent.bin"); err == nil || !strings.Contains(err.Error(), "nonexistent.bin") {
		t.Errorf("LoadLlama2C(nonexistent) = %v", err)
	}
}

// TestLlama2CUnshared: a checkpoint with an unshared classifier equal to
// the embedding gives the same logits as the shared one.
func TestLlama2CUnshared(t *testing.T) {
	w := *loadStories(t)
	w.Config.TiedEmbeddings = false
	w.LMHead = w.Embed
	got, err := ReadLlama2C(bytes.NewReader(encodeLlama2C(&w)), "unshared.bin")
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.TiedEmbeddings || len(got.LMHead) != len(got.Embed) {
		t.Fatalf("unshared: tied %v, %d classifier floats", got.Config.TiedEmbeddings, len(got.LMHead))
	}
	_, s1 := newStories(t, Options{})
	m2, err := New(got, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := m2.NewSession(0)
	toks := loadReference(t).input[:20]
	a, _ := s1.PrefillAll(toks)
	b, _ := s2.PrefillAll(toks)
	if d, _ := maxAbsDiff(a, b); d != 0 {
		t.Errorf("unshared classifier: logits differ by %g", d)
	}
}

// tinyLlama2C is a small random checkpoint for fuzz seeds.
func tinyLlama2C(tied bool) []byte {
	c := Config{Name: "tiny", Dim: 8, Intermediate: 12, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 4, Vocab: 16, MaxSeq: 8,
		RoPETheta: 10000, RMSEps: 1e-5, TiedEmbeddings: tied}
	return encodeLlama2C(randomWeights(c, rand.New(rand.NewPCG(1, 2))))
}

// FuzzLoadLlama2C: no input makes the reader (or a forward pass on what it
// accepts) panic.
func FuzzLoadLlama2C(f *testing.F) {
	f.Add(storiesBytes(f))
	f.Add(tinyLlama2C(true))
	f.Add(tinyLlama2C(false))
	f.Add(tinyLlama2C(true)[:100])
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ReadLlama2C(bytes.NewReader(data), "fuzz.bin")
		if err != nil {
			if w != nil {
				t.Fatal("weights with an error")
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("accepted weights fail Validate: %v", err)
		}
		m, err := New(w, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewSession(min(m.Config.MaxSeq, 4))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prefill([]int{0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decode(m.Config.Vocab - 1); err != nil && s.Pos() < s.b.maxSeq {
			t.Fatal(err)
		}
	})
}
