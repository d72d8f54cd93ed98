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
	im := s.im
	if im == nil || im.name != b.Name {
		var err error
		if im, err = lookup(b.Name); err != nil {
			return err
		}
		s.im = im
	} else if u := im.lacks(); u != "" { // availability may change (cpu.Disable...)
		return fmt.Errorf("gemm: backend %q: %s", b.Name, u)
	}
	if im.dt != FP32 {
		return fmt.Errorf("gemm: PanelBlock: backend %q computes %s panels, want an fp32 backend", b.Name, im.dt)
	}
	nr := im.nr
	switch {
	case m < 0 || n < 0:
		return fmt.Errorf("gemm: PanelBlock: shape m=%d, n=%d: must be ≥ 0", m, n)
	case k < 1:
		return fmt.Errorf("gemm: PanelBlock: k = %d: must be ≥ 1", k)
	case ldy < n:
		return fmt.Errorf("gemm: PanelBlock: ldy = %d < n = %d", ldy, n)
	case ldx < k:
		return fmt.Errorf("gemm: PanelBlock: ldx = %d < k = %d", ldx, k)
	case stride < k*nr:
		return fmt.Errorf("gemm: PanelBlock: panel stride %d < k·NR = %d·%d", stride, k, nr)
	}
	if m == 0 || n == 0 {
		return nil
	}
	np := (n + nr - 1) / nr
	if need := (m-1)*ldy + n; len(y) < need {
		return fmt.Errorf("gemm: PanelBlock: len(y) = %d, want ≥ (m-1)·ldy+n = %d", len(y), need)
	}
	if need := (m-1)*ldx + k; len(x) < need {
		return fmt.Errorf("gemm: PanelBlock: len(x) = %d, want ≥ (m-1)·ldx+k = %d", len(x), need)
	}
	if need := (np-1)*stride + k*nr; len(panels) < need {
		return fmt.Errorf("gemm: PanelBlock: len(panels) = %d, want ≥ (panels-1)·stride+k·NR = %d for n = %d", len(panels), need, n)
	}
	bl := s.bl
	if bl.MC <= 0 || bl.KC <= 0 || bl.NC <= 0 {
		bl = DefaultBlocking(im.backend())
	}
	im.panelCompute(bl, y, ldy, x, ldx, m, k, unsafe.Pointer(unsafe.SliceData(panels)), stride, n, add, s)
	return nil
}

// panelCompute is PanelBlock's loop nest on checked arguments: Weights.compute
// with the panel stride free and the first k step optionally accumulating.
func (im *impl) panelCompute(bl Blocking, y []float32, ldy int, x []float32, ldx, m, k int, base unsafe.Pointer, stride, n int, add bool, s *Scratch) {
	mr, nr := im.mr, im.nr
	kc, mc, nc := max(bl.KC, 1), max(bl.MC/mr*mr, mr), max(bl.NC/nr, 1)
	if m <= mr {
		kc = k // decode: one sliver, stream each panel once
	}
	kc = min(kc, k)
	np := (n + nr - 1) / nr
	s.a = grow(s.a, min(mc, m)*kc)
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
				single := mb == 1
				if !single {
					packA(s.a, x[ic*ldx+pc:], ldx, mb, kb, mr)
				}
				for p := jp; p < jpEnd; p++ {
					bp := unsafe.Add(base, (p*stride+pc*nr)*4)
					lo, hi := p*nr, min(n, p*nr+nr)
					full := hi-lo == nr
					for ir := 0; ir < mb; ir += mr {
						rows := min(mr, mb-ir)
						a := &x[ic*ldx+pc]
						if !single {
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
