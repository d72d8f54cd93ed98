package engine

import (
	"strings"

	"github.com/cpubench/bench/kernels/gemm"
)

// linUse counts linear-operator calls by what ran them: useCores (the
// cores target's gemm backend), useMatrix (the matrix target's) and
// useQuant (kernels/quant, block-quantized weights). A mixed call that
// gives both groups columns counts for both.
type linUse [3]int

const (
	useCores = iota
	useMatrix
	useQuant
)

// TargetUse is what ran one placement target's linear operators (the
// GEMMs and GEMVs) in a Batch's forward calls since its last ResetTimings.
type TargetUse struct {
	// Target is PlaceCores or PlaceMatrix.
	Target Placement
	// Library is "kernels/gemm" or "kernels/quant"; Backend its backend
	// name ("neon-fp32", "sme-fp32", "avx2" for kernels/quant).
	Library, Backend string
	// Unit executes the backend: gemm.Cores (vector units) or
	// gemm.MatrixUnit (SME, AMX); ISA is the backend's ("neon", "sme").
	Unit gemm.Unit
	ISA  string
	// Precision is the weights' precision as they ran: fp32, bf16, int8
	// (kernels/gemm) or the quantized format (q8_0, q4_0, ...).
	Precision string
	// Note says why the matrix target runs on the cores ("no matrix
	// unit", Model.MatrixNote); "" otherwise.
	Note string
	// Calls is the number of linear-operator calls that ran on it,
	// summed over layers (0: set up but not used, e.g. by an auto plan
	// that placed nothing there).
	Calls int
}

// Label says what ran the target, generated from the backend, e.g.
// "sme-fp32 (fp32 weights) on the matrix unit (sme)" or "avx2-bf16 (bf16
// weights) on the cores, no matrix unit" (gemm.Label);
// kernels/quant: "q4_0 weights on kernels/quant avx2, on the cores".
func (t TargetUse) Label() string {
	if t.Library == "kernels/quant" {
		return t.Precision + " weights on kernels/quant " + t.Backend + ", on the cores"
	}
	return gemm.Label(gemm.Backend{Name: t.Backend, DType: gemm.DType(t.Precision), ISA: t.ISA, Unit: t.Unit}, t.Note)
}

// Use returns what ran the linear operators of b's calls since its last
// ResetTimings: the cores target (its gemm backend, and kernels/quant
// where weights are quantized) and, for placements other than cores, the
// matrix target; each with its call count.
func (b *Batch) Use() []TargetUse {
	m := b.m
	u := b.t.use
	var out []TargetUse
	if m.Quant != nil {
		out = append(out, TargetUse{Target: PlaceCores, Library: "kernels/quant", Backend: m.Quant.Name, Unit: gemm.Cores, ISA: m.Quant.ISA,
			Precision: strings.TrimSuffix(m.WeightFormat, " (mixed)"), Calls: u[useQuant]})
	}
	if m.Quant == nil || u[useCores] > 0 {
		out = append(out, TargetUse{Target: PlaceCores, Library: "kernels/gemm", Backend: m.Backend.Name, Unit: m.Backend.Unit, ISA: m.Backend.ISA,
			Precision: string(m.Backend.DType), Calls: u[useCores]})
	}
	if m.Matrix != nil {
		out = append(out, TargetUse{Target: PlaceMatrix, Library: "kernels/gemm", Backend: m.Matrix.Name, Unit: m.Matrix.Unit, ISA: m.Matrix.ISA,
			Precision: string(m.Matrix.DType), Note: m.MatrixNote, Calls: u[useMatrix]})
	}
	return out
}
