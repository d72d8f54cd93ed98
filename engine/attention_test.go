package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
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
// magnitude, over ctx positions in tiles of T, in units of u = 2^-24:
//
//   - each score carries the rounding of q·scale and of a headDim-term
//     fp32 dot product, ≤ (hd+1)·u·a, and the shift by the max ≤ 2u·a;
//     e^x turns an absolute error of the exponent into a relative one of
//     p_j, plus 4u (kernels.Exp, ≤ 2 ULP); a relative error ε_j of each
//     p_j moves the normalized average by ≤ 2·max ε_j · mag;
//   - the sums over positions (l and P·V) are fp32 sums of T terms
//     per tile plus one addition and one rescale per tile:
//     (T + 2·ctx/T)·u·mag; the final division adds 2u.
//
// This is a worst case (errors of random signs grow like the square root
// of the counts). For scores of unit scale (q, k ~ N(0,1), scale
// 1/√headDim) TestAttendBlock also requires error ≤ 1e-5·mag, more than
// ten times the largest it measured (8e-7 on every backend, logged under
// -v; the sharp cases, a ≈ 40, reach 5.5e-6 and are held to attnTol only).
func attnTol(mag, a float64, hd, ctx, T int) float64 {
	const u = 0x1p-24
	return u * mag * (2*float64(hd+3)*a + 8 + float64(T) + 2*float64(ctx)/float64(T) + 2 + 8)
}

// attnTolBF16 is attnTol for a bf16 KV cache (kvLayout.bf16), against the
// reference of the fp32 keys and values: each element of K and V is
// rounded to bfloat16, a relative error ≤ u_b = 2^-9. A key's rounding
// moves its score by ≤ u_b·a, a relative error ≤ 2u_b·a of p_j against
// the other positions' (e^x, the normalization cancelling a common
// shift), which moves the normalized average by ≤ 4u_b·a·mag; a value's
// rounding adds ≤ u_b·mag; 2u_b·mag more covers the second-order terms.
// Measured on unit-scale scores: 7.3e-3·mag at most (logged under -v);
// TestAttendBlock also requires ≤ 3e-2·mag there.
func attnTolBF16(mag, a float64, hd, ctx, T int) float64 {
	const ub = 0x1p-9
	return attnTol(mag, a, hd, ctx, T) + ub*mag*(4*a+3)
}

// attnTolAMX is attnTolBF16 for attention on the AMX tiles (the AMX
// layout of a bf16 cache, gemm.AMXTiles.Rounded): prefill's queries and
// probabilities are rounded to bfloat16 too. A query's rounding moves a
// score by ≤ u_b·a, like a key's (4u_b·a·mag more), and each
// probability's, a relative u_b, moves the output by ≤ u_b·mag; u_b·mag
// more for the second-order terms. The products are exact and summed in
// fp32, as attnTol counts.
func attnTolAMX(mag, a float64, hd, ctx, T int) float64 {
	const ub = 0x1p-9
	return attnTolBF16(mag, a, hd, ctx, T) + ub*mag*(4*a+2)
}

// amxAttnBackend is amx-bf16 for the tests of attention on the AMX
// tiles: the real backend where it is available (real true), else the
// backend as the engine would see it, with the tile products on the Go
// specification (gemm.AMXTilesSpec) until the test ends.
func amxAttnBackend(t testing.TB) (be gemm.Backend, real bool) {
	for _, b := range gemm.Backends() {
		if b.Name == "amx-bf16" && b.Unavailable == "" {
			return b, true
		}
	}
	old := amxTiles
	amxTiles = func(gemm.Backend) *gemm.AMXTiles { return gemm.AMXTilesSpec() }
	t.Cleanup(func() { amxTiles = old })
	return gemm.Backend{Name: "amx-bf16", DType: gemm.BF16, ISA: "amx", Unit: gemm.MatrixUnit, TileM: 32, TileN: 32}, false
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
		{name: "block-across-tile", r0: 100, r1: 132, pos0: 20, kvHead: 0, kvHds: 1},
	}
}

// attnMaxSeq is the KV cache capacity of TestAttendBlock's caches: more
// than every case's positions, not a multiple of any panel width.
const attnMaxSeq = 1031

// kvCacheFor builds one layer's cache in layout lay from the row-major
// [ctx][KVHeads·HeadDim] keys and values k, v: through kvLayout.write,
// position by position, as the engine's producer writes it. Everything
// the writes leave untouched (positions past ctx, V's padding columns) is
// NaN, which attendBlock must never let reach its output.
func kvCacheFor(lay kvLayout, k, v []float32, ctx int) (kc, vc []float32) {
	nk, nv := lay.floats()
	kc, vc = make([]float32, nk), make([]float32, nv)
	nan := float32(math.NaN())
	for i := range kc {
		kc[i] = nan
	}
	for i := range vc {
		vc[i] = nan
	}
	kvd := lay.kvHeads * lay.hd
	for j := range ctx {
		lay.write(kc, vc, j, k[j*kvd:(j+1)*kvd], v[j*kvd:(j+1)*kvd])
	}
	return kc, vc
}

// attnBackends are the available fp32 gemm backends (go-fp32 first).
func attnBackends(t testing.TB) []gemm.Backend {
	var out []gemm.Backend
	for _, b := range gemm.Backends() {
		if b.DType == gemm.FP32 && b.Unavailable == "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		t.Fatal("no fp32 gemm backend")
	}
	if raceEnabled && len(out) > 1 && out[0].Name == "go-fp32" {
		out = out[1:] // the purego pass runs the Go backend's variants
	}
	return out
}

// TestKVLayoutWrite checks kvLayout.write's packed layout element by
// element against the formulas of its doc, and packTile's against it.
func TestKVLayoutWrite(t *testing.T) {
	for _, be := range attnBackends(t) {
		const kvHeads, hd, maxSeq, ctx = 2, 20, 45, 41
		lay := newKVLayout(be, kvHeads, hd, maxSeq, true)
		nr := lay.nr
		if lay.tile%nr != 0 || lay.tile > attnTile || lay.hdPad%nr != 0 || lay.hdPad < hd {
			t.Fatalf("%s: layout %+v", be.Name, lay)
		}
		k, v := make([]float32, ctx*kvHeads*hd), make([]float32, ctx*kvHeads*hd)
		for i := range k {
			k[i], v[i] = float32(i), float32(-i)
		}
		kc, vc := kvCacheFor(lay, k, v, ctx)
		for h := range kvHeads {
			for pos := range ctx {
				for d := range hd {
					want := float32((pos*kvHeads+h)*hd + d)
					if got := kc[h*lay.kHead+pos/nr*hd*nr+d*nr+pos%nr]; got != want {
						t.Fatalf("%s: K[%d][head %d][%d] = %v, want %v", be.Name, pos, h, d, got, want)
					}
					if got := vc[h*lay.vHead+d/nr*maxSeq*nr+pos*nr+d%nr]; got != -want {
						t.Fatalf("%s: V[%d][head %d][%d] = %v, want %v", be.Name, pos, h, d, got, -want)
					}
				}
			}
		}
		// packTile of positions j0..j0+nt from the row-major cache equals
		// the packed cache's panels (K: the tile's panels; V: rows j0.. of
		// every panel), positions past nt in K's last panel zero.
		rm := newKVLayout(be, kvHeads, hd, maxSeq, false)
		rk, rv := kvCacheFor(rm, k, v, ctx)
		j0, nt := nr, ctx-nr
		kt, vt := make([]float32, (nt+nr-1)/nr*hd*nr), make([]float32, lay.hdPad*nt)
		for h := range kvHeads {
			rm.packTile(kt, vt, rk, rv, j0, nt, h)
			for jj := range (nt + nr - 1) / nr * nr {
				for d := range hd {
					got := kt[jj/nr*hd*nr+d*nr+jj%nr]
					want := float32(0)
					if jj < nt {
						want = kc[h*lay.kHead+(j0+jj)/nr*hd*nr+d*nr+(j0+jj)%nr]
					}
					if got != want {
						t.Fatalf("%s: packTile K[%d][%d] = %v, want %v", be.Name, jj, d, got, want)
					}
					if jj < nt {
						if got, want := vt[d/nr*nt*nr+jj*nr+d%nr], vc[h*lay.vHead+d/nr*maxSeq*nr+(j0+jj)*nr+d%nr]; got != want {
							t.Fatalf("%s: packTile V[%d][%d] = %v, want %v", be.Name, jj, d, got, want)
						}
					}
				}
			}
		}
	}
}

// TestKVLayoutAMX checks the AMX layout's writes element by element
// against the formulas of kvLayout's doc (values exact in bfloat16), the
// zeros of the K steps and head-dim padding a write leaves, and
// kvSlotBytes against its size.
func TestKVLayoutAMX(t *testing.T) {
	be, _ := amxAttnBackend(t)
	const kvHeads, hd, maxSeq, ctx = 2, 20, 75, 41
	lay := kvLayoutFor(be, kvHeads, hd, maxSeq, true, true)
	if !lay.amx || lay.nr != 32 || lay.kPanel != 32*32 || lay.vPanel != 96*32 || lay.kHead != 3*lay.kPanel || lay.vHead != lay.vPanel {
		t.Fatalf("layout %+v", lay)
	}
	// One value per (pos, h, d), exact in bfloat16: an 8-bit significand
	// for the head and dim, the exponent for the position.
	val := func(pos, h, d int) float32 { return float32(math.Ldexp(float64(128+h*32+d), pos-40)) }
	nk, nv := lay.floats()
	if got, _ := kvSlotBytes(Config{Layers: 3, KVHeads: kvHeads, HeadDim: hd}, be, maxSeq, true, true).Bytes(); got != uint64(3*4*(nk+nv)) {
		t.Fatalf("kvSlotBytes %d, the layout's caches %d bytes", got, 3*4*(nk+nv))
	}
	k, v := make([]float32, ctx*kvHeads*hd), make([]float32, ctx*kvHeads*hd)
	for pos := range ctx {
		for h := range kvHeads {
			for d := range hd {
				k[(pos*kvHeads+h)*hd+d], v[(pos*kvHeads+h)*hd+d] = val(pos, h, d), -val(pos, h, d)
			}
		}
	}
	kc, vc := kvCacheFor(lay, k, v, ctx) // NaN where never written
	kb, vb := bf16View(kc), bf16View(vc)
	for h := range kvHeads {
		for pos := range 64 { // the two K steps the writes reached
			for d := range 32 {
				kw, vw := float32(0), float32(0)
				if pos < ctx && d < hd {
					kw, vw = val(pos, h, d), -val(pos, h, d)
				}
				ki := h*lay.kHead + pos/32*lay.kPanel + ((d/2)*32+pos%32)*2 + d%2
				vi := h*lay.vHead + ((pos/2)*32+d)*2 + pos%2
				if got := fromBF16(kb[ki]); got != kw {
					t.Fatalf("K[%d][head %d][%d] = %v, want %v", pos, h, d, got, kw)
				}
				if got := fromBF16(vb[vi]); got != vw && !(d >= hd && got == 0) {
					t.Fatalf("V[%d][head %d][%d] = %v, want %v", pos, h, d, got, vw)
				}
			}
		}
	}
}

// TestAttendBlock checks attendBlock against attnRef for head dims 8, 64
// and 128, groups 1, 2 and 4, each attnCase, on every available fp32 gemm
// backend, with the producer-packed cache and the kv-packing ablation's
// row-major one (one scratch per shape and variant, reused across cases so
// its buffers grow and shrink), and that nothing outside the served heads'
// columns of rows [r0, r1) is written.
func TestAttendBlock(t *testing.T) {
	const sentinel = float32(-12345.5)
	type variant struct {
		name              string
		be                gemm.Backend
		packed, bf16, amx bool
	}
	var variants []variant
	for _, be := range attnBackends(t) {
		variants = append(variants, variant{be.Name + "/packed", be, true, false, false}, variant{be.Name + "/kv-packing", be, false, false, false},
			variant{be.Name + "/bf16", be, true, true, false})
	}
	amxBe, amxReal := amxAttnBackend(t)
	variants = append(variants, variant{amxBe.Name + "/amx-layout", amxBe, true, true, true})
	worst := map[string]float64{}
	for _, hd := range []int{8, 64, 128} {
		for _, group := range []int{1, 2, 4} {
			ws := map[string]*attnScratch{}
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
				for _, vr := range variants {
					if vr.amx && !amxReal && (c.r1 > 200 || raceEnabled && (hd != 64 || group != 2)) {
						continue // the Go specification of the tiles is slow: the other shapes cover its paths
					}
					name := fmt.Sprintf("%s/kvheads=%d", vr.name, c.kvHds)
					w := ws[name]
					if w == nil {
						lay := kvLayoutFor(vr.be, c.kvHds, hd, attnMaxSeq, vr.packed, vr.bf16)
						if lay.amx != vr.amx {
							t.Fatalf("%s: layout amx %v", vr.name, lay.amx)
						}
						w = newAttnScratch(vr.be, lay, group)
						ws[name] = w
					}
					ck, cv := kvCacheFor(w.lay, kc, vc, ctx)
					t.Run(fmt.Sprintf("hd=%d/group=%d/%s/%s", hd, group, c.name, vr.name), func(t *testing.T) {
						out := make([]float32, rows*ldq+5)
						for i := range out {
							out[i] = sentinel
						}
						attendBlock(out, q, ldq, ck, cv, c.r0, c.r1, c.pos0, c.kvHead, group, scale, w)

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
									tol := attnTol(mag, want.a, hd, c.pos0+r+1, w.T)
									switch {
									case vr.amx:
										tol = attnTolAMX(mag, want.a, hd, c.pos0+r+1, w.T)
									case vr.bf16:
										tol = attnTolBF16(mag, want.a, hd, c.pos0+r+1, w.T)
									}
									if !(err <= tol) {
										t.Fatalf("row %d head %d [%d]: %v, reference %v: error %.3g > tolerance %.3g (a = %.3g)",
											r, h, d, got[d], want.out[d], err, tol, want.a)
									}
									if !c.sharp && vr.bf16 && err > 3e-2*mag {
										t.Fatalf("row %d head %d [%d]: %v, reference %v: error %.3g > 3e-2·Σp|v| = %.3g (bf16 cache)",
											r, h, d, got[d], want.out[d], err, 3e-2*mag)
									}
									if !c.sharp && !vr.bf16 && err > 1e-5*mag {
										t.Fatalf("row %d head %d [%d]: %v, reference %v: error %.3g > 1e-5·Σp|v| = %.3g",
											r, h, d, got[d], want.out[d], err, 1e-5*mag)
									}
									if !c.sharp {
										worst[vr.name] = max(worst[vr.name], err/mag)
									}
								}
							}
						}
					})
				}
			}
		}
	}
	for _, vr := range variants {
		t.Logf("%s: largest error / Σ p|v| on unit-scale scores: %.3g", vr.name, worst[vr.name])
	}
}

// TestAttendBlockEmptyAndMismatch checks that an empty row range writes
// nothing and that a scratch of another group, a KV head or position
// outside the cache, or a cache shorter than its layout, panics.
func TestAttendBlockEmptyAndMismatch(t *testing.T) {
	be := attnBackends(t)[0]
	lay := newKVLayout(be, 1, 8, 4, true)
	ws := newAttnScratch(be, lay, 2)
	out := []float32{1, 2, 3}
	attendBlock(out, nil, 16, nil, nil, 4, 4, 0, 0, 2, 1, ws)
	if out[0] != 1 || out[2] != 3 {
		t.Fatal("empty range wrote to out")
	}
	nk, nv := lay.floats()
	q, kc, vc := make([]float32, 5*16), make([]float32, nk), make([]float32, nv)
	for _, f := range []func(){
		func() { attendBlock(make([]float32, 16), q, 16, kc, vc, 0, 1, 0, 0, 1, 1, ws) },        // scratch for group 2
		func() { attendBlock(make([]float32, 16), q, 16, kc, vc, 0, 1, 0, 1, 2, 1, ws) },        // KV head 1 of 1
		func() { attendBlock(make([]float32, 16), q, 16, kc, vc, 0, 1, 4, 0, 2, 1, ws) },        // position 4, cache of 4
		func() { attendBlock(make([]float32, 16), q, 16, kc[:nk-1], vc, 0, 1, 0, 0, 2, 1, ws) }, // short K cache
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

// TestKVCacheLogits runs a GQA model (4 query heads on 2 KV heads, head
// dim 16: V's panels are padded where NR > 16) through the Batch with the
// producer-packed KV cache and with the kv-packing ablation, on the
// default and the go-fp32 backends: PrefillAll of 150 tokens in one slot
// (past one attention tile) and prefills of 40 and 129 in two others, then
// three batched decode steps of the three slots, every logit against the
// float64 reference (refForward, refTol) and the ablation's prefill
// logits equal to the packed cache's bit for bit (the same GEMM kernels on
// the same panels: the ablation changes who packs, hence time only). Decode
// runs the vector kernels (attnVecRows), AxpyRows on the packed panels but
// DotRows on the row-major cache of the ablation, read in place: the same
// products summed in another order, so its logits agree within
// refTightTol of their scale.
func TestKVCacheLogits(t *testing.T) {
	c := Config{Name: "gqa2-hd16", Dim: 32, Intermediate: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 320,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	w := refWeights(c, 11)
	rng := rand.New(rand.NewPCG(5, 6))
	lens := []int{150, 40, 129}
	const steps = 3
	toks, want := refSequences(w, rng, lens, steps) // each slot's prompt and decoded tokens
	tol, worst := refTol, 0.0
	check := func(what string, got []float32, ref []float64) {
		t.Helper()
		sc := refScale(ref)
		for j, g := range got {
			e := math.Abs(float64(g) - ref[j])
			if !(e <= tol*sc) {
				t.Fatalf("%s: logit %d: %v, want %v: error %.3g > %g·scale (scale %.3g)", what, j, g, ref[j], e, tol, sc)
			}
			worst = max(worst, e/sc)
		}
	}
	// amxAttn, when set, is the attention backend of run's model (its
	// matrix target under the cores placement: the linears stay on the
	// cores), amx-bf16 for the AMX layout.
	var amxAttn *gemm.Backend
	run := func(o Options) []float32 {
		m, err := New(w, o)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if amxAttn != nil {
			m.Matrix = amxAttn
		}
		b, err := m.NewBatch(len(lens), 0)
		if err != nil {
			t.Fatal(err)
		}
		if b.kv.packed == o.KVPackPerCall || b.kv.bf16 != (o.KVDType == "bf16") || b.kv.amx != (amxAttn != nil) {
			t.Fatalf("KVPackPerCall %v, KVDType %q: cache packed %v, bf16 %v, amx %v", o.KVPackPerCall, o.KVDType, b.kv.packed, b.kv.bf16, b.kv.amx)
		}
		if amxAttn != nil && (b.vecG != nil) != (o.ForcePipeline && m.pool.Size() >= 2) {
			t.Fatalf("attention on %s with %d workers, ForcePipeline %v: pipeline %v (AMX is a unit of every core: serial by default)", amxAttn.Name, m.pool.Size(), o.ForcePipeline, b.vecG != nil)
		}
		var all []float32
		for s, n := range lens {
			var l []float32
			if s == 0 {
				l, err = b.PrefillAll(s, toks[s][:n])
			} else {
				l, err = b.Prefill(s, toks[s][:n])
			}
			if err != nil {
				t.Fatal(err)
			}
			if s == 0 {
				for p := range n {
					check(fmt.Sprintf("PrefillAll slot 0 position %d", p), l[p*c.Vocab:(p+1)*c.Vocab], want[0][p])
				}
			} else {
				check(fmt.Sprintf("Prefill slot %d position %d", s, n-1), l, want[s][n-1])
			}
			all = append(all, l...)
		}
		slots := []int{1, 2, 0}
		for i := range steps {
			next := make([]int, len(slots))
			for k, s := range slots {
				next[k] = toks[s][lens[s]+i]
			}
			l, err := b.Decode(slots, next)
			if err != nil {
				t.Fatal(err)
			}
			for k, s := range slots {
				p := lens[s] + i
				check(fmt.Sprintf("batched decode step %d slot %d position %d", i, s, p), l[k*c.Vocab:(k+1)*c.Vocab], want[s][p])
			}
			all = append(all, l...)
		}
		return all
	}
	// The prefill logits come first: 150 positions of slot 0, then one
	// row for each other slot.
	nPrefill := (lens[0] + len(lens) - 1) * c.Vocab
	for _, backend := range []string{"", "go-fp32"} {
		packed := run(Options{Backend: backend})
		ablated := run(Options{Backend: backend, KVPackPerCall: true})
		for i := range packed[:nPrefill] {
			if math.Float32bits(packed[i]) != math.Float32bits(ablated[i]) {
				t.Fatalf("backend %q: prefill logit %d: packed cache %v, kv-packing ablation %v: want equal", backend, i, packed[i], ablated[i])
			}
		}
		for r := nPrefill / c.Vocab; r < len(packed)/c.Vocab; r++ {
			p, a := packed[r*c.Vocab:(r+1)*c.Vocab], ablated[r*c.Vocab:(r+1)*c.Vocab]
			sc := refScale(func() []float64 {
				x := make([]float64, len(p))
				for i, v := range p {
					x[i] = float64(v)
				}
				return x
			}())
			for i := range p {
				if e := math.Abs(float64(p[i]) - float64(a[i])); !(e <= refTightTol*sc) {
					t.Fatalf("backend %q: decode row %d logit %d: packed cache %v, kv-packing ablation %v: error %.3g > %g·scale", backend, r, i, p[i], a[i], e, refTightTol)
				}
			}
		}
	}
	// A bf16 cache: the same sequences within refTolBF16 of the float64
	// reference (of fp32 keys and values), on the default backend and go-fp32.
	tol = refTolBF16
	for _, backend := range []string{"", "go-fp32"} {
		worst = 0
		run(Options{Backend: backend, KVDType: "bf16"})
		t.Logf("backend %q, bf16 KV cache: largest logit error %.3g·scale", backend, worst)
	}
	// Attention on the AMX tiles (the real unit, else the Go specification
	// of its tile kernel), decode too; prefill serial on 2 workers and on
	// 1, and in the pipeline on 2.
	be, real := amxAttnBackend(t)
	amxAttn = &be
	for _, o := range []Options{{Threads: 2}, {Threads: 1}, {Threads: 2, ForcePipeline: true}} {
		worst = 0
		o.KVDType = "bf16"
		run(o)
		t.Logf("%s attention (hardware %v), %d threads, pipeline %v, bf16 KV cache in its tile layout: largest logit error %.3g·scale", be.Name, real, o.Threads, o.ForcePipeline, worst)
	}
	amxAttn = nil
	if _, err := New(w, Options{KVDType: "fp16"}); err == nil || !strings.Contains(err.Error(), `"fp16"`) {
		t.Errorf("KVDType fp16: error %v, want one naming it", err)
	}
	if _, err := New(w, Options{KVDType: "bf16", KVPackPerCall: true}); err == nil || !strings.Contains(err.Error(), "kv-packing") {
		t.Errorf("KVDType bf16 with the kv-packing ablation: error %v, want one naming it", err)
	}
}

// refTolBF16 is TestKVCacheLogits' tolerance for a bf16 KV cache, relative
// to the logits' scale: the keys and values rounded to bfloat16 (relative
// error 2^-9) move each attention output by up to about 7e-3·Σp|v|
// (attnTolBF16, TestAttendBlock's measurement), which the two layers'
// projections and norms carry to the logits; measured 7.5e-3 on every
// fp32 backend here (logged under -v).
const refTolBF16 = 2e-2

// TestAttentionPlan checks the tile planner: job rows whose query rows
// (× group) are whole MR slivers near attnTargetM, and tiles that are
// whole panels keeping a job's working set in half of L2.
func TestAttentionPlan(t *testing.T) {
	be := func(mr, nr int) gemm.Backend { return gemm.Backend{Name: "x", TileM: mr, TileN: nr} }
	for _, c := range []struct{ mr, group, rows int }{
		{12, 2, 48}, {12, 1, 96}, {12, 4, 24}, {12, 8, 12}, {12, 7, 24}, {6, 2, 48}, {4, 16, 6}, {12, 64, 3}, {1, 200, 1},
	} {
		rows := attnPlanRows(be(c.mr, 32), c.group)
		if rows != c.rows || rows*c.group%c.mr != 0 {
			t.Errorf("MR %d, group %d: %d rows, want %d", c.mr, c.group, rows, c.rows)
		}
	}
	for _, c := range []struct {
		nr, hd int
		l2     int64
		tile   int
	}{
		{32, 128, 1 << 20, 256}, {32, 64, 1 << 20, 256}, {32, 256, 1 << 20, 128}, {16, 128, 1 << 20, 256},
		{32, 128, 512 << 10, 64}, {32, 128, 64 << 10, 32}, {48, 128, 1 << 20, 240}, {4, 8, 1 << 20, 256},
	} {
		if got := attnPlanTile(be(12, c.nr), c.hd, c.l2); got != c.tile || got%c.nr != 0 {
			t.Errorf("NR %d, head dim %d, L2 %d: tile %d, want %d", c.nr, c.hd, c.l2, got, c.tile)
		}
	}
}

// TestAttnSplit checks the decode attention's static split: contiguous
// runs covering every unit once, each within one unit's cost of an equal
// share.
func TestAttnSplit(t *testing.T) {
	for _, tc := range []struct {
		costs []float64
		w     int
	}{
		{[]float64{1, 1, 1, 1}, 2},
		{[]float64{1, 1, 1, 1, 1, 1, 1, 1}, 3},
		{[]float64{8, 1, 1, 1, 1, 1, 1, 1, 1}, 2},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, 4},
		{[]float64{5}, 3},
		{nil, 2},
	} {
		b := attnSplit(tc.costs, tc.w)
		if len(b) != tc.w+1 || b[0] != 0 || b[tc.w] != len(tc.costs) {
			t.Fatalf("costs %v over %d: bounds %v", tc.costs, tc.w, b)
		}
		total, big := 0.0, 0.0
		for _, c := range tc.costs {
			total, big = total+c, max(big, c)
		}
		for k := range tc.w {
			if b[k+1] < b[k] {
				t.Fatalf("costs %v over %d: bounds %v not ordered", tc.costs, tc.w, b)
			}
			run := 0.0
			for _, c := range tc.costs[b[k]:b[k+1]] {
				run += c
			}
			if run > total/float64(tc.w)+big {
				t.Errorf("costs %v over %d: run %d (%v) costs %v > share %v + one unit %v", tc.costs, tc.w, k, b, run, total/float64(tc.w), big)
			}
		}
	}
	if b := attnSplit([]float64{1, 1, 1, 1}, 2); b[1] != 2 {
		t.Errorf("4 equal units over 2: bounds %v, want [0 2 4]", b)
	}
}
