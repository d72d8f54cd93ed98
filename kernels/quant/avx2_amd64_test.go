//go:build !purego && amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

func skipNoAVX2(t *testing.T) {
	t.Helper()
	if u := lacks("AVX2", cpu.X86.HasAVX2, "FMA", cpu.X86.HasFMA, "F16C", cpu.X86.HasF16C); u != "" {
		t.Skip(u)
	}
}

// The avx2 backend runs its assembly tiles for q8_0, q4_0, int2 and int1
// (and int2's for the ternary formats); the K-quants' (kquant_amd64.go)
// are checked by TestKQuantRegistered: no format runs the Go tiles.
func TestAVX2Registered(t *testing.T) {
	im := byName()["avx2"]
	if im.mr != len(avx2Kerns[Int2]) {
		t.Fatalf("avx2 mr %d, %d int2 kernels", im.mr, len(avx2Kerns[Int2]))
	}
	asm := map[Format][]kern{
		Q8_0: {kernQ8AVX2m1, kernQ8AVX2m2}, Q4_0: {kernQ4AVX2m1, kernQ4AVX2m2},
		Int2: {kernI2AVX2m1, kernI2AVX2m2}, Int1: {kernI1AVX2m1, kernI1AVX2m2},
	}
	for _, f := range Formats() {
		want, ok := asm[f.layout()]
		if !ok {
			continue
		}
		if len(im.k[f]) != len(want) {
			t.Fatalf("%s: %d kernels", f, len(im.k[f]))
		}
		for m, k := range im.k[f] {
			if reflect.ValueOf(k).Pointer() != reflect.ValueOf(want[m]).Pointer() {
				t.Errorf("%s m=%d: not the assembly kernel", f, m+1)
			}
		}
	}
	if got := im.backend().GoTiles; len(got) != 0 {
		t.Errorf("avx2 Go tiles %v, want none", got)
	}
}

// avx2Case fills one direct kernel call: np block pairs of a panel of
// format f, activations of rows rows (the tile reads m of them from the
// last rows), scales and corrections. exact makes the activation scales
// one power of two and the weight scales ± another, so that with np ≤ 5
// every sum is exact in float32 (at most 10 blocks of |S| < 2^20) and the
// kernel must equal kernGo bit for bit; extreme sets every field to its
// largest magnitude (q8_0: bytes 0x00 and 0xff, w = −128 and 127) and
// every activation to ±127, the bounds of the generator's no-saturation
// argument. The corrections are the activations' (Activations.corrY).
type avx2Case struct {
	a  []byte
	as []float32
	ac []int32
	b  []byte
	bs []uint32
	sa int
}

func newAVX2Case(rng *rand.Rand, f Format, np, rows int, exact, extreme bool) avx2Case {
	c := avx2Case{sa: rows * pairLen}
	c.a = make([]byte, np*rows*pairLen)
	c.b = make([]byte, np*PanelRows*f.pairBytes())
	c.as = make([]float32, np*rows*2)
	c.ac = make([]int32, np*rows*2)
	c.bs = make([]uint32, np*PanelRows)
	for i := range c.a {
		q := int8(rng.IntN(255) - 127)
		if extreme {
			q = 127
			if rng.IntN(2) == 0 {
				q = -127
			}
		}
		c.a[i] = byte(q)
	}
	for i := range c.b {
		c.b[i] = byte(rng.Uint32())
		if extreme {
			c.b[i] = 0xff
			if f == Q8_0 && rng.IntN(2) == 0 {
				c.b[i] = 0
			}
		}
	}
	for i := range c.ac { // corrY of block i%2 of row and pair i/2 (q8_0's kernels assume it)
		var sum int32
		for e := range BlockLen {
			sum += int32(int8(c.a[i/2*pairLen+lanePos(i%2, e)]))
		}
		c.ac[i] = -f.offset() * sum / 4
	}
	ex, ew := float32(math.Ldexp(1, -4-rng.IntN(4))), float32(math.Ldexp(1, -6-rng.IntN(4)))
	for i := range c.as {
		if exact {
			c.as[i] = ex
		} else {
			c.as[i] = float32(rng.Float64()*0.02 + 1e-4)
		}
	}
	for i := range c.bs {
		var d [2]uint16
		for h := range d {
			v := float32(rng.Float64()*0.01 + 1e-5)
			if exact {
				v = ew
			}
			if rng.IntN(8) == 0 {
				v = -v
			}
			d[h] = Float32ToFP16(v)
		}
		c.bs[i] = uint32(d[0]) | uint32(d[1])<<16
	}
	return c
}

// Every AVX2 kernel against kernGo (corrY) called directly: exact inputs
// bit for bit, random and extreme ones within float32 rounding; row
// strides above the tile (a tile of a taller X), an output stride above 4,
// np = 0.
func TestAVX2Kernels(t *testing.T) {
	skipNoAVX2(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1} {
		for m, k := range avx2Kerns[f] {
			m++
			for _, np := range []int{0, 1, 2, 5, 17} {
				for _, mode := range []string{"exact", "random", "extreme"} {
					if np > 5 && mode != "random" {
						continue // beyond the exact range
					}
					name := fmt.Sprintf("%s/m=%d/np=%d/%s", f, m, np, mode)
					rows := m + 2
					c := newAVX2Case(rng, f, max(np, 1), rows, mode != "random", mode == "extreme")
					const ldc = 7
					want, got := make([]float32, m*ldc), make([]float32, m*ldc)
					for i := range got {
						got[i], want[i] = -3, -3
					}
					i0 := rows - m // the tile's first row
					args := func(c0 *float32, kf func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)) {
						kf(np, &c.a[i0*pairLen], &c.as[i0*2], &c.ac[i0*2], c.sa, &c.b[0], &c.bs[0], c0, ldc)
					}
					if np > 0 {
						args(&want[0], func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int) {
							kernGo(f, m, PanelRows, 4, np, a, as, ac, sa, b, bs, c, ldc)
						})
					} else { // no pairs: zeros (kernGo needs np ≥ 1)
						for r := range m {
							clear(want[r*ldc:][:PanelRows])
						}
					}
					args(&got[0], k)
					for i := range want {
						g, w := got[i], want[i]
						if i%ldc >= PanelRows {
							if g != -3 {
								t.Fatalf("%s: wrote c[%d]", name, i)
							}
							continue
						}
						if mode != "random" {
							if math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%s: c[%d] = %v, want %v bit for bit", name, i, g, w)
							}
						} else if math.Abs(float64(g-w)) > 1e-5*math.Abs(float64(w))+1e-6 {
							t.Fatalf("%s: c[%d] = %v, want %v", name, i, g, w)
						}
					}
				}
			}
		}
	}
}
