package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/kernels/quant"
)

// Quantized linear operators: a weight matrix held as a kernels/quant
// Matrix (GGUF's Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0 or TQ1_0 blocks, or the
// low-bit paper's int2 and int1, see Weights) runs on the cores
// whatever the placement, as llama.cpp's CPU backend runs it: the M×K
// activations are quantized to int8 per 32-element block
// (quant.Activations, llama.cpp's quantize_row_q8_0) once per call, then
// every worker computes its share of the N output columns with quant.Mul.

// quantSetup checks that the options can run quantized weights (fs: the
// linear weights per form, Weights.WeightFormats) and picks the quant
// backend. Placement matrix and mixed, and the PackPerCall ablation, are
// refused; auto becomes cores (every linear on the cores).
func (m *Model) quantSetup(o *Options, fs map[string]int64) error {
	var qf string
	for _, f := range quant.Formats() {
		if fs[string(f)] > 0 && (qf == "" || fs[string(f)] > fs[qf]) {
			qf = string(f)
		}
	}
	switch o.Placement {
	case PlaceMatrix, PlaceMixed:
		return fmt.Errorf("engine: placement %s with %s weights: not supported (quantized weights run on the cores' quant backend)", o.Placement, qf)
	case PlaceAuto:
		o.Placement = PlaceCores
		m.Notes = append(m.Notes, fmt.Sprintf("placement auto with %s weights: every linear operator on the cores (quantized weights run on the cores' quant backend)", qf))
	}
	if o.PackPerCall {
		return fmt.Errorf("engine: ablation packing with %s weights: not supported (quantized weights are packed once, by their loader)", qf)
	}
	m.Placement, m.opts = o.Placement, *o
	be := quant.Best()
	if o.QuantBackend != "" {
		var err error
		if be, err = quant.BackendByName(o.QuantBackend); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	m.Quant = &be
	var parts []string
	for _, f := range append([]string{FormatFP32}, qformats()...) {
		if fs[f] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.3g M", f, float64(fs[f])/1e6))
		}
	}
	path := "GEMV tiles at every M"
	if slices.Contains(be.ColumnFormats(), quant.Format(qf)) {
		path = "column-order GEMV tiles (W repacked at load) at every M"
	}
	if be.PrefillTileM > 0 && quant.PrefillFormat(quant.Format(qf)) {
		mm := quant.PrefillMinRows(quant.Format(qf))
		gemv := "GEMV tiles"
		if slices.Contains(be.ColumnFormats(), quant.Format(qf)) {
			gemv = "column-order GEMV tiles (W repacked at load)"
		}
		path = fmt.Sprintf("%s below %d rows, from %d rows (prefill) %d×32 tiles on W up-converted per call to column order", gemv, mm, mm, be.PrefillTileM)
	}
	if u := be.ColumnUpconvert(quant.Format(qf)); u != "" {
		path += "; " + u
	}
	m.Notes = append(m.Notes, fmt.Sprintf("%s weights, kernels/quant backend %s (%s); activations quantized to int8 per 32-element block as llama.cpp does (linear weights: %s)",
		qf, be.Name, path, strings.Join(parts, ", ")))
	return nil
}

// quantMatrix repacks q in place, once at load, into the layout the
// model's quant backend's GEMV kernels read (quant.Matrix.Repack: column
// order for the formats of Backend.ColumnFormats — q8_0, q4_0, q4_k, q6_k,
// int2 and int1 on avx512vnni and avx512bw —, lane order otherwise) and
// returns it.
func (m *Model) quantMatrix(q *quant.Matrix) *quant.Matrix {
	q.Repack(*m.Quant)
	return q
}

func qformats() []string {
	var out []string
	for _, f := range quant.Formats() {
		out = append(out, string(f))
	}
	return out
}

// quantChunkMin is the M·K from which the workers quantize X in row
// chunks in parallel; below it worker 0 quantizes X alone (a pool
// dispatch costs about a microsecond, quantizing 64 Ki activations some
// tens of microseconds).
const quantChunkMin = 4 * parMinElems

// quantColBlock is the columns each Mul call covers when X is in several
// row chunks: kernels/quant's L2 block of 8 panels of 4 rows, so that the
// weights of the block are read from memory once for all the chunks.
const quantColBlock = 32

// runQuant computes y = x·Wᵀ (M rows of K, y M×N row-major) for the
// quantized matrix l.q on every worker: X is quantized once (worker 0
// alone, or in row chunks of a multiple of the backend's TileM rows, one
// per worker, into m.qacts), then worker i of n computes the output
// columns of panels [i·P/n, (i+1)·P/n) of the P = ⌈N/TileN⌉ panels of
// TileN rows of W. It runs inside Pool.Do, which claims the Model's pool
// for the whole call, so m.qacts is never shared between two calls.
func (m *Model) runQuant(ms *pool.Master, l *linear, y, x []float32, M int) error {
	be, g, k, n := *m.Quant, m.all, l.k, l.n
	W := g.Size()
	tm := max(be.TileM, 1)
	chunks := 1
	if W > 1 && M*k >= quantChunkMin {
		chunks = min(W, (M+tm-1)/tm)
	}
	per := ((M+chunks-1)/chunks + tm - 1) / tm * tm
	chunks = (M + per - 1) / per
	quantize := func(c int) error {
		r0, r1 := c*per, min(M, (c+1)*per)
		return m.qacts[c].Quantize(l.q.Format, x[r0*k:r1*k], r1-r0, k)
	}
	if chunks == 1 {
		if err := quantize(0); err != nil {
			return err
		}
	} else if err := ms.Run(g, func(local, _ int) error {
		if local < chunks {
			return quantize(local)
		}
		return nil
	}); err != nil {
		return err
	}
	mul := func(n0, n1 int) error {
		if chunks == 1 {
			return quant.Mul(be, l.q, &m.qacts[0], y, n, n0, n1)
		}
		for b0 := n0; b0 < n1; b0 += quantColBlock {
			b1 := min(n1, b0+quantColBlock)
			for c := range chunks {
				if err := quant.Mul(be, l.q, &m.qacts[c], y[c*per*n:], n, b0, b1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	tn := max(be.TileN, l.q.RowTile(), 1)
	panels := (n + tn - 1) / tn
	if W == 1 || panels == 1 {
		return mul(0, n)
	}
	return ms.Run(g, func(local, parts int) error {
		p0, p1 := local*panels/parts, (local+1)*panels/parts
		if p0 == p1 {
			return nil
		}
		return mul(p0*tn, min(p1*tn, n))
	})
}

// packedBytes is the size of the copies New packed (or keeps unpacked for
// PackPerCall) for the gemm backends, at their element size: 4 bytes per
// weight fp32, 2 bf16, 1 int8 (panel padding and int8 scales not counted).
func (l *linear) packedBytes() int64 {
	nk := int64(l.n) * int64(l.k)
	size := func(w *gemm.Weights) int64 {
		if w == nil {
			return 0
		}
		switch w.Backend.DType {
		case gemm.BF16:
			return 2 * nk
		case gemm.Int8:
			return nk
		}
		return 4 * nk
	}
	out := size(l.cores) + size(l.mat)
	switch l.rawMat.(type) {
	case []uint16:
		out += 2 * nk
	case gemm.RawInt8:
		out += nk
	}
	return out
}
