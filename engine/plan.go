package engine

import (
	"fmt"
	"strings"

	"github.com/cpubench/bench/kernels/gemm"
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
func (m *Model) planPrecision() string { return m.planPrecisionOn(m.opts.Machine) }

// planPrecisionOn is planPrecision on mach.
func (m *Model) planPrecisionOn(mach *roofline.Machine) string {
	if m.Matrix != nil {
		dt := string(m.Matrix.DType)
		for _, p := range mach.Precisions() {
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

// Precision is what a prediction assumes of the engine's numbers, as the
// run executed them: the roofline dtypes (roofline.DTypeBytes) of the
// linear weights, the activations and the KV cache, which set the bytes
// each operator moves; the precision whose compute ceilings bound the
// linear operators (Ceiling) and the others (VectorCeiling); and the kind
// of roofline target that times the linear operators (Target).
type Precision struct {
	Weight, Act, KV, Ceiling string
	// VectorCeiling is the precision of the ceilings that bound the
	// operators other than the linear ones (norms, RoPE, attention, SiLU:
	// the cores' fp32 kernels whatever the placement); "" is Ceiling.
	VectorCeiling string `json:",omitempty"`
	// Target is the kind of roofline target (roofline.KindCores,
	// KindMatrix, KindMixed) on which the linear operators are timed:
	// the one their backend ran on (a matrix placement's stand-in backend
	// on the cores is timed on the cores, at its precision's ceiling). ""
	// lets roofline.Place choose per operator (placement auto, whose plan
	// is the roofline's).
	Target string `json:",omitempty"`
	// Backends names the backends that ran the linear operators ("" when
	// not known), for the record.
	Backends string `json:",omitempty"`
}

// UniformPrecision is prec for weights, activations, KV cache and
// ceilings (the fp32 engine: "fp32"), each operator on the target the
// roofline places it on.
func UniformPrecision(prec string) Precision {
	return Precision{Weight: prec, Act: prec, KV: prec, Ceiling: prec}
}

// String says what the prediction assumes, e.g. "weights bf16,
// activations fp32, KV cache fp32, bf16 ceilings on the cores target for
// the linear operators (avx512-bf16), fp32 for the others".
func (p Precision) String() string {
	s := fmt.Sprintf("weights %s, activations %s, KV cache %s, %s ceilings", p.Weight, p.Act, p.KV, p.Ceiling)
	if p.Target != "" {
		s += " on the " + p.Target + " target for the linear operators"
	} else if p.VectorCeiling != "" {
		s += " for the linear operators (placed by the roofline)"
	}
	if p.Backends != "" {
		s += " (" + p.Backends + ")"
	}
	if p.VectorCeiling != "" && p.VectorCeiling != p.Ceiling {
		s += ", " + p.VectorCeiling + " for the others"
	}
	return s
}

// PredictionPrecision returns the Precision of what m ran, for
// predictions on mach, and a note saying what it assumes and where the
// machine lacks what ran ("" when nothing needs saying):
//
//   - placement cores: the cores backend's dtype (fp32) for weights and
//     ceilings, on the cores target;
//   - matrix: the matrix backend's weight dtype (bf16: 2 bytes a weight;
//     int8: 1) and ceilings, on the matrix target when the backend runs
//     on a matrix unit, else (the stand-in backend on the cores, e.g.
//     avx512-bf16) on the cores target; fp32 ceilings where mach has
//     none of that dtype, which the note says;
//   - mixed: the matrix backend's dtype as for matrix, on mach's mixed
//     target when it has one, else placed by the roofline (noted);
//   - auto: the precision the plan read (planPrecision), placed by the
//     roofline as the plan was;
//   - quantized weights: the format holding most linear weights ("q8_0"
//     at 34/32 bytes per weight, "q4_0" at 18/32: roofline counts their
//     fp16 block scales), every linear counted at it even where some are
//     held in another form, on the cores target (kernels/quant runs
//     there), bounded by mach's int8 ceilings when it has them (the
//     kernels' dot products are int8; the per-block float scaling is not
//     counted), else by its fp32 ones.
//
// Activations are fp32 (the engine keeps them so; a kernel's int8 or
// bf16 copy of its input is not counted), the KV cache fp32 or bf16
// (Options.KVDType), and the other operators are bounded by the fp32
// ceilings.
func (m *Model) PredictionPrecision(mach *roofline.Machine) (Precision, string) {
	kv := "fp32"
	if m.opts.KVDType == "bf16" {
		kv = "bf16"
	}
	p := Precision{Weight: "fp32", Act: "fp32", KV: kv, Ceiling: "fp32", VectorCeiling: "fp32", Target: roofline.KindCores, Backends: m.Backend.Name}
	if m.Quant != nil {
		wf := strings.TrimSuffix(m.WeightFormat, " (mixed)")
		p.Weight, p.Backends = wf, "kernels/quant "+m.Quant.Name
		if mach != nil && mach.HasCeilings("int8") && coresCeiling(mach, "int8") {
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
	if m.Placement == PlaceCores || m.Matrix == nil {
		p.Weight, p.Ceiling = string(m.Backend.DType), string(m.Backend.DType)
		if p.Ceiling != "fp32" && (mach == nil || !coresCeiling(mach, p.Ceiling)) {
			p.Ceiling = "fp32"
		}
		return p, ""
	}
	dt := string(m.Matrix.DType)
	p.Weight, p.Ceiling, p.Backends = dt, dt, m.Backends()
	var notes []string
	switch m.Placement {
	case PlaceMatrix:
		if m.Matrix.Unit == gemm.MatrixUnit {
			p.Target = roofline.KindMatrix
		} else {
			notes = append(notes, fmt.Sprintf("the matrix target's backend %s runs on the cores: timed on the cores target", m.Matrix.Name))
		}
	case PlaceMixed:
		p.Target = ""
		if mach != nil && hasKind(mach, roofline.KindMixed) {
			p.Target = roofline.KindMixed
		} else if mach != nil {
			notes = append(notes, "the machine has no mixed target: the linear operators are placed by the roofline")
		}
		if dt != "fp32" {
			notes = append(notes, fmt.Sprintf("the cores group's fp32 share of the weights is counted at %s", dt))
		}
	case PlaceAuto:
		p.Target = ""
		if mach != nil {
			p.Ceiling = m.planPrecisionOn(mach)
			p.Weight = p.Ceiling
		}
	}
	if mach != nil && p.Ceiling != "fp32" && !(mach.HasCeilings(p.Ceiling) && coresCeiling(mach, p.Ceiling)) {
		notes = append(notes, fmt.Sprintf("the machine has no %s ceiling: the linear operators are bounded by its fp32 ceilings", p.Ceiling))
		p.Ceiling = "fp32"
	}
	if p.Ceiling == "fp32" && p.Weight == "fp32" && len(notes) == 0 {
		return p, ""
	}
	note := "predictions: " + p.String()
	if len(notes) > 0 {
		note += "; " + strings.Join(notes, "; ")
	}
	return p, note
}

// coresCeiling reports whether mach's cores target has a ceiling for
// prec (roofline.Place refuses a precision the cores lack).
func coresCeiling(mach *roofline.Machine, prec string) bool {
	for _, t := range mach.Targets {
		if t.Kind == roofline.KindCores {
			return t.Ceiling(prec) > 0
		}
	}
	return false
}

// hasKind reports whether mach has a target of kind k.
func hasKind(mach *roofline.Machine, k string) bool {
	_, ok := targetOfKind(mach, k)
	return ok
}

// targetOfKind returns the name of mach's first target of kind k.
func targetOfKind(mach *roofline.Machine, k string) (string, bool) {
	for _, t := range mach.Targets {
		if t.Kind == k {
			return t.Name, true
		}
	}
	return "", false
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

// PredictOpsAs is PredictOps with the dtypes, ceilings and target of p:
// the linear operators bounded by p.Ceiling on the target of kind
// p.Target (the roofline's time on that target where Place chose
// another; Place's choice when mach has none of that kind), the others
// by p.VectorCeiling.
func PredictOpsAs(mach *roofline.Machine, c Config, phase roofline.Phase, B, T, C int, p Precision) (map[string]OpPrediction, error) {
	r := roofline.Request{Phase: phase, Batch: B, Tokens: T, Context: C,
		Weight: p.Weight, Act: p.Act, KV: p.KV, Routing: roofline.Routing{Kind: "uniform"}}
	mach = WithAttentionPlan(mach, c)
	a, err := roofline.Analyze(mach, c.Arch(), r, p.Ceiling)
	if err != nil {
		return nil, err
	}
	vec := a
	if p.VectorCeiling != "" && p.VectorCeiling != p.Ceiling {
		if vec, err = roofline.Analyze(mach, c.Arch(), r, p.VectorCeiling); err != nil {
			return nil, err
		}
	}
	tname, onTarget := "", false
	if p.Target != "" {
		tname, onTarget = targetOfKind(mach, p.Target)
	}
	out := map[string]OpPrediction{}
	add := func(ps, vs []roofline.Placed, k float64) {
		for i, o := range ps {
			tm := o.Time
			if o.Kind != roofline.KindLinear {
				o = vs[i]
				tm = o.Time
			} else if onTarget && o.Target != tname {
				if t, ok := o.Times[tname]; ok {
					tm = t
				}
			}
			name := EngineOp(o.Name)
			q := out[name]
			q.Seconds += tm * k
			q.FLOPs += o.FLOPs * k
			q.Bytes += o.Bytes.Total() * k
			out[name] = q
		}
	}
	for i, l := range a.Layers {
		add(l.Ops, vec.Layers[i].Ops, float64(l.Count))
	}
	add(a.Head, vec.Head, 1)
	return out, nil
}

// WithAttentionPlan is mach with the engine's prefill attention tiling
// for config c on the cores' fp32 backend (AttentionPlan), so that its
// attention is timed by the work the tiles do (roofline.TiledWork): mach
// itself where it has a plan already or no fp32 backend is available, else
// a copy.
func WithAttentionPlan(mach *roofline.Machine, c Config) *roofline.Machine {
	if mach == nil || mach.AttnPlan != nil {
		return mach
	}
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		return mach
	}
	plan := AttentionPlan(be, c.HeadDim, c.Heads/max(c.KVHeads, 1))
	mc := *mach
	mc.AttnPlan = &plan
	return &mc
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
