package roofline

import (
	"fmt"
	"math"
)

// AttentionSchedule says how a tiled attention kernel's two kinds of work
// share the machine (SMEPilot §4.2, Fig. 6): the matrix stage (QKᵀ and
// P·V of each KV tile) and the vector stage (the online softmax of each
// tile — max, shift, exp, sum — and the rescale of the output
// accumulator).
type AttentionSchedule struct {
	// Target is the machine target the matrix stage runs on ("cores",
	// "matrix", ...); the vector stage runs on the cores.
	Target string
	// MatrixShare and VectorShare are the fractions of their targets'
	// throughput the pipelined stages get, in (0, 1]: on a CPU without a
	// matrix unit the matrix stage is a second group of cores, so with n
	// workers MatrixShare = (n/2)/n and VectorShare = (n − n/2)/n (the
	// engine's groups); with a matrix unit MatrixShare is 1 (the unit is
	// its own resource). The serial schedule runs both stages on every
	// worker, one after the other, and ignores them.
	MatrixShare, VectorShare float64
	// Pairs is the pipeline's pairs of workers (a matrix worker and a
	// vector worker each; 0 counts as 1): each pair runs the tiles of
	// its jobs as one sequence, so the pipeline fills and drains once per
	// pair and call.
	Pairs int
	// Tile is the KV positions per tile (the engine's attention tile) and
	// Rows the query rows per job (its attnRows); both ≥ 1.
	Tile, Rows int
	// Window is the sliding window (0: none); only the rescale count
	// follows it (the catalog's qk, softmax and pv count causal pairs).
	Window int
	// TileM and PanelN are the tile products' microkernel rows (MR) and
	// panel width (NR), Pad the multiple the softmax runs are widened to,
	// and VecRows the job rows × group below which the kernel runs its
	// vector path instead of tiles (engine/attention.go's attnVecRows).
	// With PanelN > 0 (Tiled) the time is of the work the tiles do
	// (TiledWork, tiled.go); else of the catalog's causal count.
	TileM, PanelN, Pad, VecRows int
	// ColdKV places the vector (decode) schedule's stages with their KV in
	// DRAM (PlaceCall with every resident byte there): a KV cache evicted
	// before each call, as in an engine's decode step, whose weights
	// stream through the caches between one layer's attention and the
	// next; false: Place's footprint (the KV as warm as it fits).
	ColdKV bool
}

// AttentionStages is the time model of one layer's attention under
// SMEPilot §4.2's phase-aware pipeline and under its serial ablation, in
// seconds.
type AttentionStages struct {
	// Matrix is the catalog's qk and pv on the schedule's target (every
	// worker): the matrix stage.
	Matrix float64 `json:"matrix_s"`
	// Softmax is the catalog's softmax (max, subtract, exp, sum per score
	// element) at the machine's non-linear rate (Machine.Nonlinear, the
	// probe's softmax kernel; its memory roof where slower); Rescale the
	// multiplications of the output accumulator, RescaleElems of them
	// (each row's head dims once per tile the row sees, and the final
	// division by the sum), at half the cores' ceiling of the precision
	// (one multiply where the ceiling counts an FMA as two FLOPs; at the
	// non-linear rate where the cores have no such ceiling); Vector =
	// Softmax + Rescale: the vector stage.
	Softmax      float64 `json:"softmax_s"`
	Rescale      float64 `json:"rescale_s"`
	RescaleElems float64 `json:"rescale_elems"`
	Vector       float64 `json:"vector_s"`
	// Serial is Matrix + Vector: the stages one after the other on every
	// worker (the pipeline ablation).
	Serial float64 `json:"serial_s"`
	// Pipelined is max(Matrix/MatrixShare, Vector/VectorShare) plus, per
	// pair, one tile of the shorter stage (a pair's sequence of tiles
	// fills with its first QKᵀ and drains with its last rescale and P·V
	// alone; between jobs the next job's first QKᵀ overlaps the current
	// job's last softmax, engine/attention_pipeline.go): max(m, v) +
	// min(m, v)·pairs/tiles. The stages overlap tile by tile, so the time
	// is the longer stage's, not the sum.
	Pipelined float64 `json:"pipelined_s"`
	// TilesPerJob is the mean number of KV tiles a job visits; Tiles the
	// tiles of the call (every job of every sequence and KV head).
	TilesPerJob float64 `json:"tiles_per_job"`
	Tiles       float64 `json:"tiles"`
	// Setup is a tiled kernel's query passes outside its tiles (scale,
	// pack, output; tiled.go), part of the vector stage; 0 otherwise.
	Setup float64 `json:"setup_s,omitempty"`
	// Tiled says the stages are of the work the kernel's tiles do
	// (TiledWork), not of the catalog's causal count.
	Tiled bool `json:"tiled,omitempty"`
	// Note says what the model could not time ("" when complete).
	Note string `json:"note,omitempty"`
}

// PredictAttention is the time of the attention of one decoder layer of
// arch for request r at precision prec (the catalog's qk, softmax and pv,
// Place'd on m) as the two stages of SMEPilot §4.2's pipeline (Fig. 6):
// serially (the sum) and pipelined (the longer stage's time plus the fill
// and drain). Errors: those of BuildCatalog and Place, a schedule whose
// target the machine lacks or has no ceiling of prec on, shares outside
// (0, 1], tile or rows below 1.
func PredictAttention(m *Machine, arch Arch, r Request, prec string, s AttentionSchedule) (AttentionStages, error) {
	var st AttentionStages
	switch {
	case !(s.MatrixShare > 0 && s.MatrixShare <= 1) || !(s.VectorShare > 0 && s.VectorShare <= 1):
		return st, fmt.Errorf("attention schedule: shares %v, %v: must be in (0, 1]", s.MatrixShare, s.VectorShare)
	case s.Tile < 1 || s.Rows < 1 || s.Window < 0:
		return st, fmt.Errorf("attention schedule: tile %d, rows %d, window %d: tile and rows must be ≥ 1, window ≥ 0", s.Tile, s.Rows, s.Window)
	}
	cat, err := BuildCatalog(arch, r)
	if err != nil {
		return st, err
	}
	var ops []Operator
	for _, o := range cat.Layers[0].Ops {
		if o.Name == OpQK || o.Name == OpSoftmax || o.Name == OpPV {
			ops = append(ops, o)
		}
	}
	if s.Tiled() && !s.Vector(*ops[0].Attn) && m.callModel() {
		return predictTiled(m, ops, prec, s)
	}
	if st.Matrix, st.Softmax, err = placeStages(m, ops, prec, s.Target, s.ColdKV); err != nil {
		return st, err
	}
	// The rescale: per job (Rows query rows of one sequence and KV head,
	// the latest rows first), each row's group·d accumulator elements
	// once per tile it sees, and once more for the final division.
	B, T, C := r.Batch, r.Tokens, r.Context
	pos0 := C - T
	g, d := arch.Heads/max(arch.KVHeads, 1), arch.HeadDim
	var elems, tiles, jobs float64
	for r1 := T; r1 > 0; r1 -= s.Rows {
		r0 := max(r1-s.Rows, 0)
		for t := r0; t < r1; t++ {
			p := pos0 + t
			first := 0
			if s.Window > 0 {
				first = max(0, p-s.Window+1) / s.Tile
			}
			elems += float64(p/s.Tile - first + 2) // tiles seen, and the division
		}
		last := (pos0 + r1 - 1) / s.Tile
		first := 0
		if s.Window > 0 {
			first = max(0, pos0+r0-s.Window+1) / s.Tile
		}
		tiles += float64(last - first + 1)
		jobs++
	}
	perSeqKV := float64(arch.KVHeads) * float64(B)
	st.RescaleElems = elems * float64(g*d) * perSeqKV
	st.TilesPerJob = tiles / jobs
	cores := m.byKind(KindCores)
	if len(cores) > 0 && cores[0].Ceiling(prec) > 0 {
		st.Rescale = st.RescaleElems / (cores[0].Ceiling(prec) / 2 * 1e9)
	} else if m.Nonlinear != nil && m.Nonlinear.GElemsPerS > 0 {
		st.Rescale = st.RescaleElems / (m.Nonlinear.GElemsPerS * 1e9)
		st.Note = fmt.Sprintf("no %s ceiling on the cores: the rescale timed at the non-linear rate", prec)
	} else {
		st.Note = fmt.Sprintf("no %s ceiling on the cores and no non-linear rate: the rescale is not timed", prec)
	}
	st.Tiles = tiles * perSeqKV
	st.Vector = st.Softmax + st.Rescale
	st.Serial = st.Matrix + st.Vector
	st.Pipelined = s.pipelined(st.Matrix, st.Vector, st.Tiles)
	return st, nil
}

// predictTiled is PredictAttention under a kernel's tiling (s.Tiled()): the
// catalog's qk and pv placed at the FLOPs the tiles compute, and the vector
// stage of the softmax runs, rescales and query passes (tiled.go), on
// m's per-call model.
func predictTiled(m *Machine, ops []Operator, prec string, s AttentionSchedule) (AttentionStages, error) {
	st := AttentionStages{Tiled: true}
	cores := m.byKind(KindCores)
	if len(cores) == 0 {
		return st, fmt.Errorf("machine %s: no cores target for attention's vector stage", m.Name)
	}
	mc := *m
	mc.AttnPlan = &s
	w := s.TiledWork(*ops[0].Attn)
	n := max(cores[0].Workers, 1)
	_, rescale, setup, ok := mc.tiledVector(w, prec, cores[0], n, 1)
	if !ok {
		return st, fmt.Errorf("machine %s: no softmax rate for attention's vector stage", m.Name)
	}
	// The softmax's time is the whole vector stage (callTime), calibrated
	// with the attention class where the profile has one.
	var err error
	if st.Matrix, st.Vector, err = placeStages(&mc, ops, prec, s.Target, s.ColdKV); err != nil {
		return st, err
	}
	st.RescaleElems = w.RescaleElems
	st.Rescale, st.Setup = rescale, setup
	st.Softmax = max(0, st.Vector-rescale-setup)
	jobs, tiles := 0.0, 0.0
	a := ops[0].Attn
	for r1 := a.T; r1 > 0; r1 -= s.Rows {
		jobs++
		tiles += float64((a.C-a.T+r1-1)/s.Tile + 1)
	}
	st.TilesPerJob = tiles / jobs
	st.Tiles = tiles * float64(max(a.KVHeads, 1)*max(a.B, 1))
	st.Serial = st.Matrix + st.Vector
	st.Pipelined = s.pipelined(st.Matrix, st.Vector, st.Tiles)
	return st, nil
}

// pipelined is the pipelined time of stages of matrix and vector seconds
// (on every worker) over tiles tiles under s: the longer stage at its
// share, plus one tile of the shorter one per pair to fill and drain.
func (s AttentionSchedule) pipelined(matrix, vector, tiles float64) float64 {
	mt, vt := matrix/s.MatrixShare, vector/s.VectorShare
	return math.Max(mt, vt) + math.Min(mt, vt)*float64(max(s.Pairs, 1))/math.Max(tiles, 1)
}

// placeStages places an attention's qk, softmax and pv on m: the matrix
// stage is qk's and pv's times on target, the vector stage the softmax's
// (on the cores).
func placeStages(m *Machine, ops []Operator, prec, target string, cold bool) (matrix, vector float64, err error) {
	t := Sum(ops)
	resident := t.Bytes.Weights + t.Bytes.KVRead // Place's
	if cold {
		resident = math.Inf(1)
	}
	placed, err := PlaceCall(m, prec, ops, resident)
	if err != nil {
		return 0, 0, err
	}
	for _, o := range placed {
		if o.Name == OpSoftmax {
			vector += o.Time
			continue
		}
		t, ok := o.Times[target]
		if !ok {
			return 0, 0, fmt.Errorf("machine %s: no %s ceiling on a target %q for %s", m.Name, prec, target, o.Name)
		}
		matrix += t
	}
	return matrix, vector, nil
}
