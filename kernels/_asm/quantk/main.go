// Command quantk generates kernels/quant/kquant_amd64.s, the AVX512-VNNI
// GEMV/small-M GEMM microkernels of package quant for GGUF's K-quants
// (Q4_K, Q6_K), with avo:
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
