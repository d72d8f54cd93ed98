package engine

import "fmt"

// Weights are a model's tensors as plain row-major float32, every matrix
// stored [out][in] (y = W·x), before packing.
type Weights struct {
	Config    Config
	Embed     []float32 // [Vocab][Dim]
	Layers    []LayerWeights
	FinalNorm []float32 // [Dim]
	LMHead    []float32 // [Vocab][Dim]; nil when Config.TiedEmbeddings
}

// LayerWeights are one decoder layer's tensors.
type LayerWeights struct {
	AttnNorm []float32 // [Dim]
	Wq       []float32 // [QDim][Dim]
	Wk       []float32 // [KVDim][Dim]
	Wv       []float32 // [KVDim][Dim]
	Wo       []float32 // [Dim][QDim]
	QNorm    []float32 // [HeadDim], only with Config.QKNorm
	KNorm    []float32 // [HeadDim], only with Config.QKNorm
	FFNNorm  []float32 // [Dim]
	// Dense FFN (nil in an MoE layer).
	Gate []float32 // [Hidden][Dim] (llama2.c w1)
	Up   []float32 // [Hidden][Dim] (llama2.c w3)
	Down []float32 // [Dim][Hidden] (llama2.c w2)
	// MoE FFN (nil in a dense layer, see Config.IsMoE).
	Router  []float32       // [Experts][Dim]: routing logits = Router·x
	Experts []ExpertWeights // [Experts]
}

// ExpertWeights are one expert's SiLU-gated FFN.
type ExpertWeights struct {
	Gate []float32 // [MoEHidden][Dim]
	Up   []float32 // [MoEHidden][Dim]
	Down []float32 // [Dim][MoEHidden]
}

// tensor is one named tensor and its expected length.
type tensor struct {
	name  string
	layer int // -1 for model-level tensors
	data  []float32
	want  int
}

func (t tensor) String() string {
	if t.layer < 0 {
		return "tensor " + t.name
	}
	return fmt.Sprintf("tensor %s layer %d", t.name, t.layer)
}

// tensors lists every tensor of w with the length its config implies.
func (w *Weights) tensors() []tensor {
	c := w.Config
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Hidden
	ts := []tensor{{"token_embedding", -1, w.Embed, c.Vocab * d}}
	for i := range w.Layers {
		l := &w.Layers[i]
		ts = append(ts,
			tensor{"rms_att", i, l.AttnNorm, d},
			tensor{"wq", i, l.Wq, q * d},
			tensor{"wk", i, l.Wk, kv * d},
			tensor{"wv", i, l.Wv, kv * d},
			tensor{"wo", i, l.Wo, d * q},
			tensor{"rms_ffn", i, l.FFNNorm, d})
		if c.IsMoE(i) {
			ts = append(ts, tensor{"router", i, l.Router, c.Experts * d})
			if len(l.Experts) != c.Experts {
				// Reported by Validate; list the experts present.
				ts = append(ts, tensor{"experts", i, make([]float32, len(l.Experts)), c.Experts})
			}
			mi := c.MoEHidden
			for e := range l.Experts {
				x := &l.Experts[e]
				ts = append(ts,
					tensor{fmt.Sprintf("expert %d gate", e), i, x.Gate, mi * d},
					tensor{fmt.Sprintf("expert %d down", e), i, x.Down, d * mi},
					tensor{fmt.Sprintf("expert %d up", e), i, x.Up, mi * d})
			}
		} else {
			ts = append(ts,
				tensor{"w1", i, l.Gate, h * d},
				tensor{"w2", i, l.Down, d * h},
				tensor{"w3", i, l.Up, h * d})
		}
		if c.QKNorm {
			ts = append(ts, tensor{"q_norm", i, l.QNorm, c.HeadDim}, tensor{"k_norm", i, l.KNorm, c.HeadDim})
		}
	}
	ts = append(ts, tensor{"rms_final", -1, w.FinalNorm, d})
	if !c.TiedEmbeddings {
		ts = append(ts, tensor{"wcls", -1, w.LMHead, c.Vocab * d})
	}
	return ts
}

// Validate checks the config and that every tensor has the length the
// config implies, naming the first that does not.
func (w *Weights) Validate() error {
	if err := w.Config.Validate(); err != nil {
		return err
	}
	if len(w.Layers) != w.Config.Layers {
		return fmt.Errorf("engine: model %s: %d layers of weights, config says %d", w.Config.Name, len(w.Layers), w.Config.Layers)
	}
	for _, t := range w.tensors() {
		if len(t.data) != t.want {
			return fmt.Errorf("engine: model %s: %s: %d floats, want %d", w.Config.Name, t, len(t.data), t.want)
		}
	}
	return nil
}
