package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// amxTilesCase fills B (n columns over k, bf16 values, stride elements
// between panels, the K padding zero) and X (m rows of ldx) with random
// values and returns them with B's values as float64 W[j][kk].
func amxTilesCase(rng *rand.Rand, m, ldx, n, k, stride int) (x []float32, b []uint16, w [][]float64) {
	x = make([]float32, m*ldx)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	np := (n + 31) / 32
	b = make([]uint16, (np-1)*stride+AMXPanelElems(k))
	for i := range b {
		b[i] = Float32ToBF16(float32(math.NaN())) // stale past the panels' columns and K
	}
	w = make([][]float64, n)
	for p := range np {
		for j := range 32 {
			for kk := range AMXKPad(k) {
				v := float32(0)
				if p*32+j < n && kk < k {
					v = float32(rng.NormFloat64())
				}
				h := Float32ToBF16(v)
				b[p*stride+AMXPanelIndex(j, kk)] = h
				if p*32+j < n {
					w[p*32+j] = append(w[p*32+j], float64(BF16ToFloat32(h)))
				}
			}
		}
	}
	return x, b, w
}

// TestAMXTilesProduct: AMXTiles.Product on the Go specification of the
// tile kernel, on panels written at AMXPanelIndex, against the float64
// product of fp32 X and the bf16 B within amx.go's 3·K bound (Rounded:
// of the rounded X within K), for row ranges starting at a later sliver,
// edge columns and K, and add; and
// where amx-bf16 runs, the assembly's output within the same bound
// (logging how many outputs differ from the specification's).
func TestAMXTilesProduct(t *testing.T) {
	var hw *AMXTiles
	if be, err := lookup("amx-bf16"); err == nil && be.lacks() == "" {
		hw, _ = NewAMXTiles(be.backend())
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct{ m0, m1, n, k, extra int }{
		{0, 5, 32, 32, 0}, {0, 33, 70, 40, 64}, {32, 64, 128, 128, 0}, {0, 96, 33, 256, 32}, {64, 70, 64, 8, 0},
	} {
		name := fmt.Sprintf("rows%d-%d/n%d/k%d", c.m0, c.m1, c.n, c.k)
		ldx := c.k + 3
		stride := AMXPanelElems(c.k) + c.extra
		x, b, w := amxTilesCase(rng, c.m1, ldx, c.n, c.k, stride)
		for _, rounded := range []bool{false, true} {
			amxTilesCheck(t, hw, rounded, name, c.m0, c.m1, c.n, c.k, ldx, stride, x, b, w)
		}
	}
	if hw == nil {
		t.Log("amx-bf16 unavailable here: the specification only")
	}
}

// amxTilesCheck is TestAMXTilesProduct's case: rows [m0, m1) of X (ldx)
// times the panels b over k, split into three terms or (rounded) rounded
// to bf16 (the reference then of the rounded x, within (k+2)·2^-24 of its
// magnitudes instead of (3k+2)·2^-24), on the specification and on hw
// (nil: none).
func amxTilesCheck(t *testing.T, hw *AMXTiles, rounded bool, name string, m0, m1, n, k, ldx, stride int, x []float32, b []uint16, w [][]float64) {
	t.Helper()
	c := struct{ m0, m1, n, k int }{m0, m1, n, k}
	ldy := c.n + 5
	name = fmt.Sprintf("%s/rounded=%v", name, rounded)
	terms := 3
	spec := AMXTilesSpec()
	if rounded {
		terms, spec = 1, spec.Rounded()
		if hw != nil {
			hw = hw.Rounded()
		}
	}
	a := spec.PackA(nil, x, ldx, c.m1, c.k)
	xv := func(r, kk int) float64 {
		if rounded {
			return float64(BF16ToFloat32(Float32ToBF16(x[r*ldx+kk])))
		}
		return float64(x[r*ldx+kk])
	}
	{
		// check holds y (from y0) to the reference within the bound, and
		// nothing outside the product written.
		check := func(who string, y, y0 []float32, add bool) {
			t.Helper()
			for i, got := range y {
				r, j := i/ldy, i%ldy
				if r < c.m0 || j >= c.n {
					if got != y0[i] {
						t.Fatalf("%s %s add=%v: y[%d][%d] = %v written, outside the product", who, name, add, r, j, got)
					}
					continue
				}
				ref, mag := 0.0, 0.0
				for kk := range c.k {
					p := xv(r, kk) * w[j][kk]
					ref, mag = ref+p, mag+math.Abs(p)
				}
				if add {
					ref += float64(y0[i])
					mag += math.Abs(float64(y0[i]))
				}
				if tol := float64(terms*c.k+2) * 0x1p-24 * mag; math.Abs(float64(got)-ref) > tol {
					t.Fatalf("%s %s add=%v: y[%d][%d] = %v, reference %v: error %.3g > %.3g", who, name, add, r, j, got, ref, math.Abs(float64(got)-ref), tol)
				}
			}
		}
		for _, add := range []bool{false, true} {
			y0 := make([]float32, c.m1*ldy)
			for i := range y0 {
				y0[i] = float32(i % 7)
			}
			y := append([]float32(nil), y0...)
			if err := spec.Product(y, ldy, a, c.m0, c.m1, c.k, b, stride, c.n, add); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			check("specification", y, y0, add)
			if hw == nil {
				continue
			}
			// The hardware within the same bound (not bit for bit: on
			// random data its sums differ from the SDM's per-update
			// rounding that the specification follows).
			yh := append([]float32(nil), y0...)
			if err := hw.Product(yh, ldy, hw.PackA(nil, x, ldx, c.m1, c.k), c.m0, c.m1, c.k, b, stride, c.n, add); err != nil {
				t.Fatal(err)
			}
			check("amx-bf16", yh, y0, add)
			differ, ulps := 0, 0.0
			for i := range yh {
				if yh[i] != y[i] {
					differ++
					ulps = max(ulps, math.Abs(float64(yh[i])-float64(y[i]))/ulp32(y[i]))
				}
			}
			t.Logf("%s add=%v: amx-bf16 within the bound; %d of %d outputs differ from the specification, by ≤ %.0f ULP", name, add, differ, (c.m1-c.m0)*c.n, ulps)
		}
	}
}

// ulp32 is the spacing of float32 values at |f|.
func ulp32(f float32) float64 {
	a := math.Abs(float64(f))
	return float64(math.Nextafter32(float32(a), float32(math.Inf(1)))) - a
}

// TestAMXTilesErrors: shapes that do not fit give one error naming them;
// NewAMXTiles refuses a backend that is not amx-bf16.
func TestAMXTilesErrors(t *testing.T) {
	spec := AMXTilesSpec()
	a := spec.PackA(nil, make([]float32, 32*32), 32, 32, 32)
	b := make([]uint16, AMXPanelElems(32))
	y := make([]float32, 64*64)
	for _, c := range []struct {
		name                 string
		m0, m1, k, stride, n int
		want                 string
	}{
		{"m0 not a sliver", 3, 32, 32, AMXPanelElems(32), 32, "multiple of 32"},
		{"short stride", 0, 32, 32, 10, 32, "panel stride"},
		{"short panels", 0, 32, 32, AMXPanelElems(32), 64, "panel elements"},
		{"short slivers", 0, 64, 32, AMXPanelElems(32), 32, "sliver bytes"},
	} {
		err := spec.Product(y, 64, a, c.m0, c.m1, c.k, b, c.stride, c.n, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming %q", c.name, err, c.want)
		}
	}
	for _, be := range Backends() {
		if be.Name == "amx-bf16" {
			continue
		}
		if _, err := NewAMXTiles(be); err == nil {
			t.Errorf("NewAMXTiles(%s): no error", be.Name)
		}
	}
}
