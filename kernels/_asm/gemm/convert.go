package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX-512 conversions around the GEMM loop nests of package gemm
// (kernels/gemm/convert_amd64.go gives their Go specifications):
//
//	absMaxAVX512(x *float32, n int, lanes *float32) (nan int)
//	    lanes[l] = max over i ≡ l (mod 16), i < n, of |x[i]| (NaNs
//	    skipped); nan = 1 if any x[i] is a NaN. n a multiple of 16.
//	quantRowAVX512(q *int8, x *float32, n int, inv float32)
//	    q[i] = clamp(RNE(x[i]·inv), ±127) (the product rounded to float32,
//	    then to the nearest integer, ties to even, by VCVTPS2DQ under
//	    Go's default MXCSR). n a multiple of 16.
//	scaleTileAVX512(y *float32, ldy int, c *int32, ws *float32, xs *float32, rows int)
//	    y[r·ldy+j] = float32(c[r·32+j])·ws[j]·xs[r] for r < rows, j < 32
//	    (the int8 backends' scaling of an int32 tile, in the same order).
//	splitBF16AVX512(dst *uint16, x *float32, nkb int)
//	    x[kb·32+e] = hi + mid + lo (kernels/gemm's splitBF16, NaNs quieted,
//	    mid = lo = 0 for non-finite x) written to dst[kb·3072+e],
//	    dst[kb·3072+1024+e], dst[kb·3072+2048+e] (uint16s), e < 32: the
//	    AMX A-sliver layout of one row.
//	roundBF16AVX512(dst *uint16, x *float32, nkb int)
//	    dst[kb·1024+e] = Float32ToBF16(x[kb·32+e]) (ties to even, NaNs
//	    quieted), e < 32: the one-term AMX A-sliver layout of one row.

func genConvert() {
	genAbsMax()
	genQuantRow()
	genScaleTile()
	genSplitBF16()
	genRoundBF16()
	genPackSlivers()
	genPackSlivers6()
}

// broadcastD loads the 32-bit constant c into every lane of z (through tmp).
func broadcastD(c uint32, tmp GPPhysical, z VecPhysical) {
	MOVL(U32(c), tmp.As32())
	VPBROADCASTD(tmp.As32(), z)
}

func genAbsMax() {
	TEXT("absMaxAVX512", NOSPLIT, "func(x *float32, n int, lanes *float32) (nan int)")
	Doc("absMaxAVX512 writes the lane maxima of |x[i]| (NaNs skipped) and reports NaNs; see convert.go of the generator.")
	x := Load(Param("x"), RSI)
	n := Load(Param("n"), RCX)
	out := Load(Param("lanes"), RDI)
	broadcastD(0x7fffffff, RAX, Z31)
	VPXORD(Z0, Z0, Z0) // |x| ≥ +0: the maxima start at +0
	KXORW(K2, K2, K2)
	SHRQ(U8(4), n)
	JZ(LabelRef("absMax_done"))
	Label("absMax_loop")
	VPANDD(Mem{Base: x}, Z31, Z1)
	VCMPPS(U8(3), Z1, Z1, K1) // unordered: a NaN
	KORW(K1, K2, K2)
	VMAXPS(Z1, Z0, Z0) // a NaN lane turns its maximum into NaN: unused, nan is set
	ADDQ(U8(64), x)
	DECQ(n)
	JNZ(LabelRef("absMax_loop"))
	Label("absMax_done")
	VMOVUPS(Z0, Mem{Base: out})
	KMOVW(K2, EAX)
	XORQ(RDX, RDX)
	TESTL(EAX, EAX)
	SETNE(DL)
	Store(RDX, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func genQuantRow() {
	TEXT("quantRowAVX512", NOSPLIT, "func(q *int8, x *float32, n int, inv float32)")
	Doc("quantRowAVX512 quantizes x·inv to int8 (RNE, clamped to ±127); see convert.go of the generator.")
	q := Load(Param("q"), RDI)
	x := Load(Param("x"), RSI)
	n := Load(Param("n"), RCX)
	VBROADCASTSS(NewParamAddr("inv", 24), Z31)
	broadcastD(0xffffff81, RAX, Z30) // -127
	broadcastD(127, RAX, Z29)
	SHRQ(U8(4), n)
	JZ(LabelRef("quantRow_done"))
	Label("quantRow_loop")
	VMULPS(Mem{Base: x}, Z31, Z0)
	VCVTPS2DQ(Z0, Z0)
	VPMAXSD(Z30, Z0, Z0)
	VPMINSD(Z29, Z0, Z0)
	VPMOVSDB(Z0, Mem{Base: q})
	ADDQ(U8(64), x)
	ADDQ(U8(16), q)
	DECQ(n)
	JNZ(LabelRef("quantRow_loop"))
	Label("quantRow_done")
	VZEROUPPER()
	RET()
}

func genScaleTile() {
	TEXT("scaleTileAVX512", NOSPLIT, "func(y *float32, ldy int, c *int32, ws *float32, xs *float32, rows int)")
	Doc("scaleTileAVX512 scales rows of a 32-column int32 tile into y; see convert.go of the generator.")
	y := Load(Param("y"), RDI)
	ldy := Load(Param("ldy"), R8)
	c := Load(Param("c"), RSI)
	ws := Load(Param("ws"), RDX)
	xs := Load(Param("xs"), R9)
	rows := Load(Param("rows"), RCX)
	SHLQ(U8(2), ldy)
	VMOVUPS(Mem{Base: ws}, Z30)
	VMOVUPS(Mem{Base: ws, Disp: 64}, Z31)
	TESTQ(rows, rows)
	JZ(LabelRef("scaleTile_done"))
	Label("scaleTile_row")
	VBROADCASTSS(Mem{Base: xs}, Z29)
	for j, w := range []VecPhysical{Z30, Z31} {
		VCVTDQ2PS(Mem{Base: c, Disp: 64 * j}, Z0)
		VMULPS(w, Z0, Z0)
		VMULPS(Z29, Z0, Z0)
		VMOVUPS(Z0, Mem{Base: y, Disp: 64 * j})
	}
	ADDQ(ldy, y)
	ADDQ(U8(128), c)
	ADDQ(U8(4), xs)
	DECQ(rows)
	JNZ(LabelRef("scaleTile_row"))
	Label("scaleTile_done")
	VZEROUPPER()
	RET()
}

func genSplitBF16() {
	TEXT("splitBF16AVX512", NOSPLIT, "func(dst *uint16, x *float32, nkb int)")
	Doc("splitBF16AVX512 splits whole K steps of one row into bf16 hi, mid and lo terms in the AMX sliver layout; see convert.go of the generator.")
	dst := Load(Param("dst"), RDI)
	x := Load(Param("x"), RSI)
	n := Load(Param("nkb"), RCX)
	broadcastD(0xffff0000, RAX, Z31) // a float's top 16 bits
	broadcastD(0x7f800000, RAX, Z30) // exponent
	broadcastD(0x007fffff, RAX, Z29) // mantissa
	broadcastD(0x00400000, RAX, Z28) // quiet bit
	TESTQ(n, n)
	JZ(LabelRef("splitBF16_done"))
	Label("splitBF16_step")
	for h := 0; h < 2; h++ { // 16 values each
		VMOVDQU32(Mem{Base: x, Disp: 64 * h}, Z0) // X
		VPANDD(Z31, Z0, Z1)                       // hi (as a float)
		VSUBPS(Z1, Z0, Z2)                        // r = x - hi (exact)
		VPANDD(Z31, Z2, Z3)                       // mid (as a float)
		VSUBPS(Z3, Z2, Z4)                        // lo = r - mid (exact)
		VPANDD(Z30, Z0, Z5)
		VPCMPEQD(Z30, Z5, K1) // non-finite lanes
		VPTESTMD(Z29, Z0, K2)
		KANDW(K1, K2, K2)      // NaN lanes
		VPORD(Z28, Z0, K2, Z0) // NaNs quieted
		VPXORD(Z2, Z2, K1, Z2) // mid = 0 for non-finite x
		VPXORD(Z4, Z4, K1, Z4) // lo = 0 for non-finite x
		VPSRLD(U8(16), Z0, Z0)
		VPSRLD(U8(16), Z2, Z2)
		VPSRLD(U8(16), Z4, Z4)
		VPMOVDW(Z0, Mem{Base: dst, Disp: 32 * h})
		VPMOVDW(Z2, Mem{Base: dst, Disp: 2048 + 32*h})
		VPMOVDW(Z4, Mem{Base: dst, Disp: 4096 + 32*h})
	}
	ADDQ(U8(128), x)
	ADDQ(U32(6144), dst)
	DECQ(n)
	JNZ(LabelRef("splitBF16_step"))
	Label("splitBF16_done")
	VZEROUPPER()
	RET()
}

func genRoundBF16() {
	TEXT("roundBF16AVX512", NOSPLIT, "func(dst *uint16, x *float32, nkb int)")
	Doc("roundBF16AVX512 rounds whole K steps of one row to bf16 (ties to even) in the one-term AMX sliver layout; see convert.go of the generator.")
	dst := Load(Param("dst"), RDI)
	x := Load(Param("x"), RSI)
	n := Load(Param("nkb"), RCX)
	broadcastD(0x7fffffff, RAX, Z31) // |x|
	broadcastD(0x7f800000, RAX, Z30) // +Inf: |x| above it is a NaN
	broadcastD(0x00007fff, RAX, Z29) // the rounding bias below a tie
	broadcastD(0x00000001, RAX, Z28)
	broadcastD(0x00400000, RAX, Z27) // quiet bit
	TESTQ(n, n)
	JZ(LabelRef("roundBF16_done"))
	Label("roundBF16_step")
	for h := 0; h < 2; h++ { // 16 values each
		VMOVDQU32(Mem{Base: x, Disp: 64 * h}, Z0) // X
		VPANDD(Z31, Z0, Z1)
		VPCMPUD(U8(6), Z30, Z1, K1) // NaN lanes: |x| > +Inf as unsigned (predicate NLE)
		VPSRLD(U8(16), Z0, Z2)
		VPANDD(Z28, Z2, Z2) // the kept part's last bit
		VPADDD(Z29, Z2, Z2)
		VPADDD(Z0, Z2, Z2)     // x + 0x7fff + last bit: ties to even
		VPORD(Z27, Z0, K1, Z2) // NaNs: quieted, not rounded
		VPSRLD(U8(16), Z2, Z2)
		VPMOVDW(Z2, Mem{Base: dst, Disp: 32 * h})
	}
	ADDQ(U8(128), x)
	ADDQ(U32(2048), dst)
	DECQ(n)
	JNZ(LabelRef("roundBF16_step"))
	Label("roundBF16_done")
	VZEROUPPER()
	RET()
}

// simZ is a zmm register in the pack generator's simulation: which input
// element (row·16 + column) each of its 16 float lanes holds.
type simZ [16]int

func unpck(a, b simZ, hi bool, pd bool) simZ {
	var d simZ
	for l := 0; l < 4; l++ {
		o := 0
		if hi {
			o = 2
		}
		if pd {
			d[l*4+0], d[l*4+1], d[l*4+2], d[l*4+3] = a[l*4+o], a[l*4+o+1], b[l*4+o], b[l*4+o+1]
		} else {
			d[l*4+0], d[l*4+1], d[l*4+2], d[l*4+3] = a[l*4+o/2*2], b[l*4+o/2*2], a[l*4+o/2*2+1], b[l*4+o/2*2+1]
		}
	}
	return d
}

// perm2f128 is VPERM2F128 on the low two 128-bit lanes (a ymm): lane i of
// the result is lane imm>>(4i)&3 of a:b (0, 1: a's; 2, 3: b's).
func perm2f128(a, b simZ, imm uint8) simZ {
	var d simZ
	for l := 0; l < 2; l++ {
		s := int(imm>>(4*l)) & 3
		src := a
		if s >= 2 {
			src, s = b, s-2
		}
		copy(d[l*4:l*4+4], src[s*4:s*4+4])
	}
	return d
}

func shuf128(a, b simZ, imm uint8) simZ {
	var d simZ
	for l := 0; l < 4; l++ {
		src := a
		if l >= 2 {
			src = b
		}
		s := int(imm>>(2*l)) & 3
		copy(d[l*4:l*4+4], src[s*4:s*4+4])
	}
	return d
}

// interleaveRows emits the first two stages of a transpose of the rows in
// r (8 or 16 registers; t as many temporaries) and simulates them on sr
// and st: 32-bit interleaves of row pairs into t, then 64-bit interleaves
// of those back into r, so each register of r holds, per 128-bit lane,
// one column of four consecutive rows (the lane shuffles that follow
// join the lanes).
func interleaveRows(r, t []VecPhysical, sr, st []simZ) {
	for i := 0; i < len(r)/2; i++ {
		VUNPCKLPS(r[2*i+1], r[2*i], t[2*i])
		VUNPCKHPS(r[2*i+1], r[2*i], t[2*i+1])
		st[2*i], st[2*i+1] = unpck(sr[2*i], sr[2*i+1], false, false), unpck(sr[2*i], sr[2*i+1], true, false)
	}
	for g := 0; g < len(r)/4; g++ {
		a, b, c, d := 4*g, 4*g+1, 4*g+2, 4*g+3
		VUNPCKLPD(t[c], t[a], r[a])
		VUNPCKHPD(t[c], t[a], r[b])
		VUNPCKLPD(t[d], t[b], r[c])
		VUNPCKHPD(t[d], t[b], r[d])
		sr[a], sr[b] = unpck(st[a], st[c], false, true), unpck(st[a], st[c], true, true)
		sr[c], sr[d] = unpck(st[b], st[d], false, true), unpck(st[b], st[d], true, true)
	}
}

// genPackSlivers emits packSliversAVX512(dst, x *float32, ldx, nblk int):
// nblk blocks of 16 k steps of one full 12-row sliver (kernels/gemm's
// packSlivers with MR 12): rows x + r·ldx (r < 12, ldx in floats) are
// transposed 16×16 at a time (rows 12..15 zero) by unpacks and 128-bit
// lane shuffles, and k step p's 12 values are stored (mask 0xfff) at
// dst + p·12. Which register holds which k step after the shuffles is
// found by simulating them here; the generator fails unless every one
// holds one k step with rows in lane order.
func genPackSlivers() {
	TEXT("packSliversAVX512", NOSPLIT, "func(dst *float32, x *float32, ldx int, nblk int)")
	Doc("packSliversAVX512 packs whole 16-step blocks of one 12-row sliver; see convert.go of the generator.")
	dst := Load(Param("dst"), RDI)
	x := Load(Param("x"), RSI)
	ld := Load(Param("ldx"), R9)
	n := Load(Param("nblk"), RCX)
	SHLQ(U8(2), ld) // bytes per row
	ld3 := R10
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3) // 3 rows
	b1, b2 := R11, R12
	MOVL(U32(0xfff), EAX)
	KMOVW(EAX, K1)
	TESTQ(n, n)
	JZ(LabelRef("packSliv_done"))
	Label("packSliv_blk")
	LEAQ(Mem{Base: x, Index: ld, Scale: 4}, b1)  // rows 4..7
	LEAQ(Mem{Base: b1, Index: ld, Scale: 4}, b2) // rows 8..11
	rowMem := func(base GPPhysical, i int) Mem {
		switch i {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: ld, Scale: 1}
		case 2:
			return Mem{Base: base, Index: ld, Scale: 2}
		}
		return Mem{Base: base, Index: ld3, Scale: 1}
	}
	r := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}
	t := []VecPhysical{Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	var sr, st [16]simZ
	for i := 0; i < 16; i++ {
		for l := 0; l < 16; l++ {
			sr[i][l] = i*16 + l
		}
	}
	for i, base := range []GPPhysical{RSI, b1, b2} {
		for j := 0; j < 4; j++ {
			VMOVUPS(rowMem(base, j), r[i*4+j])
		}
	}
	for i := 12; i < 16; i++ {
		VPXORD(r[i], r[i], r[i])
	}
	interleaveRows(r, t, sr[:], st[:])
	// Stage 3: 128-bit lanes of rows 4 apart.
	for h := 0; h < 2; h++ {
		for i := 0; i < 4; i++ {
			a, b := 8*h+i, 8*h+i+4
			VSHUFF32X4(U8(0x88), r[b], r[a], t[8*h+i])
			VSHUFF32X4(U8(0xdd), r[b], r[a], t[8*h+i+4])
			st[8*h+i], st[8*h+i+4] = shuf128(sr[a], sr[b], 0x88), shuf128(sr[a], sr[b], 0xdd)
		}
	}
	// Stage 4: 128-bit lanes of rows 8 apart.
	for i := 0; i < 8; i++ {
		VSHUFF32X4(U8(0x88), t[i+8], t[i], r[i])
		VSHUFF32X4(U8(0xdd), t[i+8], t[i], r[i+8])
		sr[i], sr[i+8] = shuf128(st[i], st[i+8], 0x88), shuf128(st[i], st[i+8], 0xdd)
	}
	for i := 0; i < 16; i++ {
		col := sr[i][0] % 16
		for l := 0; l < 16; l++ {
			if sr[i][l] != l*16+col {
				panic(fmt.Sprintf("packSlivers: register %d lane %d holds element %d, not row %d of column %d", i, l, sr[i][l], l, col))
			}
		}
		VMOVUPS(r[i], K1, Mem{Base: dst, Disp: col * 48})
	}
	ADDQ(U8(64), x)
	ADDQ(U32(16*48), dst)
	DECQ(n)
	JNZ(LabelRef("packSliv_blk"))
	Label("packSliv_done")
	VZEROUPPER()
	RET()
}

// genPackSlivers6 emits packSlivers6AVX2(dst, x *float32, ldx, nblk int):
// packSliversAVX512's AVX2 form for 6-row slivers (MR 6: avx2-fp32,
// avx2-bf16), 8 k steps per block by 8×8 transposes (rows 6 and 7 zero);
// k step p's 8 lanes are stored unmasked at dst + p·6 in increasing p, so
// lanes 6 and 7 land on the next step's rows 0 and 1, which that step's
// store rewrites: the caller leaves at least one k step after the blocks
// to its own code, which rewrites the last block's spill.
func genPackSlivers6() {
	TEXT("packSlivers6AVX2", NOSPLIT, "func(dst *float32, x *float32, ldx int, nblk int)")
	Doc("packSlivers6AVX2 packs whole 8-step blocks of one 6-row sliver; see convert.go of the generator.")
	dst := Load(Param("dst"), RDI)
	x := Load(Param("x"), RSI)
	ld := Load(Param("ldx"), R9)
	n := Load(Param("nblk"), RCX)
	SHLQ(U8(2), ld) // bytes per row
	ld3 := R10
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	b1 := R11
	TESTQ(n, n)
	JZ(LabelRef("packSliv6_done"))
	Label("packSliv6_blk")
	LEAQ(Mem{Base: x, Index: ld3, Scale: 1}, b1) // rows 3..5
	r := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	t := []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	var sr, st [8]simZ
	for i := 0; i < 8; i++ {
		for l := 0; l < 8; l++ {
			sr[i][l] = i*16 + l
		}
	}
	for i, m := range []Mem{{Base: RSI}, {Base: RSI, Index: ld, Scale: 1}, {Base: RSI, Index: ld, Scale: 2},
		{Base: b1}, {Base: b1, Index: ld, Scale: 1}, {Base: b1, Index: ld, Scale: 2}} {
		VMOVUPS(m, r[i])
	}
	VXORPS(r[6], r[6], r[6])
	VXORPS(r[7], r[7], r[7])
	interleaveRows(r, t, sr[:], st[:])
	for i := 0; i < 4; i++ {
		VPERM2F128(U8(0x20), r[i+4], r[i], t[i])
		VPERM2F128(U8(0x31), r[i+4], r[i], t[i+4])
		st[i], st[i+4] = perm2f128(sr[i], sr[i+4], 0x20), perm2f128(sr[i], sr[i+4], 0x31)
	}
	cols := make([]int, 8)
	for i := 0; i < 8; i++ {
		col := st[i][0] % 16
		for l := 0; l < 8; l++ {
			if st[i][l] != l*16+col {
				panic(fmt.Sprintf("packSlivers6: register %d lane %d holds element %d, not row %d of column %d", i, l, st[i][l], l, col))
			}
		}
		cols[col] = i
	}
	for col := 0; col < 8; col++ { // increasing k step: each store's spill is rewritten by the next
		VMOVUPS(t[cols[col]], Mem{Base: dst, Disp: col * 24})
	}
	ADDQ(U8(32), x)
	ADDQ(U8(8*24), dst)
	DECQ(n)
	JNZ(LabelRef("packSliv6_blk"))
	Label("packSliv6_done")
	VZEROUPPER()
	RET()
}
