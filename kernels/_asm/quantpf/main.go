// Command quantpf generates kernels/quant/prefill_amd64.s, the quantized
// GEMM microkernels of package quant's prefill path, with avo:
//
//	cd kernels/_asm && go run ./quantpf -out ../quant/prefill_amd64.s
//
// (or `go generate ./kernels/quant/`).
//
// Every kernel has the signature
//
//	func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint16, c *float32, ldc int)
//
// and computes one mr×32 tile of Y over np block pairs exactly as kernPFGo
// in kernels/quant/prefill.go specifies (that comment gives the layouts):
// the weights are a prefill tile, 32 rows of W in "column order" (a zmm
// holds the 4 unsigned values of one 4-element group of one block for 16
// rows of W, one row per 32-bit lane), made per call from the GEMV panels.
//
// Per block and row r of X: two int32 accumulators (rows 0–15 and 16–31
// of the tile) start from the block's offset correction −o·Σq (the
// activations' corrZ = −o·Σq/8, broadcast and shifted left by 3); eight
// VPDPBUSD each add, per lane, the 4-element dot product of the lane's
// weights (u8, in a register, loaded once per group for all rows) with the
// row's 4 int8 activations of that group (s8, an embedded 32-bit broadcast
// from memory: VPDPBUSD.BCST); then the accumulators are converted to
// float32 and added into the float accumulators with the per-lane scale
// dw·dx (the 32 rows' fp16 scales widened by VCVTPH2PS from memory, times
// the row's float32 activation scale broadcast). That is 16 VPDPBUSD per
// 17 other instructions per block and row, where the GEMV kernels (one zmm
// per (row, column) holding a pair of blocks) need 4 other instructions per
// VPDPBUSD: the GEMV layout makes each VPDPBUSD's result a partial sum that
// must be scaled at once, the column order sums a whole block in a lane.
//
// Registers, mr = 6: 12 float accumulators, 12 int32 accumulators, 2
// weight vectors, 2 weight-scale vectors and 2 temporaries = 30 of 32 zmm.
package main

import (
	"fmt"

	"github.com/cpubench/bench/kernels/_asm/internal/asmutil"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// mrMax is the tallest tile (rows of X); pfCols = 32 columns.
const mrMax = 6

// Tile layout (bytes), per block pair: 2 blocks × 2 halves × 8 groups × 64.
const (
	groupBytes = 64
	halfBytes  = 8 * groupBytes // one block, 16 rows
	pairBytes  = 4 * halfBytes  // 2048
	scaleBytes = 2 * 32 * 2     // per pair: 2 blocks × 32 fp16 = 128
)

func main() {
	ConstraintExpr("!purego")
	for m := 1; m <= mrMax; m++ {
		gen(m)
	}
	for _, f := range []string{"Q8", "Q4", "I2", "I1", "Q4K", "Q6K"} {
		genConv(f)
	}
	for _, nsub := range []int{2, 4} {
		for m := 1; m <= mrMax; m++ {
			genK(m, nsub)
		}
	}
	Generate()
}

const signatureK = "func(np int, a *byte, as *float32, ax *float32, sa int, b *byte, bs *float32, c *float32, ldc int)"

// genK generates the K-quant prefill kernel of height m with nsub
// sub-blocks per block pair (2: Q4_K's 32-weight sub-blocks, 4: Q6_K's
// 16), kernPFKGo in kernels/quant/prefill_k.go (which gives the layouts).
// Per sub-block and row r of X: two int32 accumulators (rows 0–15 and
// 16–31 of the tile) are zeroed and take 8/(nsub/2) groups of VPDPBUSD.BCST
// as kernPFVNNI's; then per half, the 16 float32 scales D are loaded (no
// fp16 widening: d·sc is not exact in fp16), multiplied by the row's dx
// (VMULPS with an embedded broadcast), the accumulator converted and added
// by VFMADD231PS, and the min term Mn·X subtracted by one VFNMADD231PS
// with X broadcast from memory. Registers, m = 6: 12 float and 12 int32
// accumulators, 2 weight, 2 scale, 2 min vectors and 1 temporary = 31.
func genK(m, nsub int) {
	name := fmt.Sprintf("kernPFK%dVNNIm%d", 64/nsub, m)
	TEXT(name, NOSPLIT, signatureK)
	Doc(fmt.Sprintf("%s computes an %d×32 K-quant prefill tile (%d sub-blocks per pair) with VPDPBUSD; see the generator.", name, m, nsub))
	g := asmutil.LoadArgs("ax") // SA8: the stride of as in bytes (2 floats per 64 activation bytes)
	np, a, as, ax, sa, sa8, b, bs, c, ldc := g.NP, g.A, g.AS, g.AC, g.SA, g.SA8, g.B, g.BS, g.C, g.LDC
	sax := R14 // stride of ax in bytes: nsub floats per 64 activation bytes
	MOVQ(sa, sax)
	SHRQ(U8(4-uint8(log2(nsub))), sax)
	SHLQ(U8(2), ldc) // floats → bytes

	facc, iacc := tileAccs(m)
	w := [2]VecPhysical{zmm(24), zmm(25)}
	dw := [2]VecPhysical{zmm(26), zmm(27)}
	mn := [2]VecPhysical{zmm(28), zmm(29)}
	t := zmm(30)
	half := nsub / 2
	ng := 8 / half // groups per sub-block

	TESTQ(np, np)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	for sb := 0; sb < nsub; sb++ {
		h, g0 := sb/half, (sb%half)*ng
		for r := 0; r < m; r++ {
			for s := 0; s < 2; s++ {
				VPXORD(iacc[r][s], iacc[r][s], iacc[r][s])
			}
		}
		for g := g0; g < g0+ng; g++ {
			for s := 0; s < 2; s++ {
				VMOVDQU32(Mem{Base: b, Disp: (h*2+s)*halfBytes + g*groupBytes}, w[s])
			}
			for r := 0; r < m; r++ {
				x := Mem{Base: a, Disp: r*64 + (2*g+h)*4}
				for s := 0; s < 2; s++ {
					asmutil.VPDPBUSD(x, w[s], iacc[r][s], true)
				}
			}
		}
		for s := 0; s < 2; s++ {
			VMOVUPS(Mem{Base: bs, Disp: (sb*32 + s*16) * 4}, dw[s])
			VMOVUPS(Mem{Base: bs, Disp: (nsub*32 + sb*32 + s*16) * 4}, mn[s])
		}
		for r := 0; r < m; r++ {
			for s := 0; s < 2; s++ {
				VMULPS_BCST(Mem{Base: as, Disp: (r*2 + h) * 4}, dw[s], t)
				VCVTDQ2PS(iacc[r][s], iacc[r][s])
				VFMADD231PS(iacc[r][s], t, facc[r][s])
				VFNMADD231PS_BCST(Mem{Base: ax, Disp: (r*nsub + sb) * 4}, mn[s], facc[r][s])
			}
		}
	}
	ADDQ(sa, a)
	ADDQ(sa8, as)
	ADDQ(sax, ax)
	ADDQ(U32(pairBytes), b)
	ADDQ(U32(2*nsub*32*4), bs)
	DECQ(np)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	storeTile(facc[:m], c, ldc)
}

// tileAccs returns the float (zmm0–11, zeroed) and int32 (zmm12–23)
// accumulators of an m×32 tile: two per row of X, one per half.
func tileAccs(m int) (facc, iacc [mrMax][2]VecPhysical) {
	for r := 0; r < m; r++ {
		for s := 0; s < 2; s++ {
			facc[r][s] = zmm(r*2 + s)
			iacc[r][s] = zmm(12 + r*2 + s)
			VPXORD(facc[r][s], facc[r][s], facc[r][s])
		}
	}
	return
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

const signature = "func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint16, c *float32, ldc int)"

func gen(m int) {
	name := fmt.Sprintf("kernPFVNNIm%d", m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×32 prefill tile with VPDPBUSD; see the generator.", name, m))
	g := asmutil.LoadArgs("ac") // SA8: the stride of as and ac in bytes
	np, a, as, ac, sa, sa8, b, bs, c, ldc := g.NP, g.A, g.AS, g.AC, g.SA, g.SA8, g.B, g.BS, g.C, g.LDC
	SHLQ(U8(2), ldc) // floats → bytes

	facc, iacc := tileAccs(m)
	w := [2]VecPhysical{zmm(24), zmm(25)}
	dw := [2]VecPhysical{zmm(26), zmm(27)}
	dx, t := zmm(28), zmm(29)

	TESTQ(np, np)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	for h := 0; h < 2; h++ { // the pair's two blocks
		for r := 0; r < m; r++ {
			// −o·Σq/8 of (row r, block h), times 8: the block's correction.
			VPBROADCASTD(Mem{Base: ac, Disp: (r*2 + h) * 4}, iacc[r][0])
			VPSLLD(U8(3), iacc[r][0], iacc[r][0])
			VMOVDQA32(iacc[r][0], iacc[r][1])
		}
		for g := 0; g < 8; g++ {
			for s := 0; s < 2; s++ {
				VMOVDQU32(Mem{Base: b, Disp: (h*2+s)*halfBytes + g*groupBytes}, w[s])
			}
			for r := 0; r < m; r++ {
				// Row r's 4 activations of group g of block h: 32-bit word
				// 2g+h of the row's 64 bytes in lane order.
				x := Mem{Base: a, Disp: r*64 + (2*g+h)*4}
				for s := 0; s < 2; s++ {
					// Go operand order: VPDPBUSD src2 (s8, broadcast), src1 (u8), dst.
					asmutil.VPDPBUSD(x, w[s], iacc[r][s], true)
				}
			}
		}
		for s := 0; s < 2; s++ {
			VCVTPH2PS(Mem{Base: bs, Disp: (h*32 + s*16) * 2}, dw[s])
		}
		for r := 0; r < m; r++ {
			VBROADCASTSS(Mem{Base: as, Disp: (r*2 + h) * 4}, dx)
			for s := 0; s < 2; s++ {
				VMULPS(dx, dw[s], t)
				VCVTDQ2PS(iacc[r][s], iacc[r][s])
				VFMADD231PS(iacc[r][s], t, facc[r][s])
			}
		}
	}
	ADDQ(sa, a)
	ADDQ(sa8, as)
	ADDQ(sa8, ac)
	ADDQ(U32(pairBytes), b)
	ADDQ(U32(scaleBytes), bs)
	DECQ(np)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	storeTile(facc[:m], c, ldc)
}

// storeTile stores the rows of an mr×32 tile's float accumulators (two
// zmm per row) at c, c advanced by ldc bytes between rows, and returns.
func storeTile(facc [][2]VecPhysical, c, ldc Register) {
	for r := range facc {
		VMOVUPS(facc[r][0], Mem{Base: c})
		VMOVUPS(facc[r][1], Mem{Base: c, Disp: 64})
		if r+1 < len(facc) {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}

func zmm(i int) VecPhysical { return asmutil.Zmm[i] }

// The unpack constants (the GEMV kernels' sequences, kernels/_asm/quant).
var (
	// pfQ4Shifts: VPSRLVQ counts 0 (low 256 bits: low nibbles) and 4.
	pfQ4Shifts = asmutil.Bytes64("pfq4shifts", func(i int) byte {
		if i%8 == 0 && i >= 32 {
			return 4
		}
		return 0
	})
	// pfI2Shifts: VPSRLVQ counts 0, 2, 4, 6 for the four 128-bit lanes.
	pfI2Shifts = asmutil.Bytes64("pfi2shifts", asmutil.I2Shift)
	// pfI1Index: VPSHUFB index of byte p (within its lane): source byte p/8.
	pfI1Index = asmutil.Bytes64("pfi1index", asmutil.I1Index)
	// pfI1Bits: the bit of its source byte that byte p tests, 1 << (p%8).
	pfI1Bits = asmutil.Bytes64("pfi1bits", asmutil.I1Bit)
	pfMask0F = asmutil.Bytes64("pfmask0f", func(int) byte { return 0x0f })
	pfMask03 = asmutil.Bytes64("pfmask03", func(int) byte { return 0x03 })
	pfTen    = asmutil.Bytes64("pften", func(int) byte { return 0x10 })
)

const (
	convSignature  = "func(np int, src *byte, pstride int, ds *uint32, dstride int, dst *byte, dd *uint16)"
	convSignatureK = "func(np int, src *byte, pstride int, dst *byte)"
)

// genConv emits pfConv<F>: the up-convert of 16 rows of W (4 whole GEMV
// panels from row 0 of the panel at src) into one half of a prefill tile,
// every block pair: per pair, each row's pair is unpacked to its 64
// unsigned values in lane order (16 dwords: word w = block w%2, group
// w/2), the 16×16 dwords are transposed (VPUNPCK{L,H}DQ, VPUNPCK{L,H}QDQ,
// then VSHUFI32X4 twice: 64 shuffles per 1024 weights), and word w of the
// 16 rows is stored as the tile's group w/2 of block w%2; the 16 rows'
// scale words d0 | d1<<16 are narrowed (VPMOVDW) to the tile's fp16
// scales. pstride and dstride are the bytes from one panel to the next in
// the quants and the scales; dst and dd point at pair 0 of the half.
//
// The K-quant variants (Q4K, Q6K; signature convSignatureK) convert the
// quants only (prefill_k.go makes the float32 scale words in Go): Q4_K's
// as q4_0's, Q6_K's 48-byte pairs as the low nibble of bytes 0–31 (q4_0's
// unpack) OR the 2-bit field of bytes 32–47 (int2's unpack) shifted to
// bits 5:4.
func genConv(f string) {
	name := "pfConv" + f
	kq := f == "Q4K" || f == "Q6K"
	if kq {
		TEXT(name, NOSPLIT, convSignatureK)
		Doc(name + " up-converts the quants of 16 rows of a K-quant W into half a prefill tile; see the generator.")
	} else {
		TEXT(name, NOSPLIT, convSignature)
		Doc(name + " up-converts 16 rows of W into half a prefill tile; see the generator.")
	}
	np := Load(Param("np"), RCX)
	src := Load(Param("src"), RSI)
	pst := Load(Param("pstride"), R8)
	var ds, dst2, dd, dst3 GPPhysical
	if !kq {
		ds = Load(Param("ds"), R10).(GPPhysical)
		dst2 = Load(Param("dstride"), R11).(GPPhysical)
	}
	dst := Load(Param("dst"), RDI)
	if !kq {
		dd = Load(Param("dd"), RDX).(GPPhysical)
	}
	pst3 := R9
	LEAQ(Mem{Base: pst, Index: pst, Scale: 2}, pst3)
	if !kq {
		dst3 = R12
		LEAQ(Mem{Base: dst2, Index: dst2, Scale: 2}, dst3)
	}
	pb := map[string]int{"Q8": 64, "Q4": 32, "I2": 16, "I1": 8, "Q4K": 32, "Q6K": 48}[f]

	A := make([]VecPhysical, 16)
	B := make([]VecPhysical, 16)
	for i := range A {
		A[i], B[i] = zmm(i), zmm(16+i)
	}
	panel := func(t, disp int) Mem {
		switch t {
		case 0:
			return Mem{Base: src, Disp: disp}
		case 1:
			return Mem{Base: src, Index: pst, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: src, Index: pst, Scale: 2, Disp: disp}
		}
		return Mem{Base: src, Index: pst3, Scale: 1, Disp: disp}
	}

	TESTQ(np, np)
	JZ(LabelRef(name + "_done"))
	Label(name + "_loop")
	// Constants live in bank B, free until the transpose.
	k1, k2, k3 := B[13], B[14], B[15]
	k4, k5, tmp := B[12], B[11], B[10]
	switch f {
	case "Q4", "Q4K":
		VMOVDQU64(pfQ4Shifts(), k1)
		VMOVDQU64(pfMask0F(), k2)
	case "Q6K":
		VMOVDQU64(pfQ4Shifts(), k1)
		VMOVDQU64(pfMask0F(), k2)
		VMOVDQU64(pfI2Shifts(), k4)
		VMOVDQU64(pfMask03(), k5)
	case "I2":
		VMOVDQU64(pfI2Shifts(), k1)
		VMOVDQU64(pfMask03(), k2)
	case "I1":
		VMOVDQU64(pfI1Index(), k1)
		VMOVDQU64(pfI1Bits(), k2)
		VMOVDQU64(pfTen(), k3)
	}
	for row := 0; row < 16; row++ {
		m, v := panel(row/4, (row%4)*pb), A[row]
		switch f {
		case "Q4K": // the nibbles as Q4
			asmutil.UpconvertZ("Q4", m, v, k1, k2, k3)
		case "Q6K": // the nibbles as Q4, | the int2 fields of bytes 32.. << 4
			asmutil.UpconvertZ("Q4", m, v, k1, k2, k3)
			hi := m
			hi.Disp += 32
			VBROADCASTI32X4(hi, tmp)
			VPSRLVQ(k4, tmp, tmp)
			VPANDD(k5, tmp, tmp)
			VPSLLQ(U8(4), tmp, tmp)
			VPORD(tmp, v, v)
		default: // the GEMV kernels' unpack (asmutil.UpconvertZ)
			asmutil.UpconvertZ(f, m, v, k1, k2, k3)
		}
	}
	// Stage 1: dword interleave of row pairs (per 128-bit lane).
	for i := 0; i < 8; i++ {
		VPUNPCKLDQ(A[2*i+1], A[2*i], B[2*i])
		VPUNPCKHDQ(A[2*i+1], A[2*i], B[2*i+1])
	}
	// Stage 2: qword interleave; A[4i+k] lane L = rows 4i..4i+3 of word 4L+k.
	for i := 0; i < 4; i++ {
		VPUNPCKLQDQ(B[4*i+2], B[4*i], A[4*i])
		VPUNPCKHQDQ(B[4*i+2], B[4*i], A[4*i+1])
		VPUNPCKLQDQ(B[4*i+3], B[4*i+1], A[4*i+2])
		VPUNPCKHQDQ(B[4*i+3], B[4*i+1], A[4*i+3])
	}
	// Stages 3 and 4: 128-bit chunks; word c of the 16 rows ends in A[c].
	for k := 0; k < 4; k++ {
		VSHUFI32X4(U8(0x88), A[4+k], A[k], B[4*k])      // chunks 0, 2 of rows 0–3 and 4–7
		VSHUFI32X4(U8(0xdd), A[4+k], A[k], B[4*k+1])    // chunks 1, 3
		VSHUFI32X4(U8(0x88), A[12+k], A[8+k], B[4*k+2]) // rows 8–11 and 12–15
		VSHUFI32X4(U8(0xdd), A[12+k], A[8+k], B[4*k+3])
	}
	for k := 0; k < 4; k++ {
		VSHUFI32X4(U8(0x88), B[4*k+2], B[4*k], A[k])      // word k
		VSHUFI32X4(U8(0xdd), B[4*k+2], B[4*k], A[8+k])    // word 8+k
		VSHUFI32X4(U8(0x88), B[4*k+3], B[4*k+1], A[4+k])  // word 4+k
		VSHUFI32X4(U8(0xdd), B[4*k+3], B[4*k+1], A[12+k]) // word 12+k
	}
	for c := 0; c < 16; c++ { // word c: block c%2, group c/2
		VMOVDQU64(A[c], Mem{Base: dst, Disp: (c%2)*2*halfBytes + (c/2)*groupBytes})
	}
	ADDQ(U32(4*pb), src)
	ADDQ(U32(pairBytes), dst)
	if kq {
		DECQ(np)
		JNZ(LabelRef(name + "_loop"))
		Label(name + "_done")
		VZEROUPPER()
		RET()
		return
	}
	// Scales: the 16 rows' words, 4 per panel, then d0 (h = 0) and d1.
	sc := B[0]
	VMOVDQU32(Mem{Base: ds}, sc.(Vec).AsX())
	VINSERTI32X4(U8(1), Mem{Base: ds, Index: dst2, Scale: 1}, sc, sc)
	VINSERTI32X4(U8(2), Mem{Base: ds, Index: dst2, Scale: 2}, sc, sc)
	VINSERTI32X4(U8(3), Mem{Base: ds, Index: dst3, Scale: 1}, sc, sc)
	VPMOVDW(sc, Mem{Base: dd})
	VPSRLD(U8(16), sc, sc)
	VPMOVDW(sc, Mem{Base: dd, Disp: 32 * 2})

	ADDQ(U32(16), ds)
	ADDQ(U32(scaleBytes), dd)
	DECQ(np)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
