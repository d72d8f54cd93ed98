package roofline

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cpubench/bench/results"
)

// The per-call terms of the model (issue #16 part 1). SMEPilot's roofline
// (§3.2) bounds an operator by max(F/π_t, Q/β_t) with one β, the DRAM roof
// at every thread. What the engine runs differs in three ways, each a term
// here, used only when the machine has the figures (a probe profile's
// memory.levels and dispatch section; machine files of schema v3), so the
// published profiles' tables are unchanged:
//
//   - threads: the engine runs a small row-wise vector operator (norms,
//     residual adds, RoPE, kv_write, SiLU·mul of few rows) and the
//     embedding gather on the caller alone (engine/batch.go: par runs on
//     one thread below SerialVectorElems elements or for one row), and
//     linear and attention operators on all workers; so the roofs and
//     ceilings are those of the thread count that runs the operator
//     (OpThreads);
//   - cache roofs: the bytes an operator reads or writes stream at the
//     roof of the smallest level that holds them for the call (callBytes);
//     a vector operator of a dense model's catalog times each activation
//     operand by its reuse distance (Operand, setReuse: the bytes of other
//     buffers touched since its last use, LRU stack distance), so an input
//     the previous operator just wrote comes from a cache and a buffer
//     last touched before a projection's weights streamed comes from DRAM,
//     and a write to such lines at DRAM's write rate (dramWriteGBps;
//     measured on the fidelity runs of 2026-11-26, then at the write
//     kernel's roof, replayed with scripts/fidreplay:
//     prefill norms 2.5–2.9× → 1.0, kv_write 7.7× → 1.65, residuals 1.8×
//     → 0.93 measured/predicted);
//   - fixed costs: every parallel call on the worker pool pays its dispatch
//     and barrier (FixedCost.CallSeconds at that thread count), and the first
//     of a forward call the wake-up of parked workers (WakeSeconds, once per
//     call in Analysis.WakeUp).
//
// An operator's prediction on the cores is then, in seconds,
//
//	t = calls · c(n) + max(F / (π · n/N), Σ_parts Q_part / β(level_part, n))
//
// with n the threads that run it, N the workers π was measured with, c(n)
// the fixed cost of one call, and β(level, n) the read roof of the level
// holding each part at n threads (the roofline's max, SMEPilot §3.2,
// plus the latency term of a Hockney α–β model for the call itself).

// SerialVectorElems is the engine's threshold (engine/batch.go
// parMinElems): a row-wise vector operator of fewer elements, or of one
// row, runs on the caller alone, not on the worker pool.
const SerialVectorElems = 1 << 14

// OpThreads returns how many threads run operator o when parallel
// operators run on workers threads, and how many parallel calls on the
// worker pool it makes (each paying the pool's fixed cost), as the engine
// runs them:
//
//   - embed, the MoE router's softmax/top-k, the experts' SiLU·mul and
//     the MoE combine: the caller alone, no pool call;
//   - a row-wise vector operator (norms, residual adds, RoPE, kv_write,
//     SiLU·mul): the caller alone when Rows == 1 or Rows·Width <
//     SerialVectorElems, else one call on every worker (qk_norm: two
//     calls, one for q and one for k);
//   - softmax and P·V: no call of their own (the engine's fused attention
//     is one call, counted on QKᵀ);
//   - an MoE expert: three calls (gate, up, down) on every worker;
//   - everything else: one call on every worker.
func OpThreads(o Operator, workers int) (threads, calls int) {
	workers = max(workers, 1)
	if _, ok := ParseExpertOp(o.Name); ok {
		return workers, 3
	}
	switch o.Name {
	case OpEmbed, OpRouterTopK, OpExpertSiLUMul, OpMoECombine:
		return 1, 0
	case OpSoftmax, OpPV:
		return workers, 0
	}
	if o.Rows > 0 && o.Width > 0 && (o.Kind == KindNonlinear || o.Kind == KindElementwise) {
		if workers == 1 || o.Rows == 1 || o.Rows*o.Width < SerialVectorElems {
			return 1, 0
		}
		if o.Name == OpQKNorm {
			return workers, 2
		}
		return workers, 1
	}
	return workers, 1
}

// serialAtAnyWorkers reports whether the engine runs o on the caller alone
// whatever the workers (OpThreads at 2 workers is 1 thread): an operator
// small enough to stay serial, not one serial for want of workers.
func serialAtAnyWorkers(o Operator) bool {
	n, _ := OpThreads(o, 2)
	return n == 1
}

// callModel reports whether m has any per-call term.
func (m *Machine) callModel() bool { return len(m.LevelRoofs) > 0 || m.FixedCosts != nil }

// nearestThreads picks, among the thread counts have, n itself, else the
// largest below n, else the smallest.
func nearestThreads(have []int, n int) int {
	best := -1
	for _, h := range have {
		if h <= n && h > best {
			best = h
		}
	}
	if best > 0 {
		return best
	}
	for _, h := range have {
		if best < 0 || h < best {
			best = h
		}
	}
	return best
}

// FixedCall returns the fixed cost of one parallel call on threads
// threads, and of one after the workers parked, in seconds (the measured
// thread count nearest below; 0, 0 without fixed costs).
func (m *Machine) FixedCall(threads int) (call, wake float64) {
	if m.FixedCosts == nil || len(m.FixedCosts.Points) == 0 {
		return 0, 0
	}
	var have []int
	for _, c := range m.FixedCosts.Points {
		have = append(have, c.Threads)
	}
	n := nearestThreads(have, threads)
	for _, c := range m.FixedCosts.Points {
		if c.Threads == n {
			return c.CallSeconds, c.WakeSeconds
		}
	}
	return 0, 0
}

// levelOrder ranks the levels, nearest the core first.
var levelOrder = map[string]int{"L1": 1, "L2": 2, "L3": 3, "DRAM": 4}

// roofsAt returns the level roofs at the measured thread count nearest
// threads, nearest the core first.
func (m *Machine) roofsAt(threads int) []LevelRoof {
	var have []int
	for _, r := range m.LevelRoofs {
		have = append(have, r.Threads)
	}
	n := nearestThreads(have, threads)
	var out []LevelRoof
	for _, r := range m.LevelRoofs {
		if r.Threads == n {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return levelOrder[out[i].Level] < levelOrder[out[j].Level] })
	return out
}

// holding returns the roof of the smallest level whose capacity at
// threads threads holds bytes (DRAM when none does or bytes is 0 of a
// machine without DRAM level: then ok is false).
func (m *Machine) holding(bytes float64, threads int) (LevelRoof, bool) {
	rs := m.roofsAt(threads)
	for _, r := range rs {
		if r.Level == "DRAM" || float64(r.CapacityBytes) >= bytes {
			return r, true
		}
	}
	return LevelRoof{}, false
}

// HoldingRoof is the level roof (read GB/s) of the smallest memory level
// whose capacity at threads threads holds bytes — LevelRoofs: a probed
// profile's memory.levels with the topology's capacities, at the measured
// thread count nearest threads — or DRAM's when none does; ok is false for
// a machine without level roofs.
func (m *Machine) HoldingRoof(bytes float64, threads int) (LevelRoof, bool) {
	return m.holding(bytes, threads)
}

// residentBytes is the bytes that stay live across forward calls: every
// operator's weights and KV cache reads, summed over the layers (a
// Catalog's ModelTotals). Weights and KV are read once per call, so they
// are in a cache at the start of an operator only when all of them fit it.
func residentBytes(c *Catalog) float64 {
	t := c.ModelTotals()
	return t.Bytes.Weights + t.Bytes.KVRead
}

// callBytes is where an operator's bytes come from for one call:
// activations (inputs just written by the previous operator, outputs,
// KV writes) from the smallest level that holds them at the operator's
// thread count; weights and KV reads from the smallest level that holds
// every call's weights and KV (resident), else DRAM. Roof names the level
// that moves most of the bytes.
type callBytes struct {
	Seconds float64
	Roof    string
	// ActLevel is the level holding the activations (inputs, outputs, KV
	// writes) for the call.
	ActLevel string
	// Weights are the operator's weight bytes, read at WeightsGBps from
	// WeightsLevel (part of Seconds).
	Weights      float64
	WeightsGBps  float64
	WeightsLevel string
}

// memTime is the memory time of o on threads threads when resident bytes
// of weights and KV are live across calls, at the level roofs; ok is
// false when the machine has no level roofs (the caller then uses β).
func (m *Machine) memTime(o Operator, threads int, resident float64) (callBytes, bool) {
	if len(m.LevelRoofs) == 0 {
		return callBytes{}, false
	}
	act := o.Bytes.ActIn + o.Bytes.ActOut + o.Bytes.KVWrite
	stream := o.Bytes.Weights + o.Bytes.KVRead
	ra, ok1 := m.holding(act, threads)
	// Weights and KV are spread over every worker's caches when they are
	// resident: use the capacity of all workers for residency, the roof
	// of the threads that run o for the rate.
	rw, ok2 := m.holding(resident, m.maxRoofThreads())
	if !ok1 || !ok2 {
		return callBytes{}, false
	}
	rwAt := rw
	for _, r := range m.roofsAt(threads) {
		if r.Level == rw.Level {
			rwAt = r
		}
	}
	if levelOrder[rwAt.Level] >= levelOrder["L3"] && stream > 0 {
		// Beyond the private caches, at the measured read rate of a
		// working set of every call's weights and KV.
		if g, ok := m.streamGBps(resident, threads); ok {
			rwAt.GBps = g
		}
	}
	cb := callBytes{Seconds: act/(ra.GBps*1e9) + stream/(rwAt.GBps*1e9), Roof: ra.Level, ActLevel: ra.Level,
		Weights: o.Bytes.Weights, WeightsGBps: rwAt.GBps, WeightsLevel: rwAt.Level}
	if stream >= act {
		cb.Roof = rwAt.Level
	}
	if vectorOp(o) && len(o.Operands) > 0 {
		// Each activation operand from the level its reuse distance
		// leaves it in; a write to lines that left the caches at the
		// DRAM write rate (the write-allocate and write-back; dramWriteGBps).
		secs, most, lvl := 0.0, 0.0, ""
		for _, p := range o.Operands {
			if p.Weights {
				continue
			}
			r, ok := m.operandLevel(p, act, threads)
			if !ok {
				return cb, true
			}
			// A write in place (the call read the same lines just before:
			// Distance 0) finds its lines in the core's cache: no
			// write-allocate read, and their write-back happens when the
			// caches evict them — after the call, or overlapped with its
			// reads — so it adds nothing to the call's time. Measured on
			// 2026-11-27's Zen 5 VM: prefill RoPE of 2048 tokens (25 MB
			// of q and k read and written in place) took 354–486 µs a
			// layer on 2 threads, against 1106 predicted at the write
			// roof and 596 with the write-back at the level's read rate;
			// replayed (scripts/fidreplay) over four fidelity passes'
			// 24–72 runs each, noisy ones included, charging nothing for
			// the write-back put 34–63 more operator rows within ±10% in
			// each (the residual adds 0.79 → 0.93 of their prediction,
			// RoPE 0.48 → 0.94, SiLU·mul 0.72 → 1.03), more than charging
			// it only where the operand's level is DRAM.
			if p.Write && p.Distance == 0 {
				continue
			}
			secs += p.Bytes / (r.rate(p.Write) * 1e9)
			if f := remoteShare(p, threads); f > 0 && r.Level != "DRAM" {
				// The share another worker wrote comes from its cache at
				// the core-to-core rate where that is slower.
				if g := m.coreToCoreGBps(threads); g > 0 && g < r.rate(false) {
					secs += f * p.Bytes * (1/(g*1e9) - 1/(r.rate(false)*1e9))
				}
			}
			if p.Bytes > most {
				most, lvl = p.Bytes, r.Level
			}
		}
		cb.Seconds, cb.ActLevel = secs+stream/(rwAt.GBps*1e9), lvl
		cb.Roof = lvl
		if stream >= act {
			cb.Roof = rwAt.Level
		}
	}
	return cb, true
}

// streamGBps is the read rate (GB/s) of a cyclic stream over bytes at
// threads threads from Machine.ReadCurve at the measured thread count
// nearest threads: the time per byte interpolated linearly in log bytes
// between the two working sets around bytes (a hit fraction mixes the
// two rates' times per byte). ok is false without such points or outside
// the measured working sets. Measured on this project's KVM guest (one
// 32 MiB L3 visible), 1 thread: 82 GB/s at 22.6 MiB, 70 at 32, 52 at 45
// and 41 at 64 against 121 in L3 and 35 from DRAM; a decode attention
// over 32 MiB of KV cache ran at 42 GB/s on 1 thread and 104 on 2.
func (m *Machine) streamGBps(bytes float64, threads int) (float64, bool) {
	var have []int
	for _, p := range m.ReadCurve {
		have = append(have, p.Threads)
	}
	if len(have) == 0 || !(bytes > 0) {
		return 0, false
	}
	n := nearestThreads(have, threads)
	var pts []CurvePoint
	for _, p := range m.ReadCurve {
		if p.Threads == n {
			pts = append(pts, p)
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Bytes < pts[j].Bytes })
	for i := 1; i < len(pts); i++ {
		lo, hi := pts[i-1], pts[i]
		if bytes < float64(lo.Bytes) || bytes > float64(hi.Bytes) || hi.Bytes <= lo.Bytes {
			continue
		}
		f := (math.Log(bytes) - math.Log(float64(lo.Bytes))) / (math.Log(float64(hi.Bytes)) - math.Log(float64(lo.Bytes)))
		perByte := (1-f)/lo.GBps + f/hi.GBps
		g := 1 / perByte
		if n != threads {
			g *= float64(threads) / float64(n)
		}
		return g, true
	}
	return 0, false
}

// vectorOp is whether o is a row-wise vector operator (non-linear or
// element-wise; not attention's softmax, which the engine fuses into its
// tiles).
func vectorOp(o Operator) bool {
	return (o.Kind == KindNonlinear || o.Kind == KindElementwise) && o.Name != OpSoftmax
}

// ReuseMargin is the factor by which a cache level's capacity must exceed
// an operand's reuse distance plus its bytes for the level to count as
// still holding it. LRU stack distance assumes a fully associative LRU
// cache of the whole capacity. Measured on 2026-11-26's 2-core KVM guest
// (a 32 MiB L3 that the host's other guests share): the engine's 512-row
// prefill attn_norm took 60.6 µs a layer, its output buffer 28 MiB of
// other buffers after its last use; one worker's 256 rows of kernels.
// RMSNorm took 25.5 µs with input and output hot, 46 µs with the output's
// lines evicted (64 MiB read in between) and 62.7 µs with both: the lines
// were gone.
const ReuseMargin = 2

// operandLevel is the level roof (at threads threads) of the smallest
// level that holds operand p of an operator moving act activation bytes:
// capacity ≥ ReuseMargin × (p's distance + bytes), and ≥ act.
func (m *Machine) operandLevel(p Operand, act float64, threads int) (LevelRoof, bool) {
	return m.holding(max(ReuseMargin*(p.Distance+p.Bytes), act), threads)
}

// sharedLevel is whether level is one a core shares with others (L3, DRAM):
// a decode-sized operator's lines there cost it about a DRAM line each
// (measured per operator against this cold-line model on 2026-11-26's
// fidelity runs: counting the L3's lines as hot put decode's norms at 2–4.6×
// their prediction).
func sharedLevel(level string) bool { return level == "L3" || level == "DRAM" }

// rate is r's GB/s for a read, or for a write: DRAM's write rate where
// the profile measured one (WriteGBps), else the read roof.
func (r LevelRoof) rate(write bool) float64 {
	if write && r.WriteGBps > 0 {
		return r.WriteGBps
	}
	return r.GBps
}

// maxRoofThreads is the largest thread count of the level roofs.
func (m *Machine) maxRoofThreads() int {
	n := 1
	for _, r := range m.LevelRoofs {
		n = max(n, r.Threads)
	}
	return n
}

// callTime is operator o's time on the cores target under the per-call
// model (see the package's per-call terms): fixed cost of its pool calls
// plus max(F/π scaled to its threads, the memory time at the level roofs,
// elems/the non-linear rate scaled to its threads for non-linear
// operators), plus, for a decode-sized operator on the caller between
// DRAM-streaming GEMVs, its cold stall (bound "cold lines"; streamed is
// the bytes of other data streamed since its last call, 0 if not known).
// It fills p's Threads, Calls, FixedSeconds, Roof and Bound.
func (m *Machine) callTime(cores Target, prec string, o Operator, resident, streamed float64, p *Placed) float64 {
	workers := max(cores.Workers, 1)
	n, calls := OpThreads(o, workers)
	call, _ := m.FixedCall(n)
	p.Threads, p.Calls, p.FixedSeconds = n, calls, float64(calls)*call
	share := float64(n) / float64(workers)
	if w, ok := m.tiledAttention(o); ok {
		// A tiled kernel's products compute whole slivers and tiles, and
		// its scores stay in the core's caches (tiled.go); its softmax
		// term is the whole vector stage.
		switch o.Name {
		case OpQK:
			o.FLOPs, o.Bytes.ActOut = w.QKFLOPs, 0
		case OpPV:
			o.FLOPs, o.Bytes.ActIn = w.PVFLOPs, 0
		case OpSoftmax:
			if sm, rs, su, ok := m.tiledVector(w, prec, cores, n, share); ok {
				p.Roof, p.Bound = "L2", BoundCompute+"/L2"
				return p.FixedSeconds + sm + rs + su
			}
			// No softmax rate: the elements the runs cover, in the caches.
			o.Elems, o.Bytes.ActIn, o.Bytes.ActOut = w.ScoreElems, 0, 0
		}
	}
	mem := o.Bytes.Total() / (cores.BandwidthGBps * 1e9)
	p.Roof = "β"
	compute := BoundCompute
	cb, haveLevels := m.memTime(o, n, resident)
	if haveLevels {
		mem, p.Roof = cb.Seconds, cb.Roof
		// A compute-bound kernel's attained rate falls when its
		// activation panels leave the caches (a GEMM of 2048 rows runs at
		// 62–86% of the ceiling measured at 512 on this project's VM):
		// the bound names the level holding them.
		compute += "/" + cb.ActLevel
	}
	t := mem
	p.Bound = p.Roof
	if o.Kind == KindLinear && o.M >= 1 && cb.WeightsLevel == "DRAM" && o.Bytes.Weights > 0 && weightsIn(o, prec) {
		// A GEMV streams its DRAM-resident weights at the kernel's own
		// measured rate, not the read kernel's roof (gemmtable.go), and a
		// GEMM of a few rows (a batched decode's) no faster: more rows
		// add FLOPs per weight, not bandwidth (measured here: the
		// batch-4 decode's lm_head 15.8 ms against the GEMV's 12.4, which
		// the read roof had predicted at 10.4).
		if g, used, ok := m.GEMVWeightGBps(prec, n); ok {
			if f, why := m.FewRowsWeightFactor(prec, n, o.M, o.K); why != "" {
				g, used = g*f, used+" "+why
			}
			mem = mem - cb.Weights/(cb.WeightsGBps*1e9) + o.Bytes.Weights/(g*1e9)
			t, p.Rate = mem, used
		}
	}
	if pi := cores.Ceiling(prec); pi > 0 {
		c := o.FLOPs / (pi * share * 1e9)
		if o.Kind == KindLinear && o.M > 0 {
			lvl := ""
			if haveLevels {
				lvl = cb.WeightsLevel
			}
			if r, used, ok := m.attainedGEMM(prec, n, o.M, o.N, o.K, lvl); ok && r > 0 {
				c, p.Rate = o.FLOPs/(r*1e9), used
			}
		}
		if c > t {
			t, p.Bound = c, compute
		}
	}
	cold, coldC := false, 0.0
	if f := m.FixedCosts; f != nil && f.ColdLineSeconds > 0 && calls == 0 && n == 1 && serialAtAnyWorkers(o) && haveLevels && cb.WeightsLevel == "DRAM" &&
		(o.Kind == KindNonlinear || o.Kind == KindElementwise) {
		// A decode-sized operator on the caller between GEMVs that stream
		// the DRAM-resident weights: its few lines were evicted since
		// their last use and come at a latency-bound cost per line. (Not
		// a prefill-sized one that runs on the caller only because there
		// is one worker: its activations were just written.)
		// Bound "cold lines" whichever term is larger: what a call costs
		// here is mostly fixed (its code and translations evicted with
		// its data: RoPE on hot q and k took 1.9 µs a call in the engine
		// against 0.15 hot), which the calibration's cold shapes fit
		// under this key.
		// A floor of the probe's whole cold call (ColdCallSeconds): an
		// operator whose few cold lines alone predict less — RoPE on the
		// hot q and k (4 cold lines of the RoPE table), a residual add
		// whose other operand the GEMV just wrote — still pays the evicted
		// code and translations (measured here: RoPE on hot q and k 0.13
		// µs a call back to back, 1.1–1.3 µs after 64 MiB of other
		// reads). Replayed (scripts/fidreplay) over five fidelity passes
		// of 48 runs each, noisy ones included, each at its profile's own
		// cold call (1.28–1.55 µs; 4.6 in the most contended): 14, 25,
		// 24 and 15 more operator rows within ±10%, 6 fewer in the most
		// contended (decode RoPE 5.65 → 1.41 of its prediction, the
		// residual adds 1.99 and 1.68 → 1.20 and 1.04).
		// The whole call's floor grows with what streamed through the
		// caches since the operator last ran (streamed: a layer's
		// weights and KV, for the head's operators too; analysis.go,
		// FixedCosts.ColdCallAt).
		coldC = max(m.coldLines(o, n)*f.ColdLineSeconds, f.ColdCallAt(streamed))
		cold = true
	}
	if g := m.nonlinearRate(o); o.Kind == KindNonlinear && g > 0 {
		if c := o.Elems / (g * share * 1e9); c > t {
			t, p.Bound = c, compute
		}
	}
	switch {
	case cold && o.Name == OpEmbed:
		// A gather of whole rows (the embedding's: no compute) moves
		// nothing but its cold lines, so they are its memory time,
		// counted once: the larger of the roofs' time, its cold lines'
		// and the cold call's, not their sum (measured here: random 4
		// KiB rows of the 622 MB qwen3-0.6b table took 0.59–0.96 µs a
		// row in the engine's prefill, most 0.6–0.75, 4.7–5.9 ns a line
		// of the 128 read and written, against the cold add's 6.8–7.1;
		// the sum had predicted 1.26 µs a row). Replayed over eight
		// fidelity passes of 48 runs each, noisy ones included, with the
		// embedding's cold call after a layer's bytes (analysis.go): 15,
		// 14, 16, 10, 8, 7 and 1 more operator rows within ±10%, 2 fewer
		// on the pass whose profile's cold call a garbage collection had
		// inflated (the prefill embedding 0–1 → 10–12 of 48 on the last
		// four).
		t = max(t, coldC)
		p.Bound = BoundColdLines
	case cold:
		// The cold penalty comes before the work, not beside it: a call
		// this short stalls on its evicted code, translations and lines
		// and then computes (measured here with the probe's eviction, 64
		// MiB read before each call, medians of 41: SiLU·mul of 3072
		// floats 2.6–3.0 µs cold against 0.99 hot, the q/k norms of 24
		// rows of 128 2.6 against 1.15, RoPE of q and k 2.0–2.2 against
		// 0.57, a residual add 1.0–1.1 against 0.06). Replayed over six
		// fidelity passes, noisy runs included: 23, 11, 28, 13 and 25 more
		// operator rows within ±10% than the larger of the two terms, 11
		// fewer in the most contended.
		t += coldC
		p.Bound = BoundColdLines
	}
	return p.FixedSeconds + t
}

// addLevelRoofs copies the profile's memory.levels at every thread count
// as level roofs, with the capacity each thread count holds of each cache
// level (topology.caches: one instance's size × the instances the threads
// occupy, threads placed one per core and spread evenly over instances).
func addLevelRoofs(m *Machine, p *results.Profile, name string) {
	if p.Memory == nil || p.Topology == nil {
		return
	}
	t := p.Topology
	cores := max(t.Cores, 1)
	type lvl struct {
		size      int64
		instances int
		src       string
	}
	caches := map[string]lvl{}
	for _, c := range t.Caches {
		if c.Type == "Instruction" || c.Level < 1 || c.Level > 3 {
			continue
		}
		key := fmt.Sprintf("L%d", c.Level)
		if c.SizeBytes > caches[key].size {
			src := "sysfs"
			if c.Source != "" {
				src = c.Source
			}
			caches[key] = lvl{c.SizeBytes, max(c.Instances, 1), src}
		}
	}
	var srcs []string
	for _, l := range p.Memory.Levels {
		if !(l.GBps.Median > 0) {
			continue
		}
		r := LevelRoof{Level: l.Level, Threads: l.Threads, GBps: l.GBps.Median}
		if l.Level != "DRAM" {
			c, ok := caches[l.Level]
			if !ok {
				continue
			}
			used := min(c.instances, max(1, (l.Threads*c.instances+cores-1)/cores))
			r.CapacityBytes = c.size * int64(used)
			r.Source = fmt.Sprintf("%s: memory.levels %s at %d threads; capacity %d × %d B (topology.caches, %s)", name, l.Level, l.Threads, used, c.size, c.src)
		} else {
			r.Source = fmt.Sprintf("%s: memory.levels DRAM at %d threads", name, l.Threads)
			if w, from := dramWriteGBps(p.Memory, l.Threads); w > 0 {
				r.WriteGBps = w
				r.Source += fmt.Sprintf("; write %.1f GB/s (memory.working_set: %s GB/s at its largest working set)", w, from)
			}
		}
		m.LevelRoofs = append(m.LevelRoofs, r)
		srcs = append(srcs, fmt.Sprintf("%s×%d %.1f GB/s", l.Level, l.Threads, l.GBps.Median))
	}
	for _, b := range p.Memory.WorkingSet {
		if b.Kernel == "read" && b.Threads > 0 && b.WorkingSetBytes > 0 && b.GBps.Median > 0 {
			m.ReadCurve = append(m.ReadCurve, CurvePoint{Threads: b.Threads, Bytes: b.WorkingSetBytes, GBps: b.GBps.Median})
		}
	}
	if len(m.LevelRoofs) > 0 {
		note := "bytes are timed at the roof of the memory level that holds them for the call, at the thread count that runs the operator (" + strings.Join(srcs, ", ") + "); weights and KV count as cache-resident only when all of a forward call's fit"
		if t.CacheNote != "" {
			// E.g. a VM whose CPUID reports no L3: bytes beyond the last
			// level known are timed at DRAM.
			note += "; the cache sizes: " + t.CacheNote + ", so bytes beyond the last level known are timed at the DRAM roof"
		}
		m.Notes = append(m.Notes, note)
	}
}

// dramWriteGBps is the rate, in GB/s, of an operator's writes to lines
// that left the caches at threads threads, from the memory sweep at its
// largest working set (DRAM-sized: the sweep reaches beyond the
// last-level cache), and which kernel gave it: half the copy kernel's
// median (a copy counts its bytes read and written alike, so half its
// GB/s is the rate of its writes: a write-allocate stream beside a read
// stream, as a norm, SiLU·mul or kv_write into cold lines runs), else the
// write kernel's (a store stream alone); 0, "" when the sweep has
// neither. Measured on 2026-11-27's Zen 5 VM, 2 threads: the write kernel
// 46–49 GB/s, copy 58–62 (29–31 of writes); a norm of 2048×1024 floats
// into cold lines (its input in the L3) took 332–363 µs and a copy of the
// same bytes 246–290, against 226 µs predicted at the write kernel's
// rate and 315 at copy's; replayed (scripts/fidreplay) over four fidelity
// passes of 48 runs each, noisy ones included: 20, 27, 14 and −6 more
// operator rows within ±10% (prefill norms 1.96 → 1.34, prefill kv_write
// 1.91 → 1.41 of their prediction in the most contended pass; 1.48 →
// 1.01 and 1.32 → 0.99 on a quieter day's run).
func dramWriteGBps(mem *results.Memory, threads int) (float64, string) {
	largest := func(kernel string) float64 {
		best, ws := 0.0, int64(0)
		for _, b := range mem.WorkingSet {
			if b.Kernel == kernel && b.Threads == threads && b.WorkingSetBytes > ws && b.GBps.Median > 0 {
				best, ws = b.GBps.Median, b.WorkingSetBytes
			}
		}
		return best
	}
	if c := largest("copy"); c > 0 {
		return c / 2, "half the copy kernel's"
	}
	if w := largest("write"); w > 0 {
		return w, "the write kernel's"
	}
	return 0, ""
}

// addFixedCosts copies the profile's dispatch section (the worker pool's
// fixed cost per parallel call, hot and after parking) per thread count.
func addFixedCosts(m *Machine, p *results.Profile, name string) {
	d := p.Dispatch
	if d == nil || len(d.Points) == 0 {
		return
	}
	f := &FixedCosts{Source: fmt.Sprintf("%s: dispatch section (kernels/pool, medians)", name)}
	for _, pt := range d.Points {
		if !(pt.CallSeconds.Median >= 0) || pt.Threads < 1 {
			continue
		}
		f.Points = append(f.Points, FixedCost{Threads: pt.Threads, CallSeconds: pt.CallSeconds.Median, WakeSeconds: max(pt.WakeSeconds.Median, 0)})
	}
	if cv := d.ColdVector; cv != nil && cv.SecondsPerLine > 0 {
		f.ColdLineSeconds = cv.SecondsPerLine
		f.ColdCallSeconds = max(cv.Seconds.Median, 0)
		f.Source += fmt.Sprintf("; a cold line %.1f ns, a cold call at least %.2f µs (dispatch.cold_vector: %s)", cv.SecondsPerLine*1e9, f.ColdCallSeconds*1e6, cv.Method)
		var pts []string
		for _, pt := range cv.Points {
			if pt.EvictBytes > 0 && pt.Seconds.Median >= 0 && (len(f.ColdCalls) == 0 || float64(pt.EvictBytes) > f.ColdCalls[len(f.ColdCalls)-1].EvictBytes) {
				f.ColdCalls = append(f.ColdCalls, ColdCall{EvictBytes: float64(pt.EvictBytes), Seconds: pt.Seconds.Median})
				pts = append(pts, fmt.Sprintf("%.2f µs after %.0f MB", pt.Seconds.Median*1e6, float64(pt.EvictBytes)/1e6))
			}
		}
		if len(pts) > 0 {
			f.Source += "; by what streamed before it: " + strings.Join(pts, ", ")
		}
	}
	if cc := d.CoreToCore; cc != nil && cc.GBps.Median > 0 && cc.Threads >= 2 {
		f.CoreToCoreGBps, f.CoreToCoreThreads = cc.GBps.Median, cc.Threads
		f.Source += fmt.Sprintf("; %d workers read what their neighbours wrote at %.1f GB/s together (dispatch.core_to_core: %s)", cc.Threads, cc.GBps.Median, cc.Method)
	}
	if len(f.Points) > 0 {
		m.FixedCosts = f
	}
}

// coldLines is the number of cold 64-byte lines a serial vector operator
// on threads threads moves: the lines of its weights and of each operand
// whose reuse distance leaves it in DRAM (operandLevel); all of its bytes
// without operands. kv_write's K half counts one line per element: the
// engine writes it into the producer-packed K panels (engine/kvcache.go:
// K[pos][d] at d·NR + pos%NR within a panel).
func (m *Machine) coldLines(o Operator, threads int) float64 {
	if len(o.Operands) == 0 {
		if o.Name == OpKVWrite {
			return o.Elems/2 + o.Bytes.KVWrite/2/64
		}
		return math.Ceil(o.Bytes.Total() / 64)
	}
	act := o.Bytes.ActIn + o.Bytes.ActOut + o.Bytes.KVWrite
	n := 0.0
	for _, p := range o.Operands {
		if !p.Weights {
			if r, ok := m.operandLevel(p, act, threads); !ok || !sharedLevel(r.Level) {
				continue
			}
		}
		if o.Name == OpKVWrite && p.Write {
			n += o.Elems/2 + p.Bytes/2/64
			continue
		}
		n += math.Ceil(p.Bytes / 64)
	}
	return n
}

// LastLevelBytes is the capacity of the last cache level of m's level
// roofs (the largest capacity of any level but DRAM, at any thread count),
// in bytes; 0 without level roofs.
func (m *Machine) LastLevelBytes() int64 {
	n := int64(0)
	for _, r := range m.LevelRoofs {
		if r.Level != "DRAM" {
			n = max(n, r.CapacityBytes)
		}
	}
	return n
}

// nonlinearRate is the rate (1e9 elements/s on every worker) of the
// kernel that runs operator o (Nonlinear.RateFor at o's row width), 0
// when the machine has none.
func (m *Machine) nonlinearRate(o Operator) float64 {
	if m.Nonlinear == nil {
		return 0
	}
	g, _ := m.Nonlinear.RateFor(o.Name, o.Width)
	return g
}
