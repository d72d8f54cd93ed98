package gemm

import (
	"fmt"
	"sync"
	"unsafe"
)

// Scratch is the per-call working memory of Block: the packed block of X,
// one edge tile, and (for BlockUnpacked) the panels packed during the call.
// A Scratch must not be used by two calls at once; give each worker its
// own, or pass nil to take one from a pool.
type Scratch struct {
	bl   Blocking
	a    []float32 // packed X: slivers of MR rows, k-major
	a32  []uint32  // int8: packed int16 pairs of quantized X
	q    []int8    // int8: one quantized row
	xs   []float32 // int8: row scales of the block
	tile []float32 // MR×NR edge tile (AMX: the 32×32 output tile)
	amxA []byte    // AMX: X converted into slivers (amx.go)
	// amxAll, amxXs: Run's AMX path keeps all of X converted (and the int8
	// row scales) in the first worker's Scratch, read by every worker.
	amxAll []byte
	amxXs  []float32
	w      Weights // BlockUnpacked: the panels packed in this call
	im     *impl   // PanelBlock: the backend last looked up
}

// NewScratch returns working memory for Block on w with blocking bl (a
// zero Blocking takes w's default).
func NewScratch(w *Weights, bl Blocking) *Scratch {
	s := &Scratch{bl: bl}
	if w != nil && (bl.MC <= 0 || bl.KC <= 0 || bl.NC <= 0) {
		s.bl = w.bl
	}
	return s
}

var scratchPool = sync.Pool{New: func() any { return new(Scratch) }}

// RawInt8 is the unpacked int8 weight matrix for BlockUnpacked: W[n][k] =
// W[n·K+k]·Scales[n].
type RawInt8 struct {
	W      []int8
	Scales []float32
}

// Block computes Y[m0:m1, n0:n1] = X[m0:m1, :]·Wᵀ, overwriting that block
// of y (Y[m][n] = y[m·ldy+n]) and nothing else; X[m][k] = x[m·ldx+k]. It is
// single-threaded and keeps no shared mutable state: callers may run
// Block concurrently on disjoint blocks of y, each with its own Scratch (or
// nil: one is taken from a pool).
//
// The loop nest is BLIS's: for each NC-column block of W, each KC step
// block, each MC-row block of X (packed into MR-row slivers), each NR
// panel, each sliver: one MR×NR microkernel. For M ≤ MR (decode) KC is the
// whole K, so every panel of W is streamed once, front to back.
func (w *Weights) Block(y []float32, ldy int, x []float32, ldx int, m0, m1, n0, n1 int, s *Scratch) error {
	if w == nil || w.im == nil {
		return fmt.Errorf("gemm: Block: nil or unpacked Weights (use PackFP32, PackBF16 or PackInt8)")
	}
	if err := checkBlock(y, ldy, x, ldx, m0, m1, n0, n1, w.N, w.K); err != nil {
		return err
	}
	if s == nil {
		s = scratchPool.Get().(*Scratch)
		s.bl = w.bl
		defer scratchPool.Put(s)
	}
	w.compute(y, ldy, x, ldx, m0, m1, n0, n1, s)
	return nil
}

func checkBlock(y []float32, ldy int, x []float32, ldx int, m0, m1, n0, n1, n, k int) error {
	switch {
	case m0 < 0 || m1 < m0:
		return fmt.Errorf("gemm: Block: rows [%d, %d): want 0 ≤ m0 ≤ m1", m0, m1)
	case n0 < 0 || n1 < n0 || n1 > n:
		return fmt.Errorf("gemm: Block: columns [%d, %d): want 0 ≤ n0 ≤ n1 ≤ N = %d", n0, n1, n)
	case ldy < n1:
		return fmt.Errorf("gemm: Block: ldy = %d < n1 = %d", ldy, n1)
	case ldx < k:
		return fmt.Errorf("gemm: Block: ldx = %d < K = %d", ldx, k)
	}
	if m1 == m0 || n1 == n0 {
		return nil
	}
	if need := (m1-1)*ldy + n1; len(y) < need {
		return fmt.Errorf("gemm: Block: len(y) = %d, want ≥ (m1-1)·ldy+n1 = %d", len(y), need)
	}
	if need := (m1-1)*ldx + k; len(x) < need {
		return fmt.Errorf("gemm: Block: len(x) = %d, want ≥ (m1-1)·ldx+K = %d", len(x), need)
	}
	return nil
}

// BlockUnpacked computes the same block as Block from the unpacked W (wRaw:
// []float32 for fp32 backends, []uint16 for bf16, RawInt8 for int8),
// packing the panels the block needs inside the call: the "pack on every
// call" ablation of SMEPilot §5.4.
func BlockUnpacked(b Backend, bl Blocking, y []float32, ldy int, x []float32, ldx int, wRaw any, n, k int, m0, m1, n0, n1 int, s *Scratch) error {
	im, err := lookup(b.Name)
	if err != nil {
		return err
	}
	if n <= 0 || k <= 0 {
		return fmt.Errorf("gemm: BlockUnpacked: shape %d×%d: N and K must be positive", n, k)
	}
	var got int
	switch r := wRaw.(type) {
	case []float32:
		got = len(r)
		if im.dt != FP32 {
			return fmt.Errorf("gemm: BlockUnpacked: backend %q wants %s weights, got []float32", b.Name, im.dt)
		}
	case []uint16:
		got = len(r)
		if im.dt != BF16 {
			return fmt.Errorf("gemm: BlockUnpacked: backend %q wants %s weights, got []uint16", b.Name, im.dt)
		}
	case RawInt8:
		got = len(r.W)
		if im.dt != Int8 {
			return fmt.Errorf("gemm: BlockUnpacked: backend %q wants %s weights, got RawInt8", b.Name, im.dt)
		}
		if len(r.Scales) != n {
			return fmt.Errorf("gemm: BlockUnpacked: len(Scales) = %d, want N = %d", len(r.Scales), n)
		}
	default:
		return fmt.Errorf("gemm: BlockUnpacked: weights of type %T (want []float32, []uint16 or RawInt8)", wRaw)
	}
	if err := checkShape("BlockUnpacked", got, n, k); err != nil {
		return err
	}
	if err := checkBlock(y, ldy, x, ldx, m0, m1, n0, n1, n, k); err != nil {
		return err
	}
	if s == nil {
		s = scratchPool.Get().(*Scratch)
		defer scratchPool.Put(s)
	}
	defer func(old Blocking) { s.bl = old }(s.bl)
	s.bl = bl
	if bl.MC <= 0 || bl.KC <= 0 || bl.NC <= 0 {
		s.bl = DefaultBlocking(im.backend())
	}
	if m1 == m0 || n1 == n0 {
		return nil
	}
	p0, p1 := n0/im.nr, (n1+im.nr-1)/im.nr
	w := &s.w
	w.N, w.K, w.im, w.np, w.p0 = n, k, im, (n+im.nr-1)/im.nr, p0
	switch r := wRaw.(type) {
	case []float32:
		w.f32 = packPanelsF32(w.f32, r, n, k, im.nr, p0, p1)
	case []uint16:
		if im.amx != nil {
			w.u16 = packAMXU16(im.amx, w.u16, r, n, k, p0, p1)
			break
		}
		w.u16 = packPanelsU16(w.u16, r, n, k, im.nr, p0, p1)
	case RawInt8:
		if im.amx != nil {
			w.i8, w.scales = packAMXI8(im.amx, w.i8, w.scales, r.W, r.Scales, n, k, p0, p1)
			break
		}
		w.i8, w.scales = packPanelsI8(w.i8, w.scales, r.W, r.Scales, n, k, im.nr, p0, p1)
	}
	w.compute(y, ldy, x, ldx, m0, m1, n0, n1, s)
	return nil
}

// stored is the number of panels held (all of them, or BlockUnpacked's range).
func (w *Weights) stored() int {
	switch w.im.dt {
	case FP32:
		return len(w.f32) / (w.K * w.im.nr)
	case BF16:
		if op := w.im.amx; op != nil {
			return len(w.u16) * 2 / op.panelBytes(w.K)
		}
		return len(w.u16) / (w.K * w.im.nr)
	}
	return len(w.scales) / w.im.nr
}

// compute runs the loop nest on a checked, non-empty or empty block.
func (w *Weights) compute(y []float32, ldy int, x []float32, ldx int, m0, m1, n0, n1 int, s *Scratch) {
	if m1 == m0 || n1 == n0 {
		return
	}
	if w.im.amx != nil {
		w.computeAMX(y, ldy, x, ldx, m0, m1, n0, n1, s)
		return
	}
	if w.im.dt == Int8 {
		w.computeInt8(y, ldy, x, ldx, m0, m1, n0, n1, s)
		return
	}
	im, K := w.im, w.K
	mr, nr := im.mr, im.nr
	bl := s.bl
	kc, mc, nc := max(bl.KC, 1), max(bl.MC/mr*mr, mr), max(bl.NC/nr, 1)
	if m1-m0 <= mr {
		kc = K // decode: one sliver, stream each panel once
	}
	kc = min(kc, K)
	s.a = grow(s.a, min(mc, m1-m0)*kc)
	s.tile = grow(s.tile, mr*nr)
	esize := 4
	base := unsafe.Pointer(unsafe.SliceData(w.f32))
	if im.dt == BF16 {
		esize, base = 2, unsafe.Pointer(unsafe.SliceData(w.u16))
	}
	kern := im.fk
	p0, p1 := n0/nr, (n1+nr-1)/nr
	pEnd := w.p0 + w.stored() // panels past it are not allocated
	for jp := p0; jp < p1; jp += nc {
		jpEnd := min(p1, jp+nc)
		for pc := 0; pc < K; pc += kc {
			kb := min(kc, K-pc)
			add := pc > 0
			for ic := m0; ic < m1; ic += mc {
				mb := min(mc, m1-ic)
				packSlivers(s.a, x[ic*ldx+pc:], ldx, mb, kb, mr)
				for p := jp; p < jpEnd; p++ {
					bp := unsafe.Add(base, ((p-w.p0)*K+pc)*nr*esize)
					lo, hi := max(n0, p*nr), min(n1, p*nr+nr)
					full := lo == p*nr && hi == p*nr+nr
					for ir := 0; ir < mb; ir += mr {
						m := min(mr, mb-ir)
						a := &s.a[ir*kb]
						// Prefetch: the first sliver pulls in the next panel's
						// KC steps (the other slivers then find it in cache).
						// A single sliver (decode) streams W front to back,
						// which the hardware prefetcher follows: pf = bp
						// (software prefetch ahead measured no faster).
						pf := bp
						if ir == 0 && mb > mr && p+1 < pEnd {
							pf = unsafe.Add(bp, K*nr*esize)
						}
						if full {
							kern[m-1](m, kb, a, bp, &y[(ic+ir)*ldy+p*nr], ldy, add, pf)
							continue
						}
						t := s.tile
						if add {
							for r := 0; r < m; r++ {
								copy(t[r*nr+lo-p*nr:r*nr+hi-p*nr], y[(ic+ir+r)*ldy+lo:(ic+ir+r)*ldy+hi])
							}
						}
						kern[m-1](m, kb, a, bp, &t[0], nr, add, pf)
						for r := 0; r < m; r++ {
							copy(y[(ic+ir+r)*ldy+lo:(ic+ir+r)*ldy+hi], t[r*nr+lo-p*nr:r*nr+hi-p*nr])
						}
					}
				}
			}
		}
	}
}

// packA packs the mb×kb block of X at x (row stride ldx) into slivers of mr
// rows: sliver i (rows i·mr.., m = min(mr, mb-i·mr) of them) starts at
// i·mr·kb and holds x[i·mr+r][p] at p·m+r. It is the specification of
// packSlivers (panels.go), which the loop nests call.
func packA(dst, x []float32, ldx, mb, kb, mr int) {
	for i := 0; i < mb; i += mr {
		m := min(mr, mb-i)
		sl := dst[i*kb : i*kb+m*kb]
		for r := 0; r < m; r++ {
			row := x[(i+r)*ldx : (i+r)*ldx+kb]
			for p, v := range row {
				sl[p*m+r] = v
			}
		}
	}
}

// computeInt8 quantizes MC rows of X at a time (per row, over the whole K),
// packs them as int16 pairs, and runs the int8 microkernel over the whole
// K of each panel (int32 accumulation is exact; the scales are applied
// once, at the end).
func (w *Weights) computeInt8(y []float32, ldy int, x []float32, ldx int, m0, m1, n0, n1 int, s *Scratch) {
	im, K := w.im, w.K
	mr, nr := im.mr, im.nr
	kp := (K + 1) / 2
	// MC rows of KP int32 pairs fill at most the share of L2 Blocking gave
	// to MC×KC floats.
	mc := max(s.bl.MC*s.bl.KC/kp/mr*mr, mr)
	mc = min(mc, (m1-m0+mr-1)/mr*mr)
	s.a32 = grow(s.a32, mc*kp)
	s.q = grow(s.q, K)
	s.xs = grow(s.xs, mc)
	s.tile = grow(s.tile, mr*nr)
	base := unsafe.Pointer(unsafe.SliceData(w.i8))
	p0, p1 := n0/nr, (n1+nr-1)/nr
	for ic := m0; ic < m1; ic += mc {
		mb := min(mc, m1-ic)
		for r := 0; r < mb; r++ {
			s.xs[r] = quantizeRow(s.q, x[(ic+r)*ldx:(ic+r)*ldx+K])
			i, rr := r/mr*mr, r%mr
			m := min(mr, mb-i)
			sl := s.a32[i*kp : i*kp+m*kp]
			for q := 0; q < kp; q++ {
				lo := uint32(uint16(int16(s.q[2*q])))
				var hi uint32
				if 2*q+1 < K {
					hi = uint32(uint16(int16(s.q[2*q+1])))
				}
				sl[q*m+rr] = lo | hi<<16
			}
		}
		for p := p0; p < p1; p++ {
			bp := (*int8)(unsafe.Add(base, (p-w.p0)*kp*nr*2))
			ws := &w.scales[(p-w.p0)*nr]
			lo, hi := max(n0, p*nr), min(n1, p*nr+nr)
			full := lo == p*nr && hi == p*nr+nr
			for ir := 0; ir < mb; ir += mr {
				m := min(mr, mb-ir)
				a := &s.a32[ir*kp]
				pf := unsafe.Pointer(bp) // as in compute
				if ir == 0 && mb > mr && p+1 < w.p0+w.stored() {
					pf = unsafe.Add(pf, kp*nr*2)
				}
				if full {
					im.ik[m-1](m, kp, a, bp, &y[(ic+ir)*ldy+p*nr], ldy, &s.xs[ir], ws, pf)
					continue
				}
				t := s.tile
				im.ik[m-1](m, kp, a, bp, &t[0], nr, &s.xs[ir], ws, pf)
				for r := 0; r < m; r++ {
					copy(y[(ic+ir+r)*ldy+lo:(ic+ir+r)*ldy+hi], t[r*nr+lo-p*nr:r*nr+hi-p*nr])
				}
			}
		}
	}
}
