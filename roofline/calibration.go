package roofline

import (
	"fmt"
	"math"
	"strings"

	"github.com/cpubench/bench/results"
)

// Operator classes of the calibration (issue #16 part 2): the groups of
// operators that share one efficiency factor and one fixed cost.
const (
	ClassGEMM      = "gemm"      // a linear of M > GEMVMaxRows rows
	ClassGEMV      = "gemv"      // a linear of M ≤ GEMVMaxRows rows
	ClassAttention = "attention" // qk, softmax and pv of the attention
	ClassNorm      = "norm"      // every RMSNorm
	ClassResidual  = "residual"  // residual adds
	ClassRoPE      = "rope"      // rotary embedding
	ClassSoftmax   = "softmax"   // a softmax outside the attention (the MoE router's)
	ClassSiLUMul   = "silu_mul"  // SiLU(gate)·up
	ClassKVWrite   = "kv_write"  // K and V rows stored into the KV cache
)

// GEMVMaxRows is the largest M of a linear that ClassOf calls a GEMV.
const GEMVMaxRows = 8

// ClassOf returns the calibration class of o, "" for an operator no class
// covers (embed, the MoE combine). (An embed class timed on a gather from a
// 128 MiB table put the engine's prompt embedding at 1.5× and its decode
// embedding at 0.4–0.8× its calibrated time, worse than uncalibrated.)
func ClassOf(o Operator) string {
	if _, ok := ParseExpertOp(o.Name); ok {
		if o.RoutedTokens > 0 && o.RoutedTokens <= GEMVMaxRows {
			return ClassGEMV
		}
		return ClassGEMM
	}
	switch o.Name {
	case OpQK, OpSoftmax, OpPV, OpAttention, OpAttn:
		return ClassAttention
	case OpAttnNorm, OpFFNNorm, OpFinalNorm, OpQKNorm:
		return ClassNorm
	case OpAttnResidual, OpFFNResidual:
		return ClassResidual
	case OpRoPE:
		return ClassRoPE
	case OpRouterTopK:
		return ClassSoftmax
	case OpSiLUMul, OpExpertSiLUMul:
		return ClassSiLUMul
	case OpKVWrite:
		return ClassKVWrite
	}
	if o.Kind == KindLinear {
		if o.M > 0 && o.M <= GEMVMaxRows {
			return ClassGEMV
		}
		return ClassGEMM
	}
	return ""
}

// ClassParams are one class's calibrated parameters: a prediction t of the
// uncalibrated model becomes FixedSeconds + t/Efficiency, plus RowSeconds
// per row of the call (CalibrationRows).
type ClassParams struct {
	Efficiency   float64 `json:"efficiency"`
	FixedSeconds float64 `json:"fixed_seconds"`
	// RowSeconds is the class's cost per row (seconds, ≥ 0; 0 where the
	// fit kept no row term), the work a term in t cannot follow: an
	// attention's per query row and head (on the prefill path scaling and
	// packing Q and dividing the output around the tiles, on decode's the
	// per-job setup), which does not grow with the context as t does; a
	// row-wise vector operator's per row (RMSNorm's reduction and scale,
	// RoPE's per head, the loop around each row), which t, proportional to
	// rows × width, spreads over the width (measured on the 2-core Zen 5
	// VM: RMSNorm over 16 rows took 0.90 µs at width 512 and 2.98 at 3072,
	// about 30 ns a row beside 0.05 ns an element).
	RowSeconds float64 `json:"row_seconds,omitempty"`
}

// CalibrationRows is the rows a calibration's per-row cost
// (ClassParams.RowSeconds) multiplies for operator o: an attention's query
// rows over its heads on its QKᵀ (Operator.QueryRows), a row-wise vector
// operator's rows (Operator.Rows: RMSNorm, residual, SiLU·up, the KV-cache
// write, the router's softmax) or its row kernel's calls where they differ
// (Operator.RowCalls: RoPE's, one per token's q and k rows; measured on
// the 2-core Zen 5 VM: 16 tokens of 4 heads took 0.51 µs, of 24 heads
// 1.39, 64 tokens of 4 heads 1.90: about 21 ns a call beside 2.8 ns a
// head), 0 for the others.
func CalibrationRows(o Operator) int {
	if o.QueryRows > 0 {
		return o.QueryRows
	}
	if o.RowCalls > 0 {
		return o.RowCalls
	}
	switch ClassOf(o) {
	case ClassNorm, ClassResidual, ClassRoPE, ClassSiLUMul, ClassKVWrite, ClassSoftmax:
		return o.Rows
	}
	return 0
}

// Apply returns the calibrated time of an uncalibrated prediction t of a
// call of rows rows (CalibrationRows), in seconds; fixed adds the class's
// fixed and per-row costs
// (false for the parts of one call that are predicted apart: softmax and
// pv of an attention, whose call is counted on qk).
func (c ClassParams) Apply(t float64, rows int, fixed bool) float64 {
	t /= c.Efficiency
	if fixed {
		t += c.FixedSeconds + c.RowSeconds*float64(rows)
	}
	return t
}

// CalibrationKey names one set of parameters: an operator class at the
// thread count that runs the operator (0: any thread count) and the level
// that bounds its roofline time (Placed.Bound: "L1", "L2", "L3", "DRAM",
// or BoundCompute and the activations' level, "compute/L3"; "": any
// level, calibrations of schema v1).
type CalibrationKey struct {
	Class   string `json:"class"`
	Threads int    `json:"threads,omitempty"`
	Level   string `json:"level,omitempty"`
}

// CalibrationLevel is the level a calibration key of class takes for an
// operator bound by bound (Placed.Bound): bound itself, except that a
// compute-bound attention is keyed "compute" whatever level beyond the L1
// holds its activations (its scores grow with the context through every
// level, and its kernel's rate is not a GEMM's: one key keeps enough
// shapes to fit). One whose activations the L1 holds (a short decode's
// vector path, a few µs a call) keeps "compute/L1": its per-call cost is
// not a prefill's (measured on the 2-core Zen 5 VM: decode over 128
// positions on one thread took 12.5 µs, where one key with prefill's
// fixed cost of 12.9 µs a call put it at 18.5).
func CalibrationLevel(class, bound string) string {
	if class == ClassAttention && strings.HasPrefix(bound, BoundCompute) && bound != BoundCompute+"/L1" {
		return BoundCompute
	}
	return bound
}

// BoundCompute begins Placed.Bound of an operator whose roofline time is
// its compute term (F/π or the non-linear rate), not a memory level's.
const BoundCompute = "compute"

// BoundColdLines is the bound of a decode-sized vector operator run on
// the caller between GEMVs that stream DRAM-resident weights (calls.go):
// its lines, code and translations evicted since its last call; the
// calibration's cold vector shapes are fitted under it.
const BoundColdLines = "cold lines"

// Calibration is the per-class parameters a machine applies to its
// predictions (a profile's calibration section).
type Calibration struct {
	Params map[CalibrationKey]ClassParams `json:"-"`
	Source string                         `json:"source,omitempty"`
}

// For returns the parameters of o's class at threads threads bound by
// level (Placed.Bound), and whether there are any: the class's entry at
// that thread count and level, else at that level for any thread count;
// else an entry without level (schema v1) at that thread count, else at
// any. A class fitted at other levels only is not applied (uncalibrated):
// a fit on cache-resident shapes says nothing of DRAM-sized ones.
func (c *Calibration) For(o Operator, threads int, level string) (ClassParams, bool) {
	if c == nil {
		return ClassParams{}, false
	}
	class := ClassOf(o)
	for _, k := range []CalibrationKey{{class, threads, level}, {class, 0, level}, {class, threads, ""}, {Class: class}} {
		if p, ok := c.Params[k]; ok {
			return p, true
		}
	}
	return ClassParams{}, false
}

// calibrate applies m's calibration to p (Time and every target's time):
// operators of an uncalibrated class, or of a class not fitted at the
// level that bounds them, are unchanged. The thread count is the one that
// runs the operator on the cores (OpThreads); the level is p.Bound, except
// for the softmax and P·V of an attention, which take attn, the bound of
// their call's QKᵀ (the attention class is fitted on the three together).
func (m *Machine) calibrate(p *Placed, attn string) {
	if m.Calibration == nil {
		return
	}
	n := p.Threads
	if n == 0 {
		n, _ = OpThreads(p.Operator, max(m.byKind(KindCores)[0].Workers, 1))
	}
	level := p.Bound
	if (p.Name == OpSoftmax || p.Name == OpPV) && attn != "" {
		level = attn
	}
	if level == BoundColdLines {
		// A cold call's key is the workers whose streams evicted its
		// lines (calibrate's cold shapes), not the one thread running it.
		n = max(m.byKind(KindCores)[0].Workers, 1)
	}
	c, ok := m.Calibration.For(p.Operator, n, CalibrationLevel(ClassOf(p.Operator), level))
	if !ok {
		return
	}
	fixed := p.Name != OpSoftmax && p.Name != OpPV
	rows := CalibrationRows(p.Operator)
	p.Time = c.Apply(p.Time, rows, fixed)
	for k, t := range p.Times {
		p.Times[k] = c.Apply(t, rows, fixed)
	}
}

// addCalibration copies a profile's calibration section (validated by
// results) into m.
func addCalibration(m *Machine, p *results.Profile, name string) error {
	c := p.Calibration
	if c == nil {
		return nil
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(c.Classes) == 0 {
		return nil
	}
	m.Calibration = &Calibration{Params: map[CalibrationKey]ClassParams{},
		Source: fmt.Sprintf("%s: calibration section (%s, %s)", name, c.Schema, c.CreatedAt)}
	var names []string
	anyLevel := false
	for _, k := range c.Classes {
		m.Calibration.Params[CalibrationKey{k.Class, k.Threads, k.Level}] = ClassParams{Efficiency: k.Efficiency, FixedSeconds: k.FixedSeconds, RowSeconds: k.RowSeconds}
		at := ""
		if k.Threads > 0 {
			at = fmt.Sprintf("@%dt", k.Threads)
		}
		if k.Level != "" {
			at += "@" + k.Level
		} else {
			anyLevel = true
		}
		row := ""
		if k.RowSeconds > 0 {
			row = fmt.Sprintf(" per query row %.3g µs", 1e6*k.RowSeconds)
		}
		names = append(names, fmt.Sprintf("%s%s efficiency %.2f fixed %.3g µs%s", k.Class, at, k.Efficiency, 1e6*k.FixedSeconds, row))
	}
	note := fmt.Sprintf("calibrated per operator class, threads and bounding level (bench calibrate; t = fixed + t_roofline/efficiency, + per query row × rows for an attention): %s; other classes, and classes at a level they were not fitted at, uncalibrated", strings.Join(names, ", "))
	if anyLevel {
		note += "; the entries without a level (schema " + results.CalibrationSchemaV1 + ") apply at every level: rerun bench calibrate to fit per level"
	}
	m.Notes = append(m.Notes, note)
	return nil
}

// LinearOp is the catalog's fp32 linear operator name of M×K · K×N
// (weights N·K, activations in and out, 4 bytes each): what `bench
// calibrate` predicts a measured GEMM with.
func LinearOp(name string, m, n, k int) Operator { return linear(name, m, n, k, 4, 4) }

// VectorOp is the catalog's fp32 row-wise vector operator name over rows ×
// width elements (the FLOPs per element and the inputs the catalog counts
// for it): attn_norm, ffn_norm, final_norm, qk_norm, rope, attn_residual,
// ffn_residual, silu_mul, router_softmax_topk, and kv_write with the
// buffers the engine moves (Operands: the cache's lines from DRAM). Error:
// another name.
func VectorOp(name string, rows, width int) (Operator, error) {
	if rows < 1 || width < 1 {
		return Operator{}, fmt.Errorf("vector operator %s: %d×%d: rows and width must be ≥ 1", name, rows, width)
	}
	switch name {
	case OpAttnNorm, OpFFNNorm, OpFinalNorm, OpQKNorm:
		return vector(name, KindNonlinear, rows, width, rmsnormFLOPs, 1, 4), nil
	case OpRoPE:
		return vector(name, KindNonlinear, rows, width, ropeFLOPs, 1, 4), nil
	case OpAttnResidual, OpFFNResidual:
		return vector(name, KindElementwise, rows, width, residualFLOPs, 2, 4), nil
	case OpSiLUMul:
		return vector(name, KindNonlinear, rows, width, siluMulFLOPs, 2, 4), nil
	case OpRouterTopK:
		return vector(name, KindNonlinear, rows, width, softmaxFLOPs, 1, 4), nil
	case OpKVWrite:
		// As the catalog's (rows: positions × 2 × KV heads of width head
		// dims), with the engine's buffers: k and v just written, the
		// cache's lines long evicted (the engine writes positions it has
		// not touched since its last pass over the cache).
		o := vector(name, KindElementwise, rows, width, 0, 1, 4)
		o.Bytes.ActOut, o.Bytes.KVWrite = 0, o.Elems*4
		o.Operands = []Operand{{Buffer: "k", Bytes: o.Bytes.ActIn / 2}, {Buffer: "v", Bytes: o.Bytes.ActIn / 2},
			{Buffer: "kv", Bytes: o.Bytes.KVWrite, Write: true, Distance: math.Inf(1)}}
		return o, nil
	}
	return Operator{}, fmt.Errorf("vector operator %q: not a row-wise vector operator of the catalog", name)
}

// CoresWorkers is the workers of m's cores target (at least 1): the
// thread count its predictions are for.
func (m *Machine) CoresWorkers() int {
	if c := m.byKind(KindCores); len(c) > 0 {
		return max(c[0].Workers, 1)
	}
	return 1
}

// HasMatrixUnit reports whether m has a target of kind matrix (a matrix
// unit's: SME, AMX), which AtThreads drops.
func (m *Machine) HasMatrixUnit() bool { return len(m.byKind(KindMatrix)) > 0 }

// AtThreads returns a copy of m whose cores target runs on threads
// workers: its compute ceilings and the non-linear rate scaled by
// threads/workers, the other targets dropped (calibration measures the
// cores alone). The level roofs and fixed costs are per thread count
// already.
func (m *Machine) AtThreads(threads int) *Machine {
	c := *m
	cores := m.byKind(KindCores)[0]
	w := max(cores.Workers, 1)
	share := float64(threads) / float64(w)
	cores.Workers = threads
	cores.CeilingsGFLOPS = map[string]float64{}
	for k, v := range m.byKind(KindCores)[0].CeilingsGFLOPS {
		cores.CeilingsGFLOPS[k] = v * share
	}
	c.Targets = []Target{cores}
	c.Nonlinear = m.Nonlinear.scaled(share)
	return &c
}

// scaled is a copy of n with every rate × f (nil for nil).
func (n *Nonlinear) scaled(f float64) *Nonlinear {
	if n == nil {
		return nil
	}
	nl := *n
	nl.GElemsPerS *= f
	nl.Rates = append([]NonlinearRate(nil), nl.Rates...)
	for i := range nl.Rates {
		nl.Rates[i].GElemsPerS *= f
	}
	return &nl
}
