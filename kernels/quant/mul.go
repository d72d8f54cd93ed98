package quant

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Backend is one implementation of the quantized product, for every format.
type Backend struct {
	Name        string // "go", "avx2", "avx512bw", "avx512vnni"
	ISA         string
	TileM       int    // rows of X per microkernel call (M ≤ TileM per tile)
	TileN       int    // rows of W per microkernel call
	Unavailable string // "" or "unavailable: CPU lacks ..."
	// PrefillTileM is the height of the prefill kernels' mr×32 tiles, 0
	// where the backend has no prefill path (see PrefillMinM).
	PrefillTileM int
	// NoPrefill, set by a caller, makes Mul run the GEMV tiles at every M
	// (to measure both paths).
	NoPrefill bool
	// GoTiles are the formats whose GEMV tiles on this backend are the Go
	// specification loops (no kernel of its own yet), in Formats order.
	GoTiles []Format
}

// kern computes one mr×PanelRows tile over np block pairs (see kernGo for
// the arithmetic): a, as, ac point at pair 0 of X's row i0 (pair stride sa
// bytes for a, sa/8 elements for as and ac), b and bs at pair 0 of a W
// panel, c at Y[i0][j0] (row stride ldc floats). The tile's PanelRows
// columns of Y are overwritten.
type kern func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)

// impl is a backend's kernels: k[f][mr-1] computes mr×PanelRows tiles of
// format f; corrY selects the ymm kernels' corrections.
type impl struct {
	name, isa string
	mr        int
	lacks     func() string
	corrY     bool
	k         map[Format][]kern
	goTiles   []Format // formats fill gave the Go tiles
	// kc are the column-order GEMV tiles by format (col.go), heights
	// 1..mr; a format without them runs kernColGo on a column-order W.
	kc map[Format][]kern
	// kcNote says, per format where this CPU decides it, which up-convert
	// sequence kc's tiles run (ColumnUpconvert).
	kcNote map[Format]string
}

func (im *impl) backend() Backend {
	b := Backend{Name: im.name, ISA: im.isa, TileM: im.mr, TileN: PanelRows, Unavailable: im.lacks(), GoTiles: im.goTiles}
	if pf := pfImpls[im.name]; pf != nil && b.Unavailable == "" && pf.unavailable() == "" {
		b.PrefillTileM = len(pf.k)
	}
	return b
}

var impls = sync.OnceValue(func() []*impl {
	ims := append([]*impl{goImpl()}, archImpls()...)
	for _, im := range ims {
		im.fill()
	}
	return ims
})

// fill gives every format a kernel: a format without one of its own runs
// the kernels of its layout (the ternary formats: int2's), else the Go
// specification tiles (reading the backend's corrections).
func (im *impl) fill() {
	for _, f := range Formats() {
		switch {
		case len(im.k[f]) >= im.mr:
		case len(im.k[f.layout()]) >= im.mr:
			im.k[f] = im.k[f.layout()]
			if slices.Contains(im.goTiles, f.layout()) {
				im.goTiles = append(im.goTiles, f)
			}
		case im.corrY:
			im.k[f] = goKerns(f, im.mr, 4)
			im.goTiles = append(im.goTiles, f)
		default:
			im.k[f] = goKerns(f, im.mr, 8)
			im.goTiles = append(im.goTiles, f)
		}
	}
}

// byName indexes impls by backend name.
var byName = sync.OnceValue(func() map[string]*impl {
	m := map[string]*impl{}
	for _, im := range impls() {
		m[im.name] = im
	}
	return m
})

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

// blockPanels is the number of W panels whose quants are reused across all
// of X's row tiles before moving on (kept in L2: 8 panels × 4 rows × 4096
// q8_0 weights = 136 KiB).
const blockPanels = 8

// Mul computes Y[i][j] = Σ_k X[i][k]·W[j][k] for every row i < a.M of the
// quantized activations and the rows n0 ≤ j < n1 of w, writing
// y[i*ldy+j] (other columns untouched), with backend be. It is
// single-threaded and safe to call concurrently on disjoint column ranges
// (fastest when n0 is a multiple of PanelRows). From PrefillMinRows rows on,
// a backend with PrefillTileM > 0 takes the prefill path (see
// prefill.go) unless be.NoPrefill. be must come from Best,
// Backends or BackendByName: its availability is taken from be (checked
// then), not evaluated again on this per-call path. Errors: an unknown or
// unavailable backend, activations quantized for another format or K, or a
// y too short.
func Mul(be Backend, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) error {
	im := byName()[be.Name]
	if im == nil || be.Unavailable != "" {
		_, err := lookup(be.Name)
		if err == nil {
			err = fmt.Errorf("quant: backend %q: %s", be.Name, be.Unavailable)
		}
		return err
	}
	if a.Format != w.Format || a.K != w.K {
		return fmt.Errorf("quant: activations %s K=%d for a %s matrix with K=%d", a.Format, a.K, w.Format, w.K)
	}
	if n0 < 0 || n1 > w.N || n0 > n1 || ldy < n1 || len(y) < (a.M-1)*ldy+n1 {
		return fmt.Errorf("quant: columns [%d, %d) of %d, ldy %d, %d outputs for %d rows", n0, n1, w.N, ldy, len(y), a.M)
	}
	if be.PrefillTileM > 0 && !be.NoPrefill && a.M >= PrefillMinRows(w.Format) {
		pf := pfImpls[be.Name]
		if pfFormat(w.Format) {
			mulPF(pf, w, a, y, ldy, n0, n1)
			return nil
		}
		if ks := pf.kk[w.Format]; ks != nil {
			mulPFK(ks, pf.kconv[w.Format], pf.kcolConv[w.Format], w, a, y, ldy, n0, n1)
			return nil
		}
	}
	if w.col {
		mulCol(im, w, a, y, ldy, n0, n1)
		return nil
	}
	mul(im, w, a, y, ldy, n0, n1)
	return nil
}

func mul(im *impl, w *Matrix, a *Activations, y []float32, ldy, n0, n1 int) {
	f, np := w.Format, w.pairs
	pb := f.pairBytes()
	ks := im.k[f]
	corr := a.corrZ
	if im.corrY {
		corr = a.corrY
	}
	sa := a.M * pairLen
	var tmp []float32 // a cut panel's tile, allocated only if one occurs (a stack array would escape on every call)
	for tb := n0 / PanelRows; tb*PanelRows < n1; tb += blockPanels {
		te := min(tb+blockPanels, (n1+PanelRows-1)/PanelRows)
		for i0 := 0; i0 < a.M; i0 += im.mr {
			mm := min(im.mr, a.M-i0)
			ap, as, ac := &a.q[i0*pairLen], &a.d[i0*2], &corr[i0*2]
			if f.kquant() {
				ac = a.kxAt(i0)
			}
			for t := tb; t < te; t++ {
				j0 := t * PanelRows
				bp, bs := &w.q[t*np*PanelRows*pb], &w.d[t*w.dPanel()]
				if j0 >= n0 && j0+PanelRows <= n1 {
					ks[mm-1](np, ap, as, ac, sa, bp, bs, &y[i0*ldy+j0], ldy)
					continue
				}
				// A panel cut by [n0, n1): compute it whole, copy the part inside.
				if tmp == nil {
					tmp = make([]float32, im.mr*PanelRows)
				}
				ks[mm-1](np, ap, as, ac, sa, bp, bs, &tmp[0], PanelRows)
				for r := range mm {
					for j := max(j0, n0); j < min(j0+PanelRows, n1); j++ {
						y[(i0+r)*ldy+j] = tmp[r*PanelRows+j-j0]
					}
				}
			}
		}
	}
}
