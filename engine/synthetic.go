package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cpubench/bench/kernels/quant"
)

// syntheticStd is the standard deviation of Synthetic's matrix entries
// (the usual N(0, 0.02) initialization): small enough that activations
// stay finite through any number of layers.
const syntheticStd = 0.02

// syntheticChunk is the number of floats drawn from one random stream.
const syntheticChunk = 1 << 18

// Synthetic returns seeded random weights at the exact shapes of cfg, for
// timing a model whose checkpoint is not at hand: every matrix drawn from
// N(0, 0.02²), every norm weight 1. Only layers of cfg's decoder layers are
// instantiated (0: all), and the returned Config says so (Layers = layers).
// MoE layers get a router and every expert. The same cfg, layers and seed
// give the same weights.
func Synthetic(cfg Config, layers int, seed uint64) (*Weights, error) {
	return SyntheticAs(cfg, layers, seed, FormatFP32)
}

// WeightDTypes lists the weight dtypes SyntheticAs makes: FormatFP32 and
// the kernels/quant formats.
func WeightDTypes() []string { return append([]string{FormatFP32}, qformats()...) }

// ParseWeightDType checks a weight dtype name ("" is fp32; case is
// ignored).
func ParseWeightDType(s string) (string, error) {
	d := strings.ToLower(strings.TrimSpace(s))
	if d == "" {
		return FormatFP32, nil
	}
	if !slices.Contains(WeightDTypes(), d) {
		return "", fmt.Errorf("engine: weight dtype %q: want %s", s, strings.Join(WeightDTypes(), ", "))
	}
	return d, nil
}

// SyntheticAs is Synthetic with every linear weight matrix (LM head
// included) in dtype: FormatFP32 as Synthetic, or a kernels/quant format
// ("q8_0", "q4_0"), each matrix drawn as Synthetic draws it (the same
// values for the same cfg, layers and seed) then quantized by
// Weights.Quantize layer by layer, its float32 copy dropped, so that the
// model never holds more than one layer's matrices in float32 beside the
// float32 embedding table. Errors: those of Synthetic, an unknown dtype,
// or a matrix whose K (input dim) is not a multiple of the block length
// 32, naming the tensor.
func SyntheticAs(cfg Config, layers int, seed uint64, dtype string) (*Weights, error) {
	dt, err := ParseWeightDType(dtype)
	if err != nil {
		return nil, err
	}
	var qf quant.Format
	if dt != FormatFP32 {
		qf = quant.Format(dt)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if layers < 0 || layers > cfg.Layers {
		return nil, fmt.Errorf("engine: model %s: synthetic layers %d: must be between 0 (all) and the model's %d", cfg.Name, layers, cfg.Layers)
	}
	if layers == 0 {
		layers = cfg.Layers
	}
	cfg.Layers = layers
	// Every chunk of every tensor has its own stream, so that the chunks
	// fill in parallel and the weights depend only on (cfg, seed).
	var (
		w      *Weights
		wg     sync.WaitGroup
		sem    = make(chan struct{}, runtime.GOMAXPROCS(0))
		stream uint64
	)
	mat := func(n, k int) []float32 {
		out := make([]float32, n*k)
		for lo := 0; lo < len(out); lo += syntheticChunk {
			part := out[lo:min(lo+syntheticChunk, len(out))]
			stream++
			rng := rand.New(rand.NewPCG(seed, stream))
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				for i := range part {
					part[i] = float32(rng.NormFloat64() * syntheticStd)
				}
			}()
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// quantize converts the matrices of layer li (-1: the LM head) once
	// they are drawn.
	quantize := func(li int) error {
		if qf == "" {
			return nil
		}
		wg.Wait()
		var slots []linearSlot
		for _, s := range w.linearSlots() {
			if s.t.layer == li {
				slots = append(slots, s)
			}
		}
		return w.quantizeSlots(slots, qf)
	}
	d, q, kv, h := cfg.Dim, cfg.QDim(), cfg.KVDim(), cfg.Intermediate
	w = &Weights{Config: cfg, Embed: mat(cfg.Vocab, d), Layers: make([]LayerWeights, layers)}
	for i := range w.Layers {
		l := &w.Layers[i]
		l.AttnNorm = ones(d)
		l.Wq, l.Wk, l.Wv, l.Wo = mat(q, d), mat(kv, d), mat(kv, d), mat(d, q)
		if cfg.QKNorm {
			l.QNorm, l.KNorm = ones(cfg.HeadDim), ones(cfg.HeadDim)
		}
		l.FFNNorm = ones(d)
		if cfg.IsMoE(i) {
			l.Router = mat(cfg.Experts, d)
			l.Experts = make([]ExpertWeights, cfg.Experts)
			for e := range l.Experts {
				mi := cfg.MoEIntermediate
				l.Experts[e] = ExpertWeights{Gate: mat(mi, d), Up: mat(mi, d), Down: mat(d, mi)}
			}
		} else {
			l.Gate, l.Up, l.Down = mat(h, d), mat(h, d), mat(d, h)
		}
		if err := quantize(i); err != nil {
			wg.Wait()
			return nil, err
		}
	}
	w.FinalNorm = ones(d)
	if !cfg.TiedEmbeddings {
		w.LMHead = mat(cfg.Vocab, d)
	}
	if err := quantize(-1); err != nil {
		wg.Wait()
		return nil, err
	}
	wg.Wait()
	return w, w.Validate()
}
