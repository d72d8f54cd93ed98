// Package asmutil holds the avo helpers shared by the generators of package
// quant's kernels (kernels/_asm/quant, quantpf and quantk): the vector
// register lists, lazily emitted RODATA vector constants, the parameter
// loads of the kern signature, instructions avo lacks a function for
// (VPDPBUSD), the AVX-512 up-converts of the GEMV panels' formats and the
// horizontal reduction that stores a row of a 4-column tile.
//
// Every helper emits exactly the instructions and data the generators
// emitted inline before it was factored out, so the generated .s files do
// not change.
package asmutil

import (
	"os"
	"strconv"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// NR is the tile width of the GEMV kernels: the 4 rows of W of a panel.
const NR = 4

// Zmm and Ymm are the AVX-512 and AVX2 vector registers in number order.
var (
	Zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	Ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
)

// X and Y return the xmm and ymm views of a vector register.
func X(v Register) VecPhysical { return v.(Vec).AsX().(VecPhysical) }
func Y(v Register) VecPhysical { return v.(Vec).AsY().(VecPhysical) }

// PFDist returns how far ahead (bytes) the GEMV kernels (quant's,
// quantk's and quantcol's) prefetch the weight panel: 6144, or
// $QUANT_PFDIST for tuning (the .s files in the tree use the default). A
// PREFETCHT0 can never fault, so running past the end is safe. Measured
// on the Zen 5 VM (bench gemm --m 1 --n 151936 --k 1024 --dtype q8_0
// --threads 1, the Qwen3 LM head): no prefetch 21–23 GB/s, 1 KiB 26–35,
// 4 KiB 28–38. On 2026-11-27 (bench gemm --m 1 --n 65536 --k 8192
// --threads 1, the column-order kernels, binaries of each distance run
// in turn, 3 to 9 rounds, fraction of the 1-thread roof re-measured
// beside each figure): q4_k at 1, 4, 6, 8, 12, 16 and 24 KiB 58–59,
// 74–83, 83–91, 76–87, 77–86, 79–81 and 72–77%; q6_k 66–67, 75–83,
// 81–88, 82–85, 79–81, 79–84, 78–84%; q4_0 71–73, 88–91, 92–99, 88–92,
// 76–89, 88–89, 84–89%. PREFETCHNTA at 6 KiB measured as PREFETCHT0
// (q4_k 82–88%), PREFETCHT1 lower (q4_k 72–75%). The avx2 backend's
// lane-order kernels at 1 thread did not move beyond the noise between 4
// and 6 KiB (q8_0 79–83%, q4_0 70–71%, q4_k 72–79%). The host is noisy, so
// the choice is rough.
func PFDist() int {
	if d := os.Getenv("QUANT_PFDIST"); d != "" {
		v, _ := strconv.Atoi(d)
		return v
	}
	return 6144
}

// PFFar returns how far ahead (bytes) the column-order K-quant GEMV
// kernels (quantcol's q4_k and q6_k) issue a second prefetch of each
// weight line, PREFETCHNTA, beside PREFETCHT0 at PFDist: 12288, or
// $QUANT_PFFAR for tuning (0: none). Measured on the Zen 5 VM on
// 2026-11-27 (bench gemm --m 1 --n 65536 --k 8192, binaries with and
// without it run in turn, 10 rounds at 1 thread and 7 at 2, fraction of
// the ebw at the roof re-measured beside each figure): q6_k on 1 thread
// 68–89% without, 82–94% with (median 85 against 90); q4_k on 1 thread
// 88–92% against 84–94% (90 against 90); on 2 threads q6_k 85–93%
// against 88–109%, q4_k 90–99% against 96–101%. A second PREFETCHT1 at
// 12 KiB or PREFETCHT2 at 16 KiB lowered q4_k to 80–84% (3 rounds). The
// per-32 formats' kernels ran slower with it (3 rounds, 1 thread: q4_0
// 94–96% → 85–87%, int2 96–99% → 84–86%, int1 89–93% → 63–65%), so they
// have none.
func PFFar() int {
	if d := os.Getenv("QUANT_PFFAR"); d != "" {
		v, _ := strconv.Atoi(d)
		return v
	}
	return 12288
}

// lazy returns a function that emits the RODATA symbol name with emit on
// its first call (so only constants some kernel uses are in the .s) and
// returns its address.
func lazy(name string, emit func()) func() Mem {
	var m *Mem
	return func() Mem {
		if m == nil {
			g := GLOBL(name, RODATA|NOPTR)
			emit()
			m = &g
		}
		return *m
	}
}

// Bytes64 returns a 64-byte RODATA vector whose byte i is f(i).
func Bytes64(name string, f func(i int) byte) func() Mem {
	return lazy(name, func() {
		for i := 0; i < 64; i++ {
			DATA(i, U8(f(i)))
		}
	})
}

// Words64 returns a 64-byte RODATA vector of 16 dwords whose lane l is
// f(l), or of 8 qwords when q64.
func Words64(name string, q64 bool, f func(l int) uint64) func() Mem {
	return lazy(name, func() {
		if q64 {
			for l := 0; l < 8; l++ {
				DATA(8*l, U64(f(l)))
			}
			return
		}
		for l := 0; l < 16; l++ {
			DATA(4*l, U32(uint32(f(l))))
		}
	})
}

// The unpack constants' bytes (byte i of a vector; a ymm uses bytes 0..31).
var (
	// I2Shift: the VPSRLVQ counts 0, 2, 4, 6 of the four 128-bit lanes,
	// which bring field L of every int2 byte to bits 1:0 of lane L.
	I2Shift = func(i int) byte {
		if i%8 == 0 {
			return byte(2 * (i / 16))
		}
		return 0
	}
	// I1Index: the VPSHUFB index of byte p (within its 128-bit lane) of an
	// int1 unpack: source byte p/8.
	I1Index = func(i int) byte { return byte(i / 8) }
	// I1Bit: the bit of its source byte that byte p tests, 1 << (p%8).
	I1Bit = func(i int) byte { return 1 << (i % 8) }
)

// Args are the registers of the kern signature's parameters
//
//	func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
//
// (quantpf's bs is *uint16, its K-quant kernels' 4th parameter ax
// *float32: the same loads) and SA8 = sa/8, the stride of as and ac in
// bytes (2 elements of 4 bytes per 64 activation bytes).
type Args struct{ NP, A, AS, AC, SA, SA8, B, BS, C, LDC Register }

// LoadArgs loads the parameters into fixed registers, the 4th by the name
// corr ("ac" or "ax"), and computes SA8 (ldc is left in floats: the
// callers scale it).
func LoadArgs(corr string) Args {
	g := Args{
		NP: Load(Param("np"), RCX), A: Load(Param("a"), RSI), AS: Load(Param("as"), R8),
		AC: Load(Param(corr), R9), SA: Load(Param("sa"), R10), B: Load(Param("b"), RDI),
		BS: Load(Param("bs"), R11), C: Load(Param("c"), RDX), LDC: Load(Param("ldc"), R12),
	}
	g.SA8 = R13
	MOVQ(g.SA, g.SA8)
	SHRQ(U8(3), g.SA8)
	return g
}

// Broadcast32 broadcasts a 32-bit pattern into every lane of v (ymm or
// zmm) through EAX and the xmm view of x.
func Broadcast32(v Register, x VecPhysical, pattern uint32) {
	MOVL(U32(pattern), EAX)
	VMOVD(EAX, X(x))
	VPBROADCASTD(X(x), v)
}

// VPDPBUSD emits VPDPBUSD in Go operand order: x (s8, register or
// memory), w (u8), acc; with bcst, x is a 32-bit memory operand
// broadcast ({1to16}).
func VPDPBUSD(x Op, w, acc Register, bcst bool) {
	in := &ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{x, w, acc}}
	if bcst {
		in.Suffixes = []string{"BCST"}
	}
	Instruction(in)
}

// UpconvertZ emits the AVX-512 unpack of one row's block pair of a GEMV
// panel at m into v, the 64 unsigned values u in lane order (see package
// quant's format.go), for format f ("Q8", "Q4", "I2" or "I1"), with the
// format's constants k1, k2, k3 (registers or memory):
//
//   - Q8: the 64 bytes.
//   - Q4: k1 the VPSRLVQ counts (0 for the low 256 bits, 4 for the high),
//     k2 the nibble mask: the 32 bytes in both halves, the upper half
//     shifted right by 4 (per quadword: the bits that cross into a byte
//     from its neighbour are masked off), then the low nibble of every
//     byte.
//   - I2: k1 the counts of I2Shift, k2 the mask 0x03: §III-B's up-convert,
//     the 16 bytes in all four 128-bit lanes, shifted right by 2·lane so
//     lane L's field L lands in bits 1:0, masked, then times 4 (a left
//     shift before masking would lose the top field of a quadword's last
//     byte).
//   - I1: k1 the I1Index shuffle, k2 the I1Bit bits, k3 16 in every byte:
//     §III-D's up-convert, the 8 bytes in every quadword, byte p ← source
//     byte p/8 (VPSHUFB), tested against bit p%8, 16 where set (VPTESTMB,
//     zero-masked VMOVDQU8). It clobbers K1.
func UpconvertZ(f string, m Mem, v VecPhysical, k1, k2, k3 Op) {
	switch f {
	case "Q8":
		VMOVDQU64(m, v)
	case "Q4":
		VBROADCASTI64X4(m, v)
		VPSRLVQ(k1, v, v)
		VPANDD(k2, v, v)
	case "I2":
		VBROADCASTI32X4(m, v)
		VPSRLVQ(k1, v, v)
		VPANDD(k2, v, v)
		VPSLLQ(U8(2), v, v)
	case "I1":
		VPBROADCASTQ(m, v)
		VPSHUFB(k1, v, v)
		VPTESTMB(k2, v, K1)
		VMOVDQU8_Z(k3, K1, v)
	default:
		panic("asmutil: UpconvertZ of " + f)
	}
}

// StoreRow reduces the 4 float accumulators of one tile row (ymm, in
// Y0–Y15: VHADDPS has no EVEX form), acc[j] holding column j's lanes, to
// 4 floats, using them as temporaries, and stores the 4 floats at c.
func StoreRow(acc [NR]VecPhysical, c Mem) {
	VHADDPS(acc[1], acc[0], acc[0])
	VHADDPS(acc[3], acc[2], acc[2])
	VHADDPS(acc[2], acc[0], acc[0])
	VEXTRACTF128(U8(1), acc[0], X(acc[1]))
	VADDPS(X(acc[1]), X(acc[0]), X(acc[0]))
	VMOVUPS(X(acc[0]), c)
}

// StoreZRows stores the m rows of a tile of zmm float accumulators (acc[r]
// in Z0–Z15): each folded to ymm (upper half added to the lower, through
// tmp) and stored by StoreRow at c, c advanced by ldc bytes between rows.
func StoreZRows(acc [][NR]VecPhysical, tmp VecPhysical, c, ldc Register) {
	for r := range acc {
		var ya [NR]VecPhysical
		for j := 0; j < NR; j++ {
			VEXTRACTF64X4(U8(1), acc[r][j], Y(tmp))
			VADDPS(Y(tmp), Y(acc[r][j]), Y(acc[r][j]))
			ya[j] = Y(acc[r][j])
		}
		StoreRow(ya, Mem{Base: c})
		if r+1 < len(acc) {
			ADDQ(ldc, c)
		}
	}
}

// VGF2P8AFFINEQB emits VGF2P8AFFINEQB (GFNI), which avo lacks, in Go
// operand order: imm, the matrices a (register or memory), x, dst: each
// byte of x times its quadword's 8×8 bit matrix over GF(2), XOR imm.
func VGF2P8AFFINEQB(imm uint8, a Op, x, dst Register) {
	Instruction(&ir.Instruction{Opcode: "VGF2P8AFFINEQB", Operands: []Op{U8(imm), a, x, dst}})
}
