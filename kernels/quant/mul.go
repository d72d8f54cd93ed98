package quant

import (
	"fmt"
	"strings"
	"sync"
)

// Backend is one implementation of the quantized product, for every format.
type Backend struct {
	Name        string // "go", "avx2", "avx512vnni"
	ISA         string
	TileM       int    // rows of X per microkernel call (M ≤ TileM per tile)
	TileN       int    // rows of W per microkernel call
	Unavailable string // "" or "unavailable: CPU lacks ..."
}

// kern computes one mr×nr tile over np block pairs (see kernGo for the
// arithmetic); a/as/ac point at X row 0 (row strides np·64 bytes, np·2
// elements), b/bs at W row 0 (row strides ldb bytes, ldbs words), c at
// Y[0][0] (row stride ldc floats). Y is overwritten.
type kern func(np int, a *byte, as *float32, ac *int32, b *byte, ldb int, bs *uint32, ldbs int, c *float32, ldc int)

// impl is a backend's kernels: k[f][mr-1] computes mr×nr tiles of format f,
// k1[f][mr-1] mr×1 edge tiles; corrY selects the ymm corrections.
type impl struct {
	name, isa string
	mr, nr    int
	lacks     func() string
	corrY     bool
	k, k1     map[Format][]kern
}

func (im *impl) backend() Backend {
	return Backend{Name: im.name, ISA: im.isa, TileM: im.mr, TileN: im.nr, Unavailable: im.lacks()}
}

var impls = sync.OnceValue(func() []*impl { return append([]*impl{goImpl()}, archImpls()...) })

// Backends returns every backend compiled in, "go" first and best last,
// with availability evaluated now (cpu.Disable takes effect).
func Backends() []Backend {
	var out []Backend
	for _, im := range impls() {
		out = append(out, im.backend())
	}
	return out
}

// Best returns the best backend available now.
func Best() Backend {
	var best Backend
	for _, b := range Backends() {
		if b.Unavailable == "" {
			best = b
		}
	}
	return best
}

// BackendByName returns the backend called name, or an error naming it and
// saying why it cannot be used.
func BackendByName(name string) (Backend, error) {
	im, err := lookup(name)
	if err != nil {
		return Backend{}, err
	}
	return im.backend(), nil
}

func lookup(name string) (*impl, error) {
	var names []string
	for _, im := range impls() {
		names = append(names, im.name)
		if im.name == name {
			if u := im.lacks(); u != "" {
				return nil, fmt.Errorf("quant: backend %q: %s", name, u)
			}
			return im, nil
		}
	}
	return nil, fmt.Errorf("quant: backend %q: unknown in this build (have %s)", name, strings.Join(names, ", "))
}

// blockRows is the number of W rows whose quants are reused across all of
// X's row tiles before moving on (kept in L2: 32 rows × 4096 q8_0 weights
// = 136 KiB).
const blockRows = 32

// Mul computes Y[i][j] = Σ_k X[i][k]·W[j][k] for every row i < a.M of the
// quantized activations and the rows n0 ≤ j < n1 of w, writing
// y[i*ldy+j] (other columns untouched), with backend be. It is
// single-threaded and safe to call concurrently on disjoint column ranges.
// Errors: an unknown or unavailable backend, activations quantized for
// another format or K, or a y too short.
func Mul(be Backend, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) error {
	im, err := lookup(be.Name)
	if err != nil {
		return err
	}
	if a.Format != w.Format || a.K != w.K {
		return fmt.Errorf("quant: activations %s K=%d for a %s matrix with K=%d", a.Format, a.K, w.Format, w.K)
	}
	if n0 < 0 || n1 > w.N || n0 > n1 || ldy < n1 || len(y) < (a.M-1)*ldy+n1 {
		return fmt.Errorf("quant: columns [%d, %d) of %d, ldy %d, %d outputs for %d rows", n0, n1, w.N, ldy, len(y), a.M)
	}
	mul(im, w, a, y, ldy, n0, n1)
	return nil
}

func mul(im *impl, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) {
	f, np := w.Format, w.pairs
	pb := f.pairBytes()
	k4, k1 := im.k[f], im.k1[f]
	corr := a.corrZ
	if im.corrY {
		corr = a.corrY
	}
	for jb := n0; jb < n1; jb += blockRows {
		je := min(jb+blockRows, n1)
		for i0 := 0; i0 < a.M; i0 += im.mr {
			mm := min(im.mr, a.M-i0)
			ap, as, ac := &a.q[i0*np*pairLen], &a.d[i0*np*2], &corr[i0*np*2]
			j := jb
			for ; j+im.nr <= je; j += im.nr {
				k4[mm-1](np, ap, as, ac, &w.q[j*np*pb], np*pb, &w.d[j*np], np, &y[i0*ldy+j], ldy)
			}
			for ; j < je; j++ {
				k1[mm-1](np, ap, as, ac, &w.q[j*np*pb], np*pb, &w.d[j*np], np, &y[i0*ldy+j], ldy)
			}
		}
	}
}
