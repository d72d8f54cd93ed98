// Command quantk generates kernels/quant/kquant_amd64.s, the AVX512-VNNI
// and AVX2 GEMV/small-M GEMM microkernels of package quant for GGUF's
// K-quants (Q4_K, Q6_K), with avo:
//
//	cd kernels/_asm && go run ./quantk -out ../quant/kquant_amd64.s
//
// (or `go generate ./kernels/quant/`).
//
// Every kernel has the signature of package quant's kern
//
//	func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
//
// and computes one mr×4 tile of Y over np/4 super-blocks of 256 weights
// (np block pairs; a remainder below 4 is ignored) as kernGoK in
// kernels/quant/kquant.go specifies (that comment gives the layouts and
// the arithmetic), summing in another order.
//
// Per super-block and W row j, the sub-block scales D = d·sc (exact in
// float32) are made once into one zmm: Q4_K's 8 (the 6-bit scales
// unpacked from ggml's 12 bytes with scalar shifts and masks, VPMOVZXBD,
// VCVTDQ2PS, times d), Q6_K's 16 (VPMOVSXBD of the int8 scales, VCVTDQ2PS,
// times d). Per block pair, a VPERMPS with a constant index spreads the
// pair's scales over the lanes as the lane order places the blocks (Q4_K:
// lane l is block 2p + l%2; Q6_K: sub-block 4p + 2(l%2) + l/8), so the
// pair's int32 lanes from VPDPBUSD (u8 weights × s8 activations) are
// converted, multiplied by that vector times the activation scales dx
// (broadcast as [dx0, dx1, ...]) and added into a float accumulator per
// (row, column), as the q4_0 kernels do.
//
//   - Q4_K: the 32 bytes of a pair unpack as q4_0's (VBROADCASTI64X4,
//     VPSRLVQ, VPANDD) to q 0..15; no offset (the accumulator starts at
//     0). The mins are a per-super-block term: dmin·m (8 floats, made
//     from the scale bytes as D) times the activations' d_x·Σq of the 8
//     blocks (ac), subtracted with one VFNMADD231PS whose upper 8 lanes
//     are 0·0.
//   - Q6_K: the low nibbles as q4_0; the high 2 bits from the pair's last
//     16 bytes in all four 128-bit lanes (VBROADCASTI32X4), rotated per
//     quadword so that lane L's field (bits 2L+1:2L) lands in bits 5:4
//     (VPROLVQ by 4, 2, 0, 62: no field crosses a byte), merged with the
//     nibble by one VPTERNLOGD (u = lo | hi & 0x30). The accumulator
//     starts at the activations' per-lane correction −32·Σq (ac), so a
//     lane holds Σ (u − 32)·q exactly.
//
// The int32 lanes are exact: one pair's lane holds 4 products u·q (u ≤ 63,
// |q| ≤ 127) and at most a correction of 32·4·127, below 2^16.
//
// Registers (mr = 4): 16 float accumulators, 4 row scales dx, 4 per-row D
// vectors, the index, the weights, the lane scales, the int32 lanes, the
// scaled product, constants: 32 zmm.
//
// AVX2 (kern<F>AVX2m<m>: tiles of m = 1 or 2 rows of X, as the avx2
// backend's other kernels; ymm, 8 int32 lanes): a pair is two 32-byte
// halves, positions 0..31 (pair lanes 0..7) and 32..63 (lanes 8..15). The
// D vectors of the 4 W rows are made per super-block as above (ymm: Q4_K
// 8 floats, Q6_K 2 × 8) and kept in the stack frame, from where VPERMPS
// reads them as its table (16 ymm do not hold them beside the
// accumulators), once per pair and W row (Q6_K: per half), shared by the
// rows of X; VPERMPS indexes by the low 3 bits, so the zmm kernels' index
// constants serve (Q6_K: bytes 0..31 for the first half, 32..63 for the
// second, with the table D[0..7] for pairs 0, 1 and D[8..15] for pairs 2,
// 3). Per pair and W row, the 32 bytes at b give the nibbles, shared by
// the rows: w = bytes & 0x0f (positions 0..31), w1 = (bytes >> 4) & 0x0f
// (32..63; VPSRLW, VPAND).
//
//   - Q4_K: per row, VPMADDUBSW(w u8, x0 s8) and VPMADDUBSW(w1, x1) give
//     int16 pair sums of at most 2·15·128 = 3840 in magnitude (no
//     saturation for any int8 activation); both halves' lanes are the same
//     blocks (lane l: block 2p + l%2), so VPADDW adds them (≤ 7680) before
//     one VPMADDWD with int16 ones widens to int32: 8 lanes of Σ u·q over
//     8 positions. VCVTDQ2PS, times the lane scales (VPERMPS of D by
//     kq4idx, times the row's broadcast [dx0, dx1, ...]) and VFMADD231PS
//     into the (row, column) accumulator. The mins as the zmm kernel, one
//     VFNMADD231PS of ymm per row and column.
//   - Q6_K: the high 2 bits from the pair's last 16 bytes in both 128-bit
//     lanes (VBROADCASTI128), lane 1 shifted right by 2 per quadword
//     (VPSRLVQ by kq6shr: 0, 0, 2, 2; the bits that cross from the next
//     byte land in bits 7:6, masked off): bits 5:4 now hold the fields of
//     positions 32..47 (lane 0, field 2) and 48..63 (lane 1, field 3), so
//     u1 = w1 | h & 0x30; bits 1:0 hold fields 0 and 1 (positions 0..15,
//     16..31), moved to bits 5:4 by VPSLLW 4: u0 = w | (h << 4) & 0x30.
//     The halves' lanes are different sub-blocks (4p + 2(l%2) + half), so
//     each half is its own int32 vector: VPMADDUBSW(u, x) (u ≤ 63: pair
//     sums at most 2·63·128 = 16128 < 2^15, no saturation), VPMADDWD with
//     ones, VPADDD of the activations' lane corrections −32·Σq (ac, 8
//     int32 per half), so a lane holds Σ (u − 32)·q exactly (|·| ≤ 8·63·128
//   - 8·32·128 < 2^24: VCVTDQ2PS is exact); then VCVTDQ2PS, times the
//     half's lane scales and dx, VFMADD231PS as Q4_K.
//
// Registers (AVX2): 4m float accumulators, the unpacked halves w, w1, the
// high bits (then the scaled product), the int32 lanes, the lane scales
// and m row scales dx; m = 1 keeps x0, x1 and the constants (0x0f, ones,
// 0x30) in registers too, m = 2 (16 of 16 ymm with the 0x0f mask) reads
// x, ones and 0x30 from memory.
package main

import (
	"fmt"

	"github.com/cpubench/bench/kernels/_asm/internal/asmutil"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const nr = asmutil.NR // panel rows: tile columns

// pfDist is how far ahead (bytes) the kernels prefetch the weight panel, as
// kernels/_asm/quant's (asmutil.PFDist).
var pfDist = asmutil.PFDist()

type format struct {
	name      string // "Q4K" or "Q6K"
	pairBytes int    // packed bytes of one row's block pair
	metaBytes int    // scale bytes of one row's super-block
}

var (
	q4k = format{"Q4K", 32, 16}
	q6k = format{"Q6K", 48, 20}
)

var zmm = asmutil.Zmm

var (
	// kq4Shifts: VPSRLVQ counts of the nibble unpack, 0 for the low 256
	// bits (low nibbles), 4 for the high 256 bits.
	kq4Shifts = asmutil.Words64("kq4shifts", true, func(l int) uint64 { return map[bool]uint64{false: 0, true: 4}[l >= 4] })
	// kq6Rot: VPROLVQ counts bringing field L (bits 2L+1:2L of every byte
	// of 128-bit lane L) to bits 5:4: 4, 2, 0, 62 (= right by 2).
	kq6Rot = asmutil.Words64("kq6rot", true, func(l int) uint64 { return uint64((4 - 2*(l/2) + 64) % 64) })
	// The AVX2 kernels' constants: kq6Shr the VPSRLVQ counts on the
	// high-bit bytes broadcast to both 128-bit lanes (0 for lane 0, 2 for
	// lane 1); the masks 0x0f and 0x30 and int16 ones (registers where
	// they fit, else these memory operands).
	kq6Shr   = asmutil.Words64("kq6shr", true, func(l int) uint64 { return map[bool]uint64{false: 0, true: 2}[l%4 >= 2] })
	kqMask0F = asmutil.Words64("kqmask0f", false, func(int) uint64 { return 0x0f0f0f0f })
	kqMask30 = asmutil.Words64("kqmask30", false, func(int) uint64 { return 0x30303030 })
	kqOnes16 = asmutil.Words64("kqones16", false, func(int) uint64 { return 0x00010001 })
	// The VPERMPS indices of pair pp of a super-block.
	kq4Idx = make([]func() Mem, 4)
	kq6Idx = make([]func() Mem, 4)
)

func init() {
	for pp := range 4 {
		kq4Idx[pp] = asmutil.Words64(fmt.Sprintf("kq4idx%d", pp), false, func(l int) uint64 { return uint64(2*pp + l%2) })
		kq6Idx[pp] = asmutil.Words64(fmt.Sprintf("kq6idx%d", pp), false, func(l int) uint64 { return uint64(4*pp + 2*(l%2) + l/8) })
	}
}

func main() {
	ConstraintExpr("!purego")
	for _, f := range []format{q4k, q6k} {
		for m := 1; m <= 4; m++ {
			genVNNI(f, m)
		}
	}
	for _, f := range []format{q4k, q6k} {
		for m := 1; m <= 2; m++ {
			genAVX2(f, m)
		}
	}
	Generate()
}

const signature = "func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)"

// args are the parameters' registers (asmutil.Args) and, for Q4_K, acs:
// the stride of ac in bytes.
type args struct {
	asmutil.Args
	acs Register
}

func loadArgs(f format) args {
	g := args{Args: asmutil.LoadArgs("ac")} // SA8: as holds 2 floats per row and pair
	if f == q4k {
		// ac (Q4_K): 8 floats per row and super-block = sa/2 bytes.
		g.acs = R15
		MOVQ(g.SA, g.acs)
		SHRQ(U8(1), g.acs)
	}
	SHLQ(U8(2), g.LDC)
	SHRQ(U8(2), g.NP) // super-blocks
	return g
}

// q4kScaleBytes leaves in RAX the 8 bytes of ggml's get_scale_min_k4
// (the scales, or the mins) of the 12 scale bytes at m (little-endian
// words w0, w1, w2): sub-blocks 0..3 are the low 6 bits of w0 (mins: w1),
// 4..7 the low (mins: high) nibbles of w2 with bits 5:4 from bits 7:6 of
// w0 (mins: w1). Clobbers RBX and R14.
func q4kScaleBytes(m Mem, mins bool) {
	src := m
	if mins {
		src = m.Offset(4)
	}
	MOVL(src, EAX)
	MOVL(EAX, R14L)
	ANDL(U32(0x3f3f3f3f), EAX) // sub-blocks 0..3
	SHRL(U8(2), R14L)
	ANDL(U32(0x30303030), R14L) // bits 7:6 → 5:4
	MOVL(m.Offset(8), EBX)
	if mins {
		SHRL(U8(4), EBX)
	}
	ANDL(U32(0x0f0f0f0f), EBX)
	ORL(R14L, EBX) // sub-blocks 4..7
	SHLQ(U8(32), RBX)
	ORQ(RBX, RAX)
}

// genVNNI emits kern<F>VNNIm<m>.
func genVNNI(f format, m int) {
	name := fmt.Sprintf("kern%sVNNIm%d", f.name, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×4 %s tile with VPDPBUSD; see the generator.", name, m, f.name))
	g := loadArgs(f)
	acc := make([][nr]VecPhysical, m)
	for r := 0; r < m; r++ {
		for j := 0; j < nr; j++ {
			acc[r][j] = zmm[r*nr+j]
			VPXORD(acc[r][j], acc[r][j], acc[r][j])
		}
	}
	D := zmm[16:20]
	idx := zmm[20]
	dx := zmm[21:25]
	w, dl, iacc, s, hi, mask0f, mask30 := zmm[25], zmm[26], zmm[27], zmm[28], zmm[29], zmm[30], zmm[31]
	asmutil.Broadcast32(mask0f, mask0f, 0x0f0f0f0f)
	if f == q6k {
		asmutil.Broadcast32(mask30, mask30, 0x30303030)
	}
	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")

	// The super-block's sub-block scales per W row.
	for j := 0; j < nr; j++ {
		mb := Mem{Base: g.BS, Disp: j * f.metaBytes}
		if f == q4k {
			q4kScaleBytes(mb.Offset(4), false)
			VMOVQ(RAX, D[j].(Vec).AsX())
			VPMOVZXBD(D[j].(Vec).AsX(), D[j].(Vec).AsY())
			VCVTDQ2PS(D[j].(Vec).AsY(), D[j].(Vec).AsY())
			VPBROADCASTW(mb, s.(Vec).AsX())
			VCVTPH2PS(s.(Vec).AsX(), s.(Vec).AsY())
			VMULPS(s.(Vec).AsY(), D[j].(Vec).AsY(), D[j].(Vec).AsY())
		} else {
			VPMOVSXBD(mb.Offset(4), D[j])
			VCVTDQ2PS(D[j], D[j])
			VPBROADCASTW(mb, s.(Vec).AsY())
			VCVTPH2PS(s.(Vec).AsY(), s)
			VMULPS(s, D[j], D[j])
		}
	}

	for pp := 0; pp < 4; pp++ {
		for r := 0; r < m; r++ {
			VBROADCASTSD(Mem{Base: g.AS, Disp: r * 8}, dx[r])
		}
		for off := 0; off < nr*f.pairBytes; off += 64 {
			PREFETCHT0(Mem{Base: g.B, Disp: pfDist + off})
		}
		if f == q4k {
			VMOVDQU32(kq4Idx[pp](), idx)
		} else {
			VMOVDQU32(kq6Idx[pp](), idx)
		}
		for j := 0; j < nr; j++ {
			// The low nibbles as q4_0's (both formats).
			asmutil.UpconvertZ("Q4", Mem{Base: g.B, Disp: j * f.pairBytes}, w, kq4Shifts(), mask0f, nil)
			if f == q6k {
				VBROADCASTI32X4(Mem{Base: g.B, Disp: j*f.pairBytes + 32}, hi)
				VPROLVQ(kq6Rot(), hi, hi)
				VPTERNLOGD(U8(0xf8), mask30, hi, w) // w | hi & mask30
			}
			VPERMPS(D[j], idx, dl)
			for r := 0; r < m; r++ {
				if f == q4k {
					VPXORD(iacc, iacc, iacc)
				} else {
					VMOVDQU32(Mem{Base: g.AC, Disp: r * 64}, iacc)
				}
				asmutil.VPDPBUSD(Mem{Base: g.A, Disp: r * 64}, w, iacc, false)
				VCVTDQ2PS(iacc, iacc)
				VMULPS(dx[r], dl, s)
				VFMADD231PS(iacc, s, acc[r][j])
			}
		}
		ADDQ(g.SA, g.A)
		ADDQ(g.SA8, g.AS)
		if f == q6k {
			ADDQ(g.SA, g.AC)
		}
		ADDQ(U32(nr*f.pairBytes), g.B)
	}

	if f == q4k {
		// The mins: acc −= dmin·m (8 floats) × d_x·Σq (8 floats, ac).
		for j := 0; j < nr; j++ {
			mb := Mem{Base: g.BS, Disp: j * f.metaBytes}
			q4kScaleBytes(mb.Offset(4), true)
			VMOVQ(RAX, dl.(Vec).AsX())
			VPMOVZXBD(dl.(Vec).AsX(), dl.(Vec).AsY())
			VCVTDQ2PS(dl.(Vec).AsY(), dl.(Vec).AsY())
			VPBROADCASTW(mb.Offset(2), s.(Vec).AsX())
			VCVTPH2PS(s.(Vec).AsX(), s.(Vec).AsY())
			VMULPS(s.(Vec).AsY(), dl.(Vec).AsY(), dl.(Vec).AsY())
			for r := 0; r < m; r++ {
				VMOVUPS(Mem{Base: g.AC, Disp: r * 32}, iacc.(Vec).AsY())
				VFNMADD231PS(iacc, dl, acc[r][j])
			}
		}
		ADDQ(g.acs, g.AC)
	}
	ADDQ(U32(nr*f.metaBytes), g.BS)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	asmutil.StoreZRows(acc, w, g.C, g.LDC)
	VZEROUPPER()
	RET()
}

var ymm = asmutil.Ymm

// genAVX2 emits kern<F>AVX2m<m>, m = 1 or 2 (see the doc comment's AVX2
// part).
func genAVX2(f format, m int) {
	name := fmt.Sprintf("kern%sAVX2m%d", f.name, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes a %d×4 %s tile with VPMADDUBSW; see the generator.", name, m, f.name))
	g := loadArgs(f)
	// The super-block's sub-block scales D of the 4 W rows, 8 (Q4_K) or
	// 16 (Q6_K) floats per row: VPERMPS reads its table from here.
	dBytes := 32
	if f == q6k {
		dBytes = 64
	}
	dloc := AllocLocal(nr * dBytes)
	acc := make([][nr]VecPhysical, m)
	for r := range acc {
		for j := range acc[r] {
			acc[r][j] = ymm[r*nr+j]
			VXORPS(acc[r][j], acc[r][j], acc[r][j])
		}
	}
	free := ymm[nr*m:]
	take := func() VecPhysical { v := free[0]; free = free[1:]; return v }
	var x [2][2]Op // x[r][h]: row r's half h (positions 32h..32h+31)
	if m == 1 {
		x[0] = [2]Op{take(), take()}
	} else {
		for r := 0; r < m; r++ {
			x[r] = [2]Op{Mem{Base: g.A, Disp: r * 64}, Mem{Base: g.A, Disp: r*64 + 32}}
		}
	}
	dx := make([]VecPhysical, m)
	for r := range dx {
		dx[r] = take()
	}
	w, w1, h, t, dl := take(), take(), take(), take(), take()
	// The constants, most used first: registers while any are left.
	konst := func(mem func() Mem, pattern uint32) Op {
		if len(free) == 0 {
			return mem()
		}
		v := take()
		asmutil.Broadcast32(v, v, pattern)
		return v
	}
	mask0f := konst(kqMask0F, 0x0f0f0f0f)
	ones := konst(kqOnes16, 0x00010001)
	var mask30 Op
	if f == q6k {
		mask30 = konst(kqMask30, 0x30303030)
	}
	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")

	// The super-block's sub-block scales per W row, into dloc.
	for j := 0; j < nr; j++ {
		mb := Mem{Base: g.BS, Disp: j * f.metaBytes}
		VPBROADCASTW(mb, asmutil.X(t))
		VCVTPH2PS(asmutil.X(t), t)
		if f == q4k {
			q4kScaleBytes(mb.Offset(4), false)
			VMOVQ(RAX, asmutil.X(dl))
			VPMOVZXBD(asmutil.X(dl), dl)
			VCVTDQ2PS(dl, dl)
			VMULPS(t, dl, dl)
			VMOVUPS(dl, dloc.Offset(j*dBytes))
			continue
		}
		for k := 0; k < 2; k++ {
			VPMOVSXBD(mb.Offset(4+8*k), dl)
			VCVTDQ2PS(dl, dl)
			VMULPS(t, dl, dl)
			VMOVUPS(dl, dloc.Offset(j*dBytes+32*k))
		}
	}

	for pp := 0; pp < 4; pp++ {
		if m == 1 {
			VMOVDQU(Mem{Base: g.A}, x[0][0].(VecPhysical))
			VMOVDQU(Mem{Base: g.A, Disp: 32}, x[0][1].(VecPhysical))
		}
		for r := 0; r < m; r++ {
			VBROADCASTSD(Mem{Base: g.AS, Disp: r * 8}, dx[r])
		}
		for off := 0; off < nr*f.pairBytes; off += 64 {
			PREFETCHT0(Mem{Base: g.B, Disp: pfDist + off})
		}
		for j := 0; j < nr; j++ {
			wm := Mem{Base: g.B, Disp: j * f.pairBytes}
			// The nibbles: positions 0..31 low (w), 32..63 high (w1).
			VMOVDQU(wm, w)
			VPSRLW(U8(4), w, w1)
			VPAND(mask0f, w, w)
			VPAND(mask0f, w1, w1)
			if f == q4k {
				VMOVDQU(kq4Idx[pp](), dl)
				VPERMPS(dloc.Offset(j*dBytes), dl, dl)
				for r := 0; r < m; r++ {
					// Both halves' lanes are the same blocks: add the
					// int16 pair sums, then one VPMADDWD.
					VPMADDUBSW(x[r][0], w, t) // Go operand order: src2 (s8), src1 (u8), dst
					VPMADDUBSW(x[r][1], w1, h)
					VPADDW(h, t, t)
					VPMADDWD(ones, t, t)
					VCVTDQ2PS(t, t)
					VMULPS(dx[r], dl, h)
					VFMADD231PS(t, h, acc[r][j])
				}
				continue
			}
			// Q6_K's high 2 bits: the 16 bytes in both 128-bit lanes,
			// lane 1 shifted right by 2, so that bits 1:0 hold fields 0
			// (lane 0) and 1 (lane 1) and bits 5:4 fields 2 and 3.
			VBROADCASTI128(wm.Offset(32), h)
			VPSRLVQ(kq6Shr(), h, h)
			VPSLLW(U8(4), h, t)
			VPAND(mask30, t, t)
			VPOR(t, w, w)
			VPAND(mask30, h, h)
			VPOR(h, w1, w1)
			for hh, u := range []VecPhysical{w, w1} {
				VMOVDQU(kq6Idx[pp]().Offset(32*hh), dl) // only the low 3 bits index
				VPERMPS(dloc.Offset(j*dBytes+32*(pp/2)), dl, dl)
				for r := 0; r < m; r++ {
					VPMADDUBSW(x[r][hh], u, t)
					VPMADDWD(ones, t, t)
					VPADDD(Mem{Base: g.AC, Disp: r*64 + 32*hh}, t, t)
					VCVTDQ2PS(t, t)
					VMULPS(dx[r], dl, h)
					VFMADD231PS(t, h, acc[r][j])
				}
			}
		}
		ADDQ(g.SA, g.A)
		ADDQ(g.SA8, g.AS)
		if f == q6k {
			ADDQ(g.SA, g.AC)
		}
		ADDQ(U32(nr*f.pairBytes), g.B)
	}

	if f == q4k {
		// The mins: acc −= dmin·m (8 floats) × d_x·Σq (8 floats, ac).
		for j := 0; j < nr; j++ {
			mb := Mem{Base: g.BS, Disp: j * f.metaBytes}
			q4kScaleBytes(mb.Offset(4), true)
			VMOVQ(RAX, asmutil.X(dl))
			VPMOVZXBD(asmutil.X(dl), dl)
			VCVTDQ2PS(dl, dl)
			VPBROADCASTW(mb.Offset(2), asmutil.X(t))
			VCVTPH2PS(asmutil.X(t), t)
			VMULPS(t, dl, dl)
			for r := 0; r < m; r++ {
				VFNMADD231PS(Mem{Base: g.AC, Disp: r * 32}, dl, acc[r][j])
			}
		}
		ADDQ(g.acs, g.AC)
	}
	ADDQ(U32(nr*f.metaBytes), g.BS)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		asmutil.StoreRow(acc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}
