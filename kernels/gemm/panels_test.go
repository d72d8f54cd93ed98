package gemm

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// packPanelsAt packs the n×k row-major B into panels of nr rows at the
// given stride (≥ k·nr), k-major, filling the rows of the last panel past
// n and the gap between panels with NaN: PanelBlock must never let them
// reach Y.
func packPanelsAt(b []float32, n, k, nr, stride int) []float32 {
	np := (n + nr - 1) / nr
	out := make([]float32, (np-1)*stride+k*nr)
	nan := float32(math.NaN())
	for i := range out {
		out[i] = nan
	}
	for p := range np {
		for kk := range k {
			for j := range nr {
				if p*nr+j < n {
					out[p*stride+kk*nr+j] = b[(p*nr+j)*k+kk]
				}
			}
		}
	}
	return out
}

// fp32Backends are the available fp32 backends (go-fp32 always among them).
func fp32Backends(t *testing.T) []Backend {
	var out []Backend
	for _, b := range Backends() {
		if b.DType == FP32 && b.Unavailable == "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 || out[0].Name != "go-fp32" {
		t.Fatalf("fp32 backends %v: want go-fp32 first", out)
	}
	return out
}

// TestPanelBlock checks PanelBlock against the float64 reference for every
// available fp32 backend: heights below, at and above the register tile
// (one row: the unpacked sliver), n not a multiple of NR, panels at their
// dense stride k·NR and at a wider one (the KV cache's V panels), Y
// overwritten and accumulated into, under the default and tiny blockings,
// with nothing outside Y[0:m, 0:n] written.
func TestPanelBlock(t *testing.T) {
	for _, b := range fp32Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			mr, nr := b.TileM, b.TileN
			type sh struct{ m, n, k int }
			shs := []sh{{1, 1, 1}, {1, nr, 7}, {2, 3*nr + 5, 64}, {mr - 1, nr - 1, 33}, {mr, 2 * nr, 128}, {mr + 1, 5, 9},
				{2*mr + 3, 3*nr + 1, 100}, {1, 2*nr + 3, 300}}
			if small {
				shs = shs[:6]
			}
			for si, s := range shs {
				p := newProblem(uint64(100+si), s.m, s.n, s.k)
				ref, tol := p.ref(FP32)
				for _, extra := range []int{0, 3*nr + 1} {
					stride := s.k*nr + extra
					panels := packPanelsAt(p.wf, s.n, s.k, nr, stride)
					for bi, bl := range blockings(b) {
						for _, add := range []bool{false, true} {
							name := fmt.Sprintf("%dx%dx%d/stride+%d/bl%d/add=%v", s.m, s.n, s.k, extra, bi, add)
							ldy := s.n + 3
							y := newY(s.m, ldy)
							want, wtol := ref, tol
							if add {
								want, wtol = make([]float64, len(ref)), make([]float64, len(tol))
								for i := range s.m {
									for j := range s.n {
										y0 := float32(i) - 0.5*float32(j)
										y[i*ldy+j] = y0
										want[i*s.n+j] = ref[i*s.n+j] + float64(y0)
										// each KC step's partial sum is added to Y: ≤ k roundings of ≈ |y0|
										wtol[i*s.n+j] = tol[i*s.n+j] + 2*0x1p-24*(math.Abs(ref[i*s.n+j])+float64(s.k)*math.Abs(float64(y0)))
									}
								}
							}
							y2 := append([]float32(nil), y...)
							if err := PanelBlock(b, y, ldy, p.x, s.k, s.m, s.k, panels, stride, s.n, add, NewScratch(nil, bl)); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							check(t, name, y, ldy, want, wtol, s.n, 0, s.m, 0, s.n)
							// The same product on X packed once by PackX.
							xp, err := PackX(b, nil, p.x, s.k, s.m, s.k)
							if err != nil {
								t.Fatal(err)
							}
							if err := PanelBlockPacked(b, y2, ldy, xp, s.m, s.k, panels, stride, s.n, add, NewScratch(nil, bl)); err != nil {
								t.Fatalf("%s: PanelBlockPacked: %v", name, err)
							}
							check(t, name+"/packed-x", y2, ldy, want, wtol, s.n, 0, s.m, 0, s.n)
						}
					}
				}
			}
		})
	}
}

// TestPanelBlockEqualsBlock checks that PanelBlock on panels laid out as
// PackFP32 lays them out gives Weights.Block's result bit for bit (the
// same microkernels in the same order), with a nil Scratch too.
func TestPanelBlockEqualsBlock(t *testing.T) {
	for _, b := range fp32Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			m, n, k := 2*b.TileM+1, 2*b.TileN+3, 45
			p := newProblem(9, m, n, k)
			w := p.pack(t, b)
			panels := packPanelsAt(p.wf, n, k, b.TileN, k*b.TileN)
			for _, bl := range blockings(b) {
				y1, y2 := newY(m, n), newY(m, n)
				if err := w.Block(y1, n, p.x, k, 0, m, 0, n, NewScratch(w, bl)); err != nil {
					t.Fatal(err)
				}
				s := NewScratch(nil, bl)
				if bl == DefaultBlocking(b) {
					s = nil
				}
				if err := PanelBlock(b, y2, n, p.x, k, m, k, panels, k*b.TileN, n, false, s); err != nil {
					t.Fatal(err)
				}
				for i := range y1 {
					if math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
						t.Fatalf("blocking %+v: y[%d]: Block %g, PanelBlock %g", bl, i, y1[i], y2[i])
					}
				}
			}
		})
	}
}

// TestPanelBlockErrors checks one error line per bad argument, and that
// empty shapes are no-ops.
func TestPanelBlockErrors(t *testing.T) {
	b, err := Best(FP32)
	if err != nil {
		t.Fatal(err)
	}
	nr := b.TileN
	m, n, k := 3, nr+1, 4
	y, x := make([]float32, m*n), make([]float32, m*k)
	panels := make([]float32, 2*k*nr)
	ok := func() error { return PanelBlock(b, y, n, x, k, m, k, panels, k*nr, n, false, nil) }
	if err := ok(); err != nil {
		t.Fatalf("valid call: %v", err)
	}
	bf, _ := Best(BF16)
	cases := []struct {
		want string
		call func() error
	}{
		{"nope", func() error { return PanelBlock(Backend{Name: "nope"}, y, n, x, k, m, k, panels, k*nr, n, false, nil) }},
		{"want an fp32 backend", func() error { return PanelBlock(bf, y, n, x, k, m, k, panels, k*nr, n, false, nil) }},
		{"m=-1", func() error { return PanelBlock(b, y, n, x, k, -1, k, panels, k*nr, n, false, nil) }},
		{"k = 0", func() error { return PanelBlock(b, y, n, x, k, m, 0, panels, k*nr, n, false, nil) }},
		{"ldy = 2", func() error { return PanelBlock(b, y, 2, x, k, m, k, panels, k*nr, n, false, nil) }},
		{"ldx = 3", func() error { return PanelBlock(b, y, n, x, 3, m, k, panels, k*nr, n, false, nil) }},
		{"panel stride", func() error { return PanelBlock(b, y, n, x, k, m, k, panels, k*nr-1, n, false, nil) }},
		{"len(y)", func() error { return PanelBlock(b, y[:len(y)-1], n, x, k, m, k, panels, k*nr, n, false, nil) }},
		{"len(x)", func() error { return PanelBlock(b, y, n, x[:len(x)-1], k, m, k, panels, k*nr, n, false, nil) }},
		{"len(panels)", func() error { return PanelBlock(b, y, n, x, k, m, k, panels[:len(panels)-1], k*nr, n, false, nil) }},
	}
	xp := make([]float32, m*k)
	cases = append(cases, []struct {
		want string
		call func() error
	}{
		{"PackX: shape 3×0", func() error { _, err := PackX(b, nil, x, k, m, 0); return err }},
		{"PackX: ldx = 3", func() error { _, err := PackX(b, nil, x, 3, m, k); return err }},
		{"PackX: len(x)", func() error { _, err := PackX(b, nil, x[:len(x)-1], k, m, k); return err }},
		{"PackX: backend", func() error { _, err := PackX(bf, nil, x, k, m, k); return err }},
		{"len(xp)", func() error { return PanelBlockPacked(b, y, n, xp[:len(xp)-1], m, k, panels, k*nr, n, false, nil) }},
		{"len(panels)", func() error { return PanelBlockPacked(b, y, n, xp, m, k, panels[:len(panels)-1], k*nr, n, false, nil) }},
	}...)
	for _, c := range cases {
		err := c.call()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("want one error line with %q, got %v", c.want, err)
		}
	}
	for _, mn := range [][2]int{{0, n}, {m, 0}} {
		if err := PanelBlock(b, nil, n, nil, k, mn[0], k, nil, k*nr, mn[1], false, nil); err != nil {
			t.Errorf("m=%d, n=%d: %v", mn[0], mn[1], err)
		}
	}
}
