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
	// Producer is how the operator that last wrote the buffer split its
	// work over the workers (WorkSplit of it; "" for weights, the KV
	// cache and buffers nothing writes): with a split other than the
	// reader's, most of what each worker reads another one wrote
	// (remoteShare).
	Producer string `json:"producer,omitempty"`
}

// The work splits of WorkSplit: how the engine divides an operator's
// output over the pool's workers (engine/batch.go, kernels/pool).
const (
	// SplitRows: token rows in contiguous blocks, one per worker (the
	// row-wise vector operators; a GEMM cut along M).
	SplitRows = "rows"
	// SplitCols: output columns in contiguous blocks (a GEMM cut along N,
	// kernels/pool.SplitDim: when N ≥ M).
	SplitCols = "cols"
	// SplitHeads: attention's work units, a block of rows against one KV
	// head each, claimed by the workers.
	SplitHeads = "heads"
	// SplitCaller: the caller alone (the embedding's gather, a vector
	// operator too small for the pool).
	SplitCaller = "caller"
)

// WorkSplit is how the engine splits operator o's output over its
// workers: SplitHeads for the attention (qk, softmax, pv), SplitCaller for
// the embedding and a vector operator small enough to stay on the caller
// (OpThreads at two workers), SplitCols for a linear operator whose
// output has at least as many columns as rows (kernels/pool.SplitDim
// cuts the larger dimension, N on a tie), SplitRows otherwise.
func WorkSplit(o Operator) string {
	switch {
	case o.Name == OpQK || o.Name == OpSoftmax || o.Name == OpPV:
		return SplitHeads
	case o.Kind == KindLinear && o.N >= max(o.M, 1):
		return SplitCols
	case o.Kind == KindLinear:
		return SplitRows
	case serialAtAnyWorkers(o):
		return SplitCaller
	}
	return SplitRows
}

// remoteShare is the share of read operand p that a parallel vector
// operator (SplitRows) on threads workers finds in another worker's
// cache: (threads−1)/threads when p's producer split its output otherwise
// (each worker's rows hold every worker's columns, heads or the caller's
// writes), 0 for a write, a producer that split by rows too, or one
// thread. Measured on this project's 2-vCPU Zen 5 guest (2026-11-28):
// a worker read 64 KiB–4 MiB the other worker had just written at 25–37
// GB/s against 94–117 for what it wrote itself, and in the fidelity pass
// of 2026-11-28 06:35 the engine's prefill residual adds and SiLU·mul,
// whose operands a GEMM had split by columns, ran at 1.17–1.21 of their
// prediction while the norms, whose input a residual add had split by
// rows as they are, ran at 0.99–1.00. Replayed over eight passes with the
// probe's figure of 2026-11-28 (59 GB/s on 2 workers) in each profile:
// 0–8 more operator rows within ±10%, none fewer (the residual adds
// 1.21 → 1.16 there; SiLU·mul, bound by its non-linear rate, unchanged).
func remoteShare(p Operand, threads int) float64 {
	if p.Write || threads < 2 || p.Producer == "" || p.Producer == SplitRows {
		return 0
	}
	return float64(threads-1) / float64(threads)
}

// coreToCoreGBps is the core-to-core read rate of threads workers
// together (FixedCosts.CoreToCoreGBps at its thread count, scaled by
// threads: each reader's rate held), 0 when not measured.
func (m *Machine) coreToCoreGBps(threads int) float64 {
	f := m.FixedCosts
	if f == nil || !(f.CoreToCoreGBps > 0) || f.CoreToCoreThreads < 2 {
		return 0
	}
	return f.CoreToCoreGBps * float64(threads) / float64(f.CoreToCoreThreads)
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
		ops   []Operand
		dest  *[]Operand // where the second run's operands go; nil for none
		split string     // WorkSplit of the step's operator
	}
	var seq []step
	head := func(o *Operator) {
		seq = append(seq, step{ops: operandsOf(*o, -1, qShare), dest: &o.Operands, split: WorkSplit(*o)})
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
			seq = append(seq, step{ops: operandsOf(l.Ops[i], li, qShare), dest: dest, split: WorkSplit(l.Ops[i])})
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
			if !o.Weights && !o.Write {
				// The split of the buffer's last writer: this step's own
				// write in place comes after its read.
				for k := i - 1; k > i-n-1; k-- {
					if wrote(seq[(k+n)%n].ops, o.Buffer) {
						o.Producer = seq[(k+n)%n].split
						break
					}
				}
			}
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

// wrote reports whether ops write buffer buf.
func wrote(ops []Operand, buf string) bool {
	for _, p := range ops {
		if p.Write && p.Buffer == buf {
			return true
		}
	}
	return false
}
