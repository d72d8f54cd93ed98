package calibrate

import (
	"fmt"

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
}

// Key is a stable one-line name of the shape.
func (s Shape) Key() string {
	switch s.Class {
	case roofline.ClassGEMM, roofline.ClassGEMV:
		return fmt.Sprintf("%s M=%d N=%d K=%d t=%d", s.Class, s.M, s.N, s.K, s.Threads)
	case roofline.ClassAttention:
		return fmt.Sprintf("attention %s ctx=%d batch=%d t=%d", s.Phase, s.Context, s.Batch, s.Threads)
	}
	return fmt.Sprintf("%s %d×%d t=%d", s.Class, s.Rows, s.Width, s.Threads)
}

// Design returns the designed set of shapes at every thread count of
// threads (1 and all, in the command), in a fixed order: per class, the
// shapes from the smallest to the largest work. quick is a smaller set
// (tests, `--quick`).
func Design(threads []int, quick bool) []Shape {
	ms := []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
	nks := [][2]int{{1024, 1024}, {3072, 1024}, {1024, 3072}, {2048, 2048}}
	ctxs := []int{64, 128, 256, 512}
	decCtx := []int{128, 256, 512, 1024, 2048, 4096}
	rows := []int{1, 4, 16, 64}
	widths := []int{512, 1024, 3072}
	if quick {
		ms = []int{1, 4, 16, 64}
		nks = [][2]int{{256, 256}, {512, 256}}
		ctxs = []int{32, 64}
		decCtx = []int{64, 128, 256, 512}
		rows = []int{1, 8}
		widths = []int{256, 1024}
	}
	var out []Shape
	for _, t := range threads {
		for _, nk := range nks {
			for _, m := range ms {
				c := roofline.ClassGEMM
				if m <= roofline.GEMVMaxRows {
					c = roofline.ClassGEMV
				}
				out = append(out, Shape{Class: c, Op: roofline.OpQProj, Threads: t, M: m, N: nk[0], K: nk[1]})
			}
		}
		for _, c := range ctxs {
			out = append(out, Shape{Class: roofline.ClassAttention, Op: roofline.OpAttention, Threads: t, Phase: "prefill", Context: c, Batch: 1})
		}
		for _, c := range decCtx {
			out = append(out, Shape{Class: roofline.ClassAttention, Op: roofline.OpAttention, Threads: t, Phase: "decode", Context: c, Batch: 1})
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
		}
	}
	return out
}

// RunThreads is the thread count that runs the shape's operator:
// Threads for linears and attention, roofline.OpThreads for a vector
// operator (one thread for one row or few elements).
func (s Shape) RunThreads() int {
	switch s.Class {
	case roofline.ClassGEMM, roofline.ClassGEMV, roofline.ClassAttention:
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
// (true), stratified per class and thread count that runs it
// (RunThreads): within each such group, in design order (from the
// smallest to the largest work), the shapes alternate fit, held-out, fit,
// … so each group has both halves and both span its range. It depends
// only on the shapes, not on any measurement (deterministic).
func Split(shapes []Shape) []bool {
	held := make([]bool, len(shapes))
	n := map[roofline.CalibrationKey]int{}
	for i, s := range shapes {
		k := roofline.CalibrationKey{Class: s.Class, Threads: s.RunThreads()}
		held[i] = n[k]%2 == 1
		n[k]++
	}
	return held
}
