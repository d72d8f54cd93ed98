package gemm

import (
	"fmt"
	"unsafe"
)

// AMXTiles runs products on B operands that are already in the AMX B
// tile layout of amx.go (bf16 only: TDPBF16PS), for callers that write
// that layout themselves, e.g. a KV cache whose producer packs K and V
// into it (SMEPilot §4.3: producer-side packing; the engine's attention
// on amx-bf16). A panel is 32 columns of Y over K padded to a multiple of
// 32 (AMXKPad): AMXPanelElems(k) bfloat16 elements, column j and k index
// kk at AMXPanelIndex(j, kk). X is fp32, converted into A slivers
// (PackA: the hi+mid+lo split of amx.go, so Y is a sum of 3·K exact
// products in fp32, |y - ref| ≤ 3·K·2^-24·Σ_k|x_k·w_k|). Not safe for
// concurrent use: each worker holds its own.
type AMXTiles struct {
	op *amxOp
	s  Scratch
}

// NewAMXTiles returns the tile products of backend b, which must be the
// amx-bf16 backend and available on this CPU (its first-use self-test
// passed). Error: another backend, or one that is unavailable, naming it.
func NewAMXTiles(b Backend) (*AMXTiles, error) {
	im, err := lookup(b.Name)
	if err != nil {
		return nil, err
	}
	if im.amx == nil || !im.amx.bf16 {
		return nil, fmt.Errorf("gemm: AMX tiles on backend %q: want amx-bf16", b.Name)
	}
	if l := im.lacks(); l != "" {
		return nil, fmt.Errorf("gemm: AMX tiles on backend %q: %s", b.Name, l)
	}
	return &AMXTiles{op: im.amx}, nil
}

// AMXTilesSpec returns AMXTiles whose tile kernel is the Go specification
// of TDPBF16PS's tile loop (amxTileSpec), on any CPU: the twin the
// engine's tests run the AMX attention path with where no AMX exists.
// It is slow (float64 per update). Its outputs are within the same
// bound of the exact product as the assembly's, not bit for bit equal to
// them: it rounds after every update as the SDM's pseudocode says, and on
// random data the hardware's sums differed from that in most outputs
// (TestAMXTilesProduct, Emerald Rapids, 2026-11-27: 70-93% of them, by up
// to 16385 ULP of outputs that cancel to near 0, all within the bound);
// the self-test's inputs are exact in any order.
func AMXTilesSpec() *AMXTiles {
	return &AMXTiles{op: &amxOp{bf16: true, tile: amxTileSpec(true)}}
}

// AMXKPad is k padded to whole AMX bf16 K steps: a multiple of 32.
func AMXKPad(k int) int { return (k + 31) / 32 * 32 }

// AMXPanelElems is the bfloat16 elements of one B panel over k: 32
// columns × AMXKPad(k).
func AMXPanelElems(k int) int { return AMXKPad(k) * amxNR }

// AMXPanelIndex is the element index within a B panel of column j (< 32)
// at k index kk: pairs of consecutive k per column ("VNNI" order),
// ((kk/2)·32 + j)·2 + kk%2.
func AMXPanelIndex(j, kk int) int { return ((kk>>1)*amxNR+j)*2 + kk&1 }

// Rounded returns t's tile products with X rounded to bf16 (ties to
// even) instead of split into three terms: one TDPBF16PS per C tile and K
// step instead of three, Y then the fp32 sum of K exact products of the
// rounded x and w, |y - ref| ≤ (K·2^-24 + 2^-8)·Σ_k|x_k·w_k| (the
// rounding's relative error 2^-9 on each x, and the sum's), as the
// bf16 attention of a bf16 KV cache computes it (SMEPilot §4.3 runs
// attention in bf16 on SME).
func (t *AMXTiles) Rounded() *AMXTiles {
	op := *t.op
	op.round = true
	return &AMXTiles{op: &op}
}

// SliverBytes is the bytes PackA writes for m rows over k: whole slivers
// of 32 rows, three terms per K step (one where Rounded).
func (t *AMXTiles) SliverBytes(m, k int) int {
	return (m + amxMR - 1) / amxMR * t.op.sliverBytes(k)
}

// PackA converts rows [0, m) of X (row r at x[r·ldx:], k long) into A
// slivers in dst (grown to SliverBytes(m, k)) and returns it; rows past m
// in the last sliver keep stale bytes (their outputs are never written).
// Panics on a short x (the caller's bug).
func (t *AMXTiles) PackA(dst []byte, x []float32, ldx, m, k int) []byte {
	dst = grow(dst, t.SliverBytes(m, k))
	if m > 0 {
		_ = x[(m-1)*ldx+k-1]
		t.op.convert(dst, nil, x, ldx, k, 0, m, nil)
	}
	return dst
}

// Product computes Y[m0:m1, 0:n] = (or, with add, +=) X·B over k: X the
// rows of the slivers a (PackA: row 0 is a's first row; m0 a multiple of
// 32), B the panels at b, panel p (columns p·32..) at b[p·stride:]
// (stride in elements, ≥ AMXPanelElems(k)), whose K steps past k must be
// zero in X (PackA pads them) and finite in B. Y is row-major with row
// stride ldy. Error: a shape that does not fit the slices, naming it.
func (t *AMXTiles) Product(y []float32, ldy int, a []byte, m0, m1, k int, b []uint16, stride, n int, add bool) error {
	if m0 >= m1 || n <= 0 {
		return nil
	}
	np := (n + amxNR - 1) / amxNR
	switch {
	case m0 < 0 || m0%amxMR != 0 || k < 1 || ldy < n:
		return fmt.Errorf("gemm: AMX product: rows [%d, %d), k %d, n %d, ldy %d: want m0 ≥ 0 a multiple of %d, k ≥ 1, ldy ≥ n", m0, m1, k, n, ldy, amxMR)
	case stride < AMXPanelElems(k):
		return fmt.Errorf("gemm: AMX product: panel stride %d < %d elements of a panel over k %d", stride, AMXPanelElems(k), k)
	case len(b) < (np-1)*stride+AMXPanelElems(k):
		return fmt.Errorf("gemm: AMX product: %d panel elements, want ≥ %d for n %d over k %d", len(b), (np-1)*stride+AMXPanelElems(k), n, k)
	case len(a) < t.SliverBytes(m1, k):
		return fmt.Errorf("gemm: AMX product: %d sliver bytes, want ≥ %d for %d rows over k %d (PackA)", len(a), t.SliverBytes(m1, k), m1, k)
	case len(y) < (m1-1)*ldy+n:
		return fmt.Errorf("gemm: AMX product: len(y) = %d, want ≥ %d", len(y), (m1-1)*ldy+n)
	}
	t.op.product(y, ldy, a, nil, 0, m0, m1, 0, n, k, amxB{base: unsafe.Pointer(unsafe.SliceData(b)), per: 2 * stride}, add, &t.s)
	return nil
}
