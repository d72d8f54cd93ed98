package engine

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/memlimit"
)

// paramsByLoop is Params as it was counted before ParamCount: layer by
// layer, in int64.
func paramsByLoop(c Config) int64 {
	d, q, kv := int64(c.Dim), int64(c.QDim()), int64(c.KVDim())
	n := int64(c.Vocab)*d + d
	if !c.TiedEmbeddings {
		n += int64(c.Vocab) * d
	}
	for i := range c.Layers {
		n += d*q + 2*d*kv + q*d + 2*d
		if c.QKNorm {
			n += 2 * int64(c.HeadDim)
		}
		if c.IsMoE(i) {
			n += int64(c.Experts)*d + int64(c.Experts)*3*d*int64(c.MoEIntermediate)
		} else {
			n += 3 * d * int64(c.Intermediate)
		}
	}
	return n
}

// TestParamCountClosedForm: the closed-form counts (no loop over the
// layers) equal the layer-by-layer ones, dense and MoE.
func TestParamCountClosedForm(t *testing.T) {
	base := Config{Name: "m", Dim: 64, Intermediate: 96, Layers: 7, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 100, MaxSeq: 8,
		RoPETheta: 1e4, RMSEps: 1e-6, QKNorm: true}
	cases := []func(*Config){
		func(c *Config) {},
		func(c *Config) { c.TiedEmbeddings = true },
		func(c *Config) { c.Experts, c.TopK, c.MoEIntermediate, c.SparseStep = 8, 2, 32, 1 },
		func(c *Config) { c.Experts, c.TopK, c.MoEIntermediate, c.SparseStep = 8, 2, 32, 2 },
		func(c *Config) { c.Experts, c.TopK, c.MoEIntermediate, c.SparseStep = 8, 2, 32, 0 },
		func(c *Config) {
			c.Experts, c.TopK, c.MoEIntermediate, c.SparseStep, c.DenseLayers = 8, 2, 32, 1, []int{0, 3, 3, 9, -1}
		},
		func(c *Config) {
			c.Experts, c.TopK, c.MoEIntermediate, c.SparseStep, c.DenseLayers = 8, 2, 32, 3, []int{1, 2, 5}
		},
	}
	for i, edit := range cases {
		c := base
		edit(&c)
		loop := 0
		for l := range c.Layers {
			if c.IsMoE(l) {
				loop++
			}
		}
		if got := c.MoELayers(); got != loop {
			t.Errorf("case %d: MoELayers %d, counted %d", i, got, loop)
		}
		if got, want := c.Params(), paramsByLoop(c); got != want {
			t.Errorf("case %d: Params %d, counted %d", i, got, want)
		}
	}
}

// TestValidateOverflow: a config whose sizes overflow is refused by
// Validate, and counting it takes no loop over its layers.
func TestValidateOverflow(t *testing.T) {
	c := Config{Name: "huge", Dim: 1 << 20, Intermediate: 1 << 22, Layers: 1 << 40, Heads: 1 << 10, KVHeads: 1 << 10, HeadDim: 1 << 10,
		Vocab: 1 << 20, MaxSeq: 8, RoPETheta: 1e4, RMSEps: 1e-6}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "more than a 64-bit byte count of their fp32 copies holds") {
		t.Errorf("Validate: %v, want an overflow error", err)
	}
	if p := c.Params(); p != math.MaxInt64 {
		t.Errorf("Params of an overflowing config = %d, want MaxInt64", p)
	}
}

// TestNewBatchMemoryLimit: a batch whose KV caches do not fit is refused
// before anything is allocated for it (a billion slots would need 56 GB
// for the slot table alone).
func TestNewBatchMemoryLimit(t *testing.T) {
	m, _ := newStories(t, Options{Threads: 1})
	defer m.Close()
	defer memlimit.Fake(memlimit.Limit{Bytes: 1 << 30, Known: true, Source: "a test's 1 GiB"})()
	_, err := m.NewBatch(1000000000, 0)
	var e *memlimit.Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "1000000000 slots' KV caches of 512 positions need") ||
		!strings.Contains(err.Error(), "more than the 966 MB this process may use") {
		t.Fatalf("NewBatch(1e9): %v, want a *memlimit.Error", err)
	}
	if b, err := m.NewBatch(4, 0); err != nil || b.Slots() != 4 {
		t.Errorf("NewBatch(4) under 1 GiB: %v", err)
	}
	c := m.Config
	if got, want := c.KVBytes(3, 10).String(), memlimit.Mul(3*c.Layers*2*10*c.KVDim()*4).String(); got != want {
		t.Errorf("KVBytes(3, 10) = %s, want %s", got, want)
	}
	// The check counts a slot's caches as they are allocated, panels'
	// padding included, packed and not.
	for _, perCall := range []bool{false, true} {
		m.opts.KVPackPerCall = perCall
		b, err := m.NewBatch(1, 37)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Prefill(0, []int{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		floats := 0
		for l := range b.slots[0].kc {
			floats += len(b.slots[0].kc[l]) + len(b.slots[0].vc[l])
		}
		want, _ := kvSlotBytes(c, m.Backend, 37, !perCall, false).Bytes()
		if uint64(4*floats) != want {
			t.Errorf("KVPackPerCall %v: slot caches %d bytes, kvSlotBytes %d", perCall, 4*floats, want)
		}
		if got, _ := c.KVBytes(1, 37).Bytes(); got > want {
			t.Errorf("KVBytes %d above the padded %d", got, want)
		}
	}
}

// recordingReader is an io.ReaderAt that records the byte ranges read.
type recordingReader struct {
	r      *bytes.Reader
	ranges [][2]int64
}

func (r *recordingReader) ReadAt(p []byte, off int64) (int, error) {
	r.ranges = append(r.ranges, [2]int64{off, off + int64(len(p))})
	return r.r.ReadAt(p, off)
}

// TestGGUFLayersReadOnly: --layers 1 reads the data of layer 0's tensors,
// the embeddings, the final norm and the head, and not one byte of the
// later layers' tensors; the weights keep one layer; the resident
// estimate the memory check uses shrinks with it.
func TestGGUFLayersReadOnly(t *testing.T) {
	data, err := os.ReadFile(storiesGGUF)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseGGUF(bytes.NewReader(data), int64(len(data)), "stories")
	if err != nil {
		t.Fatal(err)
	}
	rr := &recordingReader{r: bytes.NewReader(data)}
	w, err := ReadGGUFLayers(rr, int64(len(data)), "stories", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Layers) != 1 || w.Config.Layers != 1 {
		t.Fatalf("%d layers kept (config %d), want 1", len(w.Layers), w.Config.Layers)
	}
	// Reads that start before the data section are the header's (its
	// buffered reader may read ahead into the data; 64 KiB at most).
	data0 := f.Order[0].Offset
	for _, tn := range f.Order {
		data0 = min(data0, tn.Offset)
	}
	readBytes := map[string]int64{}
	for _, tn := range f.Order {
		for _, rg := range rr.ranges {
			if rg[0] < data0 {
				continue
			}
			lo, hi := max(rg[0], tn.Offset), min(rg[1], tn.Offset+tn.Size)
			if lo < hi {
				readBytes[tn.Name] += hi - lo
			}
		}
	}
	for _, tn := range f.Order {
		i, inLayer := ggufLayer(tn.Name)
		switch got := readBytes[tn.Name]; {
		case inLayer && i >= 1 && got > 0:
			t.Errorf("%s (layer %d): %d bytes read with --layers 1", tn.Name, i, got)
		case (!inLayer || i == 0) && got != tn.Size:
			t.Errorf("%s: %d of its %d bytes read, want all", tn.Name, got, tn.Size)
		}
	}
	h, err := LoadGGUFHeader(storiesGGUF)
	if err != nil {
		t.Fatal(err)
	}
	if one, all := h.ResidentBytes(1), h.ResidentBytes(0); !(one > 0 && one < all) {
		t.Errorf("ResidentBytes(1) = %d, ResidentBytes(0) = %d: want 0 < one layer < all", one, all)
	}
}

// TestCloseLetsWeightsGo: a closed Model holds no weights (a deferred
// Close no longer keeps them in memory), and its batches say it is
// closed instead of failing on them.
func TestCloseLetsWeightsGo(t *testing.T) {
	m, _ := newStories(t, Options{Threads: 1})
	b, err := m.NewBatch(1, 8)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if m.embed != nil || m.layers != nil || m.lmHead != nil || m.finalNorm != nil {
		t.Error("weights still referenced after Close")
	}
	if _, err := b.Prefill(0, []int{1, 2}); err == nil || !strings.Contains(err.Error(), "is closed") {
		t.Errorf("Prefill after Close: %v, want an error saying the model is closed", err)
	}
	m.Close() // idempotent
}
