package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
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
	d, q, kv, h := cfg.Dim, cfg.QDim(), cfg.KVDim(), cfg.Hidden
	w := &Weights{Config: cfg, Embed: mat(cfg.Vocab, d), Layers: make([]LayerWeights, layers)}
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
				mi := cfg.MoEHidden
				l.Experts[e] = ExpertWeights{Gate: mat(mi, d), Up: mat(mi, d), Down: mat(d, mi)}
			}
		} else {
			l.Gate, l.Up, l.Down = mat(h, d), mat(h, d), mat(d, h)
		}
	}
	w.FinalNorm = ones(d)
	if !cfg.TiedEmbeddings {
		w.LMHead = mat(cfg.Vocab, d)
	}
	wg.Wait()
	return w, w.Validate()
}
