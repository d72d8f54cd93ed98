package gemm

import (
	"fmt"
	"slices"
	"sync"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// DType is the precision of the weights: "fp32", "bf16" (fp32 activations,
// fp32 accumulation) or "int8" (int8 weights and per-row int8 activations,
// int32 accumulation, per-row scales).
type DType string

// The weight precisions.
const (
	FP32 DType = "fp32"
	BF16 DType = "bf16"
	Int8 DType = "int8"
)

// Backend is one implementation of the GEMM for one weight precision.
type Backend struct {
	Name        string // "avx2-fp32", "avx512-bf16", "go-int8", "sme-fp32", ...
	DType       DType
	ISA         string // "go", "avx2", "avx512", "avx512vnni", "neon", "sme", "amx" (ranked by kernels/registry's order)
	Unit        Unit   // what executes the microkernel: Cores (vector units) or MatrixUnit (SME, AMX)
	TileM       int    // microkernel register tile: rows of X/Y
	TileN       int    // microkernel register tile: output columns (rows of W)
	Unavailable string // "" or "unavailable: CPU lacks AVX512F"
	// Verified is "" for a kernel that CI executes, else how far it has
	// run on hardware: internal/amx.Verified for the AMX backends, which
	// `bench probe --list` shows beside them.
	Verified string
}

// impl is what a backend computes with; every backend's packed layout is
// described by (mr, nr): W is cut into panels of nr rows (output columns),
// stored k-major (nr weights per k step; int8: nr×2 per k pair).
type impl struct {
	name, isa string
	unit      Unit
	dt        DType
	mr, nr    int
	lacks     func() string // "" when usable now
	fk        []fkern       // fp32 or bf16: fk[m-1] computes an m×nr tile
	ik        []ikern       // int8: ik[m-1]
	amx       *amxOp        // AMX: tile kernel and layouts (amx.go); fk, ik unused
	verified  string        // Backend.Verified
}

func (im *impl) backend() Backend { return im.describe(im.lacks()) }

// describe is the Backend of im with availability unavailable.
func (im *impl) describe(unavailable string) Backend {
	return Backend{Name: im.name, DType: im.dt, ISA: im.isa, Unit: im.unit, TileM: im.mr, TileN: im.nr, Unavailable: unavailable, Verified: im.verified}
}

func available() string { return "" }

// lacks is cpu.Lacks: "" or "unavailable: CPU lacks F1, F2".
var lacks = cpu.Lacks

// rank is a backend's registry.Entry.Rank: within one ISA, the more
// accurate dtype (fp32, bf16, int8), then the larger register tile, as
// Pick's rule.
func rank(dt DType, mr, nr int) int {
	return (len(dtypeOrder)-slices.Index(dtypeOrder, dt))<<20 + min(mr*nr, 1<<20-1)
}

// backends is the registry of every implementation compiled in ("go"
// first, then the architecture's; the order chooses nothing: see Pick),
// built once (the engine's attention looks a backend up per tile);
// availability (impl.lacks) is still evaluated per call, and BestOn's
// choices are cached per CPU feature set.
var backends = sync.OnceValue(func() *registry.Registry[*impl] {
	r := registry.New[*impl]("gemm: backend")
	for _, im := range append(goImpls(), archImpls()...) {
		r.Register(registry.Entry[*impl]{Name: im.name, ISA: im.isa, Lacks: im.lacks, Rank: rank(im.dt, im.mr, im.nr), Value: im})
	}
	return r
})

// impls returns every implementation compiled in, in registration order.
func impls() []*impl {
	var out []*impl
	for _, e := range backends().All() {
		out = append(out, e.Value)
	}
	return out
}

// Backends returns every backend compiled in for GOARCH (the "go" ones
// first; the order means nothing, Pick chooses by capability), with
// availability evaluated now, so cpu.Disable... and BENCH_CPU_DISABLE take
// effect.
func Backends() []Backend {
	var out []Backend
	for _, im := range impls() {
		out = append(out, im.backend())
	}
	return out
}

// Best returns the most capable backend of dt on the cores' vector units
// available now: Pick(Backends(), Cores, dt). It never returns a
// matrix-unit backend (BestOn(MatrixUnit, dt) does); ChoosePair picks the
// two backends of the engine's placements. Error: no such backend (an
// unknown dt).
func Best(dt DType) (Backend, error) { return BestOn(Cores, dt) }

// BestOn returns the most capable backend of dt executed by u available
// now (Pick's rule, which is the registry's order with rank), chosen once
// per CPU feature set, or an error naming the unit and dtype.
func BestOn(u Unit, dt DType) (Backend, error) {
	e, err := backends().BestWhere(string(u)+"/"+string(dt), func(e registry.Entry[*impl]) bool {
		return e.Value.unit == u && e.Value.dt == dt
	})
	if err != nil {
		if WeightBytes(dt, 1, 1) == 0 {
			return Backend{}, fmt.Errorf("gemm: dtype %q: unknown (want fp32, bf16, int8)", dt)
		}
		return Backend{}, fmt.Errorf("gemm: no %s backend on the %s available (%s)", dt, u.Where(), availableNames(Backends(), u, dt))
	}
	return e.Value.describe(""), nil
}

// BackendByName returns the backend called name, or an error naming it and
// saying why it cannot be used (unknown: the backends compiled in;
// unavailable: the backends available).
func BackendByName(name string) (Backend, error) {
	im, err := lookup(name)
	if err != nil {
		return Backend{}, err
	}
	return im.describe(""), nil
}

// lookup returns the implementation of a usable backend.
func lookup(name string) (*impl, error) {
	e, err := backends().ByName(name)
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// Blocking is the BLIS loop nest's cache blocking, in elements: NC columns
// of Y (rows of W) per block of packed W that should stay in L3, KC steps of
// k per block (an MR×KC sliver of X and an NR×KC sliver of W stay in L1),
// MC rows of X per packed block (MC×KC stays in L2).
type Blocking struct{ MC, KC, NC int }

// Default cache sizes (bytes) for DefaultBlocking: a common x86 server core.
const (
	DefaultL1D       = 32 << 10
	DefaultL2        = 1 << 20
	DefaultL3PerCore = 2 << 20
)

// DefaultBlocking is BlockingFor(b, DefaultL1D, DefaultL2, DefaultL3PerCore).
func DefaultBlocking(b Backend) Blocking {
	return BlockingFor(b, DefaultL1D, DefaultL2, DefaultL3PerCore)
}

// BlockingFor derives the blocking of backend b from the cache sizes in
// bytes (per core); zero or negative sizes take the defaults.
//
//	KC: an MR×KC sliver of X (fp32) and an NR×KC sliver of W (weight
//	    bytes) fill at most 3/4 of L1d; a multiple of 16, in [32, 1024].
//	MC: an MC×KC block of packed X fills at most half of L2 (the rest
//	    streams W slivers); a multiple of MR, in [MR, 1024].
//	NC: a KC×NC block of packed W fills at most half of the L3 share;
//	    a multiple of NR, in [NR, 16384].
//
// int8 tiles accumulate in int32 over the whole K (exact, one scale at the
// end), so KC only sizes the X block there: MC rows of KC int16 pairs.
func BlockingFor(b Backend, l1d, l2, l3PerCore int64) Blocking {
	if l1d <= 0 {
		l1d = DefaultL1D
	}
	if l2 <= 0 {
		l2 = DefaultL2
	}
	if l3PerCore <= 0 {
		l3PerCore = DefaultL3PerCore
	}
	mr, nr := int64(max(b.TileM, 1)), int64(max(b.TileN, 1))
	wb := int64(WeightBytes(b.DType, 1, 1))
	if wb == 0 {
		wb = 4
	}
	kc := l1d * 3 / 4 / (mr*4 + nr*wb)
	kc = clamp(kc/16*16, 32, 1024)
	mc := clamp(l2/2/(kc*4)/mr*mr, mr, max(mr, 1024/mr*mr))
	nc := clamp(l3PerCore/2/(kc*wb)/nr*nr, nr, max(nr, 16384/nr*nr))
	return Blocking{MC: int(mc), KC: int(kc), NC: int(nc)}
}

func clamp(x, lo, hi int64) int64 { return min(max(x, lo), hi) }

// Flops is the number of floating-point (or integer) operations of an
// M×N×K GEMM: 2mnk.
func Flops(m, n, k int) float64 { return 2 * float64(m) * float64(n) * float64(k) }

// WeightBytes is the size of an N×K weight matrix in dtype dt, without
// scales or padding: 4nk (fp32), 2nk (bf16), nk (int8); 0 for an unknown dt.
func WeightBytes(dt DType, n, k int) int64 {
	e := map[DType]int64{FP32: 4, BF16: 2, Int8: 1}[dt]
	return e * int64(n) * int64(k)
}
