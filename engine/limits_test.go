package engine

import (
	"errors"
	"math"
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
			n += int64(c.Experts)*d + int64(c.Experts)*3*d*int64(c.MoEHidden)
		} else {
			n += 3 * d * int64(c.Hidden)
		}
	}
	return n
}

// TestParamCountClosedForm: the closed-form counts (no loop over the
// layers) equal the layer-by-layer ones, dense and MoE.
func TestParamCountClosedForm(t *testing.T) {
	base := Config{Name: "m", Dim: 64, Hidden: 96, Layers: 7, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 100, MaxSeq: 8,
		RoPETheta: 1e4, RMSEps: 1e-6, QKNorm: true}
	cases := []func(*Config){
		func(c *Config) {},
		func(c *Config) { c.TiedEmbeddings = true },
		func(c *Config) { c.Experts, c.TopK, c.MoEHidden, c.SparseStep = 8, 2, 32, 1 },
		func(c *Config) { c.Experts, c.TopK, c.MoEHidden, c.SparseStep = 8, 2, 32, 2 },
		func(c *Config) { c.Experts, c.TopK, c.MoEHidden, c.SparseStep = 8, 2, 32, 0 },
		func(c *Config) {
			c.Experts, c.TopK, c.MoEHidden, c.SparseStep, c.DenseLayers = 8, 2, 32, 1, []int{0, 3, 3, 9, -1}
		},
		func(c *Config) {
			c.Experts, c.TopK, c.MoEHidden, c.SparseStep, c.DenseLayers = 8, 2, 32, 3, []int{1, 2, 5}
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
	c := Config{Name: "huge", Dim: 1 << 20, Hidden: 1 << 22, Layers: 1 << 40, Heads: 1 << 10, KVHeads: 1 << 10, HeadDim: 1 << 10,
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
}
