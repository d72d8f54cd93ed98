package roofline

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/cpubench/bench/results"
)

// MachineSchemaV1 is the schema tag of a hand-written or published machine
// file. The format is documented on Machine; a minimal file is
//
//	{"schema": "bench.machine/v1", "name": "my-cpu",
//	 "targets": [{"name": "cores", "kind": "cores",
//	              "ceilings_gflops": {"fp32": 1200, "fp16": 2400},
//	              "bandwidth_gbps": 90, "tile": {"m": 8, "n": 16}}],
//	 "roofs": [{"level": "L2", "gbps": 900}],
//	 "nonlinear": {"gelems_per_s": 20}}
const MachineSchemaV1 = "bench.machine/v1"

// MachineSchemaV2 adds per-core-type up-convert figures to the cores
// target (core_types, bytes_per_vector, gb_bytes: the low-bit GEMV paper's
// γ_P and γ_E, §III-F). It is a new version because machine files are read
// strictly (unknown keys are errors), so a v1 reader would reject them;
// ParseMachine reads both. See docs/profile-schema.md.
const MachineSchemaV2 = "bench.machine/v2"

// MachineSchemaV3 adds the per-call terms of issue #16: level_roofs (the
// read roof of every memory level at every thread count measured, with the
// capacity those threads hold) and fixed_costs (the worker pool's cost per
// parallel call). A new version because machine files are read strictly;
// ParseMachine reads v1, v2 and v3, and rejects v3 keys in older files.
// FromProfile builds a v3 machine.
const MachineSchemaV3 = "bench.machine/v3"

// Target kinds. A machine may have any number of targets; placement uses the
// kinds to apply SMEPilot's rules (§3.2): memory-bound work goes to the
// "cores" target, ridge-crossing work to the best "matrix" target, and
// compute-bound work to a "mixed" target when there is one.
const (
	KindCores  = "cores"
	KindMatrix = "matrix"
	KindMixed  = "mixed"
)

// Tile is the native output tile of a target's GEMM kernel, in rows (M,
// tokens) and columns (N, output channels). Zero means 1 (no alignment).
type Tile struct {
	M int `json:"m,omitempty"`
	N int `json:"n,omitempty"`
}

// Target is one execution target t of the multi-ceiling roofline
// (SMEPilot §3.2): compute ceilings π_t per precision and an attainable
// memory bandwidth β_t. All targets share one memory system, so the
// bandwidth of a mixed target is measured on its own, never the sum of its
// components' (SMEPilot §3.1: "adding SME raises the compute ceiling but
// does not raise the memory-bandwidth roof").
type Target struct {
	Name string `json:"name"`
	// Kind is "cores", "matrix" or "mixed".
	Kind string `json:"kind"`
	// Workers is the number of threads the figures were measured with (0 = unknown).
	Workers int `json:"workers,omitempty"`
	// CeilingsGFLOPS maps a precision ("fp32", "fp16", "bf16", "int8") to π_t in GFLOP/s.
	CeilingsGFLOPS map[string]float64 `json:"ceilings_gflops,omitempty"`
	// BandwidthGBps is β_t, the read bandwidth from the memory level that
	// holds the weights (DRAM unless stated), in GB/s.
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	// EffectiveGWeightsPerS maps a quantized weight format ("q8_0",
	// "q4_0", "int2", "int1") to the weights per second (1e9) its GEMV
	// streams at the low-bit GEMV paper's effective bandwidth at Workers
	// threads, Workers · min(β, B/γ) (§III-F, Eq. 3) over the packed bytes
	// per weight: the weight roof of a GEMV whose up-convert, not DRAM, may
	// be the limit. In weights, not bytes, because the catalog's bytes per
	// weight of a format need not count its scales as the kernel's do.
	EffectiveGWeightsPerS map[string]float64 `json:"effective_gweights_per_s,omitempty"`
	// CoreTypes are the kinds of core of a cores target with the cycles
	// their up-convert-and-compute sequence takes per output vector, γ per
	// weight format (low-bit GEMV paper §III-F: P and E cores have their
	// own γ_P, γ_E). With BytesPerVector they give a quantized GEMV's
	// weight roof Σ_types cores · min(β, B/γ) · f (Eq. 3 summed over the
	// chip, §IV-B), which fills EffectiveGWeightsPerS for formats it does
	// not list. Schema v2 only.
	CoreTypes []CoreType `json:"core_types,omitempty"`
	// BytesPerVector is B per weight format: the bytes read from memory per
	// output vector whose γ CoreTypes give (the paper's 2-bit kernel: 8,
	// 1-bit: 4; the probe's γ is per 32 bytes of packed weights: 32).
	BytesPerVector map[string]float64 `json:"bytes_per_vector,omitempty"`
	// GBBytes is the number of bytes in one "GB" of this target's GB/s
	// figures when converting them to and from bytes/cycle: 1e9 (the
	// default, bench's unit) or 2^30 for the low-bit paper, whose printed
	// β (97 GB/s / 8 cores / 4.1 GHz = 3.18 bytes/cycle) and modeled totals
	// (≈37 GB/s on LNL) follow only with GiB (see PerCoreBytesPerCycle).
	GBBytes float64 `json:"gb_bytes,omitempty"`
	// Tile is the kernel's native output tile, used to round the Eq. 1 split.
	Tile Tile `json:"tile,omitzero"`
	// Components names the targets a mixed target runs on together (e.g.
	// ["matrix", "cores"]); the Eq. 1 split divides work between them.
	Components []string `json:"components,omitempty"`
	// Source cites where each number comes from.
	Source string `json:"source,omitempty"`
}

// CoreType is one kind of core of a cores target (low-bit GEMV paper
// §III-F, §IV-B): how many, their loaded clock, β (the bytes/cycle one
// core reads when all cores read at once) and γ per weight format (cycles
// of up-convert and compute per output vector in the steady state: the
// paper's micro-benchmark values, or a probe's marginal cost of the loop
// between two cache-resident panels, matrix.quant_ebw).
type CoreType struct {
	// Name is "P", "E", or "all" for a machine with one kind of core.
	Name  string  `json:"name"`
	Cores int     `json:"cores"`
	GHz   float64 `json:"ghz"`
	// BetaBytesPerCycle is β per core in bytes/cycle; 0 means derive it as
	// the equal share of the target's bandwidth, BandwidthGBps · GBBytes /
	// (all cores · GHz · 1e9) (§IV-B).
	BetaBytesPerCycle float64 `json:"beta_bytes_per_cycle,omitempty"`
	// GammaCycles is γ per weight format, cycles per output vector of
	// BytesPerVector[format] bytes.
	GammaCycles map[string]float64 `json:"gamma_cycles"`
	// MeasuredBytesPerCycle is, per format, a GEMV's attained weight bytes
	// per cycle per core on this machine (probe profiles only: matrix.gemv
	// GB/s / threads / clock), for the Fig. 4 plot.
	MeasuredBytesPerCycle map[string]float64 `json:"measured_bytes_per_cycle,omitempty"`
	Source                string             `json:"source,omitempty"`
}

// Roof is an extra bandwidth roof (a cache level, a remote NUMA node) drawn
// and reported beside the targets' roofs. It does not change placement.
type Roof struct {
	Level  string  `json:"level"`
	GBps   float64 `json:"gbps"`
	Source string  `json:"source,omitempty"`
}

// LevelRoof is the read roof of one memory level at one thread count: the
// bandwidth a streaming read attains when its data is held in that level,
// and how many bytes of the level those threads hold together. The model
// uses it for operators whose bytes fit the level for the call (calls.go).
// CurvePoint is one point of Machine.ReadCurve: the read kernel's median
// GB/s (1e9 B/s) over a working set of Bytes (all threads together) at
// Threads threads.
type CurvePoint struct {
	Threads int     `json:"threads"`
	Bytes   int64   `json:"bytes"`
	GBps    float64 `json:"gbps"`
}

type LevelRoof struct {
	// Level is "L1", "L2", "L3" or "DRAM".
	Level   string  `json:"level"`
	Threads int     `json:"threads"`
	GBps    float64 `json:"gbps"`
	// CapacityBytes is the bytes of the level Threads threads hold
	// together: one instance's size times the instances they occupy
	// (threads placed one per core, spread over instances); 0 for DRAM.
	CapacityBytes int64 `json:"capacity_bytes,omitempty"`
	// WriteGBps is DRAM's write rate at Threads (dramWriteGBps: half the
	// memory sweep's copy kernel at its largest working set, else its
	// write kernel), 0 where not measured: the rate of an operator's
	// writes to lines that left the caches.
	WriteGBps float64 `json:"write_gbps,omitempty"`
	Source    string  `json:"source,omitempty"`
}

// FixedCost is the fixed cost of one parallel call at one thread count, in
// seconds: CallSeconds with the workers spinning (operators back to back:
// the dispatch and the barrier), WakeSeconds for the first call after they
// parked.
type FixedCost struct {
	Threads     int     `json:"threads"`
	CallSeconds float64 `json:"call_seconds"`
	WakeSeconds float64 `json:"wake_seconds,omitempty"`
}

// FixedCosts are the per-call costs of the worker pool that runs the
// operators (a probe profile's dispatch section).
type FixedCosts struct {
	Points []FixedCost `json:"points"`
	// ColdLineSeconds is the time of one 64-byte line moved by a small
	// vector call whose data the caches no longer hold (the probe's
	// dispatch.cold_vector): a decode-sized operator run on the caller
	// while the weights stream from DRAM takes at least its lines × this.
	ColdLineSeconds float64 `json:"cold_line_seconds,omitempty"`
	// ColdCallSeconds is that whole call's time (the probe's
	// dispatch.cold_vector seconds, median): a decode-sized operator on the
	// caller between the GEMVs takes at least this, however few of its
	// lines are cold, since its code and address translations were
	// evicted with its data (callTime). 0 in machine files without it.
	ColdCallSeconds float64 `json:"cold_call_seconds,omitempty"`
	// ColdCalls is that call's time after other amounts of streamed data
	// (the probe's dispatch.cold_vector.points, medians), ascending in
	// EvictBytes: ColdCallAt interpolates it. Empty: ColdCallSeconds
	// whatever streamed.
	ColdCalls []ColdCall `json:"cold_calls,omitempty"`
	// CoreToCoreGBps is the rate at which CoreToCoreThreads workers
	// together read lines another worker just wrote (the probe's
	// dispatch.core_to_core, median), GB/s: a parallel vector operator
	// reads the share of an operand that the previous operator split
	// differently over the workers at most at this rate (memTime). 0:
	// not measured (older profiles, one core).
	CoreToCoreGBps    float64 `json:"core_to_core_gbps,omitempty"`
	CoreToCoreThreads int     `json:"core_to_core_threads,omitempty"`
	Source            string  `json:"source,omitempty"`
}

// ColdCall is one point of FixedCosts.ColdCalls: the cold call's seconds
// after EvictBytes of other data streamed through the caches.
type ColdCall struct {
	EvictBytes float64 `json:"evict_bytes"`
	Seconds    float64 `json:"seconds"`
}

// ColdCallAt is the cold call's time after streamed bytes of other data:
// ColdCalls interpolated linearly in log(bytes), held at the first and
// last points beyond them; ColdCallSeconds where streamed ≤ 0 (not
// known) or without points.
func (f *FixedCosts) ColdCallAt(streamed float64) float64 {
	pts := f.ColdCalls
	if !(streamed > 0) || len(pts) == 0 {
		return f.ColdCallSeconds
	}
	if streamed <= pts[0].EvictBytes {
		return pts[0].Seconds
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if streamed <= b.EvictBytes {
			x := math.Log(streamed/a.EvictBytes) / math.Log(b.EvictBytes/a.EvictBytes)
			return a.Seconds + x*(b.Seconds-a.Seconds)
		}
	}
	return pts[len(pts)-1].Seconds
}

// Nonlinear is the throughput of element-wise non-linear work (exp, rsqrt,
// SiLU) on the cores target, in billions of elements per second. SMEPilot
// §3.2 (Fig. 4) places non-linear operators on the cores because SME runs a
// fastexp kernel 3.26–4.10× slower.
//
// GElemsPerS is the softmax's rate (the attention's vector stage, and any
// non-linear operator whose kernel has no rate of its own); Rates are the
// probe's per-kernel rates at the row widths it measured, which RateFor
// picks from per operator. Both are the cores target's: the probe's
// one-thread figure × its workers (element-wise work scales with cores).
type Nonlinear struct {
	GElemsPerS float64         `json:"gelems_per_s,omitempty"`
	Rates      []NonlinearRate `json:"rates,omitempty"`
	Source     string          `json:"source,omitempty"`
}

// NonlinearRate is one measured rate of a non-linear kernel: Kernel
// ("rmsnorm", "rope", "silu", "softmax"), RowElems the row width it ran at
// (0: element-wise, no rows) and GElemsPerS, in 1e9 elements per second,
// the median on one thread of the fastest backend measured at that row,
// scaled as Nonlinear's.
type NonlinearRate struct {
	Kernel     string  `json:"kernel"`
	RowElems   int     `json:"row_elems,omitempty"`
	GElemsPerS float64 `json:"gelems_per_s"`
}

// NonlinearKernel is the probe's kernel that runs operator op (the
// catalog's names): the RMSNorms, RoPE, SiLU·mul and the softmaxes; ""
// for any other.
func NonlinearKernel(op string) string {
	switch op {
	case OpAttnNorm, OpFFNNorm, OpQKNorm, OpFinalNorm:
		return "rmsnorm"
	case OpRoPE:
		return "rope"
	case OpSiLUMul, OpExpertSiLUMul:
		return "silu"
	case OpSoftmax, OpRouterTopK:
		return "softmax"
	}
	return ""
}

// RateFor returns the rate (1e9 elements/s, Nonlinear's scale) of operator op
// whose rows are width elements wide, and what it used: where width lies
// between two row widths its kernel was measured at, the rate of a row
// time interpolated linearly in width between theirs (a row costs a fixed
// part — the call, the reduction's horizontal sum — plus a part per
// element, so time per row is affine in width: a 512-wide RMSNorm row
// takes neither the 128-wide rows' rate nor the 1024-wide ones'); outside
// the measured widths, the rate at the nearest; an element-wise kernel's
// one rate; else GElemsPerS (the softmax's).
func (n *Nonlinear) RateFor(op string, width int) (float64, string) {
	k := NonlinearKernel(op)
	type pt struct {
		w int
		g float64
	}
	var rows []pt
	flat := 0.0
	for _, r := range n.Rates {
		if r.Kernel != k || !(r.GElemsPerS > 0) {
			continue
		}
		if r.RowElems > 0 {
			rows = append(rows, pt{r.RowElems, r.GElemsPerS})
		} else if r.GElemsPerS > flat {
			flat = r.GElemsPerS
		}
	}
	if len(rows) == 0 || width <= 0 {
		if flat > 0 {
			return flat, k
		}
		if len(rows) > 0 {
			best := rows[0]
			for _, r := range rows[1:] {
				if r.g > best.g {
					best = r
				}
			}
			return best.g, fmt.Sprintf("%s at row %d", k, best.w)
		}
		return n.GElemsPerS, "softmax"
	}
	// The fastest figure per width, in width order.
	slices.SortFunc(rows, func(a, b pt) int { return cmp.Or(cmp.Compare(a.w, b.w), cmp.Compare(b.g, a.g)) })
	rows = slices.CompactFunc(rows, func(a, b pt) bool { return a.w == b.w })
	lo, hi := rows[0], rows[len(rows)-1]
	switch {
	case width <= lo.w:
		return lo.g, fmt.Sprintf("%s at row %d", k, lo.w)
	case width >= hi.w:
		return hi.g, fmt.Sprintf("%s at row %d", k, hi.w)
	}
	i, _ := slices.BinarySearchFunc(rows, width, func(r pt, w int) int { return cmp.Compare(r.w, w) })
	if rows[i].w == width {
		return rows[i].g, fmt.Sprintf("%s at row %d", k, width)
	}
	a, b := rows[i-1], rows[i]
	ta, tb := float64(a.w)/a.g, float64(b.w)/b.g // row times, ns
	f := float64(width-a.w) / float64(b.w-a.w)
	return float64(width) / (ta + f*(tb-ta)), fmt.Sprintf("%s between rows %d and %d (row time linear in width)", k, a.w, b.w)
}

// NUMAMatrix is a node-to-node read bandwidth matrix (ArcLight Table 1):
// GBps[i][j] is the bandwidth of the cores of node Nodes[i] reading memory
// on node Nodes[j].
type NUMAMatrix struct {
	Nodes  []int       `json:"nodes"`
	GBps   [][]float64 `json:"gbps"`
	Source string      `json:"source,omitempty"`
}

// CPU describes core counts and loaded frequencies where a paper gives them.
type CPU struct {
	Model  string  `json:"model,omitempty"`
	Cores  int     `json:"cores,omitempty"`
	PCores int     `json:"p_cores,omitempty"`
	ECores int     `json:"e_cores,omitempty"`
	PGHz   float64 `json:"p_ghz,omitempty"`
	EGHz   float64 `json:"e_ghz,omitempty"`
	Source string  `json:"source,omitempty"`
}

// Machine is a set of execution targets sharing one memory system, plus
// extra roofs. It is built from a probe profile (FromProfile), a published
// profile (Published) or a bench.machine/v1 file (ParseMachine).
type Machine struct {
	Schema      string      `json:"schema"`
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	CPU         *CPU        `json:"cpu,omitempty"`
	Targets     []Target    `json:"targets"`
	Roofs       []Roof      `json:"roofs,omitempty"`
	Nonlinear   *Nonlinear  `json:"nonlinear,omitempty"`
	NUMA        *NUMAMatrix `json:"numa,omitempty"`
	// Sources are the documents the numbers were read from.
	Sources []string `json:"sources,omitempty"`
	// Notes say what the model lacks (e.g. "no measured compute ceiling: ...").
	Notes []string `json:"notes,omitempty"`
	// LevelRoofs are the read roofs of every memory level at every thread
	// count measured (schema v3); with them an operator's bytes are timed
	// at the roof of the level that holds them, at the thread count that
	// runs it (calls.go). Absent: every byte at the cores' β.
	LevelRoofs []LevelRoof `json:"level_roofs,omitempty"`
	// ReadCurve is the profile's read bandwidth against working set
	// (memory.working_set, the read kernel) at each thread count
	// measured: the rate of a stream of weights and KV cache that a level
	// roof's hard capacity would put wholly in one level, where a cache's
	// replacement keeps part of a working set larger than it (calls.go
	// streamGBps). Absent: the level roofs alone.
	ReadCurve []CurvePoint `json:"read_curve,omitempty"`
	// FixedCosts are the worker pool's per-call costs (schema v3), added
	// to every operator that runs on the pool. Absent: no fixed cost.
	FixedCosts *FixedCosts `json:"fixed_costs,omitempty"`
	// Calibration is the per-class efficiency and fixed cost of a
	// profile's calibration section (bench calibrate; calibration.go),
	// applied to every operator's predicted times. Absent: uncalibrated.
	Calibration *Calibration `json:"calibration,omitempty"`
	// GEMMTable is the measured attained GEMM at several shapes and the
	// attained GEMV weight bandwidth (schema v3, gemmtable.go); with it a
	// linear operator's compute term on the cores is read from the table
	// (AttainedGEMM). Absent: the single ceiling.
	GEMMTable *GEMMTable `json:"gemm_table,omitempty"`
	// AttnPlan is the tiling of the attention kernel whose predictions are
	// wanted (the engine's planner on the cores' fp32 backend, set by the
	// engine's and the calibration's callers; never read from a file):
	// with it a prefill attention is timed by the work its tiles do
	// (tiled.go). Nil: the catalog's causal count.
	AttnPlan *AttentionSchedule `json:"-"`
}

// Attainable is the roofline bound of SMEPilot §3.2:
// P_t(I) = min(π_t, β_t · I), in GFLOP/s, for arithmetic intensity I in
// FLOP/byte, ceiling π_t in GFLOP/s and bandwidth β_t in GB/s. With no
// ceiling (π ≤ 0) only the memory roof applies.
func Attainable(pi, beta, intensity float64) float64 {
	mem := beta * intensity
	if pi <= 0 {
		return mem
	}
	return math.Min(pi, mem)
}

// Ridge is the ridge point I_t = π_t / β_t of SMEPilot §3.2, in FLOP/byte:
// below it target t is memory-bound, above it compute-bound. It is +Inf
// when the ceiling is unknown.
func Ridge(pi, beta float64) float64 {
	if pi <= 0 || beta <= 0 {
		return math.Inf(1)
	}
	return pi / beta
}

// Ceiling returns π_t for precision prec in GFLOP/s, or 0 when the target
// has no ceiling for it.
func (t Target) Ceiling(prec string) float64 { return t.CeilingsGFLOPS[prec] }

// Ridge returns the target's ridge point for precision prec.
func (t Target) Ridge(prec string) float64 { return Ridge(t.Ceiling(prec), t.BandwidthGBps) }

// Time is the roofline lower bound on the time of an operator with the given
// FLOPs and bytes on target t: max(F/π_t, Q/β_t) seconds.
func (t Target) Time(prec string, flops, bytes float64) float64 {
	tm := bytes / (t.BandwidthGBps * 1e9)
	if pi := t.Ceiling(prec); pi > 0 {
		tm = math.Max(tm, flops/(pi*1e9))
	}
	return tm
}

// Target returns the target called name.
func (m *Machine) Target(name string) (Target, bool) {
	for _, t := range m.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// byKind returns the targets of a kind in file order.
func (m *Machine) byKind(kind string) []Target {
	var out []Target
	for _, t := range m.Targets {
		if t.Kind == kind {
			out = append(out, t)
		}
	}
	return out
}

// Precisions lists the precisions for which every target has a ceiling.
func (m *Machine) Precisions() []string {
	count := map[string]int{}
	for _, t := range m.Targets {
		for p, v := range t.CeilingsGFLOPS {
			if v > 0 {
				count[p]++
			}
		}
	}
	var out []string
	for p, n := range count {
		if n == len(m.Targets) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// HasCeilings reports whether any target has a compute ceiling for prec.
func (m *Machine) HasCeilings(prec string) bool {
	for _, t := range m.Targets {
		if t.Ceiling(prec) > 0 {
			return true
		}
	}
	return false
}

// Validate checks that the machine can be used by the model. name is the
// file or profile name used in messages.
func (m *Machine) Validate(name string) error {
	if len(m.Targets) == 0 {
		return fmt.Errorf("%s: missing key \"targets\": a machine needs at least one target", name)
	}
	seen := map[string]bool{}
	cores := 0
	for i, t := range m.Targets {
		where := fmt.Sprintf("%s: targets[%d]", name, i)
		if t.Name == "" {
			return fmt.Errorf("%s: missing key \"name\"", where)
		}
		if seen[t.Name] {
			return fmt.Errorf("%s: duplicate target name %q", where, t.Name)
		}
		seen[t.Name] = true
		switch t.Kind {
		case KindCores:
			cores++
		case KindMatrix, KindMixed:
		case "":
			return fmt.Errorf("%s (%s): missing key \"kind\" (cores, matrix or mixed)", where, t.Name)
		default:
			return fmt.Errorf("%s (%s): kind %q: must be cores, matrix or mixed", where, t.Name, t.Kind)
		}
		if t.BandwidthGBps <= 0 || math.IsNaN(t.BandwidthGBps) || math.IsInf(t.BandwidthGBps, 0) {
			return fmt.Errorf("%s (%s): missing key \"bandwidth_gbps\" or value %v: must be > 0", where, t.Name, t.BandwidthGBps)
		}
		for p, v := range t.CeilingsGFLOPS {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("%s (%s): ceilings_gflops[%q] = %v: must be > 0", where, t.Name, p, v)
			}
		}
		if t.Tile.M < 0 || t.Tile.N < 0 {
			return fmt.Errorf("%s (%s): tile %dx%d: must be ≥ 0", where, t.Name, t.Tile.M, t.Tile.N)
		}
		if err := validateCoreTypes(fmt.Sprintf("%s (%s)", where, t.Name), t); err != nil {
			return err
		}
	}
	if cores != 1 {
		return fmt.Errorf("%s: %d targets of kind \"cores\": need exactly one (non-linear operators run there)", name, cores)
	}
	for i, t := range m.Targets {
		if t.Kind != KindMixed {
			if len(t.Components) > 0 {
				return fmt.Errorf("%s: targets[%d] (%s): components only apply to kind mixed", name, i, t.Name)
			}
			continue
		}
		if len(t.Components) != 2 {
			return fmt.Errorf("%s: targets[%d] (%s): mixed target needs key \"components\" naming a matrix and a cores target", name, i, t.Name)
		}
		kinds := map[string]bool{}
		for _, c := range t.Components {
			ct, ok := m.Target(c)
			if !ok {
				return fmt.Errorf("%s: targets[%d] (%s): component %q is not a target", name, i, t.Name, c)
			}
			kinds[ct.Kind] = true
		}
		if !kinds[KindCores] || !kinds[KindMatrix] {
			return fmt.Errorf("%s: targets[%d] (%s): components %v must be one matrix and one cores target", name, i, t.Name, t.Components)
		}
	}
	for i, r := range m.Roofs {
		if r.Level == "" || !(r.GBps > 0) {
			return fmt.Errorf("%s: roofs[%d]: needs keys \"level\" and \"gbps\" > 0", name, i)
		}
	}
	for i, r := range m.LevelRoofs {
		switch r.Level {
		case "L1", "L2", "L3", "DRAM":
		default:
			return fmt.Errorf("%s: level_roofs[%d]: level %q: want L1, L2, L3 or DRAM", name, i, r.Level)
		}
		if r.Threads < 1 || !(r.GBps > 0) || math.IsInf(r.GBps, 0) || r.CapacityBytes < 0 {
			return fmt.Errorf("%s: level_roofs[%d] (%s): needs threads ≥ 1, gbps > 0 and capacity_bytes ≥ 0 (have %d, %v, %d)", name, i, r.Level, r.Threads, r.GBps, r.CapacityBytes)
		}
		if r.Level != "DRAM" && r.CapacityBytes == 0 {
			return fmt.Errorf("%s: level_roofs[%d] (%s): missing key \"capacity_bytes\": a cache level needs its capacity", name, i, r.Level)
		}
	}
	if f := m.FixedCosts; f != nil {
		for i, c := range f.Points {
			if c.Threads < 1 || !(c.CallSeconds >= 0) || !(c.WakeSeconds >= 0) || math.IsInf(c.CallSeconds, 0) || math.IsInf(c.WakeSeconds, 0) {
				return fmt.Errorf("%s: fixed_costs.points[%d]: needs threads ≥ 1 and call_seconds, wake_seconds ≥ 0 (have %d, %v, %v)", name, i, c.Threads, c.CallSeconds, c.WakeSeconds)
			}
		}
	}
	if m.Nonlinear != nil && m.Nonlinear.GElemsPerS < 0 {
		return fmt.Errorf("%s: nonlinear.gelems_per_s %v: must be ≥ 0", name, m.Nonlinear.GElemsPerS)
	}
	if n := m.NUMA; n != nil {
		if len(n.GBps) != len(n.Nodes) {
			return fmt.Errorf("%s: numa: %d rows for %d nodes", name, len(n.GBps), len(n.Nodes))
		}
		for i, row := range n.GBps {
			if len(row) != len(n.Nodes) {
				return fmt.Errorf("%s: numa: row %d has %d values for %d nodes", name, i, len(row), len(n.Nodes))
			}
		}
	}
	return nil
}

// ParseMachine builds a machine from JSON bytes: either a bench.machine/v1
// file or a bench.profile/v1 probe profile (see FromProfile). name is the
// file name used in error messages. Unknown keys in a machine file are
// rejected so that typos are caught.
func ParseMachine(data []byte, name string) (*Machine, error) {
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: not JSON: %w", name, err)
	}
	if head.Schema == nil {
		return nil, fmt.Errorf("%s: missing key \"schema\" (want %q, %q, %q or %q)", name, MachineSchemaV3, MachineSchemaV2, MachineSchemaV1, results.SchemaV1)
	}
	switch *head.Schema {
	case MachineSchemaV1, MachineSchemaV2, MachineSchemaV3:
		var m Machine
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if m.Name == "" {
			return nil, fmt.Errorf("%s: missing key \"name\"", name)
		}
		if m.Schema == MachineSchemaV1 {
			for i, t := range m.Targets {
				if len(t.CoreTypes) > 0 || len(t.BytesPerVector) > 0 || t.GBBytes != 0 {
					return nil, fmt.Errorf("%s: targets[%d] (%s): core_types, bytes_per_vector and gb_bytes need schema %q", name, i, t.Name, MachineSchemaV2)
				}
			}
		}
		if m.Schema != MachineSchemaV3 && (len(m.LevelRoofs) > 0 || m.FixedCosts != nil || m.GEMMTable != nil) {
			return nil, fmt.Errorf("%s: level_roofs, fixed_costs and gemm_table need schema %q (have %q)", name, MachineSchemaV3, m.Schema)
		}
		if err := m.Validate(name); err != nil {
			return nil, err
		}
		m.fillEffectiveBandwidth()
		return &m, nil
	case results.SchemaV1:
		var p results.Profile
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return FromProfile(&p, name)
	default:
		return nil, fmt.Errorf("%s: schema %q: want %q, %q, %q or %q", name, *head.Schema, MachineSchemaV3, MachineSchemaV2, MachineSchemaV1, results.SchemaV1)
	}
}

// FromProfile builds a machine from a bench.profile/v1 probe profile. The
// cores target takes the DRAM read roof of Memory.Levels (at the largest
// thread count measured) as β; the L1, L2
// and L3 roofs become extra roofs. Schema v1 measures no compute ceiling, so
// the machine has one target with no ceilings and a note saying so; every
// operator is then timed on the memory roof alone (a lower bound). Give
// ceilings with a bench.machine/v1 file instead.
//
// The machine is schema v3: its level_roofs are memory.levels at every
// thread count with the capacity of topology.caches those threads hold,
// and its fixed_costs the dispatch section (calls.go), when the profile
// has them.
func FromProfile(p *results.Profile, name string) (*Machine, error) {
	if p.Memory == nil {
		return nil, fmt.Errorf("%s: missing key \"memory\": the profile has no memory section (run bench probe with --only memory)", name)
	}
	if len(p.Memory.Levels) == 0 {
		return nil, fmt.Errorf("%s: missing key \"memory.levels\": the memory section has no per-level roofs", name)
	}
	m := &Machine{Schema: MachineSchemaV3, Name: p.Host}
	if m.Name == "" {
		m.Name = name
	}
	if p.Machine != nil {
		m.Description = strings.TrimSpace(p.Machine.CPUModel)
		m.CPU = &CPU{Model: p.Machine.CPUModel, Source: name + " machine section"}
		if p.Topology != nil {
			m.CPU.Cores = p.Topology.Cores
		}
		if p.Machine.MaxHz > 0 {
			m.CPU.PGHz = p.Machine.MaxHz / 1e9
		}
	}
	var dram *results.LevelBandwidth
	// The roofs are the whole machine's: take the levels measured at the
	// largest thread count (the probe also records 1-thread levels).
	maxThreads := 0
	for _, l := range p.Memory.Levels {
		maxThreads = max(maxThreads, l.Threads)
	}
	for i := range p.Memory.Levels {
		l := &p.Memory.Levels[i]
		if !(l.GBps.Median > 0) {
			return nil, fmt.Errorf("%s: memory.levels[%d] (%s): gbps.median %v: must be > 0", name, i, l.Level, l.GBps.Median)
		}
		if l.Threads != maxThreads {
			continue
		}
		if l.Level == "DRAM" {
			dram = l
			continue
		}
		m.Roofs = append(m.Roofs, Roof{Level: l.Level, GBps: l.GBps.Median,
			Source: fmt.Sprintf("%s: memory.levels %s, %s kernel, %d threads, median of %d", name, l.Level, l.Kernel, l.Threads, l.GBps.N)})
	}
	if dram == nil {
		return nil, fmt.Errorf("%s: memory.levels has no \"DRAM\" level: cannot set the cores' bandwidth", name)
	}
	m.Targets = []Target{{
		Name: KindCores, Kind: KindCores, Workers: dram.Threads, BandwidthGBps: dram.GBps.Median,
		Source: fmt.Sprintf("%s: memory.levels DRAM, %s kernel, %d threads, median of %d", name, dram.Kernel, dram.Threads, dram.GBps.N),
	}}
	for _, d := range p.Memory.DRAM {
		if d.Threads == dram.Threads {
			m.Targets[0].Source += fmt.Sprintf(" (memory.dram: %s pages, %d working sets × %d rounds, min %.1f max %.1f GB/s)", d.Pages, len(d.WorkingSets), d.Rounds, d.GBps.Min, d.GBps.Max)
		}
	}
	m.Sources = []string{name + " (" + results.SchemaV1 + ")"}
	hasMatrixISA := ""
	if p.Machine != nil {
		for _, isa := range p.Machine.ISAs {
			if isa == "sme" || isa == "amx" {
				hasMatrixISA = isa
			}
		}
	}
	addCompute(m, p, name, hasMatrixISA)
	addAttainedGEMM(m, p)
	addGEMMTable(m, p, name)
	addNonlinear(m, p, name)
	addEffectiveBandwidth(m, p, name)
	addLevelRoofs(m, p, name)
	addFixedCosts(m, p, name)
	if err := addCalibration(m, p, name); err != nil {
		return nil, err
	}
	if err := m.Validate(name); err != nil {
		return nil, err
	}
	return m, nil
}

// addEffectiveBandwidth copies the matrix section's effective-bandwidth
// model (low-bit GEMV paper §III-F) at the cores target's thread count.
func addEffectiveBandwidth(m *Machine, p *results.Profile, name string) {
	if p.Matrix == nil {
		return
	}
	cores := &m.Targets[0]
	var src []string
	for _, q := range p.Matrix.QuantEBW {
		for _, pt := range q.Points {
			if pt.Threads == cores.Workers && pt.EBWGBps > 0 && q.BytesPerWeight > 0 {
				if cores.EffectiveGWeightsPerS == nil {
					cores.EffectiveGWeightsPerS = map[string]float64{}
				}
				cores.EffectiveGWeightsPerS[q.Format] = pt.EBWGBps / q.BytesPerWeight
				how := "marginal"
				if q.GammaMethod == "" {
					how = "from one call, per-call cost included (a probe from before the marginal γ)"
				}
				src = append(src, fmt.Sprintf("%s %.1f GB/s at %.4g B/weight (%s-bound, γ %.2f cycles/32 B, %s)", q.Format, pt.EBWGBps, q.BytesPerWeight, pt.Limit, q.GammaCycles, how))
			}
		}
	}
	if len(src) > 0 {
		cores.Source += fmt.Sprintf("; effective bandwidth of quantized GEMV from matrix.quant_ebw at %d threads: %s", cores.Workers, strings.Join(src, ", "))
	}
	// One core type, "all": the probe measures γ on one core and β as the
	// DRAM read roof per thread (Fig. 4 of the low-bit paper for this
	// machine; B = 32 bytes of packed weights per γ).
	ct := CoreType{Name: "all", Cores: cores.Workers, GammaCycles: map[string]float64{},
		Source: fmt.Sprintf("%s: probe matrix.quant_ebw at %d threads (γ per 32 B of packed weights, β the DRAM read roof per thread)", name, cores.Workers)}
	for _, q := range p.Matrix.QuantEBW {
		if !(q.GammaCycles > 0) || !(q.ClockHz > 0) {
			continue
		}
		for _, pt := range q.Points {
			if pt.Threads != cores.Workers || !(pt.BetaBytesPerCycle > 0) {
				continue
			}
			if ct.GHz == 0 {
				ct.GHz, ct.BetaBytesPerCycle = q.ClockHz/1e9, pt.BetaBytesPerCycle
			}
			if math.Abs(q.ClockHz/1e9-ct.GHz) > 1e-9*ct.GHz {
				continue // one clock per core type
			}
			ct.GammaCycles[q.Format] = q.GammaCycles
			if cores.BytesPerVector == nil {
				cores.BytesPerVector = map[string]float64{}
			}
			cores.BytesPerVector[q.Format] = 32
			if pt.MeasuredGBps > 0 {
				if ct.MeasuredBytesPerCycle == nil {
					ct.MeasuredBytesPerCycle = map[string]float64{}
				}
				ct.MeasuredBytesPerCycle[q.Format] = pt.MeasuredGBps * 1e9 / float64(pt.Threads) / q.ClockHz
			}
		}
	}
	if cores.Workers > 0 && len(ct.GammaCycles) > 0 {
		cores.CoreTypes = []CoreType{ct}
	}
}

// isMatrixISA reports whether a compute kernel's ISA is a matrix unit.
func isMatrixISA(isa string) bool { return isa == "amx" || isa == "sme" }

// addCompute sets the compute ceilings from the profile's compute section:
// per precision, the best vector-core peak at the largest thread count is
// π of the cores target; AMX/SME peaks form a matrix target (bandwidth: the
// cores' DRAM read roof, since the profile measures no separate matrix-unit
// bandwidth); the mixed section's compute experiment, when it pairs a matrix
// kernel with a vector kernel of the same precision, gives the mixed
// target's π and its read-bandwidth experiment the mixed β (SMEPilot §3.1:
// the shared roof is measured, never summed).
func addCompute(m *Machine, p *results.Profile, name, hasMatrixISA string) {
	c := p.Compute
	if c == nil || len(c.Peaks) == 0 {
		m.Notes = append(m.Notes, "no measured compute ceiling: the profile has no compute section, so times are memory-roof lower bounds and no operator can be called compute-bound; run bench probe with --only compute, or give ceilings in a "+MachineSchemaV1+" file")
		if hasMatrixISA != "" {
			m.Notes = append(m.Notes, fmt.Sprintf("the CPU has a matrix unit (%s) but the profile measures none of its ceilings: the model has one target, cores", hasMatrixISA))
		} else {
			m.Notes = append(m.Notes, "no matrix unit in the profile: the model has one target, cores")
		}
		return
	}
	maxT := 0
	for _, pk := range c.Peaks {
		if !isMatrixISA(pk.ISA) {
			maxT = max(maxT, pk.Threads)
		}
	}
	cores := &m.Targets[0]
	cores.CeilingsGFLOPS = map[string]float64{}
	matrix := Target{Name: "matrix", Kind: KindMatrix, BandwidthGBps: cores.BandwidthGBps, CeilingsGFLOPS: map[string]float64{}}
	var coreSrc, matSrc []string
	maxMT := 0
	for _, pk := range c.Peaks {
		if isMatrixISA(pk.ISA) {
			maxMT = max(maxMT, pk.Threads)
		}
	}
	for _, pk := range c.Peaks {
		if !(pk.Rate.Median > 0) {
			continue
		}
		if isMatrixISA(pk.ISA) {
			if pk.Threads == maxMT && pk.Rate.Median > matrix.CeilingsGFLOPS[pk.Precision] {
				matrix.CeilingsGFLOPS[pk.Precision] = pk.Rate.Median
				matrix.Workers = pk.Threads
				matSrc = append(matSrc, fmt.Sprintf("%s %s %.1f %s", pk.Precision, pk.Kernel, pk.Rate.Median, pk.Unit))
			}
			continue
		}
		if pk.Threads == maxT && pk.Rate.Median > cores.CeilingsGFLOPS[pk.Precision] {
			cores.CeilingsGFLOPS[pk.Precision] = pk.Rate.Median
			coreSrc = append(coreSrc, fmt.Sprintf("%s %s %.1f %s", pk.Precision, pk.Kernel, pk.Rate.Median, pk.Unit))
		}
	}
	cores.Source += fmt.Sprintf("; ceilings from compute.peaks at %d threads (%s)", maxT, strings.Join(coreSrc, ", "))
	m.Notes = append(m.Notes, "compute ceilings are peak rates of register-resident multiply-add loops (compute section), not attained GEMM throughput: the roofline's attainable ceiling will come from measured GEMM kernels")
	if len(matrix.CeilingsGFLOPS) == 0 {
		if hasMatrixISA != "" {
			m.Notes = append(m.Notes, fmt.Sprintf("the CPU has a matrix unit (%s) but the profile measures none of its ceilings: the model has one target, cores", hasMatrixISA))
		} else {
			m.Notes = append(m.Notes, "no matrix unit in the profile: the model has one target, cores")
		}
		return
	}
	matrix.Source = fmt.Sprintf("%s: compute.peaks of the matrix unit at %d threads (%s); bandwidth is the cores' DRAM read roof (no separate matrix-unit bandwidth is measured)", name, maxMT, strings.Join(matSrc, ", "))
	m.Targets = append(m.Targets, matrix)
	if p.Mixed == nil {
		return
	}
	var mixed *Target
	for _, e := range p.Mixed.Experiments {
		if e.Kind != "compute" || len(e.Groups) != 2 || e.Unit == "fraction" {
			continue
		}
		// Only a pair of one precision gives a mixed ceiling of that precision.
		var precs [2]string
		for _, pk := range c.Peaks {
			for gi, g := range e.Groups {
				if pk.Kernel == g.Kernel {
					precs[gi] = pk.Precision
				}
			}
		}
		prec := precs[0]
		if prec == "" || precs[1] != prec {
			continue
		}
		mixed = &Target{Name: "mixed", Kind: KindMixed, Components: []string{"matrix", "cores"}, BandwidthGBps: cores.BandwidthGBps,
			CeilingsGFLOPS: map[string]float64{prec: e.Together},
			Source:         fmt.Sprintf("%s: mixed compute experiment %s + %s together", name, e.Groups[0].Name, e.Groups[1].Name)}
	}
	if mixed == nil {
		m.Notes = append(m.Notes, "the mixed section pairs no matrix and vector kernel of one precision: no mixed target")
		return
	}
	for _, e := range p.Mixed.Experiments {
		if e.Kind == "read_bandwidth" && e.Together > 0 {
			mixed.BandwidthGBps = e.Together
			mixed.Source += fmt.Sprintf("; bandwidth: mixed read-bandwidth experiment together, %.1f GB/s", e.Together)
		}
	}
	m.Targets = append(m.Targets, *mixed)
}

// addNonlinear sets the non-linear throughput from the profile's nonlinear
// section: the best backend's softmax at the longest row measured (SMEPilot
// §3.2 places non-linear operators on the cores, Fig. 4), else exp.
func addNonlinear(m *Machine, p *results.Profile, name string) {
	n := p.Nonlinear
	if n == nil || len(n.Points) == 0 {
		m.Notes = append(m.Notes, "no measured non-linear throughput: non-linear operators are timed on the memory roof only")
		return
	}
	for _, kernel := range []string{"softmax", "exp"} {
		best, row := 0.0, 0
		var src string
		for _, pt := range n.Points {
			if pt.Kernel != kernel || pt.Threads != 1 {
				continue
			}
			if pt.RowElems > row || (pt.RowElems == row && pt.GElemsPerSec.Median > best) {
				best, row = pt.GElemsPerSec.Median, pt.RowElems
				src = fmt.Sprintf("%s: nonlinear %s on %s, row %d, 1 thread, median of %d", name, pt.Kernel, pt.Backend, pt.RowElems, pt.GElemsPerSec.N)
			}
		}
		if best > 0 {
			threads := 1
			if m.Targets[0].Workers > 0 {
				threads = m.Targets[0].Workers
			}
			// Element-wise work scales with cores; the probe measures one.
			m.Nonlinear = &Nonlinear{GElemsPerS: best * float64(threads), Source: src + fmt.Sprintf(", x %d threads (assumed to scale linearly)", threads)}
			m.Nonlinear.Rates = nonlinearRates(n.Points, threads)
			if len(m.Nonlinear.Rates) > 0 {
				m.Nonlinear.Source += "; per-kernel rates (rmsnorm, rope, silu, softmax) at their measured row widths, fastest backend, scaled alike"
			}
			return
		}
	}
	m.Notes = append(m.Notes, "no softmax or exp figure in the nonlinear section: non-linear operators are timed on the memory roof only")
}

// nonlinearRates returns, per kernel that runs a catalog operator
// (NonlinearKernel) and row width, the fastest one-thread median among
// the backends, × threads.
func nonlinearRates(pts []results.NonlinearPoint, threads int) []NonlinearRate {
	idx := map[[2]any]int{}
	var out []NonlinearRate
	for _, pt := range pts {
		switch pt.Kernel {
		case "rmsnorm", "rope", "silu", "softmax":
		default:
			continue
		}
		if pt.Threads != 1 || !(pt.GElemsPerSec.Median > 0) {
			continue
		}
		g := pt.GElemsPerSec.Median * float64(threads)
		k := [2]any{pt.Kernel, pt.RowElems}
		if i, ok := idx[k]; ok {
			out[i].GElemsPerS = max(out[i].GElemsPerS, g)
			continue
		}
		idx[k] = len(out)
		out = append(out, NonlinearRate{Kernel: pt.Kernel, RowElems: pt.RowElems, GElemsPerS: g})
	}
	return out
}

// addAttainedGEMM replaces the cores' (and the matrix unit's) FMA-peak
// ceilings with the attained GEMM throughput of the profile's matrix section
// at the largest thread count, per precision: the roofline's attainable
// compute ceiling is what the GEMM kernels reach at large LLM shapes, not
// the register-resident peak (SMEPilot §3.2 builds its roofline from
// measured kernel throughput).
func addAttainedGEMM(m *Machine, p *results.Profile) {
	mx := p.Matrix
	if mx == nil || len(mx.GEMM) == 0 {
		return
	}
	maxT := 0
	for _, g := range mx.GEMM {
		maxT = max(maxT, g.Threads)
	}
	best := map[bool]map[string]results.GEMMResult{false: {}, true: {}}
	for _, g := range mx.GEMM {
		if g.Threads != maxT || !(g.GFLOPS.Median > 0) {
			continue
		}
		unit := strings.HasPrefix(g.Backend, "amx") || strings.HasPrefix(g.Backend, "sme")
		if cur, ok := best[unit][g.DType]; !ok || g.GFLOPS.Median > cur.GFLOPS.Median {
			best[unit][g.DType] = g
		}
	}
	apply := func(t *Target, bs map[string]results.GEMMResult) {
		if len(bs) == 0 {
			return
		}
		if t.CeilingsGFLOPS == nil {
			t.CeilingsGFLOPS = map[string]float64{}
		}
		var src []string
		for _, dt := range sortedKeys(bs) {
			g := bs[dt]
			t.CeilingsGFLOPS[dt] = g.GFLOPS.Median
			src = append(src, fmt.Sprintf("%s %s %d×%d×%d %.1f GFLOP/s", dt, g.Backend, g.M, g.N, g.K, g.GFLOPS.Median))
		}
		t.Source += fmt.Sprintf("; attained GEMM ceilings from the matrix section at %d threads (%s)", maxT, strings.Join(src, ", "))
	}
	for i := range m.Targets {
		switch m.Targets[i].Kind {
		case KindCores:
			apply(&m.Targets[i], best[false])
		case KindMatrix:
			apply(&m.Targets[i], best[true])
		}
	}
	for i, n := range m.Notes {
		if strings.HasPrefix(n, "compute ceilings are peak rates") || strings.HasPrefix(n, "no measured compute ceiling") {
			m.Notes[i] = "compute ceilings are attained GEMM throughput (matrix section) where measured, FMA peaks (compute section) for other precisions"
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
