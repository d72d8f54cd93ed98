package engine

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/models"
)

// Config is the shape and numerics of a Llama-family decoder-only model,
// independent of the file format it was read from.
type Config struct {
	Name         string
	Dim          int // hidden_size: the model (residual stream) width (llama2.c dim)
	Intermediate int // intermediate_size of the SiLU-gated FFN (llama2.c hidden_dim)
	Layers       int
	Heads        int // query heads
	KVHeads      int // key/value heads (grouped-query attention: Heads % KVHeads == 0)
	HeadDim      int
	Vocab        int
	MaxSeq       int // positions the model supports (llama2.c seq_len, HF max_position_embeddings)

	RoPETheta   float64
	RoPELayout  kernels.RoPELayout   // RoPEAdjacent for llama2.c, RoPEHalf for HF Llama/Qwen
	RoPEScaling *kernels.RoPEScaling // Llama 3 frequency scaling; nil for none
	RMSEps      float32

	// SlidingWindow is the attention's sliding window (Mistral's
	// sliding_window; Qwen's when use_sliding_window is true): the token at
	// position p attends to positions max(0, p−SlidingWindow+1)..p. 0 is
	// full causal attention. It applies to every layer.
	SlidingWindow int

	TiedEmbeddings bool // the LM head is the token embedding table
	QKNorm         bool // Qwen3: per-head RMSNorm on q and k before RoPE

	// Mixture of experts (Qwen3-MoE); Experts = 0 is a dense model.
	Experts         int  // num_experts
	TopK            int  // num_experts_per_tok
	MoEIntermediate int  // moe_intermediate_size: each expert's SiLU-gated FFN width
	NormTopK        bool // norm_topk_prob: renormalize the top-k routing weights to sum 1
	// SparseStep and DenseLayers say which layers are MoE, as transformers'
	// Qwen3-MoE: layer i is MoE iff i ∉ DenseLayers and (i+1) % SparseStep
	// == 0 (SparseStep 0 means 1).
	SparseStep  int   // decoder_sparse_step
	DenseLayers []int // mlp_only_layers
}

// Params counts the model's weights (every expert included): embedding,
// LM head when untied, attention, norms and FFNs; math.MaxInt64 when the
// count overflows (Validate refuses such a config).
func (c Config) Params() int64 {
	n, ok := c.ParamCount().Int()
	if !ok || int64(n) < 0 {
		return math.MaxInt64
	}
	return int64(n)
}

// ParamCount is Params as an overflow-checked count, in closed form (no
// loop over the layers), for configs whose sizes come from a file.
func (c Config) ParamCount() memlimit.Size {
	d, hd := c.Dim, c.HeadDim
	n := memlimit.Mul(c.Vocab, d).Plus(memlimit.Mul(d)) // embedding, final norm
	if !c.TiedEmbeddings {
		n = n.Plus(memlimit.Mul(c.Vocab, d))
	}
	// Per layer: q and o (2·d·heads·head dim), k and v (2·d·kv heads·head
	// dim), two norms, QK-norm.
	layer := memlimit.Mul(2, d, c.Heads, hd).Plus(memlimit.Mul(2, d, c.KVHeads, hd)).Plus(memlimit.Mul(2, d))
	if c.QKNorm {
		layer = layer.Plus(memlimit.Mul(2, hd))
	}
	moe := c.MoELayers()
	n = n.Plus(layer.Times(c.Layers))
	n = n.Plus(memlimit.Mul(c.Layers-moe, 3, d, c.Intermediate))
	if moe > 0 {
		n = n.Plus(memlimit.Mul(c.Experts, d).Plus(memlimit.Mul(c.Experts, 3, d, c.MoEIntermediate)).Times(moe))
	}
	return n
}

// IsMoE reports whether decoder layer i has an MoE FFN (see SparseStep).
func (c Config) IsMoE(i int) bool {
	if c.Experts == 0 {
		return false
	}
	for _, d := range c.DenseLayers {
		if d == i {
			return false
		}
	}
	return (i+1)%max(c.SparseStep, 1) == 0
}

// MoELayers counts the MoE layers among the Layers decoder layers: the
// layers i with (i+1) % SparseStep == 0, less those of DenseLayers (in
// closed form: no loop over the layers).
func (c Config) MoELayers() int {
	if c.Experts == 0 || c.Layers <= 0 {
		return 0
	}
	step := max(c.SparseStep, 1)
	n := c.Layers / step
	seen := map[int]bool{}
	for _, d := range c.DenseLayers {
		if d >= 0 && d < c.Layers && (d+1)%step == 0 && !seen[d] {
			seen[d] = true
			n--
		}
	}
	return n
}

// QDim is Heads·HeadDim, the width of q.
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is KVHeads·HeadDim, the width of k and v.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// KVBytes is the memory of the values in the KV caches of slots sequences
// of positions positions each: Layers · 2 (K and V) · positions · KVDim
// float32 values per slot, overflow-checked. A Batch's caches are laid out
// in the attention backend's panels, which pad them (NewBatch checks that
// size); this is the size before padding, a check before a Model exists.
func (c Config) KVBytes(slots, positions int) memlimit.Size {
	return memlimit.Mul(slots, c.Layers, 2, positions, c.KVHeads, c.HeadDim, 4)
}

// Validate rejects a shape the engine cannot run, naming the field; a
// shape whose parameter count overflows (ParamCount) is refused.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"dim", c.Dim}, {"hidden", c.Intermediate}, {"layers", c.Layers}, {"heads", c.Heads},
		{"kv heads", c.KVHeads}, {"head dim", c.HeadDim}, {"vocab", c.Vocab}, {"max seq", c.MaxSeq}} {
		if f.name == "hidden" && f.v == 0 && c.Experts > 0 && c.MoELayers() == c.Layers {
			continue // every layer is MoE: no dense FFN width needed
		}
		if f.v < 1 {
			return fmt.Errorf("engine: model %s: %s %d: must be ≥ 1", c.Name, f.name, f.v)
		}
	}
	switch {
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("engine: model %s: heads %d: not a multiple of kv heads %d", c.Name, c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("engine: model %s: head dim %d: must be even (RoPE rotates pairs)", c.Name, c.HeadDim)
	case !(c.RoPETheta > 1) || math.IsInf(c.RoPETheta, 0):
		return fmt.Errorf("engine: model %s: rope theta %v: must be finite and greater than 1", c.Name, c.RoPETheta)
	case c.RoPELayout != kernels.RoPEAdjacent && c.RoPELayout != kernels.RoPEHalf:
		return fmt.Errorf("engine: model %s: rope layout %v: want adjacent or half", c.Name, c.RoPELayout)
	case c.SlidingWindow < 0:
		return fmt.Errorf("engine: model %s: sliding window %d: must be ≥ 0 (0: none)", c.Name, c.SlidingWindow)
	case !(c.RMSEps > 0) || math.IsInf(float64(c.RMSEps), 0):
		return fmt.Errorf("engine: model %s: rms eps %v: must be finite and positive", c.Name, c.RMSEps)
	}
	if c.Experts < 0 || c.Experts > 0 && (c.TopK < 1 || c.TopK > c.Experts || c.MoEIntermediate < 1 || c.SparseStep < 0) {
		return fmt.Errorf("engine: model %s: MoE needs experts ≥ top-k ≥ 1, moe hidden ≥ 1 and sparse step ≥ 0 (have %d, %d, %d, %d)",
			c.Name, c.Experts, c.TopK, c.MoEIntermediate, c.SparseStep)
	}
	if _, ok := c.ParamCount().Times(8).Bytes(); !ok {
		return fmt.Errorf("engine: model %s: dim %d, hidden %d, %d layers, %d heads of %d, vocab %d: %s parameters, more than a 64-bit byte count of their fp32 copies holds",
			c.Name, c.Dim, c.Intermediate, c.Layers, c.Heads, c.HeadDim, c.Vocab, c.ParamCount())
	}
	if s := c.RoPEScaling; s != nil {
		if _, err := kernels.NewRoPETable(c.HeadDim, c.RoPETheta, 1, s); err != nil {
			return fmt.Errorf("engine: model %s: %w", c.Name, err)
		}
	}
	return nil
}

// HFExtras are the config.json keys the engine needs beyond the shape that
// models.Config carries.
type HFExtras struct {
	RoPETheta   float64              // rope_theta
	RoPEScaling *kernels.RoPEScaling // rope_scaling with rope_type "llama3"; nil for null
	RMSEps      float64              // rms_norm_eps
	MaxSeq      int                  // max_position_embeddings
	NormTopK    bool                 // norm_topk_prob (MoE)
	// SlidingWindow is sliding_window where the config uses it (null or
	// use_sliding_window false: 0, none).
	SlidingWindow int
}

// hfExtras is the JSON spelling of HFExtras.
type hfExtras struct {
	RoPETheta   *float64 `json:"rope_theta"`
	RMSEps      *float64 `json:"rms_norm_eps"`
	MaxSeq      *int     `json:"max_position_embeddings"`
	NormTopK    *bool    `json:"norm_topk_prob"`
	Window      *int     `json:"sliding_window"`
	UseWindow   *bool    `json:"use_sliding_window"`
	WindowFrom  *int     `json:"max_window_layers"`
	Layers      *int     `json:"num_hidden_layers"`
	RoPEScaling *struct {
		RopeType                      string  `json:"rope_type"`
		Type                          string  `json:"type"`
		Factor                        float64 `json:"factor"`
		LowFreqFactor                 float64 `json:"low_freq_factor"`
		HighFreqFactor                float64 `json:"high_freq_factor"`
		OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
	} `json:"rope_scaling"`
}

// MissingKeyError is FromHF's error for a config.json that lacks a key it
// needs, or has it null.
type MissingKeyError struct {
	Config string // the config's name as given to FromHF
	Key    string // "rope_theta", "rms_norm_eps" or "max_position_embeddings"
}

func (e *MissingKeyError) Error() string {
	msg := fmt.Sprintf("engine: model config %s: missing or null key %q", e.Config, e.Key)
	if e.Key == "max_position_embeddings" {
		msg += " (use FromModel with HFExtras.MaxSeq)"
	}
	return msg
}

// FromHF builds a Config from the bytes of a HuggingFace config.json (name
// is used in messages): the shape through models.Parse, sliding_window
// (when not null and use_sliding_window is absent or true; Qwen's
// max_window_layers, the first windowed layer, must be 0 or at least the
// layer count: a window on some layers only is refused), and rope_theta,
// rope_scaling, rms_norm_eps and max_position_embeddings, each required
// (rope_scaling may be null; a null max_position_embeddings, as in configs
// whose variants differ, needs FromModel with an explicit MaxSeq). A
// missing or null one of these three is a *MissingKeyError.
// HF Llama and Qwen rotate half-split pairs (RoPEHalf).
func FromHF(data []byte, name string) (Config, error) {
	mc, err := models.Parse(data, name)
	if err != nil {
		return Config{}, fmt.Errorf("engine: %w", err)
	}
	var x hfExtras
	if err := json.Unmarshal(data, &x); err != nil {
		return Config{}, fmt.Errorf("engine: model config %s: %w", name, err)
	}
	var ex HFExtras
	switch {
	case x.RoPETheta == nil:
		return Config{}, &MissingKeyError{Config: name, Key: "rope_theta"}
	case x.RMSEps == nil:
		return Config{}, &MissingKeyError{Config: name, Key: "rms_norm_eps"}
	case x.MaxSeq == nil:
		return Config{}, &MissingKeyError{Config: name, Key: "max_position_embeddings"}
	}
	ex.RoPETheta, ex.RMSEps, ex.MaxSeq = *x.RoPETheta, *x.RMSEps, *x.MaxSeq
	if x.NormTopK != nil {
		ex.NormTopK = *x.NormTopK
	}
	// Qwen windows layers max_window_layers.. (transformers' Qwen2/3
	// attention): from 0 every layer, from the layer count none.
	from := 0
	if x.UseWindow != nil && x.WindowFrom != nil {
		from = *x.WindowFrom
	}
	if x.Window != nil && (x.UseWindow == nil || *x.UseWindow) && (x.Layers == nil || from < *x.Layers) {
		if from > 0 {
			return Config{}, fmt.Errorf("engine: model config %s: sliding_window %d from layer max_window_layers %d: a window on some layers only is not supported", name, *x.Window, from)
		}
		if *x.Window < 1 {
			return Config{}, fmt.Errorf("engine: model config %s: sliding_window %d: must be ≥ 1 (or null)", name, *x.Window)
		}
		ex.SlidingWindow = *x.Window
	}
	if s := x.RoPEScaling; s != nil {
		typ := s.RopeType
		if typ == "" {
			typ = s.Type
		}
		if typ != "llama3" {
			return Config{}, fmt.Errorf("engine: model config %s: rope_scaling type %q: only \"llama3\" is supported", name, typ)
		}
		ex.RoPEScaling = &kernels.RoPEScaling{Factor: s.Factor, LowFreqFactor: s.LowFreqFactor,
			HighFreqFactor: s.HighFreqFactor, OriginalMaxPositionEmbeddings: s.OriginalMaxPositionEmbeddings}
	}
	return FromModel(mc, ex)
}

// FromModel builds a Config from a models config (HF keys) and the keys
// models.Config does not carry. Qwen3-MoE configs give an MoE Config
// (norm_topk_prob from ex.NormTopK).
func FromModel(mc *models.Config, ex HFExtras) (Config, error) {
	a, err := mc.Arch()
	if err != nil {
		return Config{}, fmt.Errorf("engine: %w", err)
	}
	c := Config{
		Name: a.Name, Dim: a.Dim, Intermediate: a.Intermediate, Layers: a.Layers, Heads: a.Heads,
		KVHeads: a.KVHeads, HeadDim: a.HeadDim, Vocab: a.Vocab, MaxSeq: ex.MaxSeq,
		RoPETheta: ex.RoPETheta, RoPELayout: kernels.RoPEHalf, RoPEScaling: ex.RoPEScaling,
		RMSEps: float32(ex.RMSEps), TiedEmbeddings: a.TiedEmbeddings, QKNorm: a.QKNorm, SlidingWindow: ex.SlidingWindow,
	}
	if a.Experts > 0 {
		c.Experts, c.TopK, c.MoEIntermediate, c.NormTopK = a.Experts, a.ExpertsPerToken, a.MoEIntermediate, ex.NormTopK
		c.SparseStep, c.DenseLayers = 1, append([]int(nil), mc.MLPOnlyLayers...)
		if mc.DecoderSparseStep != nil {
			c.SparseStep = *mc.DecoderSparseStep
		}
		if c.MoELayers() != a.MoELayers {
			return Config{}, fmt.Errorf("engine: model %s: %d MoE layers, models counts %d", c.Name, c.MoELayers(), a.MoELayers)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
