package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attnRef is the float64 specification of attendBlock for one query row
// and head: out[d] = Σ_j p_j v_j[d] / Σ_j p_j with p_j = e^(s_j - max s),
// s_j = scale·q·k_j over cache positions j = 0..pos. It also returns, per
// d, the scale of the result Σ_j p_j|v_j[d]| / Σ_j p_j, and a = max_j Σ_d
// |scale·q_d·k_j[d]|, the magnitude of the products summed into a score.
func attnRef(q, kc, vc []float32, ldkv, ko, hd, pos int, scale float32) (out, mag []float64, a float64) {
	s := make([]float64, pos+1)
	mx := math.Inf(-1)
	for j := range s {
		var dot, abs float64
		for d := range hd {
			x := float64(scale) * float64(q[d]) * float64(kc[j*ldkv+ko+d])
			dot += x
			abs += math.Abs(x)
		}
		s[j], a = dot, max(a, abs)
		mx = max(mx, dot)
	}
	out, mag = make([]float64, hd), make([]float64, hd)
	var sum float64
	for j := range s {
		p := math.Exp(s[j] - mx)
		sum += p
		for d := range hd {
			v := float64(vc[j*ldkv+ko+d])
			out[d] += p * v
			mag[d] += p * math.Abs(v)
		}
	}
	for d := range hd {
		out[d] /= sum
		mag[d] /= sum
	}
	return out, mag, a
}

// attnTol is the error bound of attendBlock on one element whose result
// scale is mag (attnRef), for scores whose products sum to at most a in
// magnitude, over ctx positions, in units of u = 2^-24:
//
//   - each score carries the rounding of q·scale and of a headDim-term
//     fp32 dot product, ≤ (hd+1)·u·a, and the shift by the max ≤ 2u·a;
//     e^x turns an absolute error of the exponent into a relative one of
//     p_j, plus 4u (kernels.Exp, ≤ 2 ULP); a relative error ε_j of each
//     p_j moves the normalized average by ≤ 2·max ε_j · mag;
//   - the sums over positions (l and P·V) are fp32 sums of attnTile terms
//     per tile plus one addition and one rescale per tile:
//     (attnTile + 2·ctx/attnTile)·u·mag; the final division adds 2u.
//
// This is a worst case (errors of random signs grow like the square root
// of the counts). For scores of unit scale (q, k ~ N(0,1), scale
// 1/√headDim) TestAttendBlock also requires error ≤ 1e-5·mag, five times
// the largest it measured (2e-6, logged under -v).
func attnTol(mag, a float64, hd, ctx int) float64 {
	const u = 0x1p-24
	return u * mag * (2*float64(hd+3)*a + 8 + float64(attnTile) + 2*float64(ctx)/attnTile + 2 + 8)
}

// attnCase is one call of attendBlock: query rows [r0, r1), row t at
// position pos0+t.
type attnCase struct {
	name           string
	r0, r1, pos0   int
	kvHead, kvHds  int
	sharp          bool // larger, rising scores: the running max rises tile after tile
	extraRowsAfter int
}

func attnCases() []attnCase {
	return []attnCase{
		{name: "prefill", r0: 0, r1: 2*attnTile + 44, pos0: 0, kvHead: 1, kvHds: 2},
		{name: "prefill-r0", r0: 37, r1: 140, pos0: 0, kvHead: 0, kvHds: 2, extraRowsAfter: 3},
		{name: "prefill-sharp", r0: 0, r1: 130, pos0: 0, kvHead: 2, kvHds: 3, sharp: true},
		{name: "first-token", r0: 0, r1: 1, pos0: 0, kvHead: 1, kvHds: 2},
		{name: "decode-one-tile", r0: 0, r1: 1, pos0: attnTile - 1, kvHead: 1, kvHds: 2},
		{name: "decode-tile+1", r0: 0, r1: 1, pos0: attnTile, kvHead: 0, kvHds: 2},
		{name: "decode-long", r0: 0, r1: 1, pos0: 1000, kvHead: 1, kvHds: 2},
		{name: "decode-long-sharp", r0: 0, r1: 1, pos0: 777, kvHead: 1, kvHds: 2, sharp: true},
		{name: "continue", r0: 0, r1: 70, pos0: 100, kvHead: 1, kvHds: 2},
		{name: "continue-r0", r0: 10, r1: 20, pos0: 50, kvHead: 1, kvHds: 2, extraRowsAfter: 2},
		{name: "continue-r0-tile-edge", r0: 5, r1: 9, pos0: 2*attnTile - 7, kvHead: 0, kvHds: 1},
	}
}

// TestAttendBlock checks attendBlock against attnRef for head dims 8, 64
// and 128, groups 1, 2 and 4, each attnCase, on the row-kernel tiles, the
// automatic choice and the GEMM tiles (one scratch per shape and path,
// reused across cases so its buffers grow and shrink), and that nothing
// outside the served heads' columns of rows [r0, r1) is written.
func TestAttendBlock(t *testing.T) {
	const sentinel = float32(-12345.5)
	paths := []struct {
		name    string
		useGEMM int
	}{{"scalar", -1}, {"auto", 0}, {"gemm", 1}}
	worst := 0.0
	for _, hd := range []int{8, 64, 128} {
		for _, group := range []int{1, 2, 4} {
			ws := make([]*attnScratch, len(paths))
			for i, p := range paths {
				ws[i] = newAttnScratch(hd, group)
				ws[i].useGEMM = p.useGEMM
			}
			for ci, c := range attnCases() {
				if c.r1 > 200 && hd > 8 {
					c.r1 = attnTile + 12 // one tile boundary is enough at the larger head dims
				}
				rng := rand.New(rand.NewPCG(uint64(hd*100+group), uint64(ci)))
				ldq, ldkv := c.kvHds*group*hd, c.kvHds*hd
				rows := c.r1 + c.extraRowsAfter
				ctx := c.pos0 + c.r1
				q := make([]float32, rows*ldq)
				kc, vc := make([]float32, ctx*ldkv), make([]float32, ctx*ldkv)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
					if c.sharp {
						q[i] *= 3
					}
				}
				for j := range ctx {
					f := 1.0
					if c.sharp {
						f = 0.25 + 1.5*float64(j)/float64(ctx)
					}
					for d := range ldkv {
						kc[j*ldkv+d] = float32(rng.NormFloat64() * f)
						vc[j*ldkv+d] = float32(rng.NormFloat64())
					}
				}
				scale := float32(1 / math.Sqrt(float64(hd)))
				type refRow struct {
					out, mag []float64
					a        float64
				}
				ref := make([]refRow, (c.r1-c.r0)*group) // row (r-r0)·group+g
				for r := c.r0; r < c.r1; r++ {
					for g := range group {
						h := c.kvHead*group + g
						o, m, a := attnRef(q[r*ldq+h*hd:r*ldq+(h+1)*hd], kc, vc, ldkv, c.kvHead*hd, hd, c.pos0+r, scale)
						ref[(r-c.r0)*group+g] = refRow{o, m, a}
					}
				}
				for pi, path := range paths {
					t.Run(fmt.Sprintf("hd=%d/group=%d/%s/%s", hd, group, c.name, path.name), func(t *testing.T) {
						out := make([]float32, rows*ldq+5)
						for i := range out {
							out[i] = sentinel
						}
						attendBlock(out, q, ldq, kc, vc, ldkv, c.r0, c.r1, c.pos0, c.kvHead, group, hd, scale, ws[pi])

						lo, hi := c.kvHead*group*hd, (c.kvHead+1)*group*hd
						for i, v := range out {
							r, col := i/ldq, i%ldq
							if i < rows*ldq && r >= c.r0 && r < c.r1 && col >= lo && col < hi {
								continue
							}
							if v != sentinel {
								t.Fatalf("out[%d] (row %d, column %d) written: %v", i, r, col, v)
							}
						}
						for r := c.r0; r < c.r1; r++ {
							for g := range group {
								h := c.kvHead*group + g
								want := ref[(r-c.r0)*group+g]
								got := out[r*ldq+h*hd : r*ldq+(h+1)*hd]
								for d := range hd {
									err, mag := math.Abs(float64(got[d])-want.out[d]), want.mag[d]
									if tol := attnTol(mag, want.a, hd, c.pos0+r+1); !(err <= tol) {
										t.Fatalf("row %d head %d [%d]: %v, reference %v: error %.3g > tolerance %.3g (a = %.3g)",
											r, h, d, got[d], want.out[d], err, tol, want.a)
									}
									if !c.sharp && err > 1e-5*mag {
										t.Fatalf("row %d head %d [%d]: %v, reference %v: error %.3g > 1e-5·Σp|v| = %.3g",
											r, h, d, got[d], want.out[d], err, 1e-5*mag)
									}
									worst = max(worst, err/mag)
								}
							}
						}
					})
				}
			}
		}
	}
	t.Logf("largest error / Σ p|v|: %.3g", worst)
}

// TestAttendBlockEmptyAndMismatch checks that an empty row range writes
// nothing and that a scratch of another shape, or a cache too short for
// the positions attended, panics.
func TestAttendBlockEmptyAndMismatch(t *testing.T) {
	ws := newAttnScratch(8, 2)
	out := []float32{1, 2, 3}
	attendBlock(out, nil, 16, nil, nil, 8, 4, 4, 0, 0, 2, 8, 1, ws)
	if out[0] != 1 || out[2] != 3 {
		t.Fatal("empty range wrote to out")
	}
	q, kv := make([]float32, 16), make([]float32, 8)
	for _, f := range []func(){
		func() { attendBlock(make([]float32, 16), q, 16, kv, kv, 8, 0, 1, 0, 0, 1, 16, 1, ws) }, // scratch for (8, 2)
		func() { attendBlock(make([]float32, 16), q, 16, kv, kv, 8, 0, 1, 1, 0, 2, 8, 1, ws) },  // position 1, cache of 1
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}
