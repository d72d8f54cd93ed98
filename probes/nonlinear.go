package probes

import (
	"context"
	"fmt"
	"math"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// NonlinearMethod describes how the nonlinear section measures (for the
// lead to record or print).
const NonlinearMethod = "one pinned thread (the first worker); each pass runs the kernel over about 16 Ki elements (softmax: rows of 16..32768, rmsnorm: rows of 128, 1024 and 4096, rope: 32 heads x 128 in place, after a copy of the input that is included in the time), so input and output (<= 256 KiB) stay in L2; Gelem/s = elements per second / 1e9 over repetitions after a warm-up; the checksum (every 61st output of the last pass) is checked against the pure-Go implementation"

// nlSpec is one figure of the nonlinear section.
type nlSpec struct {
	kernel string
	row    int // row length (softmax, rmsnorm); headDim·heads for rope; 0 elementwise
	elems  int // elements per pass
}

// nlRopeHeadDim and nlRopeHeads are the RoPE shape (Llama-like).
const (
	nlRopeHeadDim = 128
	nlRopeHeads   = 32
	nlRopeTheta   = 500000
	nlRopePos     = 1000
	nlElems       = 16 << 10 // elements per pass of the elementwise kernels
)

func nonlinearSpecs() []nlSpec {
	specs := []nlSpec{{"exp", 0, nlElems}, {"fastexp", 0, nlElems}}
	// Softmax rows from 16 elements: a tiled prefill attention's softmax
	// runs over each query row's visible keys of a tile (roofline.TiledWork,
	// RateFor at their mean width), 16–128 wide at a short prompt, where
	// the per-row max and sum cost more per element than at 128 (Zen 5,
	// AVX-512: 0.50, 0.95, 1.57 and 2.31 Gelem/s at rows of 16, 32, 64 and
	// 128).
	for _, row := range []int{16, 32, 64, 128, 1024, 4096, 32768} {
		specs = append(specs, nlSpec{"softmax", row, max(row, nlElems)})
	}
	// RMSNorm at the row widths models use: a head (QK-norm), a small and
	// a large hidden size; short rows pay the per-row sum and rsqrt.
	for _, row := range []int{128, 1024, 4096} {
		specs = append(specs, nlSpec{"rmsnorm", row, nlElems})
	}
	return append(specs,
		nlSpec{"silu", 0, nlElems},
		nlSpec{"gelu_tanh", 0, nlElems},
		nlSpec{"rope", nlRopeHeadDim * nlRopeHeads, nlRopeHeadDim * nlRopeHeads},
	)
}

// nonlinearSteps is the number of progress steps of the nonlinear section:
// one per figure of each available backend, plus the fast-exp error scan.
func (r *runner) nonlinearSteps() int {
	n := 1
	for _, impl := range kernels.NonlinearImpls() {
		if impl.Unavailable != "" {
			continue
		}
		n += len(nonlinearSpecs())
	}
	return n
}

// nlInput fills x with deterministic values in about [-8, 8] (logits,
// activations).
func nlInput(x []float32, seed int) {
	u := uint32(seed)*2654435761 + 12345
	for i := range x {
		u = u*1664525 + 1013904223
		x[i] = float32(int32(u>>8)-(1<<23)) / (1 << 20)
	}
}

// nlRun returns the function of one pass of spec on impl over the buffers
// (src, aux: inputs; dst: output) and fills the inputs.
func nlRun(spec nlSpec, impl kernels.NonlinearImpl, tab *kernels.RoPETable, src, aux, dst []float32) func() {
	switch spec.kernel {
	case "exp":
		return func() { impl.Exp(dst, src) }
	case "fastexp":
		return func() { impl.FastExp(dst, src) }
	case "silu":
		return func() { impl.SiLU(dst, src) }
	case "gelu_tanh":
		return func() { impl.GELUTanh(dst, src) }
	case "softmax":
		return func() {
			for i := 0; i+spec.row <= len(src); i += spec.row {
				impl.Softmax(dst[i:i+spec.row], src[i:i+spec.row])
			}
		}
	case "rmsnorm":
		w := aux[:spec.row]
		return func() {
			for i := 0; i+spec.row <= len(src); i += spec.row {
				impl.RMSNorm(dst[i:i+spec.row], src[i:i+spec.row], w, 1e-5)
			}
		}
	case "rope":
		c, s := tab.At(nlRopePos)
		return func() {
			copy(dst, src)
			impl.RoPE(dst, c, s, kernels.RoPEHalf)
		}
	}
	panic("probes: unknown nonlinear kernel " + spec.kernel)
}

// nlSample sums every 61st element, with the sum of magnitudes for the
// tolerance.
func nlSample(x []float32) (sum, abs float64) {
	for i := 0; i < len(x); i += 61 {
		sum += float64(x[i])
		abs += math.Abs(float64(x[i]))
	}
	return sum, abs
}

// measureNonlinear measures spec on impl on worker w. The expected checksum
// is computed with the "go" implementation on the same inputs; the measured
// one must match it within 1e-4 of the sampled magnitudes (fast exp is
// within 3e-6 relative, every other kernel within a few 1e-7).
func (r *runner) measureNonlinear(ctx context.Context, w *worker, spec nlSpec, impl, ref kernels.NonlinearImpl) (results.NonlinearPoint, error) {
	tab, err := kernels.NewRoPETable(nlRopeHeadDim, nlRopeTheta, nlRopePos+1, nil)
	if err != nil {
		return results.NonlinearPoint{}, err
	}
	var src, aux, dst []float32
	var pass func()
	var want, tol float64
	t := task{
		setup: func(w *worker) error {
			if src != nil {
				return nil
			}
			// Allocated (and first touched) by the pinned worker.
			src, aux, dst = make([]float32, spec.elems), make([]float32, spec.elems), make([]float32, spec.elems)
			nlInput(src, 1)
			nlInput(aux, 2)
			for i := range aux {
				aux[i] = 1 + aux[i]/64 // RMSNorm weights near 1
			}
			refDst := make([]float32, spec.elems)
			nlRun(spec, ref, tab, src, aux, refDst)()
			var abs float64
			want, abs = nlSample(refDst)
			tol = 1e-4*abs + 1e-30
			pass = nlRun(spec, impl, tab, src, aux, dst)
			return nil
		},
		run: func(w *worker) (int64, float64) {
			pass()
			s, _ := nlSample(dst)
			return int64(spec.elems), s
		},
		check: func(w *worker, sum float64) error {
			if !(math.Abs(sum-want) <= tol) {
				return fmt.Errorf("nonlinear: %s (%s, row %d): checksum %v, want %v (pure Go) within %.3g", spec.kernel, impl.ISA, spec.row, sum, want, tol)
			}
			return nil
		},
	}
	m, err := measureGroups(ctx, r.place, [][]*worker{{w}}, []task{t}, r.cfg.RepDuration, r.cfg.Reps)
	if err != nil {
		return results.NonlinearPoint{}, err
	}
	st := m.stat(0)
	return results.NonlinearPoint{
		Kernel: spec.kernel, Backend: impl.ISA, RowElems: spec.row, Elems: spec.elems,
		Threads: 1, CPU: w.cpu, GElemsPerSec: st, NSPerElem: 1 / st.Median, Checksum: m.sums[0],
	}, nil
}

// nonlinearSection measures every kernel on every available backend on one
// pinned thread, and the fast exp's error.
func (r *runner) nonlinearSection(ctx context.Context) (*results.Nonlinear, error) {
	nl := &results.Nonlinear{Method: NonlinearMethod}
	w := r.pool.workers[0]
	impls := kernels.NonlinearImpls()
	ref := impls[0] // "go", the specification
	worst := 0.0
	for _, impl := range impls {
		if impl.Unavailable != "" {
			nl.Unavailable = append(nl.Unavailable, results.Unavailable{Kernel: impl.ISA, Why: impl.Unavailable})
			continue
		}
		worst = math.Max(worst, kernels.FastExpMaxULP(impl.FastExp, kernels.FastExpDomainLo, kernels.FastExpDomainHi))
	}
	nl.FastExpMaxULP = worst
	nl.FastExpDomain = fmt.Sprintf("[%v, %v]: %s; max over backends %s", kernels.FastExpDomainLo, kernels.FastExpDomainHi, kernels.FastExpSampling, availableBackends(impls))
	r.step("nonlinear fastexp error")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, impl := range impls {
		if impl.Unavailable != "" {
			continue
		}
		for _, spec := range nonlinearSpecs() {
			p, err := r.measureNonlinear(ctx, w, spec, impl, ref)
			if err != nil {
				return nil, err
			}
			nl.Points = append(nl.Points, p)
			desc := fmt.Sprintf("nonlinear %s %s", spec.kernel, impl.ISA)
			if spec.row > 0 {
				desc += fmt.Sprintf(" row %d", spec.row)
			}
			r.step(desc)
		}
	}
	return nl, nil
}

func availableBackends(impls []kernels.NonlinearImpl) string {
	s := ""
	for _, m := range impls {
		if m.Unavailable == "" {
			if s != "" {
				s += ", "
			}
			s += m.ISA
		}
	}
	return s
}
