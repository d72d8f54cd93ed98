package calibrate

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/roofline"
)

// Shape is one operator shape of the designed set.
type Shape struct {
	// Class is the roofline's calibration class (roofline.ClassOf of the
	// shape's operator).
	Class string `json:"class"`
	// Op is the operator name (roofline's vocabulary) the shape stands for.
	Op string `json:"op"`
	// Threads is the worker count the shape ran with (the operator itself
	// may run on fewer: roofline.OpThreads).
	Threads int `json:"threads"`
	// M, N, K of a linear (Y[M×N] = X[M×K]·Wᵀ).
	M int `json:"m,omitempty"`
	N int `json:"n,omitempty"`
	K int `json:"k,omitempty"`
	// Rows and Width of a vector operator.
	Rows  int `json:"rows,omitempty"`
	Width int `json:"width,omitempty"`
	// Phase ("prefill", "decode"), Context and Batch of an attention.
	Phase   string `json:"phase,omitempty"`
	Context int    `json:"context,omitempty"`
	Batch   int    `json:"batch,omitempty"`
	// Cold is a decode attention timed with its KV cache evicted before
	// each call (opbench.AttentionConfig.ColdKVBytes) and predicted with
	// it in DRAM: the engine's decode of a model larger than the LLC,
	// whose weights stream through the caches between one layer's calls.
	// A cold vector operator (a decode step's norm, residual, RoPE or
	// SiLU·mul) is timed alone after every worker read opbench.ColdEvictBytes of
	// other memory, its code and data evicted as between the engine's
	// GEMVs, and predicted with the weights in DRAM (the roofline's
	// cold-line bound).
	Cold bool `json:"cold,omitempty"`
}

// coldVector are the cold vector shapes (rows, width) per class: a
// decode step's operators at batch 1 to 12 (Qwen3-0.6B: hidden 1024,
// 16 + 8 heads of 128, intermediate 3072), the engine's serial operators
// between GEMVs (each under engine's parMinElems of 16384 elements). The
// order puts the smallest and the largest in the fit half (Split
// alternates), so that the fit spans MinFixedSpan and fits the fixed
// cost that dominates these calls.
var coldVector = map[string][][2]int{
	roofline.ClassNorm:     {{1, 1024}, {4, 1024}, {12, 1024}, {24, 128}, {96, 128}},
	roofline.ClassResidual: {{1, 1024}, {4, 1024}, {12, 1024}, {1, 2048}, {4, 2048}},
	roofline.ClassRoPE:     {{1, 2048}, {4, 2048}, {4, 3072}, {1, 3072}},
	roofline.ClassSiLUMul:  {{1, 1536}, {1, 3072}, {4, 3072}, {2, 3072}},
}

// Key is a stable one-line name of the shape.
func (s Shape) Key() string {
	switch s.Class {
	case roofline.ClassGEMM, roofline.ClassGEMV:
		return fmt.Sprintf("%s M=%d N=%d K=%d t=%d", s.Class, s.M, s.N, s.K, s.Threads)
	case roofline.ClassAttention:
		cold := ""
		if s.Cold {
			cold = " cold"
		}
		return fmt.Sprintf("attention %s ctx=%d batch=%d t=%d%s", s.Phase, s.Context, s.Batch, s.Threads, cold)
	}
	if s.Cold {
		return fmt.Sprintf("%s %d×%d t=%d cold", s.Class, s.Rows, s.Width, s.Threads)
	}
	return fmt.Sprintf("%s %d×%d t=%d", s.Class, s.Rows, s.Width, s.Threads)
}

// Sizes scale the design's level-spanning shapes to the machine and the
// model.
type Sizes struct {
	// LLCBytes is the last cache level's capacity the roofline knows
	// (roofline.Machine.LastLevelBytes: with a measured knee where CPUID
	// hides the L3); 0: no L3- or DRAM-sized shapes.
	LLCBytes int64
	// KVBytesPerPos is the fp32 K and V bytes of one position of one layer
	// (2 · KV heads · head dim · 4): decode attention at DRAM-sized
	// contexts; 0: none.
	KVBytesPerPos int64
}

// Design returns the designed set of shapes at every thread count of
// threads (1 and all, in the command), in a fixed order: per class, the
// shapes from the smallest to the largest work. quick is a smaller set
// (tests, `--quick`) without the level-spanning shapes.
//
// Besides the grid of GEMM/GEMV M × (N, K), attention contexts and vector
// rows × widths (their bytes mostly in L1, L2 and the L3), the full design
// has, from sz, shapes whose bytes lie at each level so that every class
// is fitted where the engine's operators are bound (calibration is keyed
// by that level, roofline.Placed.Bound): GEMVs of L2-sized weights and of
// 4× and 8× the LLC (DRAM: the decode linears of a model larger than the
// LLC); vector operators at width 1024 whose bytes are 1/4, 3/8 and 1/2 of
// the LLC, and 4×, 6× and 8× it; decode attention over 4×, 6× and 8× the
// LLC of KV, and at contexts 128, 512 and 2048 for batches 1 and 4, with
// the KV evicted before each call (Shape.Cold: every decode shape whose KV
// exceeds the LLC is timed so, since the engine's decode of a model larger
// than the LLC finds its KV in DRAM); and prefill-sized GEMMs (M 512 and 2048 at the FFN and
// projection shapes of a 0.6B model), whose attained rate, not the ceiling
// measured at one shape, is what the engine's prefill linears run at.
func Design(threads []int, quick bool, sz Sizes) []Shape {
	ms := []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
	nks := [][2]int{{1024, 1024}, {3072, 1024}, {1024, 3072}, {2048, 2048}}
	// Prefill contexts half an octave apart: the attention class fits a
	// per-row term beside its efficiency and fixed cost (FitRows), which
	// needs at least 4 fit shapes per thread count to be tested.
	ctxs := []int{64, 96, 128, 192, 256, 384, 512, 768}
	// Decode contexts from a few µs of work (the vector path's per-call
	// and per-job costs, keyed apart from prefill's: CalibrationLevel) to
	// the L3's edge, half an octave apart below 256 so that each small
	// decode key has at least 2 fit shapes at every thread count.
	decCtx := []int{64, 96, 128, 192, 256, 512, 1024, 2048, 4096}
	// Decode attention with its KV evicted before each call (Shape.Cold),
	// at batch 1 and 4: the engine's decode steps of a model larger than
	// the LLC, from a few µs of work, where the per-call and per-job costs
	// show, to the DRAM-sized contexts below (also timed cold).
	coldCtx, coldBatches := []int{128, 512, 2048}, []int{1, 4}
	var dramCtx []int // decode contexts of 4×, 6× and 8× the LLC of KV (cold)
	rows := []int{1, 4, 16, 64}
	widths := []int{512, 1024, 3072}
	gemvMs := []int{1, 2, 4, 8}
	smallNKs := [][2]int{{256, 128}, {256, 256}, {512, 256}, {512, 384}}
	prefillMs := []int{512, 2048}
	prefillNKs := [][2]int{{3072, 1024}, {1024, 3072}, {2048, 1024}}
	var dramNKs [][2]int
	if sz.LLCBytes > 0 {
		const k = 4096
		for _, f := range []int64{4, 8} {
			n := (f*sz.LLCBytes/(4*k) + 255) / 256 * 256
			dramNKs = append(dramNKs, [2]int{int(n), k})
		}
		if sz.KVBytesPerPos > 0 {
			for _, f := range []int64{4, 6, 8} {
				dramCtx = append(dramCtx, int((f*sz.LLCBytes+sz.KVBytesPerPos-1)/sz.KVBytesPerPos))
			}
		}
	}
	if sz.LLCBytes > 0 {
		// The engine's prompts of 1024 and 2048 tokens.
		ctxs = append(ctxs, 1024, 1536, 2048)
	}
	if quick {
		ms = []int{1, 4, 16, 64}
		nks = [][2]int{{256, 256}, {512, 256}}
		ctxs = []int{32, 64}
		decCtx = []int{64, 128, 256, 512}
		rows = []int{1, 8}
		widths = []int{256, 1024}
		smallNKs, prefillMs, dramNKs, coldCtx, dramCtx = nil, nil, nil, nil, nil
	}
	linear := func(t, m int, nk [2]int) Shape {
		c := roofline.ClassGEMM
		if m <= roofline.GEMVMaxRows {
			c = roofline.ClassGEMV
		}
		return Shape{Class: c, Op: roofline.OpQProj, Threads: t, M: m, N: nk[0], K: nk[1]}
	}
	var out []Shape
	for _, t := range threads {
		for _, nk := range smallNKs {
			for _, m := range gemvMs {
				out = append(out, linear(t, m, nk))
			}
		}
		for _, nk := range nks {
			for _, m := range ms {
				out = append(out, linear(t, m, nk))
			}
		}
		for _, nk := range dramNKs {
			for _, m := range gemvMs {
				out = append(out, linear(t, m, nk))
			}
		}
		for _, m := range prefillMs {
			for _, nk := range prefillNKs {
				out = append(out, linear(t, m, nk))
			}
		}
		for _, c := range ctxs {
			out = append(out, Shape{Class: roofline.ClassAttention, Op: roofline.OpAttention, Threads: t, Phase: "prefill", Context: c, Batch: 1})
		}
		for _, c := range decCtx {
			// KV larger than the LLC is DRAM-bound: timed cold, as the
			// other DRAM-bound decode shapes (a warm loop over it keeps
			// part in the host's caches).
			cold := sz.KVBytesPerPos > 0 && sz.LLCBytes > 0 && int64(c)*sz.KVBytesPerPos > sz.LLCBytes
			out = append(out, Shape{Class: roofline.ClassAttention, Op: roofline.OpAttention, Threads: t, Phase: "decode", Context: c, Batch: 1, Cold: cold})
		}
		// Batch outer, context inner: the fit and held-out halves
		// (alternating in design order, Split) both get each batch.
		for _, b := range coldBatches {
			for _, c := range coldCtx {
				out = append(out, Shape{Class: roofline.ClassAttention, Op: roofline.OpAttention, Threads: t, Phase: "decode", Context: c, Batch: b, Cold: true})
			}
		}
		for _, c := range dramCtx {
			out = append(out, Shape{Class: roofline.ClassAttention, Op: roofline.OpAttention, Threads: t, Phase: "decode", Context: c, Batch: 1, Cold: true})
		}
		for _, v := range []struct{ class, op string }{
			{roofline.ClassNorm, roofline.OpAttnNorm},
			{roofline.ClassResidual, roofline.OpAttnResidual},
			{roofline.ClassRoPE, roofline.OpRoPE},
			{roofline.ClassSoftmax, roofline.OpRouterTopK},
			{roofline.ClassSiLUMul, roofline.OpSiLUMul},
		} {
			for _, r := range rows {
				for _, w := range widths {
					out = append(out, Shape{Class: v.class, Op: v.op, Threads: t, Rows: r, Width: w})
				}
			}
			if quick || sz.LLCBytes <= 0 {
				continue
			}
			// A decode step's shapes, cold (Shape.Cold): batch 1 and 4 of
			// Qwen3-0.6B's rows (qk_norm: 24 heads of 128 a token).
			for _, rw := range coldVector[v.class] {
				out = append(out, Shape{Class: v.class, Op: v.op, Threads: t, Rows: rw[0], Width: rw[1], Cold: true})
			}
			// Rows of width 1024 whose bytes are a given fraction of the LLC.
			const w = 1024
			one, err := predictOp(Shape{Class: v.class, Op: v.op, Rows: 1, Width: w})
			if err != nil || !(one.Bytes.Total() > 0) {
				continue
			}
			for _, f := range []float64{0.25, 0.375, 0.5, 4, 6, 8} {
				r := int(math.Ceil(f * float64(sz.LLCBytes) / one.Bytes.Total()))
				out = append(out, Shape{Class: v.class, Op: v.op, Threads: t, Rows: max(r, 1), Width: w})
			}
		}
		if quick || sz.LLCBytes <= 0 || sz.KVBytesPerPos <= 0 {
			continue
		}
		// kv_write: a decode step's few positions (serial on the caller,
		// cold, as between the engine's GEMVs) and a prompt's (on the
		// workers), each call into positions of a DRAM-sized cache not
		// written since its last pass (kvWriteRows).
		kvd := int(sz.KVBytesPerPos / 8)
		for _, p := range kvWritePositions {
			out = append(out, Shape{Class: roofline.ClassKVWrite, Op: roofline.OpKVWrite, Threads: t, Rows: p, Width: kvd, Cold: p < kvColdBelow})
		}
	}
	return out
}

// kvWritePositions are the kv_write shapes' positions per call; those
// below kvColdBelow (under the engine's parMinElems of 16384 elements at
// 1024 floats of K and of V a position: a decode step's, one position of
// each sequence of the batch) are timed cold, each position in a panel of
// its own (kvWriteRows), as the batch's sequences' caches are apart.
var kvWritePositions = []int{1, 2, 4, 16, 64, 256, 1024, 2048}

const kvColdBelow = 8

// RunThreads is the thread count of the shape's calibration key: Threads
// for linears and attention, roofline.OpThreads for a vector operator (one
// thread for one row or few elements), except a cold vector shape's,
// which is Threads, the workers whose streams evicted its lines (a cold
// call's cost follows them, not the one thread that runs it: RoPE of
// 1×2048 took 2.7 µs after one worker evicted 128 MiB and 1.7 µs after two
// evicted half each; roofline.Machine.calibrate keys the cold-lines level
// by the cores' workers to match).
func (s Shape) RunThreads() int {
	switch s.Class {
	case roofline.ClassGEMM, roofline.ClassGEMV, roofline.ClassAttention:
		return s.Threads
	}
	if s.Cold {
		return s.Threads
	}
	op, err := predictOp(s)
	if err != nil {
		return s.Threads
	}
	n, _ := roofline.OpThreads(op, s.Threads)
	return n
}

// Split assigns each shape to the fit half (false) or the held-out half
// (true), stratified per calibration key (class, thread count that runs
// it, RunThreads, and the level that bounds its prediction): keys[i] is
// shape i's. Within each key, in design order (from the smallest to the
// largest work), the shapes alternate fit, held-out, fit, … so each group
// has both halves and both span its range. It depends only on the shapes
// and the uncalibrated model, not on any measurement (deterministic).
func Split(keys []roofline.CalibrationKey) []bool {
	held := make([]bool, len(keys))
	n := map[roofline.CalibrationKey]int{}
	for i, k := range keys {
		held[i] = n[k]%2 == 1
		n[k]++
	}
	return held
}
