package roofline

import "fmt"

// Operand is one buffer a dense layer's operator reads or writes, with its
// reuse distance: the bytes of the distinct other buffers (activations,
// every layer's own weights and KV cache) touched since the buffer's last
// touch, in a steady state of repeated forward calls. It is the LRU stack
// distance of the buffer (Mattson et al. 1970): a cache of C bytes still
// holds it when Distance + Bytes ≤ C. BuildCatalog sets it on the
// operators of dense layers and the head, from the buffers the engine
// uses (engine/batch.go: x, xb, q, k, v, att, ob, gate, up, the logits).
type Operand struct {
	Buffer string `json:"buffer"`
	// Bytes is what the operator moves of the buffer in one call.
	Bytes float64 `json:"bytes"`
	Write bool    `json:"write,omitempty"`
	// Weights marks a layer's or the head's weights (timed with the other
	// weights and KV reads at the level holding all of them).
	Weights bool `json:"weights,omitempty"`
	// Distance is the reuse distance in bytes.
	Distance float64 `json:"distance"`
}

// operandsOf is the buffers operator o of layer `layer` reads and writes
// (weights and the KV cache included, named per layer), with the bytes it
// moves of each, as the engine runs it; nil for an operator the engine's
// dense path does not have (MoE). qShare is the share of QK-norm's and
// RoPE's rows that are q's (H/(H+Hkv)).
func operandsOf(o Operator, layer int, qShare float64) []Operand {
	w := fmt.Sprintf("w%d.%s", layer, o.Name)
	kv := fmt.Sprintf("kv%d", layer)
	b := o.Bytes
	rd := func(buf string, n float64) Operand { return Operand{Buffer: buf, Bytes: n} }
	wr := func(buf string, n float64) Operand { return Operand{Buffer: buf, Bytes: n, Write: true} }
	wt := func(buf string, n float64) Operand { return Operand{Buffer: buf, Bytes: n, Weights: true} }
	linear := func(in, out string) []Operand {
		return []Operand{wt(w, b.Weights), rd(in, b.ActIn), wr(out, b.ActOut)}
	}
	switch o.Name {
	case OpEmbed:
		return []Operand{wt("w.embed", b.Weights), wr("x", b.ActOut)}
	case OpAttnNorm, OpFFNNorm, OpFinalNorm:
		return []Operand{rd("x", b.ActIn), wt(w, b.Weights), wr("xb", b.ActOut)}
	case OpQProj:
		return linear("xb", "q")
	case OpKProj:
		return linear("xb", "k")
	case OpVProj:
		return linear("xb", "v")
	case OpQKNorm, OpRoPE:
		// q and k in place (qShare of the rows are q's).
		q, k := b.ActIn*qShare, b.ActIn*(1-qShare)
		ops := []Operand{rd("q", q), rd("k", k), wr("q", q), wr("k", k)}
		if b.Weights > 0 {
			ops = append(ops, wt(w, b.Weights))
		}
		return ops
	case OpKVWrite:
		return []Operand{rd("k", b.ActIn/2), rd("v", b.ActIn/2), wr(kv, b.KVWrite)}
	case OpQK:
		return []Operand{rd("q", b.ActIn), rd(kv, b.KVRead), wr("scores", b.ActOut)}
	case OpSoftmax:
		return []Operand{rd("scores", b.ActIn), wr("scores", b.ActOut)}
	case OpPV:
		return []Operand{rd("scores", b.ActIn), rd(kv, b.KVRead), wr("att", b.ActOut)}
	case OpOProj:
		return linear("att", "ob")
	case OpAttnResidual, OpFFNResidual:
		return []Operand{rd("x", b.ActIn/2), rd("ob", b.ActIn/2), wr("x", b.ActOut)}
	case OpGateProj:
		return linear("xb", "gate")
	case OpUpProj:
		return linear("xb", "up")
	case OpSiLUMul:
		return []Operand{rd("gate", b.ActIn/2), rd("up", b.ActIn/2), wr("gate", b.ActOut)}
	case OpDownProj:
		return linear("gate", "ob")
	case OpLMHead:
		return linear("xb", "logits")
	}
	return nil
}

// setReuse sets the Operands of the operators of c's dense layers and
// head, with their reuse distances in a steady state of repeated forward
// calls: the sequence embed, every layer's operators (each layer's own
// weights and KV cache), final norm, LM head, run twice, and each
// operand's distance taken on the second run, in the last of the dense
// layers (the catalog keeps one operator list per kind of layer). A
// catalog with MoE layers is left without operands (the per-call model
// then counts every activation as just written).
func setReuse(c *Catalog, qShare float64) {
	if len(c.Layers) != 1 || c.Layers[0].Kind != "dense" {
		return
	}
	type step struct {
		ops  []Operand
		dest *[]Operand // where the second run's operands go; nil for none
	}
	var seq []step
	head := func(o *Operator) {
		seq = append(seq, step{ops: operandsOf(*o, -1, qShare), dest: &o.Operands})
	}
	if len(c.Head) == 3 {
		head(&c.Head[0])
	}
	l := &c.Layers[0]
	for li := range l.Count {
		for i := range l.Ops {
			var dest *[]Operand
			if li == l.Count-1 {
				dest = &l.Ops[i].Operands
			}
			seq = append(seq, step{ops: operandsOf(l.Ops[i], li, qShare), dest: dest})
		}
	}
	if len(c.Head) == 3 {
		head(&c.Head[1])
		head(&c.Head[2])
	}
	for _, s := range seq {
		if s.ops == nil {
			return
		}
	}
	// Run the sequence twice; at each step of the second run, an
	// operand's distance is the sum of the sizes of the distinct buffers
	// touched since its buffer's last touch (the buffer's size: the
	// largest bytes any operator moves of it).
	size := map[string]float64{}
	for _, s := range seq {
		for _, o := range s.ops {
			size[o.Buffer] = max(size[o.Buffer], o.Bytes)
		}
	}
	n := len(seq)
	for i := n; i < 2*n; i++ {
		s := seq[i%n]
		if s.dest == nil {
			continue
		}
		out := make([]Operand, len(s.ops))
		for j, o := range s.ops {
			seen := map[string]bool{o.Buffer: true}
			d := 0.0
			for k := i - 1; k > i-n-1; k-- {
				hit := false
				for _, p := range seq[(k+n)%n].ops {
					if p.Buffer == o.Buffer {
						hit = true
						break
					}
				}
				if hit {
					break
				}
				for _, p := range seq[(k+n)%n].ops {
					if !seen[p.Buffer] {
						seen[p.Buffer] = true
						d += size[p.Buffer]
					}
				}
			}
			o.Distance = d
			if o.Write {
				// Written in place after this operator read it (a
				// residual add, RoPE, SiLU·mul into gate): the lines are
				// in L1 when written.
				for _, p := range s.ops {
					if !p.Write && p.Buffer == o.Buffer {
						o.Distance = 0
					}
				}
			}
			out[j] = o
		}
		*s.dest = out
	}
}
