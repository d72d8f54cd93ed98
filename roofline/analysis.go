package roofline

import (
	"fmt"
	"math"
	"strings"
)

// LayerPlan is the placed operators of one kind of layer.
type LayerPlan struct {
	Kind        string     `json:"kind"`
	Count       int        `json:"count"`
	IdleExperts int        `json:"idle_experts,omitempty"`
	Ops         []Placed   `json:"ops"`
	Totals      PlanTotals `json:"totals"`
}

// TargetInfo is a target's ceiling and ridge for the analysed precision.
type TargetInfo struct {
	Name          string  `json:"name"`
	Kind          string  `json:"kind"`
	CeilingGFLOPS float64 `json:"ceiling_gflops,omitempty"`
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	// Ridge is π/β in FLOP/byte; absent when there is no ceiling.
	Ridge float64 `json:"ridge,omitempty"`
}

// Analysis is the output of `bench roofline`: the machine's targets, every
// operator placed, and totals per layer and per model.
type Analysis struct {
	Machine   string       `json:"machine"`
	ModelName string       `json:"model_name"`
	Precision string       `json:"precision"`
	Request   Request      `json:"request"`
	Targets   []TargetInfo `json:"targets"`
	Roofs     []Roof       `json:"roofs,omitempty"`
	Layers    []LayerPlan  `json:"layers"`
	Head      []Placed     `json:"head"`
	// HeadTotals covers embedding, final norm and LM head.
	HeadTotals PlanTotals `json:"head_totals"`
	// Model is the whole forward pass (prefill) or one decode step.
	Model PlanTotals `json:"model_totals"`
	// WakeUp is the fixed cost of waking the worker pool's parked workers,
	// paid once per forward call by its first parallel operator (the
	// caller runs alone between calls: sampling, the next request), in
	// seconds; included in Model. Absent on machines without fixed costs.
	WakeUp *WakeUp `json:"wake_up,omitempty"`
	// QuantRoof is the weight format's effective-bandwidth roof per core
	// type on the cores target (low-bit GEMV paper Eq. 3, §IV-B), when the
	// machine has γ for the format.
	QuantRoof *QuantRoof `json:"quant_roof,omitempty"`
	Notes     []string   `json:"notes,omitempty"`
}

// WakeUp is the once-per-call wake-up term of an Analysis.
type WakeUp struct {
	// Operator is the first operator of the call that runs on the pool.
	Operator string  `json:"operator"`
	Threads  int     `json:"threads"`
	Seconds  float64 `json:"seconds"`
	Source   string  `json:"source,omitempty"`
}

// Analyze builds the catalog of arch for request r and places it on m at
// precision prec (the activation dtype: the precision matrix work runs in).
func Analyze(m *Machine, arch Arch, r Request, prec string) (*Analysis, error) {
	c, err := BuildCatalog(arch, r)
	if err != nil {
		return nil, err
	}
	a := &Analysis{Machine: m.Name, ModelName: arch.Name, Precision: prec, Request: r, Roofs: m.Roofs}
	a.Notes = append(a.Notes, m.Notes...)
	if !m.HasCeilings(prec) {
		if p := m.Precisions(); len(p) > 0 {
			return nil, fmt.Errorf("machine %s: no compute ceiling for %s (has %s): pick an activation dtype it has", m.Name, prec, strings.Join(p, ", "))
		}
	}
	for _, t := range m.Targets {
		ti := TargetInfo{Name: t.Name, Kind: t.Kind, CeilingGFLOPS: t.Ceiling(prec), BandwidthGBps: t.BandwidthGBps}
		if r := t.Ridge(prec); !math.IsInf(r, 1) {
			ti.Ridge = r
		} else if m.HasCeilings(prec) {
			a.Notes = append(a.Notes, fmt.Sprintf("target %s has no %s ceiling: not used", t.Name, prec))
		}
		a.Targets = append(a.Targets, ti)
	}
	if q, ok := m.byKind(KindCores)[0].QuantRoof(r.Weight); ok {
		a.QuantRoof = &q
	}
	if len(m.byKind(KindMatrix)) == 0 {
		a.Notes = append(a.Notes, "one compute target: no matrix unit in this machine, so no operator is ridge-crossing")
	}
	resident := residentBytes(c)
	// What streams between two calls of an operator on the caller, for
	// its cold call (FixedCosts.ColdCallAt): a layer's weights and KV; the
	// head's final norm after a layer, and its embedding too, although
	// the LM head streams between two of its calls: measured, a decode
	// step's embedding of one row took 1.2 µs a call in the engine (batch
	// 1, 2 layers), about the probe's cold call after 64 MiB (1.3–1.4
	// µs), not after the LM head's 622 MB (2.7–2.8 µs; with its roof
	// time added the model had predicted 3.0 µs). Why it runs warmer than
	// the probe's add after as many bytes was not measured.
	// The first layer's operators of a decode step, after the LM head,
	// run colder still, the earliest most (medians here, 4 layers, 32
	// steps: attn_norm 3.8–4.0 µs in layer 0 against 1.6–2.1 in layers
	// 1–3, qk_norm 3.9–4.6 against 2.4–3.4, the FFN's residual add 2.4
	// against 1.7–2.1): the first operator of the first layer, and it
	// alone, takes its cold call after the LM head's bytes and a
	// layer's (timing every operator of the first layer so put 10 and 18
	// fewer operator rows within ±10% on two fidelity passes; the first
	// alone, replayed over eight passes: see firstOpCold).
	headStream, lastStream := streamedBytes(c.Head), 0.0
	for i, l := range c.Layers {
		ls := streamedBytes(l.Ops)
		lastStream = ls
		ps, err := placeCall(m, prec, l.Ops, resident, ls)
		if err != nil {
			return nil, err
		}
		if i == 0 && r.Phase == Decode && headStream > 0 && l.Count > 0 && len(l.Ops) > 0 {
			first, err := placeCall(m, prec, l.Ops[:1], resident, ls+headStream)
			if err != nil {
				return nil, err
			}
			if firstOpCold(&ps[0], first[0], l.Count) {
				a.Notes = append(a.Notes, fmt.Sprintf("decode: the first layer's %s is timed as the mean of its first call, cold after the LM head's %.0f MB and a layer's %.0f MB streamed (the probe's cold call %.2f µs), and the other %d layers' (%.2f µs after a layer's)",
					ps[0].Name, headStream/1e6, ls/1e6, m.FixedCosts.ColdCallAt(ls+headStream)*1e6, l.Count-1, m.FixedCosts.ColdCallAt(ls)*1e6))
			}
		}
		applyEffectiveBandwidth(m, r.Weight, ps)
		lp := LayerPlan{Kind: l.Kind, Count: l.Count, IdleExperts: l.IdleExperts, Ops: ps, Totals: Total(m, ps, 1)}
		a.Layers = append(a.Layers, lp)
		a.Model.Add(Total(m, ps, float64(l.Count)))
	}
	if a.Head, err = placeCall(m, prec, c.Head, resident, lastStream); err != nil {
		return nil, err
	}
	applyEffectiveBandwidth(m, r.Weight, a.Head)
	a.HeadTotals = Total(m, a.Head, 1)
	a.Model.Add(a.HeadTotals)
	a.WakeUp = wakeUp(m, c)
	if a.WakeUp != nil {
		a.Model.Time += a.WakeUp.Seconds
		for k := range a.Model.Times {
			a.Model.Times[k] += a.WakeUp.Seconds
		}
	}
	return a, nil
}

// firstOpCold sets p (a layer kind's first operator, placed for every
// one of count layers) to the mean of count calls of which one is first's
// (the same operator placed as the first layer's, after the LM head's
// bytes too) and the others its own, on every target, where both are
// bound by cold lines; it reports whether p changed. Replayed
// (scripts/fidreplay) over eight fidelity passes of 48 runs each, noisy
// ones included: 9, 9, 11 and 1 more operator rows within ±10% on four,
// 2 fewer on one, none changed on three (decode attn_norm 1.32–1.59 →
// 1.13–1.26 of its prediction where it changed).
func firstOpCold(p *Placed, first Placed, count int) bool {
	if p.Bound != BoundColdLines || first.Bound != BoundColdLines || first.Time == p.Time || count < 1 {
		return false
	}
	k := float64(count)
	p.Time += (first.Time - p.Time) / k
	for t, v := range p.Times {
		if f, ok := first.Times[t]; ok {
			p.Times[t] = v + (f-v)/k
		}
	}
	return true
}

// streamedBytes is the weights and KV that ops read: what a forward call
// streams through the caches while they run.
func streamedBytes(ops []Operator) float64 {
	t := Sum(ops)
	return t.Bytes.Weights + t.Bytes.KVRead
}

// wakeUp is the wake-up term of one forward call of c on m: the first
// operator in execution order (the head's embedding, then the first
// layer's operators) that makes a pool call pays the wake-up of the
// workers that parked while the caller ran alone between calls
// (kernels/pool: workers spin, then park; the probe's dispatch section
// measures one call after they parked). nil without fixed costs.
func wakeUp(m *Machine, c *Catalog) *WakeUp {
	if m.FixedCosts == nil {
		return nil
	}
	workers := max(m.byKind(KindCores)[0].Workers, 1)
	var order []Operator
	if len(c.Head) > 0 {
		order = append(order, c.Head[0])
	}
	if len(c.Layers) > 0 {
		order = append(order, c.Layers[0].Ops...)
	}
	for _, o := range order {
		n, calls := OpThreads(o, workers)
		if calls == 0 {
			continue
		}
		call, wake := m.FixedCall(n)
		if wake <= call {
			return nil
		}
		return &WakeUp{Operator: o.Name, Threads: n, Seconds: wake - call,
			Source: fmt.Sprintf("%s: the pool's wake-up after parking less one hot call, once per forward call", m.FixedCosts.Source)}
	}
	return nil
}

// SweepVar is the request field a sweep varies.
type SweepVar string

// Sweepable fields.
const (
	SweepBatch   SweepVar = "batch"
	SweepTokens  SweepVar = "tokens"
	SweepContext SweepVar = "context"
)

// Change is one regime change of one operator along a sweep: at value At
// (the first value with the new regime) the operator moves From → To.
type Change struct {
	Operator string `json:"operator"`
	Layer    string `json:"layer"`
	At       int    `json:"at"`
	From     Regime `json:"from"`
	To       Regime `json:"to"`
	FromTgt  string `json:"from_target"`
	ToTgt    string `json:"to_target"`
}

// SweepPoint is one operator at one value of the swept variable.
type SweepPoint struct {
	Value     int     `json:"value"`
	Intensity float64 `json:"intensity"`
	Regime    Regime  `json:"regime"`
	Target    string  `json:"target"`
}

// SweepSeries is one operator across the sweep.
type SweepSeries struct {
	Operator string       `json:"operator"`
	Layer    string       `json:"layer"`
	Points   []SweepPoint `json:"points"`
}

// SweepResult is SMEPilot's Insight 2 (§3.3) made concrete: where each
// operator changes regime as the request shape changes.
type SweepResult struct {
	Var     SweepVar      `json:"var"`
	Values  []int         `json:"values"`
	Targets []TargetInfo  `json:"targets"`
	Series  []SweepSeries `json:"series"`
	Changes []Change      `json:"changes"`
}

// Sweep analyses the request at each value of v and reports each
// operator's regime changes. When the context is not swept it grows with
// the tokens so that context ≥ tokens holds (prefill: context = tokens).
// MoE experts are keyed by expert index, so an expert idle at one value is
// absent there.
func Sweep(m *Machine, arch Arch, base Request, prec string, v SweepVar, values []int) (*SweepResult, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("sweep %s: no values", v)
	}
	res := &SweepResult{Var: v, Values: values}
	idx := map[string]int{}
	for _, x := range values {
		r := base
		switch v {
		case SweepBatch:
			r.Batch = x
		case SweepTokens:
			r.Tokens = x
			if r.Phase == Prefill && base.Context == base.Tokens {
				r.Context = x
			} else if r.Context < x {
				r.Context = x
			}
		case SweepContext:
			r.Context = x
		default:
			return nil, fmt.Errorf("sweep %q: want batch, tokens or context", v)
		}
		a, err := Analyze(m, arch, r, prec)
		if err != nil {
			return nil, fmt.Errorf("sweep %s=%d: %w", v, x, err)
		}
		if res.Targets == nil {
			res.Targets = a.Targets
		}
		add := func(layer string, ps []Placed) {
			for _, p := range ps {
				key := layer + "/" + p.Name
				i, ok := idx[key]
				if !ok {
					i = len(res.Series)
					idx[key] = i
					res.Series = append(res.Series, SweepSeries{Operator: p.Name, Layer: layer})
				}
				res.Series[i].Points = append(res.Series[i].Points, SweepPoint{Value: x, Intensity: p.Intensity, Regime: p.Regime, Target: p.Target})
			}
		}
		for _, l := range a.Layers {
			add(l.Kind, l.Ops)
		}
		add("head", a.Head)
	}
	for _, s := range res.Series {
		for i := 1; i < len(s.Points); i++ {
			p, q := s.Points[i-1], s.Points[i]
			if p.Regime != q.Regime || p.Target != q.Target {
				res.Changes = append(res.Changes, Change{Operator: s.Operator, Layer: s.Layer, At: q.Value,
					From: p.Regime, To: q.Regime, FromTgt: p.Target, ToTgt: q.Target})
			}
		}
	}
	return res, nil
}

// ParseSweep parses "batch=1..64", "tokens=128..4096" or "context=1k..8k"
// (every integer of the range, so change points are exact; a range of more
// than 4096 values doubles from the start instead: 1k, 2k, 4k, …), a range
// with a step, "context=512..8k:512", or a list, "batch=1,8,64", into the
// variable and its values. The end of a range is always included.
func ParseSweep(s string) (SweepVar, []int, error) {
	k, val, ok := strings.Cut(s, "=")
	if !ok {
		return "", nil, fmt.Errorf("sweep %q: want VAR=FROM..TO, VAR=FROM..TO:STEP or VAR=A,B,C", s)
	}
	v := SweepVar(k)
	if v != SweepBatch && v != SweepTokens && v != SweepContext {
		return "", nil, fmt.Errorf("sweep %q: variable %q: want batch, tokens or context", s, k)
	}
	num := func(x string) (int, error) {
		mult := 1
		if strings.HasSuffix(x, "k") {
			mult, x = 1024, strings.TrimSuffix(x, "k")
		}
		var n int
		if _, err := fmt.Sscanf(x, "%d", &n); err != nil || fmt.Sprint(n) != x || n < 1 {
			return 0, fmt.Errorf("sweep %q: %q: want an integer ≥ 1", s, x)
		}
		if n > math.MaxInt/mult {
			return 0, fmt.Errorf("sweep %q: %sk: more than an int holds", s, x)
		}
		return n * mult, nil
	}
	if from, to, ok := strings.Cut(val, ".."); ok {
		step := 0
		if t, st, ok := strings.Cut(to, ":"); ok {
			n, err := num(st)
			if err != nil {
				return "", nil, err
			}
			to, step = t, n
		}
		a, err := num(from)
		if err != nil {
			return "", nil, err
		}
		b, err := num(to)
		if err != nil {
			return "", nil, err
		}
		if b < a {
			return "", nil, fmt.Errorf("sweep %q: end %d < start %d", s, b, a)
		}
		if step == 0 && b-a < 4096 {
			step = 1
		}
		var out []int
		for x := a; x <= b; {
			out = append(out, x)
			// The next value, stopping before it passes b (or
			// overflows).
			if step > 0 && x > b-step || step == 0 && x > b/2 {
				break
			}
			if step > 0 {
				x += step
			} else {
				x *= 2
			}
			if len(out) > 100000 {
				return "", nil, fmt.Errorf("sweep %q: more than 100000 values", s)
			}
		}
		if out[len(out)-1] != b {
			out = append(out, b)
		}
		return v, out, nil
	}
	var out []int
	for _, f := range strings.Split(val, ",") {
		n, err := num(strings.TrimSpace(f))
		if err != nil {
			return "", nil, err
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return "", nil, fmt.Errorf("sweep %q: values must increase", s)
		}
		out = append(out, n)
	}
	return v, out, nil
}

// applyEffectiveBandwidth bounds the cores' time of each linear operator
// whose weights are in a format the cores target has an effective rate for
// (low-bit GEMV paper §III-F, Eqs. 1–3): the weights stream at the rate
// the up-convert sustains, the other bytes at β, so the memory time is
// N_w/rate + (Q − Q_w)/β with N_w the number of weights; where that is
// above the time Place gave, it replaces it and the operator's note says
// so, and its regime becomes UpConvertBound: the rate is below β only
// where B/γ < β on some core. Operators placed elsewhere keep their time.
func applyEffectiveBandwidth(m *Machine, weight string, ps []Placed) {
	cores := m.byKind(KindCores)[0]
	rate := cores.EffectiveGWeightsPerS[weight]
	bpw, err := DTypeBytes(weight)
	if rate <= 0 || err != nil || bpw <= 0 {
		return
	}
	for i := range ps {
		p := &ps[i]
		if p.Kind != KindLinear || p.Bytes.Weights <= 0 {
			continue
		}
		// With per-call terms the operator also pays its calls' fixed cost.
		mem := p.Bytes.Weights/bpw/(rate*1e9) + (p.Bytes.Total()-p.Bytes.Weights)/(cores.BandwidthGBps*1e9) + p.FixedSeconds
		if mem <= p.Times[cores.Name]*(1+1e-9) { // the same roof (memory-bound formats) up to rounding
			continue
		}
		p.Times[cores.Name] = mem
		if p.Target == cores.Name {
			p.Time = mem
			p.Regime = UpConvertBound
			note := fmt.Sprintf("weight roof: the %s GEMV's effective rate, %.3g G weights/s = %.3g GB/s (Σ cores · min(β, B/γ) · f below β: up-convert-bound, low-bit GEMV Eq. 3)", weight, rate, rate*bpw)
			if p.Note != "" {
				note = p.Note + "; " + note
			}
			p.Note = note
		}
	}
}
