//go:build (amd64 || arm64) && !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The RoPE assembly (AVX2, AVX-512, NEON, SVE, SME) rotates with exact
// products and one add or subtract per element, as ropeGo does, so every
// backend gives the twin's bits: for every even head dim 2..80 (every split
// between whole vectors of up to 16 lanes and the tail) and larger ones up to
// 256, both layouts, with and without
// Llama 3 scaling, 1 or 3 heads, unaligned starts, guarded against writes
// outside x; and within the documented 4·2^-24·(|a|+|b|) of the float64
// rotation.
func TestRoPEAsmMatchesTwinBits(t *testing.T) {
	llama3 := &RoPEScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	forNL(t, func(t *testing.T, m NonlinearImpl) {
		r := rand.New(rand.NewPCG(21, 22))
		var hds []int
		for hd := 2; hd <= 80; hd += 2 {
			hds = append(hds, hd)
		}
		for _, hd := range append(hds, 96, 126, 128, 130, 192, 254, 256) {
			for _, sc := range []*RoPEScaling{nil, llama3} {
				tab, err := NewRoPETable(hd, 500000, 3000, sc)
				if err != nil {
					t.Fatal(err)
				}
				for _, layout := range []RoPELayout{RoPEAdjacent, RoPEHalf} {
					for _, heads := range []int{1, 3} {
						pos := []int{0, 1, 2999}[r.IntN(3)]
						x := make([]float32, heads*hd)
						for i := range x {
							x[i] = float32(r.NormFloat64() * 8)
						}
						if len(x) > 4 {
							x[r.IntN(len(x))] = float32(math.Inf(1))
							x[r.IntN(len(x))] = float32(math.NaN())
						}
						c, s := tab.At(pos)
						want := append([]float32(nil), x...)
						ropeGo(want, c, s, layout)
						ref := ropeRef(x, pos, tab.InvFreq, layout)
						got, chk := nlGuarded(len(x), r.IntN(4))
						copy(got, x)
						m.RoPE(got, c, s, layout)
						what := fmt.Sprintf("RoPE hd=%d %v heads=%d pos=%d scaled=%v", hd, layout, heads, pos, sc != nil)
						chk(t, what)
						for h := 0; h < len(x); h += hd {
							for i := 0; i < hd/2; i++ {
								a, b := h+2*i, h+2*i+1
								if layout == RoPEHalf {
									a, b = h+i, h+i+hd/2
								}
								tol := 4 * 0x1p-24 * (math.Abs(float64(x[a])) + math.Abs(float64(x[b])))
								for _, j := range []int{a, b} {
									if bitsApart(got[j], want[j]) != 0 {
										t.Fatalf("%s: [%d] = %v, twin %v", what, j, got[j], want[j])
									}
									if !math.IsNaN(tol) && !math.IsInf(tol, 0) && math.Abs(float64(got[j])-ref[j]) > tol {
										t.Fatalf("%s: [%d] = %v, float64 %v", what, j, got[j], ref[j])
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

// The package-level RoPE and RoPETable.Apply run the best backend's
// kernel: the same bits as BestNonlinear().RoPE.
func TestRoPEDispatchBest(t *testing.T) {
	tab, _ := NewRoPETable(128, 500000, 100, nil)
	for _, layout := range []RoPELayout{RoPEAdjacent, RoPEHalf} {
		x := make([]float32, 8*128)
		for i := range x {
			x[i] = float32(i%29) - 14.5
		}
		y := append([]float32(nil), x...)
		tab.Apply(x, 77, layout)
		c, s := tab.At(77)
		BestNonlinear().RoPE(y, c, s, layout)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%v: Apply [%d] = %v, %s %v", layout, i, x[i], BestNonlinear().ISA, y[i])
			}
		}
	}
}
