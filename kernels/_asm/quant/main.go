// Command quant generates kernels/quant/kernels_amd64.s, the quantized
// GEMV/small-M GEMM microkernels of package quant, with avo:
//
//	cd kernels/_asm && go run ./quant -out ../quant/kernels_amd64.s
//
// (or `go generate ./kernels/quant/`).
//
// Every kernel has the signature
//
//	func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
//
// and computes one mr×4 tile of Y over np block pairs exactly as kernGo in
// kernels/quant/kernels_go.go specifies (that comment gives the layouts):
// per pair and per (row r, column j) an int32 vector whose lanes alternate
// between the pair's two blocks is started from the activations' offset
// correction (ac, broadcast as [c0, c1, c0, c1, ...]), accumulates the
// unsigned weights times the int8 activations, is converted to float32 and
// added into a float accumulator with the per-lane scale dw·dx, where dw is
// the pair's two fp16 weight scales broadcast as one 32-bit word and
// widened (VCVTPH2PS: [d0, d1, d0, d1, ...]) and dx the two float32
// activation scales broadcast as one 64-bit word. The tile's 4 accumulators
// per row are reduced horizontally at the end and stored as 4 floats.
//
// AVX512VNNI (zmm, 16 int32 lanes, corrections −o·Σq/8): VPDPBUSD does the
// whole u8×s8 dot product of 64 weights in one instruction, the weight
// vector (q8_0: 64 bytes; q4_0: 32 bytes broadcast to both halves, the
// upper half shifted by 4 with VPSRLVQ, masked to nibbles) shared by the mr ≤ 4 activation rows held
// in registers: 16 float accumulators + 4 rows + 4 row scales + 6
// temporaries = 30 of 32 zmm.
//
// AVX2 (ymm, 8 int32 lanes, corrections −o·Σq/4, one row: mr = 1), a pair
// as two 32-byte halves:
//   - q4_0: VPMADDUBSW(nibbles u8, x s8) (|sum of 2| ≤ 2·15·127, no
//     saturation), VPMADDWD with int16 ones, VPADDD into the accumulator.
//   - q8_0: the stored byte XOR 0x80 is the signed weight w; VPMADDUBSW
//     needs one unsigned operand, so it multiplies |w| (VPABSB: −128 → 128
//     as u8) by x·sign(w) (VPSIGNB), exact: |x| ≤ 127 from the quantizer,
//     so a pair is at most 2·128·127 = 32512 < 2^15; the corrections are
//     not needed (the stored offset is removed by the XOR).
package main

import (
	"fmt"

	"github.com/cpubench/bench/kernels/_asm/internal/asmutil"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const nr = asmutil.NR // panel rows: tile columns

// pfDist is how far ahead (bytes) the VNNI kernels prefetch the weight
// panel (asmutil.PFDist says how it was chosen).
var pfDist = asmutil.PFDist()

type format struct {
	name      string // "Q8", "Q4", "I2" or "I1"
	pairBytes int
}

var (
	q8 = format{"Q8", 64}
	q4 = format{"Q4", 32}
	i2 = format{"I2", 16}
	i1 = format{"I1", 8}
)

var (
	zmm = asmutil.Zmm
	ymm = asmutil.Ymm
)

var (
	// q4Shifts: the VPSRLVQ counts of the q4_0 unpack, 0 for the low 256
	// bits (low nibbles), 4 for the high 256 bits (high nibbles).
	q4Shifts = asmutil.Words64("q4shifts", true, func(l int) uint64 { return map[bool]uint64{false: 0, true: 4}[l >= 4] })
	// i2Shifts: VPSRLVQ counts 0, 2, 4, 6 for the four 128-bit lanes.
	i2Shifts = asmutil.Bytes64("i2shifts", asmutil.I2Shift)
	// i1Index: VPSHUFB index of byte p (within its lane): source byte p/8.
	i1Index = asmutil.Bytes64("i1index", asmutil.I1Index)
	// i1Bits: the bit of its source byte that byte p tests, 1 << (p%8).
	i1Bits = asmutil.Bytes64("i1bits", asmutil.I1Bit)
)

func main() {
	ConstraintExpr("!purego")
	for _, f := range []format{q8, q4, i2, i1} {
		for m := 1; m <= 4; m++ {
			genVNNI(f, m)
		}
		if f == q8 || f == q4 {
			genAVX2(f)
		}
	}
	Generate()
}

const signature = "func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)"

// args are the parameters' registers (asmutil.Args), ldc in bytes.
type args struct{ asmutil.Args }

func loadArgs() args {
	g := args{asmutil.LoadArgs("ac")}
	SHLQ(U8(2), g.LDC)
	return g
}

// advance moves every pointer to the next block pair.
func (g args) advance(f format) {
	ADDQ(g.SA, g.A)
	ADDQ(g.SA8, g.AS)
	ADDQ(g.SA8, g.AC)
	ADDQ(U32(nr*f.pairBytes), g.B)
	ADDQ(U32(nr*4), g.BS)
}

// genVNNI emits kern<F>VNNIm<m>.
func genVNNI(f format, m int) {
	name := fmt.Sprintf("kern%sVNNIm%d", f.name, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×4 %s tile with VPDPBUSD; see the generator.", name, m, f.name))
	g := loadArgs()
	acc := make([][nr]VecPhysical, m)
	for r := 0; r < m; r++ {
		for j := 0; j < nr; j++ {
			acc[r][j] = zmm[r*nr+j]
			VPXORD(acc[r][j], acc[r][j], acc[r][j])
		}
	}
	x := zmm[16:20]
	dx := zmm[20:24]
	w, hi, mask, dw, iacc, s := zmm[24], zmm[25], zmm[26], zmm[27], zmm[28], zmm[29]
	var k [3]Op // the up-convert's constants (asmutil.UpconvertZ)
	switch f {
	case q4:
		asmutil.Broadcast32(mask, mask, 0x0f0f0f0f)
		VMOVDQU64(q4Shifts(), hi) // hi holds the per-quadword shift counts
		k = [3]Op{hi, mask, nil}
	case i2:
		asmutil.Broadcast32(mask, mask, 0x03030303)
		VMOVDQU64(i2Shifts(), hi)
		k = [3]Op{hi, mask, nil}
	case i1:
		asmutil.Broadcast32(mask, mask, 0x10101010) // 16: an int1 bit's unpacked value
		VMOVDQU64(i1Index(), hi)
		VMOVDQU64(i1Bits(), dx[3]) // free: i1 tiles keep dx in memory (see below)
		k = [3]Op{hi, dx[3], mask}
	}
	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	for r := 0; r < m; r++ {
		VMOVDQU64(Mem{Base: g.A, Disp: r * 64}, x[r])
		if f != i1 || r < 3 {
			VBROADCASTSD(Mem{Base: g.AS, Disp: r * 8}, dx[r])
		}
	}
	// Software prefetch of the panel's bytes pfDist ahead: one line per
	// 64 bytes of the pair's panel block (4 for q8_0, 2 for q4_0).
	for off := 0; off < nr*f.pairBytes; off += 64 {
		PREFETCHT0(Mem{Base: g.B, Disp: pfDist + off})
	}
	for j := 0; j < nr; j++ {
		asmutil.UpconvertZ(f.name, Mem{Base: g.B, Disp: j * f.pairBytes}, w, k[0], k[1], k[2])
		VPBROADCASTD(Mem{Base: g.BS, Disp: j * 4}, asmutil.Y(dw))
		VCVTPH2PS(asmutil.Y(dw), dw)
		for r := 0; r < m; r++ {
			VPBROADCASTQ(Mem{Base: g.AC, Disp: r * 8}, iacc)
			asmutil.VPDPBUSD(x[r], w, iacc, false)
			VCVTDQ2PS(iacc, iacc)
			if f == i1 && r == 3 {
				VBROADCASTSD(Mem{Base: g.AS, Disp: r * 8}, s)
				VMULPS(s, dw, s)
			} else {
				VMULPS(dx[r], dw, s)
			}
			VFMADD231PS(iacc, s, acc[r][j])
		}
	}
	g.advance(f)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	asmutil.StoreZRows(acc, w, g.C, g.LDC)
	VZEROUPPER()
	RET()
}

// genAVX2 emits kern<F>AVX2m1.
func genAVX2(f format) {
	name := fmt.Sprintf("kern%sAVX2m1", f.name)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes a 1×4 %s tile with VPMADDUBSW; see the generator.", name, f.name))
	g := loadArgs()
	var acc [nr]VecPhysical
	for j := range acc {
		acc[j] = ymm[j]
		VXORPS(acc[j], acc[j], acc[j])
	}
	x0, x1, dx, dw, iacc, w, hi, t, cst, ones := ymm[4], ymm[5], ymm[6], ymm[7], ymm[8], ymm[9], ymm[10], ymm[11], ymm[12], ymm[13]
	asmutil.Broadcast32(ones, ones, 0x00010001)
	if f == q4 {
		asmutil.Broadcast32(cst, cst, 0x0f0f0f0f)
	} else {
		asmutil.Broadcast32(cst, cst, 0x80808080)
	}
	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	VMOVDQU(Mem{Base: g.A}, x0)
	VMOVDQU(Mem{Base: g.A, Disp: 32}, x1)
	VBROADCASTSD(Mem{Base: g.AS}, dx)
	for j := 0; j < nr; j++ {
		VPBROADCASTD(Mem{Base: g.BS, Disp: j * 4}, dw.(Vec).AsX())
		VCVTPH2PS(dw.(Vec).AsX(), dw)
		if f == q4 {
			VPBROADCASTQ(Mem{Base: g.AC}, iacc)
			VMOVDQU(Mem{Base: g.B, Disp: j * 32}, w)
			VPSRLW(U8(4), w, hi)
			VPAND(cst, w, w)
			VPAND(cst, hi, hi)
			for h, nib := range []VecPhysical{w, hi} {
				xh := []VecPhysical{x0, x1}[h]
				// Go operand order: VPMADDUBSW src2 (s8), src1 (u8), dst.
				VPMADDUBSW(xh, nib, t)
				VPMADDWD(ones, t, t)
				VPADDD(t, iacc, iacc)
			}
		} else {
			VPXOR(iacc, iacc, iacc)
			for h, xh := range []VecPhysical{x0, x1} {
				VPXOR(Mem{Base: g.B, Disp: j*64 + h*32}, cst, w) // signed w
				VPSIGNB(w, xh, t)                                // t = x·sign(w)
				VPABSB(w, w)                                     // |w| as u8
				VPMADDUBSW(t, w, t)                              // |w|·x·sign(w) = w·x, pairs summed
				VPMADDWD(ones, t, t)
				VPADDD(t, iacc, iacc)
			}
		}
		VCVTDQ2PS(iacc, iacc)
		VMULPS(dx, dw, dw)
		VFMADD231PS(iacc, dw, acc[j])
	}
	g.advance(f)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	asmutil.StoreRow(acc, Mem{Base: g.C})
	VZEROUPPER()
	RET()
}
