package gemm

import (
	"fmt"
	"unsafe"
)

// PanelBlock computes Y[0:m, 0:n] = X[0:m, 0:k]·Bᵀ (or += with add) where
// B (n×k) is given already packed in backend b's fp32 panel layout, by the
// caller, at any panel stride: panel p (rows p·NR..p·NR+NR-1 of B, NR =
// b.TileN) starts at panels[p·stride] and is k-major,
//
//	B[p·NR+j][kk] = panels[p·stride + kk·NR + j]     j < NR, kk < k
//
// the layout of Weights' fp32 panels (pack.go) with the panel stride free
// instead of K·NR. It packs only X (into MR-row slivers, as Block does) and
// runs b's microkernels on the caller's panels directly, so a tensor that
// its producer writes in this layout (the engine's KV cache: SMEPilot §4.3
// producer-side packing) is never copied or transposed by its consumer.
// Y[i][j] = y[i·ldy+j], X[i][kk] = x[i·ldx+kk]; only Y[0:m, 0:n] is written.
// Rows of the last panel past n are read (the microkernels compute whole
// panels) but their results are discarded: they may hold anything finite
// or not. A k-range past a panel's first k rows is never read.
//
// The loop nest is Block's (blocking from s, or DefaultBlocking(b) when s
// has none; KC is the whole k for m ≤ MR, so each panel is streamed once),
// and the rounding is Block's fp32 bound: |y - ref| ≤ 2·k·2^-24·Σ|x·w| (plus
// the rounding of the old Y with add). Single-threaded, no shared mutable
// state; s may be nil (one is taken from a pool).
//
// Errors (one line, naming the value): b unknown, unavailable or not fp32;
// m, n < 0 or k < 1; ldx < k, ldy < n; stride < k·NR; x, y or panels too
// short for the shape.
func PanelBlock(b Backend, y []float32, ldy int, x []float32, ldx, m, k int, panels []float32, stride, n int, add bool, s *Scratch) error {
	if s == nil {
		s = scratchPool.Get().(*Scratch)
		defer scratchPool.Put(s)
	}
	im, err := fp32Impl("PanelBlock", b, &s.im)
	if err != nil {
		return err
	}
	if err := checkPanels("PanelBlock", im, y, ldy, m, k, panels, stride, n); err != nil {
		return err
	}
	switch {
	case ldx < k:
		return fmt.Errorf("gemm: PanelBlock: ldx = %d < k = %d", ldx, k)
	case m > 0 && n > 0 && len(x) < (m-1)*ldx+k:
		return fmt.Errorf("gemm: PanelBlock: len(x) = %d, want ≥ (m-1)·ldx+k = %d", len(x), (m-1)*ldx+k)
	}
	if m == 0 || n == 0 {
		return nil
	}
	bl := s.bl
	if bl.MC <= 0 || bl.KC <= 0 || bl.NC <= 0 {
		bl = DefaultBlocking(im.backend())
	}
	im.panelCompute(bl, y, ldy, x, ldx, false, m, k, unsafe.Pointer(unsafe.SliceData(panels)), stride, n, add, s)
	return nil
}

// PackX packs the m×k row-major X (X[i][kk] = x[i·ldx+kk]) into backend
// b's MR-row slivers over the whole k, the operand layout of its
// microkernels: sliver q (rows q·MR.., h = min(MR, m-q·MR) of them) starts
// at q·MR·k and holds X[q·MR+r][kk] at kk·h + r. dst is grown to m·k and
// returned. PanelBlockPacked then multiplies it by any number of panel
// sets without packing it again (attention's queries against every K
// tile). Errors: b unknown, unavailable or not fp32; m < 0, k < 1, ldx <
// k, x too short.
func PackX(b Backend, dst, x []float32, ldx, m, k int) ([]float32, error) {
	var cache *impl
	im, err := fp32Impl("PackX", b, &cache)
	if err != nil {
		return dst, err
	}
	switch {
	case m < 0 || k < 1:
		return dst, fmt.Errorf("gemm: PackX: shape %d×%d: want m ≥ 0, k ≥ 1", m, k)
	case ldx < k:
		return dst, fmt.Errorf("gemm: PackX: ldx = %d < k = %d", ldx, k)
	case m > 0 && len(x) < (m-1)*ldx+k:
		return dst, fmt.Errorf("gemm: PackX: len(x) = %d, want ≥ (m-1)·ldx+k = %d", len(x), (m-1)*ldx+k)
	}
	dst = grow(dst, m*k)
	packSlivers(dst, x, ldx, m, k, im.mr)
	return dst, nil
}

// PanelBlockPacked is PanelBlock with X given packed by PackX (for the
// same backend, m and k): Y[0:m, 0:n] (= or +=) X·Bᵀ on the caller's
// panels, nothing packed in the call. KC is the whole k (each sliver and
// panel step block stays in L1 for k up to a few hundred, the attention
// tiles' head dims and tile lengths). Errors as PanelBlock's, and xp
// shorter than m·k.
func PanelBlockPacked(b Backend, y []float32, ldy int, xp []float32, m, k int, panels []float32, stride, n int, add bool, s *Scratch) error {
	if s == nil {
		s = scratchPool.Get().(*Scratch)
		defer scratchPool.Put(s)
	}
	im, err := fp32Impl("PanelBlockPacked", b, &s.im)
	if err != nil {
		return err
	}
	if err := checkPanels("PanelBlockPacked", im, y, ldy, m, k, panels, stride, n); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if len(xp) < m*k {
		return fmt.Errorf("gemm: PanelBlockPacked: len(xp) = %d, want ≥ m·k = %d (PackX)", len(xp), m*k)
	}
	bl := s.bl
	if bl.NC <= 0 {
		bl = DefaultBlocking(im.backend())
	}
	im.panelCompute(bl, y, ldy, xp, k, true, m, k, unsafe.Pointer(unsafe.SliceData(panels)), stride, n, add, s)
	return nil
}

// fp32Impl returns the implementation of b, cached in *cache, checking
// that it is available now and computes fp32 panels.
func fp32Impl(fn string, b Backend, cache **impl) (*impl, error) {
	im := *cache
	if im == nil || im.name != b.Name {
		var err error
		if im, err = lookup(b.Name); err != nil {
			return nil, err
		}
		*cache = im
	} else if u := im.lacks(); u != "" { // availability may change (cpu.Disable...)
		return nil, fmt.Errorf("gemm: backend %q: %s", b.Name, u)
	}
	if im.dt != FP32 {
		return nil, fmt.Errorf("gemm: %s: backend %q computes %s panels, want an fp32 backend", fn, b.Name, im.dt)
	}
	return im, nil
}

// checkPanels checks the shape, Y and the panels of a PanelBlock call.
func checkPanels(fn string, im *impl, y []float32, ldy, m, k int, panels []float32, stride, n int) error {
	nr := im.nr
	switch {
	case m < 0 || n < 0:
		return fmt.Errorf("gemm: %s: shape m=%d, n=%d: must be ≥ 0", fn, m, n)
	case k < 1:
		return fmt.Errorf("gemm: %s: k = %d: must be ≥ 1", fn, k)
	case ldy < n:
		return fmt.Errorf("gemm: %s: ldy = %d < n = %d", fn, ldy, n)
	case stride < k*nr:
		return fmt.Errorf("gemm: %s: panel stride %d < k·NR = %d·%d", fn, stride, k, nr)
	}
	if m == 0 || n == 0 {
		return nil
	}
	np := (n + nr - 1) / nr
	if need := (m-1)*ldy + n; len(y) < need {
		return fmt.Errorf("gemm: %s: len(y) = %d, want ≥ (m-1)·ldy+n = %d", fn, len(y), need)
	}
	if need := (np-1)*stride + k*nr; len(panels) < need {
		return fmt.Errorf("gemm: %s: len(panels) = %d, want ≥ (panels-1)·stride+k·NR = %d for n = %d", fn, len(panels), need, n)
	}
	return nil
}

// panelCompute is PanelBlock's loop nest on checked arguments: Weights.compute
// with the panel stride free and the first k step optionally accumulating.
// With packed, x is PackX's slivers of all m rows over the whole k.
func (im *impl) panelCompute(bl Blocking, y []float32, ldy int, x []float32, ldx int, packed bool, m, k int, base unsafe.Pointer, stride, n int, add bool, s *Scratch) {
	mr, nr := im.mr, im.nr
	kc, mc, nc := max(bl.KC, 1), max(bl.MC/mr*mr, mr), max(bl.NC/nr, 1)
	if m <= mr || packed {
		kc = k // decode: one sliver, stream each panel once
	}
	if packed {
		mc = m
	}
	kc = min(kc, k)
	np := (n + nr - 1) / nr
	if !packed {
		s.a = grow(s.a, min(mc, m)*kc)
	}
	s.tile = grow(s.tile, mr*nr)
	kern := im.fk
	for jp := 0; jp < np; jp += nc {
		jpEnd := min(np, jp+nc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			acc := add || pc > 0
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				// A single row is its own sliver: k-major with one row per step.
				single := mb == 1 && !packed
				if !single && !packed {
					packSlivers(s.a, x[ic*ldx+pc:], ldx, mb, kb, mr)
				}
				for p := jp; p < jpEnd; p++ {
					bp := unsafe.Add(base, (p*stride+pc*nr)*4)
					lo, hi := p*nr, min(n, p*nr+nr)
					full := hi-lo == nr
					for ir := 0; ir < mb; ir += mr {
						rows := min(mr, mb-ir)
						var a *float32
						switch {
						case packed:
							a = &x[ir*k]
						case single:
							a = &x[ic*ldx+pc]
						default:
							a = &s.a[ir*kb]
						}
						pf := bp // as in Weights.compute
						if ir == 0 && mb > mr && p+1 < np {
							pf = unsafe.Add(bp, stride*4)
						}
						if full {
							kern[rows-1](rows, kb, a, bp, &y[(ic+ir)*ldy+lo], ldy, acc, pf)
							continue
						}
						t := s.tile
						if acc {
							for r := 0; r < rows; r++ {
								copy(t[r*nr:r*nr+hi-lo], y[(ic+ir+r)*ldy+lo:(ic+ir+r)*ldy+hi])
							}
						}
						kern[rows-1](rows, kb, a, bp, &t[0], nr, acc, pf)
						for r := 0; r < rows; r++ {
							copy(y[(ic+ir+r)*ldy+lo:(ic+ir+r)*ldy+hi], t[r*nr:r*nr+hi-lo])
						}
					}
				}
			}
		}
	}
}

// packSlivers packs X into MR-row slivers, as packA specifies (block.go),
// for Block, PanelBlock and PackX: packSliversGo, or where the CPU has
// AVX-512 the 16×16 transposes of packSliversAVX512 for whole 12-row
// slivers (convert_amd64.go).
var packSlivers = packSliversGo

// packSliversGo is packA four rows at a time: each k step of a sliver
// gets four contiguous stores from four row streams (measured about 1.6×
// packA's speed on AVX-512 Zen 5 at MR 12, k 128).
func packSliversGo(dst, x []float32, ldx, mb, kb, mr int) {
	for i := 0; i < mb; i += mr {
		m := min(mr, mb-i)
		sl := dst[i*kb : i*kb+m*kb]
		r := 0
		for ; r+4 <= m; r += 4 {
			r0 := x[(i+r)*ldx : (i+r)*ldx+kb]
			r1 := x[(i+r+1)*ldx : (i+r+1)*ldx+kb][:len(r0)]
			r2 := x[(i+r+2)*ldx : (i+r+2)*ldx+kb][:len(r0)]
			r3 := x[(i+r+3)*ldx : (i+r+3)*ldx+kb][:len(r0)]
			for p := range r0 {
				d := sl[p*m+r : p*m+r+4 : p*m+r+4]
				d[0], d[1], d[2], d[3] = r0[p], r1[p], r2[p], r3[p]
			}
		}
		for ; r < m; r++ {
			row := x[(i+r)*ldx : (i+r)*ldx+kb]
			for p, v := range row {
				sl[p*m+r] = v
			}
		}
	}
}
