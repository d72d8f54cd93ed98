package engine

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cpubench/bench/kernels/quant"
)

// Weights are a model's tensors, every matrix stored [out][in] (y = W·x),
// before packing. Norms and the embedding table are row-major float32.
// Each linear weight matrix (Wq, Wk, Wv, Wo, Gate, Up, Down, Router, the
// experts' and the LM head) is held in one of two forms: plain row-major
// float32 (the field itself), or block-quantized by kernels/quant (the
// field of the same name with a Q suffix, an N×K quant.Matrix with N =
// out, K = in; the float32 field is then nil). The engine runs each form
// on its own kernels (model.go); a model may mix them, as GGUF files do.
type Weights struct {
	Config    Config
	Embed     []float32 // [Vocab][Dim]
	Layers    []LayerWeights
	FinalNorm []float32 // [Dim]
	LMHead    []float32 // [Vocab][Dim]; nil when Config.TiedEmbeddings or LMHeadQ is set
	// LMHeadQ is the LM head quantized. With Config.TiedEmbeddings it is
	// the embedding table's quantized copy (the head reads it, the token
	// gather reads Embed), as llama.cpp runs a tied head on token_embd's
	// quantized data.
	LMHeadQ *quant.Matrix
	// PackSeconds is the wall-clock time spent making the quantized
	// matrices (quant.Quantize or quant.FromGGUF: quantizing where the
	// source is float32, and packing into kernels/quant's lane order), 0
	// when there are none.
	PackSeconds float64
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
	Gate []float32 // [Intermediate][Dim] (llama2.c w1)
	Up   []float32 // [Intermediate][Dim] (llama2.c w3)
	Down []float32 // [Dim][Intermediate] (llama2.c w2)
	// MoE FFN (nil in a dense layer, see Config.IsMoE).
	Router  []float32       // [Experts][Dim]: routing logits = Router·x
	Experts []ExpertWeights // [Experts]

	// The same matrices block-quantized (see Weights): each set only when
	// its float32 field above is nil.
	WqQ, WkQ, WvQ, WoQ, GateQ, UpQ, DownQ, RouterQ *quant.Matrix
}

// ExpertWeights are one expert's SiLU-gated FFN.
type ExpertWeights struct {
	Gate []float32 // [MoEIntermediate][Dim]
	Up   []float32 // [MoEIntermediate][Dim]
	Down []float32 // [Dim][MoEIntermediate]
	// GateQ, UpQ, DownQ are the same matrices block-quantized (see Weights).
	GateQ, UpQ, DownQ *quant.Matrix
}

// tensor is one named tensor and its expected length; for a linear weight
// matrix also its quantized form q (nil when float32) and its shape n×k.
type tensor struct {
	name  string
	layer int // -1 for model-level tensors
	data  []float32
	want  int
	q     *quant.Matrix
	n, k  int // 0 for a vector or the embedding table (never quantized)
}

// mat is the tensor entry of a linear weight matrix.
func mat(name string, layer int, data []float32, q *quant.Matrix, n, k int) tensor {
	return tensor{name: name, layer: layer, data: data, want: n * k, q: q, n: n, k: k}
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
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Intermediate
	vec := func(name string, layer int, data []float32, n int) tensor {
		return tensor{name: name, layer: layer, data: data, want: n}
	}
	ts := []tensor{vec("token_embedding", -1, w.Embed, c.Vocab*d)}
	for i := range w.Layers {
		l := &w.Layers[i]
		ts = append(ts,
			vec("rms_att", i, l.AttnNorm, d),
			mat("wq", i, l.Wq, l.WqQ, q, d),
			mat("wk", i, l.Wk, l.WkQ, kv, d),
			mat("wv", i, l.Wv, l.WvQ, kv, d),
			mat("wo", i, l.Wo, l.WoQ, d, q),
			vec("rms_ffn", i, l.FFNNorm, d))
		if c.IsMoE(i) {
			ts = append(ts, mat("router", i, l.Router, l.RouterQ, c.Experts, d))
			if len(l.Experts) != c.Experts {
				// Reported by Validate; list the experts present.
				ts = append(ts, vec("experts", i, make([]float32, len(l.Experts)), c.Experts))
			}
			mi := c.MoEIntermediate
			for e := range l.Experts {
				x := &l.Experts[e]
				ts = append(ts,
					mat(fmt.Sprintf("expert %d gate", e), i, x.Gate, x.GateQ, mi, d),
					mat(fmt.Sprintf("expert %d down", e), i, x.Down, x.DownQ, d, mi),
					mat(fmt.Sprintf("expert %d up", e), i, x.Up, x.UpQ, mi, d))
			}
		} else {
			ts = append(ts,
				mat("w1", i, l.Gate, l.GateQ, h, d),
				mat("w2", i, l.Down, l.DownQ, d, h),
				mat("w3", i, l.Up, l.UpQ, h, d))
		}
		if c.QKNorm {
			ts = append(ts, vec("q_norm", i, l.QNorm, c.HeadDim), vec("k_norm", i, l.KNorm, c.HeadDim))
		}
	}
	ts = append(ts, vec("rms_final", -1, w.FinalNorm, d))
	if !c.TiedEmbeddings {
		ts = append(ts, mat("wcls", -1, w.LMHead, w.LMHeadQ, c.Vocab, d))
	} else if w.LMHeadQ != nil {
		ts = append(ts, mat("wcls (tied, quantized)", -1, nil, w.LMHeadQ, c.Vocab, d))
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
		switch {
		case t.q != nil && t.data != nil:
			return fmt.Errorf("engine: model %s: %s: both float32 and %s (want one)", w.Config.Name, t, t.q.Format)
		case t.q != nil && (t.q.N != t.n || t.q.K != t.k):
			return fmt.Errorf("engine: model %s: %s: %s matrix %d×%d, want %d×%d", w.Config.Name, t, t.q.Format, t.q.N, t.q.K, t.n, t.k)
		case t.q == nil && len(t.data) != t.want:
			return fmt.Errorf("engine: model %s: %s: %d floats, want %d", w.Config.Name, t, len(t.data), t.want)
		}
	}
	return nil
}

// linearSlot is one linear weight matrix of Weights: pointers to its
// float32 and quantized fields, its shape n×k and its name for errors.
type linearSlot struct {
	t    tensor
	f    *[]float32
	q    **quant.Matrix
	tied bool // the tied LM head: f is the embedding table, kept
}

// linearSlots lists every linear weight matrix of w, layer by layer, the
// LM head last (the tied head with f pointing at Embed).
func (w *Weights) linearSlots() []linearSlot {
	c := w.Config
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Intermediate
	var out []linearSlot
	add := func(name string, li int, f *[]float32, qm **quant.Matrix, n, k int) {
		out = append(out, linearSlot{t: mat(name, li, *f, *qm, n, k), f: f, q: qm})
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		add("wq", i, &l.Wq, &l.WqQ, q, d)
		add("wk", i, &l.Wk, &l.WkQ, kv, d)
		add("wv", i, &l.Wv, &l.WvQ, kv, d)
		add("wo", i, &l.Wo, &l.WoQ, d, q)
		if c.IsMoE(i) {
			add("router", i, &l.Router, &l.RouterQ, c.Experts, d)
			for e := range l.Experts {
				x := &l.Experts[e]
				add(fmt.Sprintf("expert %d gate", e), i, &x.Gate, &x.GateQ, c.MoEIntermediate, d)
				add(fmt.Sprintf("expert %d down", e), i, &x.Down, &x.DownQ, d, c.MoEIntermediate)
				add(fmt.Sprintf("expert %d up", e), i, &x.Up, &x.UpQ, c.MoEIntermediate, d)
			}
		} else {
			add("w1", i, &l.Gate, &l.GateQ, h, d)
			add("w2", i, &l.Down, &l.DownQ, d, h)
			add("w3", i, &l.Up, &l.UpQ, h, d)
		}
	}
	if c.TiedEmbeddings {
		out = append(out, linearSlot{t: mat("wcls (tied)", -1, w.Embed, w.LMHeadQ, c.Vocab, d), f: &w.Embed, q: &w.LMHeadQ, tied: true})
	} else {
		add("wcls", -1, &w.LMHead, &w.LMHeadQ, c.Vocab, d)
	}
	return out
}

// Quantize converts every float32 linear weight matrix of w to format f
// in place (quant.Quantize: ggml's reference quantizers, scales rounded to
// fp16) and drops the float32 copy; a tied LM head gets LMHeadQ, the
// embedding table staying float32 for the gather. Matrices already
// quantized are kept as they are, and so are matrices whose K is not a
// multiple of the block length 32 (as llama.cpp's quantizer falls back for
// them: Unquantizable lists them). The time spent is added to
// PackSeconds. Errors (naming the tensor): a NaN or infinite weight.
func (w *Weights) Quantize(f quant.Format) error {
	var slots []linearSlot
	for _, s := range w.linearSlots() {
		if s.t.k%quant.BlockLen == 0 {
			slots = append(slots, s)
		}
	}
	return w.quantizeSlots(slots, f)
}

// Unquantizable names the float32 linear weight matrices whose K (columns)
// is not a multiple of the block length 32, which Quantize keeps float32
// ("w2 layer 0 (64×172)", ...), grouped: one entry per tensor name with
// its layer count.
func (w *Weights) Unquantizable() []string {
	var names []string
	count := map[string]int{}
	for _, s := range w.linearSlots() {
		if s.t.k%quant.BlockLen == 0 || *s.f == nil {
			continue
		}
		if count[s.t.name] == 0 {
			names = append(names, s.t.name)
		}
		count[s.t.name]++
	}
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s (%d matrices)", n, count[n]))
	}
	return out
}

// quantizeSlots quantizes the float32 matrices of slots, in parallel over
// the matrices (GOMAXPROCS at a time).
func (w *Weights) quantizeSlots(slots []linearSlot, f quant.Format) error {
	if _, err := quant.ParseFormat(string(f)); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	start := time.Now()
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, runtime.GOMAXPROCS(0))
		errMu sync.Mutex
		first error
	)
	for _, s := range slots {
		if *s.q != nil || *s.f == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m, err := quant.Quantize(f, *s.f, s.t.n, s.t.k)
			errMu.Lock()
			defer errMu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("engine: model %s: %s: %w", w.Config.Name, s.t, err)
				}
				return
			}
			*s.q = m
			if !s.tied {
				*s.f = nil
			}
		}()
	}
	wg.Wait()
	w.PackSeconds += time.Since(start).Seconds()
	return first
}

// Bytes is the resident size of w's tensors in bytes: 4 per float32
// value, quant.Matrix.Bytes for each quantized matrix (block scales and
// panel padding included).
func (w *Weights) Bytes() int64 {
	var n int64
	for _, t := range w.tensors() {
		n += 4 * int64(len(t.data))
		if t.q != nil {
			n += t.q.Bytes()
		}
	}
	return n
}

// FormatFP32 names the float32 form of a linear weight matrix in
// WeightFormats.
const FormatFP32 = "fp32"

// WeightFormats returns the number of linear weights (matrix elements,
// the LM head included; norms and the embedding table are always float32)
// held in each form: FormatFP32 or a quant.Format name ("q8_0", "q4_0").
func (w *Weights) WeightFormats() map[string]int64 {
	out := map[string]int64{}
	for _, s := range w.linearSlots() {
		switch {
		case *s.q != nil:
			out[string((*s.q).Format)] += int64(s.t.n) * int64(s.t.k)
		case !s.tied || *s.f != nil:
			out[FormatFP32] += int64(s.t.n) * int64(s.t.k)
		}
	}
	return out
}

// MainWeightFormat is the form holding most of w's linear weights
// (FormatFP32 or a quant.Format: "q8_0", "q4_0", "int2", "int1"), and whether every linear weight is in it.
func (w *Weights) MainWeightFormat() (string, bool) {
	fs := w.WeightFormats()
	best := FormatFP32
	for _, qf := range quant.Formats() {
		if f := string(qf); fs[f] > fs[best] {
			best = f
		}
	}
	return best, len(fs) <= 1
}

// Dequantize converts every quantized linear weight matrix of w back to
// float32 in place (quant.Matrix.Dequantize: d·q exactly, as ggml's
// dequantize_row_q8_0 and _q4_0), clearing its Q field. A tied head's
// quantized copy is dropped when it dequantizes to Embed exactly (a GGUF
// loader dequantized both from the same blocks); otherwise (Quantize of a
// float table) the head is untied: LMHead becomes the dequantized copy,
// so that the model computes what the quantized one approximates.
func (w *Weights) Dequantize() {
	for _, s := range w.linearSlots() {
		if *s.q == nil {
			continue
		}
		deq := (*s.q).Dequantize()
		switch {
		case !s.tied:
			*s.f = deq
		case !slices.Equal(deq, w.Embed):
			w.Config.TiedEmbeddings, w.LMHead = false, deq
		}
		*s.q = nil
	}
}
