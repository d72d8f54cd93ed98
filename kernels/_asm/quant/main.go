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
	"os"
	"strconv"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const nr = 4 // panel rows: tile columns

// pfDist is how far ahead (bytes) the VNNI kernels prefetch the weight
// panel: a PREFETCHT0 can never fault, so running past the end is safe.
// Measured on the Zen 5 VM (bench gemm --m 1 --n 151936 --k 1024 --dtype
// q8_0 --threads 1, the Qwen3 LM head): no prefetch 21–23 GB/s, 1 KiB
// 26–35, 4 KiB 28–38; the host is noisy, so the choice is rough.
var pfDist = 4096

type format struct {
	name      string // "Q8" or "Q4"
	pairBytes int
}

var (
	q8 = format{"Q8", 64}
	q4 = format{"Q4", 32}
	i2 = format{"I2", 16}
	i1 = format{"I1", 8}
)

var zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
var ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

// q4Shifts is the VPSRLVQ count vector of the q4_0 unpack: 0 for the low
// 256 bits (low nibbles), 4 for the high 256 bits (high nibbles).
var q4Shifts = func() func() Mem {
	var m *Mem
	return func() Mem {
		if m == nil {
			g := GLOBL("q4shifts", RODATA|NOPTR)
			for i := 0; i < 8; i++ {
				DATA(8*i, U64(map[bool]uint64{false: 0, true: 4}[i >= 4]))
			}
			m = &g
		}
		return *m
	}
}()

// dataConst returns a 64-byte RODATA vector built by f(i) for byte i.
func dataConst(name string, f func(i int) byte) func() Mem {
	var m *Mem
	return func() Mem {
		if m == nil {
			g := GLOBL(name, RODATA|NOPTR)
			for i := 0; i < 64; i++ {
				DATA(i, U8(f(i)))
			}
			m = &g
		}
		return *m
	}
}

var (
	// i2Shifts: VPSRLVQ counts 0, 2, 4, 6 for the four 128-bit lanes.
	i2Shifts = dataConst("i2shifts", func(i int) byte {
		if i%8 == 0 {
			return byte(2 * (i / 16))
		}
		return 0
	})
	// i1Index: VPSHUFB index of byte p (within its lane): source byte p/8.
	i1Index = dataConst("i1index", func(i int) byte { return byte(i / 8) })
	// i1Bits: the bit of its source byte that byte p tests, 1 << (p%8).
	i1Bits = dataConst("i1bits", func(i int) byte { return 1 << (i % 8) })
)

func main() {
	if d := os.Getenv("QUANT_PFDIST"); d != "" { // for tuning: the .s in the tree uses the default
		pfDist, _ = strconv.Atoi(d)
	}
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

// args loads the parameters; sa8 = sa/8 is the stride of as and ac in bytes
// (2 elements of 4 bytes per row, sa = 64 bytes per row).
type args struct{ np, a, as, ac, sa, sa8, b, bs, c, ldc Register }

func loadArgs() args {
	g := args{
		np: Load(Param("np"), RCX), a: Load(Param("a"), RSI), as: Load(Param("as"), R8),
		ac: Load(Param("ac"), R9), sa: Load(Param("sa"), R10), b: Load(Param("b"), RDI),
		bs: Load(Param("bs"), R11), c: Load(Param("c"), RDX), ldc: Load(Param("ldc"), R12),
	}
	g.sa8 = R13
	MOVQ(g.sa, g.sa8)
	SHRQ(U8(3), g.sa8)
	SHLQ(U8(2), g.ldc)
	return g
}

// advance moves every pointer to the next block pair.
func (g args) advance(f format) {
	ADDQ(g.sa, g.a)
	ADDQ(g.sa8, g.as)
	ADDQ(g.sa8, g.ac)
	ADDQ(U32(nr*f.pairBytes), g.b)
	ADDQ(U32(nr*4), g.bs)
}

// constant broadcasts a 32-bit pattern into every lane of v (ymm or zmm).
func constant(v Register, x VecPhysical, pattern uint32) {
	MOVL(U32(pattern), EAX)
	VMOVD(EAX, x.(Vec).AsX())
	VPBROADCASTD(x.(Vec).AsX(), v)
}

// store reduces the 4 accumulators of one row (ymm, in Y0–Y15: VHADDPS
// has no EVEX form) to 4 floats, using them as temporaries, and stores the
// 4 floats at c.
func store(acc [nr]VecPhysical, c Mem) {
	VHADDPS(acc[1], acc[0], acc[0])
	VHADDPS(acc[3], acc[2], acc[2])
	VHADDPS(acc[2], acc[0], acc[0])
	VEXTRACTF128(U8(1), acc[0], acc[1].(Vec).AsX())
	VADDPS(acc[1].(Vec).AsX(), acc[0].(Vec).AsX(), acc[0].(Vec).AsX())
	VMOVUPS(acc[0].(Vec).AsX(), c)
}

// genVNNI emits kern<F>VNNIm<m>.
func genVNNI(f format, m int) {
	name := fmt.Sprintf("kern%sVNNIm%d", f.name, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×4 %s tile with VPDPBUSD; see the generator.", name, m, f.name))
	g := loadArgs()
	var acc [4][nr]VecPhysical
	for r := 0; r < m; r++ {
		for j := 0; j < nr; j++ {
			acc[r][j] = zmm[r*nr+j]
			VPXORD(acc[r][j], acc[r][j], acc[r][j])
		}
	}
	x := zmm[16:20]
	dx := zmm[20:24]
	w, hi, mask, dw, iacc, s := zmm[24], zmm[25], zmm[26], zmm[27], zmm[28], zmm[29]
	switch f {
	case q4:
		constant(mask, mask, 0x0f0f0f0f)
		VMOVDQU64(q4Shifts(), hi) // hi holds the per-quadword shift counts
	case i2:
		constant(mask, mask, 0x03030303)
		VMOVDQU64(i2Shifts(), hi)
	case i1:
		constant(mask, mask, 0x10101010) // 16: an int1 bit's unpacked value
		VMOVDQU64(i1Index(), hi)
		VMOVDQU64(i1Bits(), dx[3]) // free: i1 tiles keep dx in memory (see below)
	}
	TESTQ(g.np, g.np)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	for r := 0; r < m; r++ {
		VMOVDQU64(Mem{Base: g.a, Disp: r * 64}, x[r])
		if f != i1 || r < 3 {
			VBROADCASTSD(Mem{Base: g.as, Disp: r * 8}, dx[r])
		}
	}
	// Software prefetch of the panel's bytes pfDist ahead: one line per
	// 64 bytes of the pair's panel block (4 for q8_0, 2 for q4_0).
	for off := 0; off < nr*f.pairBytes; off += 64 {
		PREFETCHT0(Mem{Base: g.b, Disp: pfDist + off})
	}
	for j := 0; j < nr; j++ {
		if f == q8 {
			VMOVDQU64(Mem{Base: g.b, Disp: j * 64}, w)
		} else if f == q4 {
			// The 32 bytes in both halves, the upper half shifted right by
			// 4 (per quadword: the bits that cross into a byte from its
			// neighbour are masked off), then the low nibble of every byte.
			VBROADCASTI64X4(Mem{Base: g.b, Disp: j * 32}, w)
			VPSRLVQ(hi, w, w)
			VPANDD(mask, w, w)
		} else if f == i2 {
			// §III-B's up-convert, 4 instructions per 64 weights: the 16
			// bytes in all four 128-bit lanes, shifted right by 2·lane so
			// lane L's field L lands in bits 1:0, masked, then times 4
			// (a left shift before masking would lose the top field of a
			// quadword's last byte).
			VBROADCASTI32X4(Mem{Base: g.b, Disp: j * 16}, w)
			VPSRLVQ(hi, w, w)
			VPANDD(mask, w, w)
			VPSLLQ(U8(2), w, w)
		} else {
			// §III-D's up-convert: the 8 bytes in every quadword, byte p
			// ← source byte p/8 (VPSHUFB), tested against bit p%8, 16 where
			// set (VPTESTMB, zero-masked VMOVDQU8).
			VPBROADCASTQ(Mem{Base: g.b, Disp: j * 8}, w)
			VPSHUFB(hi, w, w)
			VPTESTMB(dx[3], w, K1)
			VMOVDQU8_Z(mask, K1, w)
		}
		VPBROADCASTD(Mem{Base: g.bs, Disp: j * 4}, dw.(Vec).AsY())
		VCVTPH2PS(dw.(Vec).AsY(), dw)
		for r := 0; r < m; r++ {
			VPBROADCASTQ(Mem{Base: g.ac, Disp: r * 8}, iacc)
			// Go operand order: VPDPBUSD src2 (s8), src1 (u8), dst.
			Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{x[r], w, iacc}})
			VCVTDQ2PS(iacc, iacc)
			if f == i1 && r == 3 {
				VBROADCASTSD(Mem{Base: g.as, Disp: r * 8}, s)
				VMULPS(s, dw, s)
			} else {
				VMULPS(dx[r], dw, s)
			}
			VFMADD231PS(iacc, s, acc[r][j])
		}
	}
	g.advance(f)
	DECQ(g.np)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		var ya [nr]VecPhysical
		for j := 0; j < nr; j++ {
			VEXTRACTF64X4(U8(1), acc[r][j], w.(Vec).AsY())
			VADDPS(w.(Vec).AsY(), acc[r][j].(Vec).AsY(), acc[r][j].(Vec).AsY())
			ya[j] = acc[r][j].(Vec).AsY().(VecPhysical)
		}
		store(ya, Mem{Base: g.c})
		if r+1 < m {
			ADDQ(g.ldc, g.c)
		}
	}
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
	constant(ones, ones, 0x00010001)
	if f == q4 {
		constant(cst, cst, 0x0f0f0f0f)
	} else {
		constant(cst, cst, 0x80808080)
	}
	TESTQ(g.np, g.np)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	VMOVDQU(Mem{Base: g.a}, x0)
	VMOVDQU(Mem{Base: g.a, Disp: 32}, x1)
	VBROADCASTSD(Mem{Base: g.as}, dx)
	for j := 0; j < nr; j++ {
		VPBROADCASTD(Mem{Base: g.bs, Disp: j * 4}, dw.(Vec).AsX())
		VCVTPH2PS(dw.(Vec).AsX(), dw)
		if f == q4 {
			VPBROADCASTQ(Mem{Base: g.ac}, iacc)
			VMOVDQU(Mem{Base: g.b, Disp: j * 32}, w)
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
				VPXOR(Mem{Base: g.b, Disp: j*64 + h*32}, cst, w) // signed w
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
	DECQ(g.np)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	store(acc, Mem{Base: g.c})
	VZEROUPPER()
	RET()
}
