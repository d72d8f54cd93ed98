package gemm

import (
	"fmt"
	"math"
	"slices"

	"github.com/cpubench/bench/kernels/pool"
)

// Multithreaded GEMM on kernels/pool (SMEPilot §4.1): the M×N output is cut
// into one block per worker along its larger dimension, at the backend's
// tile (pool.Block), and every worker runs the single-threaded Block on its
// own block with its own Scratch. There is no reduction across workers, so
// for the same backend and blocking a parallel result equals the
// single-threaded Block over the whole output bit for bit whenever each
// worker's block has more than TileM rows or the whole output has at most
// TileM rows (always so when the cut runs along N, i.e. N ≥ M: every LLM
// Linear layer but long prefills). Otherwise a block of ≤ TileM rows takes
// the decode path (KC = K), which splits the k-sum elsewhere: the result is
// then within the tolerance of doc.go, not bitwise equal.

// Tile returns the backend's microkernel tile as a pool.Tile, the
// granularity at which Run and RunSplit cut the output.
func (b Backend) Tile() pool.Tile { return pool.Tile{M: b.TileM, N: b.TileN} }

// NewScratches returns n Scratches for w with blocking bl (zero: w's
// default), one per pool worker index: pass Pool.Size() as n.
func NewScratches(n int, w *Weights, bl Blocking) []*Scratch {
	out := make([]*Scratch, n)
	for i := range out {
		out[i] = NewScratch(w, bl)
	}
	return out
}

// scratchAt returns scratches[worker], or nil (Block then takes one from
// its pool) when scratches is nil.
func scratchAt(scratches []*Scratch, worker int) *Scratch {
	if worker < len(scratches) {
		return scratches[worker]
	}
	return nil
}

// checkRun validates a whole-output run of an M×N×K GEMM on group g.
func checkRun(name string, g *pool.Group, y, x []float32, M, N, K int, scratches []*Scratch) error {
	switch {
	case g == nil:
		return fmt.Errorf("gemm: %s: nil group", name)
	case M < 0:
		return fmt.Errorf("gemm: %s: M = %d: must be ≥ 0", name, M)
	case len(y) < M*N:
		return fmt.Errorf("gemm: %s: len(y) = %d, want ≥ M·N = %d·%d = %d", name, len(y), M, N, M*N)
	case len(x) < M*K:
		return fmt.Errorf("gemm: %s: len(x) = %d, want ≥ M·K = %d·%d = %d", name, len(x), M, K, M*K)
	}
	if scratches != nil {
		if top := slices.Max(g.Workers()); top >= len(scratches) {
			return fmt.Errorf("gemm: %s: %d scratches, but the group has pool worker %d (want one per pool worker index)", name, len(scratches), top)
		}
	}
	return nil
}

// Run computes Y = X·Wᵀ for the M×K row-major x into the M×N row-major y
// (N = w.N, K = w.K) on the workers of g, cut at the backend's tile along
// the larger output dimension (pool.Block). Worker i uses scratches[i]
// (pool worker index; nil scratches: each Block takes one from a pool).
// With m non-nil (inside Pool.Do) the master takes its share inline.
// Errors: a bad shape, a missing scratch, or the first worker's error.
//
// Specification, for every row r < M and column j < N:
//
//	y[r*N+j] = Σ_k x[r*K+k]·W[j][k]   (Block's arithmetic on its block)
func (w *Weights) Run(m *pool.Master, g *pool.Group, y, x []float32, M int, scratches []*Scratch) error {
	if w == nil || w.im == nil {
		return fmt.Errorf("gemm: Run: nil or unpacked Weights (use PackFP32, PackBF16 or PackInt8)")
	}
	if err := checkRun("Run", g, y, x, M, w.N, w.K, scratches); err != nil {
		return err
	}
	if M == 0 {
		return nil
	}
	if w.im.amx != nil && M > amxMR && len(scratches) > 0 && scratches[0] != nil {
		return w.runAMX(m, g, y, x, M, scratches)
	}
	N, K := w.N, w.K
	f := func(worker, m0, m1, n0, n1 int) error {
		return w.Block(y, N, x, K, m0, m1, n0, n1, scratchAt(scratches, worker))
	}
	return runBlocks(m, g, pool.Region{M1: M, N1: N}, w.Backend.Tile(), f)
}

func runBlocks(m *pool.Master, g *pool.Group, r pool.Region, t pool.Tile, f pool.BlockFunc) error {
	if m != nil {
		return m.RunBlocks(g, r, t, f)
	}
	return g.RunBlocks(r, t, f)
}

// RunUnpacked is Run from the unpacked weights wRaw (N×K; []float32,
// []uint16 or RawInt8, as BlockUnpacked): every worker packs the panels of
// its block on every call, the "pack on every call" ablation of SMEPilot
// §5.4. bl is the blocking (zero: b's default).
func RunUnpacked(m *pool.Master, g *pool.Group, b Backend, bl Blocking, y, x []float32, wRaw any, M, N, K int, scratches []*Scratch) error {
	if N <= 0 || K <= 0 {
		return fmt.Errorf("gemm: RunUnpacked: shape %d×%d: N and K must be positive", N, K)
	}
	if err := checkRun("RunUnpacked", g, y, x, M, N, K, scratches); err != nil {
		return err
	}
	if M == 0 {
		return nil
	}
	f := func(worker, m0, m1, n0, n1 int) error {
		return BlockUnpacked(b, bl, y, N, x, K, wRaw, N, K, m0, m1, n0, n1, scratchAt(scratches, worker))
	}
	return runBlocks(m, g, pool.Region{M1: M, N1: N}, b.Tile(), f)
}

// PlanSplit divides the M×N output of Y = X·Wᵀ between wa (rate flopsA,
// FLOP/s or any unit shared with flopsB) and wb, which must hold the same
// N×K shape (the same logical W packed for two backends): pool.PlanSplit
// (SMEPilot Eq. 1, rounded to both backends' tiles) with the rates
// converted to output elements per second (÷ 2K).
func PlanSplit(wa, wb *Weights, M int, flopsA, flopsB float64) (pool.Split, error) {
	if wa == nil || wb == nil || wa.im == nil || wb.im == nil {
		return pool.Split{}, fmt.Errorf("gemm: PlanSplit: nil or unpacked Weights")
	}
	if wa.N != wb.N || wa.K != wb.K {
		return pool.Split{}, fmt.Errorf("gemm: PlanSplit: weights %d×%d (%s) and %d×%d (%s): shapes differ", wa.N, wa.K, wa.Backend.Name, wb.N, wb.K, wb.Backend.Name)
	}
	if M < 0 {
		return pool.Split{}, fmt.Errorf("gemm: PlanSplit: M = %d: must be ≥ 0", M)
	}
	per := 2 * float64(wa.K)
	return pool.PlanSplit(M, wa.N, flopsA/per, flopsB/per, wa.Backend.Tile(), wb.Backend.Tile())
}

// Splitter runs a pool.Split: *pool.Pool, or *pool.Master inside Pool.Do.
type Splitter interface {
	RunSplit(a *pool.Group, blockA pool.BlockFunc, b *pool.Group, blockB pool.BlockFunc, s pool.Split) (pool.Timing, error)
}

// RunSplit computes Y = X·Wᵀ partitioned by s (from PlanSplit on the same
// M, wa and wb): group ga computes region s.A with wa while gb computes
// s.B with wb, concurrently, each cut among its workers at its own tile.
// Worker i uses scratches[i] (nil: pooled). It returns the measured seconds
// of A and B (Timing.Seconds) and the makespan; each region of y equals
// what Run with that backend alone computes there.
func RunSplit(on Splitter, s pool.Split, ga *pool.Group, wa *Weights, gb *pool.Group, wb *Weights, y, x []float32, scratches []*Scratch) (pool.Timing, error) {
	if on == nil {
		return pool.Timing{}, fmt.Errorf("gemm: RunSplit: nil pool")
	}
	if wa == nil || wb == nil || wa.im == nil || wb.im == nil {
		return pool.Timing{}, fmt.Errorf("gemm: RunSplit: nil or unpacked Weights")
	}
	if wa.N != wb.N || wa.K != wb.K {
		return pool.Timing{}, fmt.Errorf("gemm: RunSplit: weights %d×%d and %d×%d: shapes differ", wa.N, wa.K, wb.N, wb.K)
	}
	if s.N != wa.N {
		return pool.Timing{}, fmt.Errorf("gemm: RunSplit: split of %d×%d for weights with N = %d", s.M, s.N, wa.N)
	}
	M, N, K := s.M, wa.N, wa.K
	for _, gg := range []struct {
		g *pool.Group
		r pool.Region
	}{{ga, s.A}, {gb, s.B}} {
		if gg.r.Empty() {
			continue
		}
		if err := checkRun("RunSplit", gg.g, y, x, M, N, K, scratches); err != nil {
			return pool.Timing{}, err
		}
	}
	block := func(w *Weights) pool.BlockFunc {
		return func(worker, m0, m1, n0, n1 int) error {
			return w.Block(y, N, x, K, m0, m1, n0, n1, scratchAt(scratches, worker))
		}
	}
	return on.RunSplit(ga, block(wa), gb, block(wb), s)
}

// CheckSample spot-checks a computed Y = X·Wᵀ (y M×N, x M×K, row-major)
// against a float64 reference: CheckRegion over the whole output.
func CheckSample(dt DType, y, x []float32, wRaw any, M, N, K, n int) (float64, error) {
	return CheckRegion(dt, y, x, wRaw, M, N, K, pool.Region{M1: M, N1: N}, n)
}

// CheckRegion spot-checks region r of a computed Y = X·Wᵀ (y M×N, x M×K,
// row-major): n elements spread over r (rows and columns by two co-prime
// strides, its first and last element included) are recomputed from x and
// the unpacked weights wRaw ([]float32, []uint16 or RawInt8, as
// BlockUnpacked, of dtype dt) and each must lie within the package's
// tolerance (doc.go: fp32/bf16 2·K·2^-24·Σ|x·w| + 2^-126; int8 2^-21·|ref|
// on the quantized values). It returns the sum of the sampled elements of
// y (the measurement's checksum) and an error naming the first bad one.
func CheckRegion(dt DType, y, x []float32, wRaw any, M, N, K int, r pool.Region, n int) (float64, error) {
	if M <= 0 || N <= 0 || K <= 0 || n <= 0 {
		return 0, fmt.Errorf("gemm: check: shape %d×%d×%d, %d samples: all must be positive", M, N, K, n)
	}
	if len(y) < M*N || len(x) < M*K {
		return 0, fmt.Errorf("gemm: check: len(y) = %d, len(x) = %d for M, N, K = %d, %d, %d", len(y), len(x), M, N, K)
	}
	if r.Empty() || r.M0 < 0 || r.N0 < 0 || r.M1 > M || r.N1 > N {
		return 0, fmt.Errorf("gemm: check: region %v: want a non-empty part of %d×%d", r, M, N)
	}
	var wf []float32
	var wb []uint16
	var wi RawInt8
	switch w := wRaw.(type) {
	case []float32:
		wf = w
	case []uint16:
		wb = w
	case RawInt8:
		wi = w
	default:
		return 0, fmt.Errorf("gemm: check: weights of type %T (want []float32, []uint16 or RawInt8)", wRaw)
	}
	want := map[DType]int{FP32: len(wf), BF16: len(wb), Int8: len(wi.W)}
	if got, ok := want[dt]; !ok || got != N*K || (dt == Int8 && len(wi.Scales) != N) {
		return 0, fmt.Errorf("gemm: check: %s weights of type %T do not hold N·K = %d values", dt, wRaw, N*K)
	}
	rows, cols := r.Rows(), r.Cols()
	q := make([]int8, K)
	var sum float64
	for i := range n {
		row, c := r.M0+(i*7919)%rows, r.N0+(i*104729+i/rows)%cols
		switch i {
		case 0:
			row, c = r.M0, r.N0
		case 1:
			row, c = r.M1-1, r.N1-1
		}
		xr := x[row*K : row*K+K]
		var ref, abs, tol float64
		switch dt {
		case FP32, BF16:
			for k, xv := range xr {
				var wv float32
				if dt == FP32 {
					wv = wf[c*K+k]
				} else {
					wv = BF16ToFloat32(wb[c*K+k])
				}
				t := float64(xv) * float64(wv)
				ref += t
				abs += math.Abs(t)
			}
			tol = 2*float64(K)*0x1p-24*abs + 0x1p-126
		case Int8:
			xs := quantizeRow(q, xr)
			var s int64
			for k, qv := range q {
				s += int64(qv) * int64(wi.W[c*K+k])
			}
			ref = float64(s) * float64(xs) * float64(wi.Scales[c])
			tol = math.Abs(ref)*0x1p-21 + 1e-30
		}
		got := float64(y[row*N+c])
		if !(math.Abs(got-ref) <= tol) {
			return 0, fmt.Errorf("gemm: check %s: y[%d][%d] = %g, want %g ± %.3g (float64 reference)", dt, row, c, got, ref, tol)
		}
		sum += got
	}
	return sum, nil
}
