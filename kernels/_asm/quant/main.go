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
// between the pair's two blocks holds the unsigned weights times the int8
// activations plus the activations' offset correction (ac, broadcast as
// [c0, c1, c0, c1, ...]), is converted to float32 and added into a float
// accumulator with the per-lane scale dw·dx, where dw is the pair's two
// fp16 weight scales widened (VCVTPH2PS: [d0, d1, d0, d1, ...]; VNNI: the
// 32-bit word broadcast, AVX2: see below) and dx the two float32
// activation scales broadcast as one 64-bit word. The tile's 4
// accumulators per row are reduced horizontally at the end and stored as
// 4 floats.
//
// AVX512VNNI (zmm, 16 int32 lanes, corrections −o·Σq/8): VPDPBUSD does the
// whole u8×s8 dot product of 64 weights in one instruction, the weight
// vector (q8_0: 64 bytes; q4_0: 32 bytes broadcast to both halves, the
// upper half shifted by 4 with VPSRLVQ, masked to nibbles) shared by the mr ≤ 4 activation rows held
// in registers: 16 float accumulators + 4 rows + 4 row scales + 6
// temporaries = 30 of 32 zmm.
//
// AVX2 (ymm, 8 int32 lanes, corrections −o·Σq/4, tiles of mr = 1 or 2
// rows): a row's pair is two 32-byte halves x0 (positions 0..31) and x1
// (32..63), and each column's pair is up-converted once per tile into two
// u8 vectors lo and hi, the unsigned values of the same positions:
//   - q4_0: lo = w & 0x0f, hi = (w >> 4) & 0x0f (VPSRLW, 2 VPAND: 3
//     instructions per 64 weights).
//   - int2, §III-B's shift-and-mask on this layout: the 16 bytes in both
//     128-bit lanes (VBROADCASTI128, a load), VPSRLVQ by 0 | 2 brings
//     fields 0 | 1 to bits 1:0 (lo), VPSRLQ by 4 of that fields 2 | 3
//     (hi), each VPAND 0x03 (a quadword shift by at most 6 brings a
//     neighbouring byte's bits only above bit 1): 4 instructions. The
//     field is u/4: VPMADDWD multiplies by 4.
//   - int1, §III-D's shuffle-and-test: each half's 4 bytes in every dword
//     (VPBROADCASTD, a load), VPSHUFB byte p ← source byte p/8 (in-lane),
//     VPAND bit p%8, VPMINUB 1 → 0 or 1: 6 instructions. The paper's
//     VPCMPEQB and VPBLENDVB to ±1 become one VPMINUB to 0/1, because
//     VPMADDUBSW needs an unsigned operand and the offset is the
//     correction's; the bit is u/16: VPMADDWD multiplies by 16.
//
// Then per row r: VPMADDUBSW(lo u8, x0 s8) and VPMADDUBSW(hi, x1), the
// two added in int16 (VPADDW: positions p and p + 32 lie in 4-byte groups
// of the same block), VPMADDWD with int16 mult (1, 4 or 16) to int32
// lanes of 4 positions each, VPADDD the correction, VCVTDQ2PS, and
// VFMADD231PS with the column's lane scales [d0·dx0, d1·dx1, ...], which
// VPERMPD picks from the 4 columns' scales made once per pair and row
// (VCVTPH2PS of the 4 scale words from memory, times dx). Per column and
// row that is 8 instructions after the up-convert, so 11 (q4_0), 12
// (int2) or 14 (int1) per 64 weights and row at mr = 1, besides loads;
// per 256-bit vector of 32 weights (the paper's γ unit) half that. mr = 2
// shares the up-convert and the weight loads between the rows.
//
// No saturation: a VPMADDUBSW int16 lane is u_a·x_a + u_b·x_b with |x| ≤
// 127 (the quantizer's |round(x/d)|, d = max|x|/127), so at most 2·15·127
// = 3810 (q4_0), 2·3·127 = 762 (int2 fields), 2·127 = 254 (int1 bits); the
// VPADDW of the halves doubles that (7620 < 2^15); VPMADDWD gives
// mult·(sum of 2) ≤ 15240, 12192 or 16256, and the correction adds at most
// 2·32·127 = 8128: the int32 lanes are exact and below 2^24, so
// VCVTDQ2PS is exact too (the lanes split kernGo's S exactly).
//
// q8_0: the stored byte XOR 0x80 is the signed weight w; VPMADDUBSW needs
// one unsigned operand, so it multiplies |w| (VPABSB: −128 → 128 as u8)
// by x·sign(w) (VPSIGNB), exact: |x| ≤ 127, so a pair is at most 2·128·127
// = 32512 < 2^15, which leaves no room to add the halves in int16: each
// half gets its VPMADDWD (ones), then VPADDD; no corrections (the XOR
// removes the stored offset). 14 instructions per 64 weights and row; at
// mr = 2 the XOR and VPABSB are shared, x is loaded for VPSIGNB.
//
// Registers: mr = 1: 4 float accumulators, x0, x1, the correction, the
// scales, lo, hi, 2 temporaries and up to 4 constants = 16 ymm; mr = 2: 8
// accumulators, 2 rows' scales, lo, hi, 2 temporaries and 2 constants
// (q8_0: the two halves' |w|) = 16, the activations, corrections and other
// constants memory operands. A third row's 4 accumulators do not fit.
// Indicative, on the loaded 2-core Zen host (an L1-resident 4×2048 panel,
// fastest of 15 runs, ns per row): mr = 1 q8_0 159, q4_0 127, int2 143,
// int1 171 (the earlier AVX2 q8_0 and q4_0 kernels 188 and 149, the Go
// tiles ~37000); mr = 2 145, 116, 121, 149.
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
		for m := 1; m <= avx2MR; m++ {
			genAVX2(f, m)
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

// avx2MR is the tallest AVX2 tile (rows of X).
const avx2MR = 2

// avx2Const is a ymm constant of the AVX2 kernels: a 32-bit pattern in
// every lane (mem nil) or a RODATA vector (its first 32 bytes).
type avx2Const struct {
	pattern uint32
	mem     func() Mem
}

// Memory forms of the broadcast patterns, for the constants that get no
// register.
var patternMem = map[uint32]func() Mem{}

func (k avx2Const) memory() Mem {
	if k.mem != nil {
		return k.mem()
	}
	if patternMem[k.pattern] == nil {
		patternMem[k.pattern] = asmutil.Words64(fmt.Sprintf("avx2c%08x", k.pattern), false, func(int) uint64 { return uint64(k.pattern) })
	}
	return patternMem[k.pattern]()
}

var (
	cOnes16    = avx2Const{pattern: 0x00010001} // int16 1: VPMADDWD's pair sum
	cX80       = avx2Const{pattern: 0x80808080}
	cMask0F    = avx2Const{pattern: 0x0f0f0f0f}
	cMask03    = avx2Const{pattern: 0x03030303}
	cFour16    = avx2Const{pattern: 0x00040004} // int16 4: int2's mult
	cI2Cnt     = avx2Const{mem: i2Shifts}       // its first 32 bytes: qword counts 0, 0, 2, 2
	cI1Idx     = avx2Const{mem: i1Index}        // bytes 0..31: p/8
	cI1Bits    = avx2Const{mem: i1Bits}         // 1 << (p%8)
	cOne8      = avx2Const{pattern: 0x01010101}
	cSixteen16 = avx2Const{pattern: 0x00100010} // int16 16: int1's mult
)

// genAVX2 emits kern<F>AVX2m<m> (m = 1 or 2).
func genAVX2(f format, m int) {
	name := fmt.Sprintf("kern%sAVX2m%d", f.name, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes a %d×4 %s tile with VPMADDUBSW; see the generator.", name, m, f.name))
	g := loadArgs()
	acc := make([][nr]VecPhysical, m)
	for r := range acc {
		for j := range acc[r] {
			acc[r][j] = ymm[r*nr+j]
			VXORPS(acc[r][j], acc[r][j], acc[r][j])
		}
	}
	// Registers after the accumulators: m = 1 keeps the row's activations
	// x0, x1 and correction acv in registers, m = 2 reads them from memory
	// at each use (VPMADDUBSW takes its s8 operand from memory).
	var x [2][2]Op   // x[r][h]: row r's half h (positions 32h..32h+31)
	var acv Register // m = 1: the correction [c0, c1, c0, c1, ...]
	var s []VecPhysical
	free := ymm[4*m:]
	take := func(n int) []VecPhysical { v := free[:n]; free = free[n:]; return v }
	if m == 1 {
		xr := take(2)
		x[0] = [2]Op{xr[0], xr[1]}
		if f != q8 {
			acv = take(1)[0]
		}
	} else {
		for r := 0; r < m; r++ {
			x[r] = [2]Op{Mem{Base: g.A, Disp: r * 64}, Mem{Base: g.A, Disp: r*64 + 32}}
		}
	}
	s = take(m) // per row: the 4 columns' dw times the row's dx
	lo, hi, t, t2 := take(1)[0], take(1)[0], take(1)[0], take(1)[0]
	var abs [2]VecPhysical // q8_0, m = 2: |w| of the two halves
	if f == q8 && m > 1 {
		abs[0], abs[1] = take(1)[0], take(1)[0]
	}
	// The format's constants, k[1] the int16 multiplier of VPMADDWD (the
	// pair sum times mult), most used first: registers while any are left,
	// then memory.
	var consts []avx2Const
	switch f {
	case q8:
		consts = []avx2Const{cX80, cOnes16}
	case q4:
		consts = []avx2Const{cMask0F, cOnes16}
	case i2:
		consts = []avx2Const{cMask03, cFour16, cI2Cnt}
	case i1:
		consts = []avx2Const{cI1Bits, cSixteen16, cOne8, cI1Idx}
	}
	k := make([]Op, len(consts))
	for i, c := range consts {
		if len(free) == 0 {
			k[i] = c.memory()
			continue
		}
		v := take(1)[0]
		if c.mem != nil {
			VMOVDQU(c.mem(), v)
		} else {
			asmutil.Broadcast32(v, v, c.pattern)
		}
		k[i] = v
	}

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	// Software prefetch of the panel's bytes pfDist ahead, as the VNNI
	// tiles (genVNNI) do: one line per 64 bytes of the pair's panel block.
	// Measured on the Zen 5 VM (bench gemm --backend avx2-F --m 1 --n
	// 65536 --k 8192, 3 rounds alternated with the kernels without it,
	// fraction of the roof re-measured beside each figure): 1 thread q8_0
	// 83–84% → 94%, q4_0 71–72% → 92–98%, int2 52% → 54% (up-convert-
	// bound); 2 threads (2 rounds) q8_0 93–95% → 96%, q4_0 90% → 99–101%,
	// int2 84–85% → 88%.
	for off := 0; off < nr*f.pairBytes; off += 64 {
		PREFETCHT0(Mem{Base: g.B, Disp: pfDist + off})
	}
	if m == 1 {
		VMOVDQU(Mem{Base: g.A}, x[0][0])
		VMOVDQU(Mem{Base: g.A, Disp: 32}, x[0][1])
		if acv != nil {
			VPBROADCASTQ(Mem{Base: g.AC}, acv)
		}
		VBROADCASTSD(Mem{Base: g.AS}, t)
		VCVTPH2PS(Mem{Base: g.BS}, s[0])
		VMULPS(t, s[0], s[0])
	} else {
		VCVTPH2PS(Mem{Base: g.BS}, t) // [d0, d1] of the 4 columns
		for r := 0; r < m; r++ {
			VBROADCASTSD(Mem{Base: g.AS, Disp: r * 8}, s[r])
			VMULPS(t, s[r], s[r])
		}
	}
	for j := 0; j < nr; j++ {
		w := Mem{Base: g.B, Disp: j * f.pairBytes}
		switch f {
		case q8:
			if m == 1 {
				break // per row below
			}
			for h, a := range abs {
				v := []VecPhysical{lo, hi}[h]
				VMOVDQU(w.Offset(32*h), v)
				VPXOR(k[0], v, v) // signed w
				VPABSB(v, a)      // |w| as u8
			}
		case q4:
			VMOVDQU(w, hi)
			VPAND(k[0], hi, lo)
			VPSRLW(U8(4), hi, hi)
			VPAND(k[0], hi, hi)
		case i2:
			VBROADCASTI128(w, hi)
			VPSRLVQ(k[2], hi, lo) // fields 0 (low lane) and 1 (high lane) in bits 1:0
			VPSRLQ(U8(4), lo, hi) // fields 2 and 3
			VPAND(k[0], lo, lo)
			VPAND(k[0], hi, hi)
		case i1:
			VPBROADCASTD(w, lo)
			VPBROADCASTD(w.Offset(4), hi)
			for _, v := range []VecPhysical{lo, hi} {
				VPSHUFB(k[3], v, v) // byte p ← source byte p/8
				VPAND(k[0], v, v)   // bit p%8
				VPMINUB(k[2], v, v) // 0 or 1
			}
		}
		for r := 0; r < m; r++ {
			if f == q8 {
				// The sign trick per half: t = x·sign(w), times |w|.
				for h, th := range []VecPhysical{t, t2} {
					v := []VecPhysical{lo, hi}[h]
					if m == 1 {
						VPXOR(w.Offset(32*h), k[0], v)
						VPSIGNB(v, x[r][h], th)
						VPABSB(v, v)
						VPMADDUBSW(th, v, th)
					} else {
						VMOVDQU(x[r][h], th)
						VPSIGNB(v, th, th)
						VPMADDUBSW(th, abs[h], th)
					}
					VPMADDWD(k[1], th, th)
				}
				VPADDD(t2, t, t)
			} else {
				// Go operand order: VPMADDUBSW src2 (s8), src1 (u8), dst.
				VPMADDUBSW(x[r][0], lo, t)
				VPMADDUBSW(x[r][1], hi, t2)
				VPADDW(t2, t, t)
				VPMADDWD(k[1], t, t) // times mult
				if m == 1 {
					VPADDD(acv, t, t)
				} else {
					VPBROADCASTQ(Mem{Base: g.AC, Disp: r * 8}, t2)
					VPADDD(t2, t, t)
				}
			}
			VCVTDQ2PS(t, t)
			VPERMPD(U8(0x55*j), s[r], t2) // column j's [d0·dx0, d1·dx1] in every 128-bit lane
			VFMADD231PS(t, t2, acc[r][j])
		}
	}
	g.advance(f)
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
