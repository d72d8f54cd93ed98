package roofline

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/internal/split"
)

// Regime is where an operator sits on the multi-ceiling roofline
// (SMEPilot §3.2, Fig. 2).
type Regime string

// Regimes.
const (
	// MemoryBound: I below the cores' ridge point; memory-bound on every target.
	MemoryBound Regime = "memory-bound"
	// RidgeCrossing: compute-bound on the cores, memory-bound on a matrix unit.
	RidgeCrossing Regime = "ridge-crossing"
	// ComputeBound: above every target's ridge point.
	ComputeBound Regime = "compute-bound"
	// NonLinear: softmax, norms, activations; always on the cores.
	NonLinear Regime = "non-linear"
	// NoCeiling: the machine has no compute ceiling for the precision, so
	// only the memory roof bounds the operator.
	NoCeiling Regime = "no-ceiling"
)

// Classify places arithmetic intensity I (FLOP/byte) in a regime for
// precision prec (SMEPilot §3.2): below the cores' ridge it is
// memory-bound; at or above the largest ridge of the cores and matrix
// targets it is compute-bound on all targets; in between it is
// ridge-crossing. A machine without a matrix unit has only the first and
// last regimes. Targets without a ceiling for prec are ignored; if the cores
// have none the regime is NoCeiling.
func Classify(m *Machine, prec string, intensity float64) Regime {
	cores := m.byKind(KindCores)[0]
	low := cores.Ridge(prec)
	if math.IsInf(low, 1) {
		return NoCeiling
	}
	if intensity < low {
		return MemoryBound
	}
	high := low
	for _, t := range m.byKind(KindMatrix) {
		if r := t.Ridge(prec); !math.IsInf(r, 1) && r > high {
			high = r
		}
	}
	if intensity < high {
		return RidgeCrossing
	}
	return ComputeBound
}

// Split is the Eq. 1 partition of one operator's output between the matrix
// and the cores components of a mixed target (SMEPilot §4.1, §4.4).
type Split struct {
	// Dim is "M" (token rows) or "N" (output channels): the larger output
	// extent (§4.1).
	Dim    string `json:"dim"`
	Extent int    `json:"extent"`
	// Align is the least common multiple of both components' tile sizes
	// along Dim; split points are multiples of Align (or Extent).
	Align int `json:"align"`
	// Ideal is the Eq. 1 fraction f = P_matrix / (P_matrix + P_cores).
	Ideal float64 `json:"ideal"`
	// Matrix and Cores are the rows (or columns) given to each side.
	Matrix       int    `json:"matrix"`
	Cores        int    `json:"cores"`
	MatrixTarget string `json:"matrix_target"`
	CoresTarget  string `json:"cores_target"`
}

// SplitEq1 computes SMEPilot Eq. 1, f = P_matrix / (P_matrix + P_cores),
// for an output extent of `extent` rows and rounds the ideal split point
// f·extent to a boundary aligned with both kernels' tiles (multiples of
// lcm(alignMatrix, alignCores), or the extent itself, which ends in a
// partial tile). Of the aligned points just below and above the ideal it
// keeps the one that minimizes the predicted max(matrix, cores) completion
// time, assuming work spreads evenly over the extent; ties go to the point
// nearer the ideal, then to the lower one (§4.4). It returns the rows given
// to the matrix side. Tile sizes ≤ 0 count as 1. It is split.Eq1, which
// kernels/pool uses too.
func SplitEq1(extent, alignMatrix, alignCores int, pMatrix, pCores float64) (matrixRows int, ideal float64, align int) {
	return split.Eq1(extent, alignMatrix, alignCores, pMatrix, pCores)
}

// Placed is one operator with its regime, the roofline time on every
// target, and the chosen plan.
type Placed struct {
	Operator
	Intensity float64 `json:"intensity"`
	Regime    Regime  `json:"regime"`
	// Target is the chosen target's name.
	Target string `json:"target"`
	// Times are the roofline times max(F/π_t, Q/β_t) in seconds, by target;
	// targets without a ceiling for the precision are absent (when others
	// have one).
	Times map[string]float64 `json:"times_s"`
	// Time is the predicted time of the plan in seconds.
	Time  float64 `json:"time_s"`
	Split *Split  `json:"split,omitempty"`
	Note  string  `json:"note,omitempty"`
	// The per-call terms (calls.go), set only on machines that have them
	// (level roofs or fixed costs): Threads run the operator on the cores,
	// in Calls parallel calls on the worker pool costing FixedSeconds in
	// all (included in Time and Times), and Roof is the memory level that
	// moves most of its bytes ("L1", "L2", "L3", "DRAM"; "β" without level
	// roofs).
	Threads      int     `json:"threads,omitempty"`
	Calls        int     `json:"calls,omitempty"`
	FixedSeconds float64 `json:"fixed_s,omitempty"`
	Roof         string  `json:"roof,omitempty"`
	// Bound is what bounds the cores' time on a machine with per-call
	// terms: Roof when the memory term is the max; when the FLOP ceiling
	// or the non-linear rate is, BoundCompute followed, on a machine with
	// level roofs, by "/" and the level holding the activations
	// ("compute/L2", "compute/DRAM"); the level a calibration class is
	// keyed by (calibration.go).
	Bound string `json:"bound,omitempty"`
	// Rate says which measured rate replaced the single ceiling or roof
	// in the cores' time, when one did: "… GFLOP/s, measured attained
	// GEMM, this machine (…)" for a linear operator's compute term,
	// "… GB/s, measured attained GEMV weight bandwidth, this machine (…)"
	// for a GEMV's DRAM-resident weights (gemmtable.go); "" otherwise.
	Rate string `json:"rate,omitempty"`
}

// Place classifies every operator and chooses its target (SMEPilot §3.2,
// §3.3, §4.4):
//
//   - non-linear operators → cores, timed max(Q/β, elems/nonlinear rate,
//     F/π) with the machine's non-linear throughput where known;
//   - memory-bound → cores;
//   - ridge-crossing → the matrix target with the least time, alone;
//   - compute-bound → the mixed target, split by Eq. 1 rounded to tiles
//     (SplitEq1); when rounding gives one side nothing, that side's
//     component alone. Without a mixed target, the fastest target.
//
// A mixed target's time is max(s·F/(E·P_m), (E−s)·F/(E·P_c), Q/β_mixed),
// where the components' throughputs are scaled by η = π_mixed/(π_m + π_c)
// so that the ideal split reaches exactly the measured mixed ceiling. MoE
// experts are ordinary operators here, so each is placed by its own routed
// token count.
//
// On a machine with per-call terms (level roofs or fixed costs: calls.go)
// the cores' time of every operator is callTime's — the fixed cost of its
// pool calls plus the roofline max at the roofs of the levels holding its
// bytes, at the threads that run it — and other targets add the fixed cost
// of their calls at their workers. Place treats ops as one forward call
// repeated: their weights and KV reads are cache-resident when all of them
// fit a level (PlaceCall takes that footprint explicitly).
func Place(m *Machine, prec string, ops []Operator) ([]Placed, error) {
	t := Sum(ops)
	return PlaceCall(m, prec, ops, t.Bytes.Weights+t.Bytes.KVRead)
}

// PlaceCall is Place with the bytes of weights and KV that a forward call
// reads in all (resident; they are cache-resident for an operator only
// when all of them fit a level, since each is read once per call).
func PlaceCall(m *Machine, prec string, ops []Operator, resident float64) ([]Placed, error) {
	return placeCall(m, prec, ops, resident, 0)
}

// placeCall is PlaceCall with streamed, the bytes of other data a forward
// call streams through the caches between two calls of each operator of
// ops (FixedCosts.ColdCallAt); 0: not known (the probe's main cold call).
func placeCall(m *Machine, prec string, ops []Operator, resident, streamed float64) ([]Placed, error) {
	if err := m.Validate(m.Name); err != nil {
		return nil, err
	}
	if m.HasCeilings(prec) {
		if m.byKind(KindCores)[0].Ceiling(prec) <= 0 {
			return nil, fmt.Errorf("machine %s: the cores have no %s ceiling (ceilings for all targets: %v)", m.Name, prec, m.Precisions())
		}
	}
	cores := m.byKind(KindCores)[0]
	out := make([]Placed, 0, len(ops))
	attn := "" // the bound of the last QKᵀ, for its softmax and P·V
	for _, o := range ops {
		p := Placed{Operator: o, Intensity: o.Intensity(), Times: map[string]float64{}}
		any := m.HasCeilings(prec)
		calls := m.callModel()
		for _, t := range m.Targets {
			if any && t.Ceiling(prec) <= 0 {
				continue
			}
			switch {
			case calls && t.Name == cores.Name:
				p.Times[t.Name] = m.callTime(cores, prec, o, resident, streamed, &p)
			case calls:
				_, nc := OpThreads(o, max(t.Workers, cores.Workers, 1))
				c, _ := m.FixedCall(max(t.Workers, cores.Workers, 1))
				p.Times[t.Name] = t.Time(prec, o.FLOPs, o.Bytes.Total()) + float64(nc)*c
			default:
				p.Times[t.Name] = t.Time(prec, o.FLOPs, o.Bytes.Total())
			}
		}
		switch {
		case o.Kind == KindNonlinear:
			p.Regime, p.Target = NonLinear, cores.Name
			if calls {
				p.Time = m.callTime(cores, prec, o, resident, streamed, &p)
			} else {
				p.Time = cores.Time(prec, o.FLOPs, o.Bytes.Total())
			}
			if g := m.nonlinearRate(o); g > 0 {
				if !calls {
					p.Time = math.Max(p.Time, o.Elems/(g*1e9))
				}
			} else {
				p.Note = "no non-linear throughput: memory roof only"
			}
			// Non-linear work only runs on the cores; other targets' times
			// would suggest a choice that does not exist.
			p.Times = map[string]float64{cores.Name: p.Time}
		default:
			p.Regime = Classify(m, prec, p.Intensity)
			switch p.Regime {
			case NoCeiling, MemoryBound:
				p.Target = cores.Name
			case RidgeCrossing:
				p.Target = fastest(m, p.Times, KindMatrix)
			case ComputeBound:
				if mixed := fastest(m, p.Times, KindMixed); mixed != "" {
					mt, _ := m.Target(mixed)
					p.Target = mixed
					p.Split, p.Time = splitMixed(m, mt, prec, o)
					if calls {
						_, nc := OpThreads(o, max(mt.Workers, cores.Workers, 1))
						c, _ := m.FixedCall(max(mt.Workers, cores.Workers, 1))
						p.Time += float64(nc) * c
					}
					if p.Split.Matrix == 0 {
						p.Target, p.Note = p.Split.CoresTarget, "Eq. 1 rounding leaves the matrix side no tile"
					} else if p.Split.Cores == 0 {
						p.Target, p.Note = p.Split.MatrixTarget, "Eq. 1 rounding leaves the cores no tile"
					}
					if p.Target != mixed {
						p.Split = nil
						p.Time = p.Times[p.Target]
					}
				} else {
					p.Target = fastest(m, p.Times, "")
				}
			}
			if p.Time == 0 {
				p.Time = p.Times[p.Target]
			}
		}
		if p.Name == OpQK {
			attn = p.Bound
		}
		m.calibrate(&p, attn)
		out = append(out, p)
	}
	return out, nil
}

// fastest returns the target of the kind ("" = any) with the least time.
func fastest(m *Machine, times map[string]float64, kind string) string {
	best, bt := "", math.Inf(1)
	for _, t := range m.Targets {
		tm, ok := times[t.Name]
		if !ok || (kind != "" && t.Kind != kind) {
			continue
		}
		if tm < bt {
			best, bt = t.Name, tm
		}
	}
	return best
}

// splitMixed applies SplitEq1 to operator o on mixed target mt.
func splitMixed(m *Machine, mt Target, prec string, o Operator) (*Split, float64) {
	var mx, cr Target
	for _, c := range mt.Components {
		t, _ := m.Target(c)
		if t.Kind == KindMatrix {
			mx = t
		} else {
			cr = t
		}
	}
	pm, pc := mx.Ceiling(prec), cr.Ceiling(prec)
	eta := 1.0
	if pmix := mt.Ceiling(prec); pmix > 0 && pm+pc > 0 {
		eta = pmix / (pm + pc)
	}
	pm, pc = pm*eta, pc*eta
	s := &Split{Dim: "M", Extent: o.M, MatrixTarget: mx.Name, CoresTarget: cr.Name}
	am, ac := mx.Tile.M, cr.Tile.M
	if o.N > o.M {
		s.Dim, s.Extent, am, ac = "N", o.N, mx.Tile.N, cr.Tile.N
	}
	s.Matrix, s.Ideal, s.Align = SplitEq1(s.Extent, am, ac, pm, pc)
	s.Cores = s.Extent - s.Matrix
	E := float64(s.Extent)
	t := math.Max(float64(s.Matrix)/E*o.FLOPs/(pm*1e9), float64(s.Cores)/E*o.FLOPs/(pc*1e9))
	t = math.Max(t, o.Bytes.Total()/(mt.BandwidthGBps*1e9))
	return s, t
}

// PlanTotals sums a placed operator list: FLOPs, bytes, the time on each
// target if every operator ran there (non-linear operators always on the
// cores), and the time of the plan. Times add: operators run one after
// another.
type PlanTotals struct {
	FLOPs float64            `json:"flops"`
	Bytes float64            `json:"bytes"`
	Times map[string]float64 `json:"times_s"`
	Time  float64            `json:"time_s"`
}

// Total sums placed operators, each counted k times.
func Total(m *Machine, ps []Placed, k float64) PlanTotals {
	t := PlanTotals{Times: map[string]float64{}}
	cores := m.byKind(KindCores)[0].Name
	missing := map[string]bool{}
	for _, p := range ps {
		t.FLOPs += k * p.FLOPs
		t.Bytes += k * p.Bytes.Total()
		t.Time += k * p.Time
		for _, tg := range m.Targets {
			tm, ok := p.Times[tg.Name]
			if !ok && p.Kind == KindNonlinear {
				tm, ok = p.Times[cores]
			}
			if !ok {
				missing[tg.Name] = true
			}
			t.Times[tg.Name] += k * tm
		}
	}
	for name := range missing {
		delete(t.Times, name) // the target cannot run every operator
	}
	return t
}

// Add accumulates o into t. A target missing from either side (it cannot
// run some operator) is missing from the sum.
func (t *PlanTotals) Add(o PlanTotals) {
	fresh := t.Times == nil
	t.FLOPs += o.FLOPs
	t.Bytes += o.Bytes
	t.Time += o.Time
	if fresh {
		t.Times = map[string]float64{}
		for k, v := range o.Times {
			t.Times[k] = v
		}
		return
	}
	for k := range t.Times {
		v, ok := o.Times[k]
		if !ok {
			delete(t.Times, k)
			continue
		}
		t.Times[k] += v
	}
}
