package sweep

import (
	"fmt"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/roofline"
)

// The measured/predicted join and the speed checks of bench run: the
// roofline's predicted seconds per (phase, operator), the decode step
// against the memory-roof bound and the prefill GEMMs against the same
// GEMMs run standalone.

// Predict adds the roofline's predicted seconds of every engine
// operator, per phase, for the layers run: B prefills of T tokens, and G
// decode steps of B sequences at contexts T+1..T+G. It returns the
// predicted prefill of one sequence and the mean decode step.
func Predict(m *roofline.Machine, c engine.Config, prec engine.Precision, B, T, G int) (map[[2]string]float64, float64, float64, error) {
	pred := map[[2]string]float64{}
	add := func(phase roofline.Phase, b, tokens, context int, k float64) (float64, error) {
		p, err := engine.PredictOpsAs(m, c, phase, b, tokens, context, prec)
		if err != nil {
			return 0, err
		}
		total := 0.0
		for op, t := range p {
			pred[[2]string{string(phase), op}] += t.Seconds * k
			total += t.Seconds
		}
		return total, nil
	}
	ttft, err := add(roofline.Prefill, 1, T, T, float64(B))
	if err != nil {
		return nil, 0, 0, err
	}
	var dec float64
	for i := 1; i <= G; i++ {
		t, err := add(roofline.Decode, B, 1, T+i, 1)
		if err != nil {
			return nil, 0, 0, err
		}
		dec += t
	}
	if G > 0 {
		dec /= float64(G)
	}
	return pred, ttft, dec, nil
}

// Check is one of the engine's speed checks: a measured time against a
// bound or a standalone run, and their ratio.
type Check struct {
	What      string  `json:"what"`
	MeasuredS float64 `json:"measured_s"`
	RefS      float64 `json:"reference_s"`
	Ratio     float64 `json:"ratio"` // RefS / MeasuredS: 1 is at the bound
	Detail    string  `json:"detail"`
}

// RoofCheck compares the mean decode step with the memory-roof bound:
// the bytes one step must read (every weight once: the embedding rows
// gathered aside; the KV cache at the mean context) over the probed DRAM
// read bandwidth of the cores target. MoE steps read only the routed
// experts; the roofline catalog's byte count (uniform routing) is used,
// with the weights and KV cache at prec's dtypes (q8_0 at 34/32 bytes per
// weight, q4_0 at 18/32).
func RoofCheck(mach *roofline.Machine, c engine.Config, prec engine.Precision, B, T, G int, tpot float64) (Check, bool) {
	cores, ok := mach.Target(roofline.KindCores)
	if !ok || cores.BandwidthGBps <= 0 {
		return Check{}, false
	}
	var bytes float64
	for i := 1; i <= G; i++ {
		r := roofline.Request{Phase: roofline.Decode, Batch: B, Tokens: 1, Context: T + i, Weight: prec.Weight, Act: prec.Act, KV: prec.KV,
			Routing: roofline.Routing{Kind: "uniform"}}
		cat, err := roofline.BuildCatalog(c.Arch(), r)
		if err != nil {
			return Check{}, false
		}
		for _, l := range cat.Layers {
			for _, o := range l.Ops {
				bytes += (o.Bytes.Weights + o.Bytes.KVRead + o.Bytes.KVWrite) * float64(l.Count)
			}
		}
		for _, o := range cat.Head {
			if o.Name != roofline.OpEmbed {
				bytes += o.Bytes.Weights
			}
		}
	}
	bytes /= float64(G)
	bound := bytes / (cores.BandwidthGBps * 1e9)
	return Check{What: "decode step vs memory-roof bound", MeasuredS: tpot, RefS: bound, Ratio: bound / tpot,
		Detail: fmt.Sprintf("bound = %.4g MB (%s weights + KV per step) / %.4g GB/s (%s DRAM read); target ≥ 0.85 for a model larger than the LLC",
			bytes/1e6, prec.Weight, cores.BandwidthGBps, mach.Name)}, true
}

// StandaloneChecks times each prefill GEMM of the first layer run
// standalone (the same packed weights, placement and workers, outside the
// forward pass; ts are the engine's timings of prefills of T tokens) and
// compares the engine's per-call time with it.
func StandaloneChecks(m *engine.Model, ts []engine.Timing, T int) ([]Check, error) {
	var checks []Check
	for _, op := range []string{engine.OpQProj, engine.OpOProj, engine.OpGateProj, engine.OpDownProj} {
		var in float64
		calls := 0
		for _, t := range ts {
			if t.Phase == roofline.Prefill && t.Op == op && t.Layer == 0 {
				in, calls = t.Seconds, t.Calls
			}
		}
		if calls == 0 {
			continue
		}
		alone, err := m.TimeLinear(0, op, T, 5)
		if err != nil {
			return checks, err
		}
		per := in / float64(calls)
		checks = append(checks, Check{What: "prefill " + op + " (layer 0) vs standalone GEMM", MeasuredS: per, RefS: alone,
			Ratio: alone / per, Detail: fmt.Sprintf("standalone: median of 5 runs of the same M=%d GEMM on the same workers; target ≥ 0.85", T)})
	}
	return checks, nil
}
