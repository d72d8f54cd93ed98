package engine

import (
	"fmt"
	"strings"

	"github.com/cpubench/bench/roofline"
)

// Arch is the roofline architecture of c (the layers instantiated).
func (c Config) Arch() roofline.Arch {
	return roofline.Arch{Name: c.Name, Dim: c.Dim, Intermediate: c.Intermediate, Layers: c.Layers, Heads: c.Heads,
		KVHeads: c.KVHeads, HeadDim: c.HeadDim, Vocab: c.Vocab, QKNorm: c.QKNorm, TiedEmbeddings: c.TiedEmbeddings,
		Experts: c.Experts, ExpertsPerToken: c.TopK, MoEIntermediate: c.MoEIntermediate, MoELayers: c.MoELayers()}
}

// opPlan is the placement of each linear operator for one forward call.
type opPlan struct {
	def Placement
	per map[string]Placement
}

func (p opPlan) get(op string) Placement {
	if q, ok := p.per[op]; ok {
		return q
	}
	return p.def
}

// planKey caches auto plans: phase, rows, sequences.
type planKey struct{ phase, rows, seqs int }

// plan returns the placement of every linear operator for a forward call
// of T rows in segs. Fixed placements place everything alike; auto asks
// the roofline (roofline.Analyze: SMEPilot §3.2–3.3 classification, §4.4
// placement) for this call's shape: B = len(segs) sequences of T/B rows at
// the mean context. Auto plans are cached per (phase, T, B): the context
// changes only the attention operators, which run on the cores anyway.
func (m *Model) plan(p, T int, segs []segment, b *Batch) (opPlan, error) {
	if m.Placement != PlaceAuto {
		return opPlan{def: m.Placement}, nil
	}
	key := planKey{p, T, len(segs)}
	m.planMu.Lock()
	defer m.planMu.Unlock()
	if per, ok := m.plans[key]; ok {
		return opPlan{def: PlaceCores, per: per}, nil
	}
	ctx := 0
	for _, sg := range segs {
		ctx += sg.pos0 + sg.r1 - sg.r0
	}
	B := len(segs)
	ctx /= B
	prec := m.planPrecision()
	r := roofline.Request{Phase: phaseName(p), Batch: B, Tokens: T / B, Context: max(ctx, T/B),
		Weight: prec, Act: prec, KV: "fp32", Routing: roofline.Routing{Kind: "uniform"}}
	a, err := roofline.Analyze(m.opts.Machine, m.Config.Arch(), r, prec)
	if err != nil {
		return opPlan{}, fmt.Errorf("engine: auto placement: %w", err)
	}
	per := map[string]Placement{}
	set := func(ps []roofline.Placed) {
		for _, o := range ps {
			if o.Kind != roofline.KindLinear {
				continue
			}
			name := o.Name
			if _, ok := roofline.ParseExpertOp(name); ok {
				name = OpExperts
			}
			pl := PlaceCores
			if t, ok := m.opts.Machine.Target(o.Target); ok {
				switch t.Kind {
				case roofline.KindMatrix:
					pl = PlaceMatrix
				case roofline.KindMixed:
					pl = PlaceMixed
				}
			}
			// Plan's summary of the experts: the most demanding
			// placement of the uniform routing (mixed over matrix over
			// cores). The forward call places each expert by the tokens
			// really routed to it (moe.go, expertPlacement).
			if old, ok := per[name]; !ok || rank(pl) > rank(old) {
				per[name] = pl
			}
		}
	}
	for _, l := range a.Layers {
		set(l.Ops)
	}
	set(a.Head)
	m.plans[key] = per
	return opPlan{def: PlaceCores, per: per}, nil
}

func rank(p Placement) int {
	switch p {
	case PlaceMixed:
		return 2
	case PlaceMatrix:
		return 1
	}
	return 0
}

// planPrecision is the precision the auto plan reads ceilings at: the
// matrix backend's weight dtype when the machine has ceilings for it, else
// fp32.
func (m *Model) planPrecision() string {
	if m.Matrix != nil {
		dt := string(m.Matrix.DType)
		for _, p := range m.opts.Machine.Precisions() {
			if p == dt {
				return dt
			}
		}
	}
	return "fp32"
}

// Plan returns the placement auto chose for each linear operator of a
// forward call of the given phase, rows and sequences (the fixed
// placement's name for every operator otherwise); nil before such a call
// has run under auto.
func (m *Model) Plan(phase roofline.Phase, rows, seqs int) map[string]Placement {
	if m.Placement != PlaceAuto {
		return nil
	}
	p := 0
	if phase == Decode {
		p = 1
	}
	m.planMu.Lock()
	defer m.planMu.Unlock()
	return m.plans[planKey{p, rows, seqs}]
}

// OpPrediction is the roofline's view of one engine operator in one
// forward call: predicted seconds, FLOPs and bytes moved (summed over the
// catalog operators it fuses and over the layers).
type OpPrediction struct {
	Seconds, FLOPs, Bytes float64
}

// Precision is what a prediction assumes of the engine's numbers: the
// roofline dtypes (roofline.DTypeBytes) of the linear weights, the
// activations and the KV cache, which set the bytes each operator moves,
// and the precision whose compute ceilings bound its time.
type Precision struct {
	Weight, Act, KV, Ceiling string
}

// UniformPrecision is prec for weights, activations, KV cache and
// ceilings (the fp32 engine: "fp32").
func UniformPrecision(prec string) Precision { return Precision{prec, prec, prec, prec} }

// PredictionPrecision returns the Precision that describes m on mach and
// a note saying what it assumes ("" for the all-fp32 engine). With
// quantized weights: the weight dtype is the format holding most linear
// weights ("q8_0" at 34/32 bytes per weight, "q4_0" at 18/32: roofline
// counts their fp16 block scales), every linear counted at it even where
// some are held in another form; activations and KV cache fp32 (the
// engine keeps them so; the int8 copy of a linear's input is not
// counted); compute bounded by mach's int8 ceilings when it has them (the
// kernels' dot products are int8; the per-block float scaling is not
// counted), else by its fp32 ones.
func (m *Model) PredictionPrecision(mach *roofline.Machine) (Precision, string) {
	if m.Quant == nil {
		return UniformPrecision("fp32"), ""
	}
	wf := strings.TrimSuffix(m.WeightFormat, " (mixed)")
	p := Precision{Weight: wf, Act: "fp32", KV: "fp32", Ceiling: "fp32"}
	if mach != nil && mach.HasCeilings("int8") {
		p.Ceiling = "int8"
	}
	b, _ := roofline.DTypeBytes(wf)
	note := fmt.Sprintf("predictions: %s weights at %.4g bytes per weight (fp16 block scales included), fp32 activations and KV cache, compute bounded by the %s ceilings", wf, b, p.Ceiling)
	if p.Ceiling != "int8" {
		note += " (the machine has no int8 ceiling; the quant kernels compute int8 dot products)"
	}
	if wf != m.WeightFormat {
		note += "; some linear weights are in another form but are counted as " + wf
	}
	return p, note
}

// PredictOps returns the roofline's prediction per engine operator (the
// names of Timing.Op) for one forward call of config c on machine mach: B
// sequences each adding T tokens at context C (C ≥ T), weights,
// activations and KV cache of dtype prec; per-layer operators summed over
// c's layers. Catalog operators that the engine fuses are summed: qk,
// softmax and pv into attention; every "expert N" and expert_silu_mul
// into experts. Errors: those of roofline.Analyze (bad shape, no ceiling
// for prec).
func PredictOps(mach *roofline.Machine, c Config, phase roofline.Phase, B, T, C int, prec string) (map[string]OpPrediction, error) {
	return PredictOpsAs(mach, c, phase, B, T, C, UniformPrecision(prec))
}

// PredictOpsAs is PredictOps with the dtypes and ceilings of p.
func PredictOpsAs(mach *roofline.Machine, c Config, phase roofline.Phase, B, T, C int, p Precision) (map[string]OpPrediction, error) {
	r := roofline.Request{Phase: phase, Batch: B, Tokens: T, Context: C,
		Weight: p.Weight, Act: p.Act, KV: p.KV, Routing: roofline.Routing{Kind: "uniform"}}
	a, err := roofline.Analyze(mach, c.Arch(), r, p.Ceiling)
	if err != nil {
		return nil, err
	}
	out := map[string]OpPrediction{}
	add := func(ps []roofline.Placed, k float64) {
		for _, o := range ps {
			name := EngineOp(o.Name)
			p := out[name]
			p.Seconds += o.Time * k
			p.FLOPs += o.FLOPs * k
			p.Bytes += o.Bytes.Total() * k
			out[name] = p
		}
	}
	for _, l := range a.Layers {
		add(l.Ops, float64(l.Count))
	}
	add(a.Head, 1)
	return out, nil
}

// Predict is PredictOps' predicted seconds alone.
func Predict(mach *roofline.Machine, c Config, phase roofline.Phase, B, T, C int, prec string) (map[string]float64, error) {
	ops, err := PredictOps(mach, c, phase, B, T, C, prec)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(ops))
	for k, v := range ops {
		out[k] = v.Seconds
	}
	return out, nil
}

// EngineOp maps a roofline catalog operator name to the engine operator
// that runs it (see Predict).
func EngineOp(name string) string {
	if _, ok := roofline.ParseExpertOp(name); ok {
		return OpExperts
	}
	switch name {
	case roofline.OpQK, roofline.OpSoftmax, roofline.OpPV:
		return OpAttention
	case roofline.OpExpertSiLUMul:
		return OpExperts
	}
	return name
}
