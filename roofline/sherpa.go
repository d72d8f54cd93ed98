package roofline

import (
	"fmt"
	"math"
)

// PIM-SHERPA's weight layout models beyond Table 2 itself (OWRLatency,
// papers.go): Table 2 at any FLOP/B (OWRTable), the same model in seconds
// for a measured machine (LayoutModel) with its crossover length, and the
// weight bytes each layout policy keeps resident (LayoutCapacity, Figs. 4
// and 9).

// Table2Lengths are the input lengths of PIM-SHERPA Table 2's rows (its
// first row is "1-4": lengths 1 and 4 give the same figures at FLOP/B 4).
var Table2Lengths = []int{1, 4, 8, 16, 32, 64, 128, 192}

// OWRTable is Table 2 (§3.3) at flopPerByte for each input length:
// OWRLatency per row. Errors as OWRLatency's (a length < 1, FLOP/B ≤ 0).
func OWRTable(flopPerByte float64, lengths []int) ([]OWRRow, error) {
	out := make([]OWRRow, 0, len(lengths))
	for _, sl := range lengths {
		r, err := OWRLatency(sl, flopPerByte)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// OWRCrossover is the input length from which Table 2's overlapped
// execution hides the rearrangement (GEMM ≥ Online: MAX = GEMM), SL =
// 3·FLOP/B in the model's continuous form (the paper's rows show it at
// the first printed length ≥ 12, 16, at FLOP/B 4).
func OWRCrossover(flopPerByte float64) float64 { return 3 * flopPerByte }

// LayoutModel is Table 2's model in seconds for one machine and weight
// precision (§3.3): a prefill's linear layers of W weight bytes take
//
//	GEMM(SL)  = max(W / ReadGBps, FLOPs(SL) / GFLOPS)   FLOPs = 2·SL·W/BytesPerWeight
//	Online    = W / CopyGBps                              (the swizzled copy)
//	SUM       = GEMM + Online   (owr: copy, then compute)
//	MAX       = max(GEMM, Online)   (ddb: the copy of the next layer overlaps)
//
// Table 2 is the case BytesPerWeight 2 (bf16, so FLOP/B = SL per weight
// pass), GFLOPS/ReadGBps = FLOP/B and CopyGBps = ReadGBps/3 (three DRAM
// transactions per byte moved).
type LayoutModel struct {
	// GFLOPS is the prefill GEMMs' rate (GFLOP/s); ReadGBps the weight
	// read bandwidth of one pass (GB/s); CopyGBps the rearrangement rate
	// (GB/s of weights rearranged).
	GFLOPS, ReadGBps, CopyGBps float64
	// BytesPerWeight is the prefill layout's element size (4 fp32, 2
	// bf16).
	BytesPerWeight float64
}

// LayoutRow is LayoutModel at one input length, in seconds.
type LayoutRow struct {
	InputSL                  int
	GEMM, Online, Sum, Max   float64
	SumOverGEMM, MaxOverGEMM float64
}

// Validate rejects a model with a rate or element size ≤ 0 or not finite,
// naming the field.
func (m LayoutModel) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"GFLOP/s", m.GFLOPS}, {"read GB/s", m.ReadGBps}, {"copy GB/s", m.CopyGBps}, {"bytes per weight", m.BytesPerWeight}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("layout model: %s %v: must be > 0 and finite", f.name, f.v)
		}
	}
	return nil
}

// At evaluates the model for input length sl and W = weightBytes.
// Errors: sl < 1, weightBytes ≤ 0, or an invalid model.
func (m LayoutModel) At(sl int, weightBytes float64) (LayoutRow, error) {
	if err := m.Validate(); err != nil {
		return LayoutRow{}, err
	}
	if sl < 1 || !(weightBytes > 0) {
		return LayoutRow{}, fmt.Errorf("layout model: input length %d, weight bytes %v: must be ≥ 1 and > 0", sl, weightBytes)
	}
	flops := 2 * float64(sl) * weightBytes / m.BytesPerWeight
	r := LayoutRow{InputSL: sl, GEMM: math.Max(weightBytes/(m.ReadGBps*1e9), flops/(m.GFLOPS*1e9)), Online: weightBytes / (m.CopyGBps * 1e9)}
	r.Sum, r.Max = r.GEMM+r.Online, math.Max(r.GEMM, r.Online)
	r.SumOverGEMM, r.MaxOverGEMM = r.Sum/r.GEMM, r.Max/r.GEMM
	return r, nil
}

// FLOPPerByte is the machine balance GFLOPS/ReadGBps, Table 2's FLOP/B.
func (m LayoutModel) FLOPPerByte() float64 { return m.GFLOPS / m.ReadGBps }

// Crossover is the input length from which the copy is hidden under the
// GEMMs (GEMM(SL) ≥ Online), independent of W: 1 when the copy is no
// slower than one weight pass, else GFLOPS·BytesPerWeight / (2·CopyGBps)
// (bf16 at Table 2's rates: 3·FLOP/B).
func (m LayoutModel) Crossover() float64 {
	if m.CopyGBps >= m.ReadGBps {
		return 1
	}
	return math.Max(1, m.GFLOPS*m.BytesPerWeight/(2*m.CopyGBps))
}

// LayoutCapacity is the weight bytes each layout policy keeps resident for
// one model (PIM-SHERPA Figs. 4 and 9), at BytesPerWeight per weight,
// panel padding not counted:
//
//	Duplicate = Decode + Prefill   (both layouts: the paper's WD)
//	OWR       = Decode + OWRBuffer (one buffer: the largest decoder-layer matrix)
//	DDB       = Decode + DDBBuffer (two buffers, each the largest matrix: §4.1's
//	                                "twice the FF layer"; the engine double-buffers
//	                                groups of matrices that fit one buffer, Fig. 5)
type LayoutCapacity struct {
	Model string
	// Decode is every weight once (embedding, every linear, an untied LM
	// head, norms): the decode layout. Prefill is the decoder layers'
	// linear weights in the prefill layout (the LM head stays in the
	// decode layout: a prefill needs one row of logits, a GEMV).
	Decode, Prefill      float64
	OWRBuffer, DDBBuffer float64
	Duplicate, OWR, DDB  float64
	// OWRSaving and DDBSaving are 1 − OWR/Duplicate and 1 − DDB/Duplicate.
	OWRSaving, DDBSaving float64
	// PaperWD is the paper's weight duplication, every weight twice
	// (2·Decode: its Fig. 9 counts the embedding and LM head in both
	// copies); OWRSavingWD and DDBSavingWD are the savings against it,
	// the figures comparable to the paper's 48–50 %.
	PaperWD, OWRSavingWD, DDBSavingWD float64
	// OWRLinears and DDBLinears are the resident bytes of the weights
	// that have two layouts (the decoder layers' linears) under owr and
	// ddb over duplicate's: (Prefill + buffer) / (2·Prefill). They leave
	// out what every policy keeps once (embedding, LM head, norms), which
	// makes OWR/Duplicate of a small model with a large tied embedding
	// (qwen3-0.6b) well above 0.5.
	OWRLinears, DDBLinears float64
}

// LayoutCapacityOf counts a's weights for LayoutCapacity at bytesPerWeight
// (2 bf16, the paper's; 4 fp32, this engine's). Errors: an invalid Arch
// or bytesPerWeight ≤ 0.
func LayoutCapacityOf(a Arch, bytesPerWeight float64) (LayoutCapacity, error) {
	if err := a.Validate(); err != nil {
		return LayoutCapacity{}, err
	}
	if !(bytesPerWeight > 0) {
		return LayoutCapacity{}, fmt.Errorf("layout capacity: %v bytes per weight: must be > 0", bytesPerWeight)
	}
	h, hd := float64(a.Dim), float64(a.HeadDim)
	q, kv := float64(a.Heads)*hd, float64(a.KVHeads)*hd
	attn := []float64{q * h, kv * h, kv * h, h * q}
	dense := []float64{float64(a.Intermediate) * h, float64(a.Intermediate) * h, h * float64(a.Intermediate)}
	moe := []float64{float64(a.Experts) * h} // router
	for range a.Experts {
		moe = append(moe, float64(a.MoEIntermediate)*h, float64(a.MoEIntermediate)*h, h*float64(a.MoEIntermediate))
	}
	sum := func(xs []float64) (s, mx float64) {
		for _, x := range xs {
			s += x
			mx = math.Max(mx, x)
		}
		return s, mx
	}
	as, am := sum(attn)
	ds, dm := sum(dense)
	ms, mm := sum(moe)
	nMoE := float64(a.MoELayers)
	nDense := float64(a.Layers) - nMoE
	prefill := nDense*(as+ds) + nMoE*(as+ms)
	largestMat := math.Max(am, dm)
	if a.MoELayers > 0 {
		largestMat = math.Max(largestMat, mm)
		if a.MoELayers == a.Layers {
			largestMat = math.Max(am, mm)
		}
	}
	norms := float64(a.Layers)*2*h + h
	if a.QKNorm {
		norms += float64(a.Layers) * 2 * hd
	}
	embed := float64(a.Vocab) * h
	head := embed
	if a.TiedEmbeddings {
		head = 0
	}
	b := bytesPerWeight
	c := LayoutCapacity{Model: a.Name, Decode: b * (embed + head + prefill + norms), Prefill: b * prefill,
		OWRBuffer: b * largestMat, DDBBuffer: 2 * b * largestMat}
	c.Duplicate, c.OWR, c.DDB = c.Decode+c.Prefill, c.Decode+c.OWRBuffer, c.Decode+c.DDBBuffer
	c.OWRSaving, c.DDBSaving = 1-c.OWR/c.Duplicate, 1-c.DDB/c.Duplicate
	c.PaperWD = 2 * c.Decode
	c.OWRSavingWD, c.DDBSavingWD = 1-c.OWR/c.PaperWD, 1-c.DDB/c.PaperWD
	c.OWRLinears = (c.Prefill + c.OWRBuffer) / (2 * c.Prefill)
	c.DDBLinears = (c.Prefill + c.DDBBuffer) / (2 * c.Prefill)
	return c, nil
}
