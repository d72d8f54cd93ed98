package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
)

// Options configure New.
type Options struct {
	// Backend is the gemm backend for the fp32 weights ("" takes
	// gemm.Best(gemm.FP32)), e.g. "go-fp32" to force the Go kernels.
	Backend string
}

// Model is a model's weights packed once, at load time, for the gemm
// backend (SMEPilot §4.3). It is read-only after New: several Sessions may
// use one Model concurrently.
type Model struct {
	Config  Config
	Backend gemm.Backend
	// PackSeconds is the wall-clock time New spent packing weights.
	PackSeconds float64

	embed     []float32 // [Vocab][Dim], row-major, for the gather
	finalNorm []float32
	lmHead    *gemm.Weights // the embedding table when tied
	layers    []layer
}

type layer struct {
	attnNorm, ffnNorm, qNorm, kNorm []float32
	wq, wk, wv, wo, gate, up, down  *gemm.Weights
}

// New validates w and packs its matrices for the backend of o. The Model
// keeps references to w's norm weights and embedding table (not copies).
func New(w *Weights, o Options) (*Model, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	var b gemm.Backend
	var err error
	if o.Backend == "" {
		b, err = gemm.Best(gemm.FP32)
	} else {
		b, err = gemm.BackendByName(o.Backend)
		if err == nil && b.DType != gemm.FP32 {
			err = fmt.Errorf("gemm backend %q computes %s weights; the engine needs fp32", b.Name, b.DType)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	c := w.Config
	m := &Model{Config: c, Backend: b, embed: w.Embed, finalNorm: w.FinalNorm, layers: make([]layer, c.Layers)}
	start := time.Now()
	pack := func(what string, l int, data []float32, n, k int) *gemm.Weights {
		if err != nil {
			return nil
		}
		var pw *gemm.Weights
		if pw, err = gemm.PackFP32(b, data, n, k); err != nil {
			err = fmt.Errorf("engine: model %s: %s: %w", c.Name, tensor{name: what, layer: l}, err)
		}
		return pw
	}
	d, q, kv, h := c.Dim, c.QDim(), c.KVDim(), c.Hidden
	for i := range m.layers {
		lw, l := &w.Layers[i], &m.layers[i]
		l.attnNorm, l.ffnNorm, l.qNorm, l.kNorm = lw.AttnNorm, lw.FFNNorm, lw.QNorm, lw.KNorm
		l.wq = pack("wq", i, lw.Wq, q, d)
		l.wk = pack("wk", i, lw.Wk, kv, d)
		l.wv = pack("wv", i, lw.Wv, kv, d)
		l.wo = pack("wo", i, lw.Wo, d, q)
		l.gate = pack("gate", i, lw.Gate, h, d)
		l.up = pack("up", i, lw.Up, h, d)
		l.down = pack("down", i, lw.Down, d, h)
	}
	head := w.LMHead
	if c.TiedEmbeddings {
		head = w.Embed
	}
	m.lmHead = pack("lm_head", -1, head, c.Vocab, d)
	if err != nil {
		return nil, err
	}
	m.PackSeconds = time.Since(start).Seconds()
	return m, nil
}

// Session is one sequence being generated: its KV cache, position, working
// buffers and operator timers. A Session is not safe for concurrent use.
type Session struct {
	m      *Model
	maxSeq int
	rope   *kernels.RoPETable
	pos    int
	kc, vc [][]float32 // per layer: [maxSeq][KVDim]

	scratch *gemm.Scratch
	rows    int // T the buffers below are sized for
	x, xb   []float32
	q, att  []float32
	ob      []float32
	hb, hb2 []float32
	scores  []float32
	logits  []float32
	t       *timers
}

// NewSession returns a session with a KV cache for maxSeq positions (0:
// Config.MaxSeq; at most Config.MaxSeq).
func (m *Model) NewSession(maxSeq int) (*Session, error) {
	c := m.Config
	if maxSeq == 0 {
		maxSeq = c.MaxSeq
	}
	if maxSeq < 1 || maxSeq > c.MaxSeq {
		return nil, fmt.Errorf("engine: session max sequence %d: must be between 1 and the model's %d", maxSeq, c.MaxSeq)
	}
	rope, err := kernels.NewRoPETable(c.HeadDim, c.RoPETheta, maxSeq, c.RoPEScaling)
	if err != nil {
		return nil, fmt.Errorf("engine: model %s: %w", c.Name, err)
	}
	s := &Session{m: m, maxSeq: maxSeq, rope: rope, kc: make([][]float32, c.Layers), vc: make([][]float32, c.Layers),
		scratch: gemm.NewScratch(m.lmHead, gemm.Blocking{}), t: newTimers(c.Layers)}
	for l := range s.kc {
		s.kc[l] = make([]float32, maxSeq*c.KVDim())
		s.vc[l] = make([]float32, maxSeq*c.KVDim())
	}
	return s, nil
}

// Pos is the number of tokens in the KV cache: the position of the next.
func (s *Session) Pos() int { return s.pos }

// Reset empties the KV cache (the timers keep counting).
func (s *Session) Reset() { s.pos = 0 }

// Timings returns every operator's accumulated time, per phase and layer.
func (s *Session) Timings() []Timing { return s.t.list() }

// ResetTimings zeroes the timers.
func (s *Session) ResetTimings() { s.t = newTimers(s.m.Config.Layers) }

// Prefill runs the tokens at positions Pos()..Pos()+len-1 (GEMMs with M =
// len(tokens)) and returns the logits after the last one, Vocab floats
// owned by the session and valid until its next call.
func (s *Session) Prefill(tokens []int) ([]float32, error) {
	return s.forward(tokens, 0, false)
}

// PrefillAll is Prefill returning the logits at every position:
// len(tokens)×Vocab row-major (the LM head then runs with M = len(tokens)).
func (s *Session) PrefillAll(tokens []int) ([]float32, error) {
	return s.forward(tokens, 0, true)
}

// Decode runs one token at position Pos() (GEMMs with M = 1) and returns
// its logits, Vocab floats owned by the session and valid until its next
// call.
func (s *Session) Decode(token int) ([]float32, error) {
	return s.forward([]int{token}, 1, false)
}

func (s *Session) grow(T int) {
	if T <= s.rows {
		return
	}
	c := s.m.Config
	s.rows = T
	s.x = make([]float32, T*c.Dim)
	s.xb = make([]float32, T*c.Dim)
	s.q = make([]float32, T*c.QDim())
	s.att = make([]float32, T*c.QDim())
	s.ob = make([]float32, T*c.Dim)
	s.hb = make([]float32, T*c.Hidden)
	s.hb2 = make([]float32, T*c.Hidden)
}

func (s *Session) linear(w *gemm.Weights, y, x []float32, M int) error {
	return w.Block(y, w.N, x, w.K, 0, M, 0, w.N, s.scratch)
}

// forward runs tokens at positions pos..pos+T-1 in phase p (0 prefill,
// 1 decode).
func (s *Session) forward(tokens []int, p int, all bool) ([]float32, error) {
	c := s.m.Config
	T := len(tokens)
	if T == 0 {
		return nil, fmt.Errorf("engine: %s: no tokens", phaseName(p))
	}
	if s.pos+T > s.maxSeq {
		return nil, fmt.Errorf("engine: %s of %d tokens at position %d: exceeds the session's max sequence %d", phaseName(p), T, s.pos, s.maxSeq)
	}
	for i, tok := range tokens {
		if tok < 0 || tok >= c.Vocab {
			return nil, fmt.Errorf("engine: token %d (index %d): must be between 0 and vocab %d", tok, i, c.Vocab-1)
		}
	}
	s.grow(T)
	d, qd, kvd, hd, hid := c.Dim, c.QDim(), c.KVDim(), c.HeadDim, c.Hidden
	x, xb, q, att, ob, hb, hb2 := s.x[:T*d], s.xb[:T*d], s.q[:T*qd], s.att[:T*qd], s.ob[:T*d], s.hb[:T*hid], s.hb2[:T*hid]
	pos, eps := s.pos, c.RMSEps
	ctxMax := pos + T
	if need := T * ctxMax; cap(s.scores) < need {
		s.scores = make([]float32, need)
	}
	scores := s.scores[:T*ctxMax]
	group := c.Heads / c.KVHeads
	scale := float32(math.Sqrt(float64(hd)))

	st := time.Now()
	for t, tok := range tokens {
		copy(x[t*d:(t+1)*d], s.m.embed[tok*d:(tok+1)*d])
	}
	s.t.head[p][iEmbed].add(st, T)

	for li := range s.m.layers {
		l := &s.m.layers[li]
		tm := &s.t.layer[p][li]
		kc, vc := s.kc[li], s.vc[li]
		kNew, vNew := kc[pos*kvd:ctxMax*kvd], vc[pos*kvd:ctxMax*kvd]

		st = time.Now()
		for t := range T {
			kernels.RMSNorm(xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.attnNorm, eps)
		}
		tm[iAttnNorm].add(st, T)

		// Q, K, V projections; K and V are written straight into the cache
		// (producer-side layout, SMEPilot §4.3).
		st = time.Now()
		if err := s.linear(l.wq, q, xb, T); err != nil {
			return nil, err
		}
		tm[iQProj].add(st, T)
		st = time.Now()
		if err := s.linear(l.wk, kNew, xb, T); err != nil {
			return nil, err
		}
		tm[iKProj].add(st, T)
		st = time.Now()
		if err := s.linear(l.wv, vNew, xb, T); err != nil {
			return nil, err
		}
		tm[iVProj].add(st, T)

		if c.QKNorm {
			st = time.Now()
			for i := 0; i < len(q); i += hd {
				kernels.RMSNorm(q[i:i+hd], q[i:i+hd], l.qNorm, eps)
			}
			for i := 0; i < len(kNew); i += hd {
				kernels.RMSNorm(kNew[i:i+hd], kNew[i:i+hd], l.kNorm, eps)
			}
			tm[iQKNorm].add(st, T)
		}

		st = time.Now()
		for t := range T {
			s.rope.Apply(q[t*qd:(t+1)*qd], pos+t, c.RoPELayout)
			s.rope.Apply(kNew[t*kvd:(t+1)*kvd], pos+t, c.RoPELayout)
		}
		tm[iRoPE].add(st, T)

		// Causal grouped-query attention, one query head at a time: query
		// row t (position pos+t) attends to positions 0..pos+t; head h reads
		// key/value head h/group.
		for h := range c.Heads {
			ko := (h / group) * hd
			st = time.Now()
			for t := range T {
				qh := q[t*qd+h*hd : t*qd+(h+1)*hd]
				row := scores[t*ctxMax : t*ctxMax+pos+t+1]
				for j := range row {
					kj := kc[j*kvd+ko : j*kvd+ko+hd]
					var dot float32
					for i, qv := range qh {
						dot += qv * kj[i]
					}
					row[j] = dot / scale
				}
			}
			tm[iQK].since(st)
			st = time.Now()
			for t := range T {
				row := scores[t*ctxMax : t*ctxMax+pos+t+1]
				kernels.Softmax(row, row)
			}
			tm[iSoftmax].since(st)
			st = time.Now()
			for t := range T {
				out := att[t*qd+h*hd : t*qd+(h+1)*hd]
				clear(out)
				for j, a := range scores[t*ctxMax : t*ctxMax+pos+t+1] {
					vj := vc[j*kvd+ko : j*kvd+ko+hd]
					for i := range out {
						out[i] += a * vj[i]
					}
				}
			}
			tm[iPV].since(st)
		}
		tm[iQK].count(T)
		tm[iSoftmax].count(T)
		tm[iPV].count(T)

		st = time.Now()
		if err := s.linear(l.wo, ob, att, T); err != nil {
			return nil, err
		}
		tm[iOProj].add(st, T)
		st = time.Now()
		for i := range x {
			x[i] += ob[i]
		}
		tm[iAttnResidual].add(st, T)

		st = time.Now()
		for t := range T {
			kernels.RMSNorm(xb[t*d:(t+1)*d], x[t*d:(t+1)*d], l.ffnNorm, eps)
		}
		tm[iFFNNorm].add(st, T)
		st = time.Now()
		if err := s.linear(l.gate, hb, xb, T); err != nil {
			return nil, err
		}
		tm[iGateProj].add(st, T)
		st = time.Now()
		if err := s.linear(l.up, hb2, xb, T); err != nil {
			return nil, err
		}
		tm[iUpProj].add(st, T)
		st = time.Now()
		kernels.SiLUMul(hb, hb, hb2)
		tm[iSiLUMul].add(st, T)
		st = time.Now()
		if err := s.linear(l.down, ob, hb, T); err != nil {
			return nil, err
		}
		tm[iDownProj].add(st, T)
		st = time.Now()
		for i := range x {
			x[i] += ob[i]
		}
		tm[iFFNResidual].add(st, T)
	}
	s.pos += T

	// Final norm and LM head on the rows whose logits are wanted.
	r0 := T - 1
	if all {
		r0 = 0
	}
	R := T - r0
	st = time.Now()
	for t := r0; t < T; t++ {
		kernels.RMSNorm(xb[(t-r0)*d:(t-r0+1)*d], x[t*d:(t+1)*d], s.m.finalNorm, eps)
	}
	s.t.head[p][iFinalNorm].add(st, R)
	if need := R * c.Vocab; cap(s.logits) < need {
		s.logits = make([]float32, need)
	}
	logits := s.logits[:R*c.Vocab]
	st = time.Now()
	if err := s.linear(s.m.lmHead, logits, xb, R); err != nil {
		return nil, err
	}
	s.t.head[p][iLMHead].add(st, R)
	return logits, nil
}
