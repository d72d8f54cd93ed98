// Command gemm generates kernels/gemm/kernels_amd64.s, the GEMM microkernels of
// package gemm (AVX2 and AVX-512), with avo:
//
//	cd kernels/_asm && go run ./gemm -out ../gemm/kernels_amd64.s
//
// (or `go generate ./kernels/gemm/`).
//
// Every kernel family is written once, generic over the vector width: the
// AVX2 variant uses ymm registers (16 of them), the AVX-512 variant zmm
// registers (32 of them) with the same instruction sequence and a taller
// register tile, so the AVX-512 code is the AVX2 code, tested on every AVX2
// machine, with wider registers and more rows. The only instruction changes
// are forced by the encodings: VXORPS zmm needs AVX512DQ, so accumulators are
// zeroed with VPXORD (AVX512F) on zmm.
//
// Float kernels (fp32 and bf16 weights), func(k, a, b, c, ldc, add):
//
//	for r < m, j < NR: s = Σ_{p<k} a[p*m+r] * B(b, p*NR+j)
//	                   c[r*ldc+j] = s            (add == 0)
//	                   c[r*ldc+j] += s           (add != 0)
//
// a is a packed sliver of X (k steps of m floats), b a packed panel of W
// (k steps of NR weights: float32, or bf16 bits widened to float32 in
// register by VPMOVZXWD + VPSLLD $16). The register tile is m × NR with
// NR = 2 vectors (16 columns on AVX2, 32 on AVX-512): m ≤ MR = 6 rows on AVX2
// (12 accumulators + 2 weight vectors + 2 broadcast registers = 16 ymm),
// m ≤ MR = 12 on AVX-512 (24 + 2 + 2 = 28 of 32 zmm; 14 rows would fit 32
// exactly but 12 keeps two spare registers and MC a multiple of 6 too).
// Short tiles (m < MR, used for edge rows and for decode, M = 1) keep
// U independent accumulator sets (k steps cycle through them, summed at the
// end) so at least 8 FMA chains are in flight to cover the 4-cycle FMA
// latency even for one row.
//
// Int8 kernels, func(kp, a, b, c, ldc, xs, ws):
//
//	for r < m, j < NR: s = Σ_{p<kp} Σ_{t<2} A16(a, p*m+r, t) * int16(b[(p*NR+j)*2+t])
//	                   c[r*ldc+j] = float32(s) * ws[j] * xs[r]
//
// a holds pairs of int16 activations (x[2p], x[2p+1]) as one uint32 per row
// and k pair; b holds int8 weights, NR columns × 2 k values interleaved per
// k pair. Both are widened to int16 (VPMOVSXBW for the weights) and
// multiplied with VPMADDWD (int16×int16 → int32, adjacent pairs summed),
// which cannot saturate: |x| ≤ 127, |w| ≤ 128, so a pair sum is at most
// 2·127·128 = 32512 in magnitude, computed in int32. VPMADDUBSW (u8×s8 →
// saturating int16), the usual AVX2 choice, would need unsigned activations
// (x+128, corrected with column sums) and then clips: 255·127·2 = 64770 >
// 32767. Widening costs one VPMOVSXBW per 16 weights and keeps the kernel
// exact. Accumulation is int32: exact for K < 2^31/(127·128) ≈ 132k.
// AVX2: MR = 4 (8 acc + 2 weight + 1 broadcast + 2 product registers),
// AVX-512: MR = 8 (16 + 2 + 1 + 2 = 21 zmm).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type isa struct {
	Name  string
	Vec   []VecPhysical
	Bytes int // vector bytes
	MR    int // float kernel rows
	MRI8  int // int8 kernel rows
}

var (
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

	avx2   = isa{Name: "AVX2", Vec: ymm, Bytes: 32, MR: 6, MRI8: 4}
	avx512 = isa{Name: "AVX512", Vec: zmm, Bytes: 64, MR: 12, MRI8: 8}
)

const nvec = 2 // vectors per tile row: NR = nvec × lanes

// steps is the k unroll of the main loop (a multiple of every U).
const steps = 4

func (v isa) zero(r VecPhysical) {
	if v.Bytes == 64 {
		VPXORD(r, r, r)
	} else {
		VXORPS(r, r, r)
	}
}

// sets is the number of independent accumulator sets for an m-row tile: at
// least 8 FMA chains where the register file allows, at most 4 sets.
func sets(v isa, m int) int {
	acc := m * nvec
	u := 1
	for u < 4 && acc*u < 8 && acc*(u*2) <= v.MR*nvec {
		u *= 2
	}
	return u
}

func main() {
	ConstraintExpr("!purego")
	for _, v := range []isa{avx2, avx512} {
		for m := 1; m <= v.MR; m++ {
			genFloat(v, "F32", m)
		}
		for m := 1; m <= v.MR; m++ {
			genFloat(v, "BF16", m)
		}
		for m := 1; m <= v.MRI8; m++ {
			genInt8(v, m, false)
		}
	}
	for m := 1; m <= avx512.MRI8; m++ {
		genInt8(avx512, m, true)
	}
	genConvert()
	Generate()
}

// genFloat emits kern<dt><ISA>m<m>(k int, a *float32, b *byte,
// c *float32, ldc int, add int).
func genFloat(v isa, dt string, m int) {
	name := fmt.Sprintf("kern%s%sm%d", dt, v.Name, m)
	TEXT(name, NOSPLIT, "func(k int, a *float32, b *byte, c *float32, ldc int, add int, pf *byte)")
	Doc(fmt.Sprintf("%s computes an %d×%d tile; see the generator and kernels_amd64.go.", name, m, nvec*v.Bytes/4))
	esize := 4 // bytes per weight
	if dt == "BF16" {
		esize = 2
	}
	lanes := v.Bytes / 4
	nr := nvec * lanes
	u := sets(v, m)

	k := Load(Param("k"), RCX)
	a := Load(Param("a"), RSI)
	b := Load(Param("b"), RDI)
	c := Load(Param("c"), RDX)
	ldc := Load(Param("ldc"), R8)
	add := Load(Param("add"), R9)
	pf := Load(Param("pf"), R11)
	SHLQ(U8(2), ldc)

	// Register allocation: accumulators first, then weights, broadcasts.
	acc := make([][][]VecPhysical, u)
	idx := 0
	for s := 0; s < u; s++ {
		acc[s] = make([][]VecPhysical, m)
		for r := 0; r < m; r++ {
			acc[s][r] = make([]VecPhysical, nvec)
			for j := 0; j < nvec; j++ {
				acc[s][r][j] = v.Vec[idx]
				idx++
			}
		}
	}
	bv := v.Vec[idx : idx+nvec]
	bc := v.Vec[idx+nvec : idx+nvec+2]
	if idx+nvec+2 > len(v.Vec) {
		panic(name + ": out of registers")
	}

	// Prefetch the C rows for the stores at the end.
	R := R10
	MOVQ(c, R)
	for r := 0; r < m; r++ {
		PREFETCHT0(Mem{Base: R})
		PREFETCHT0(Mem{Base: R, Disp: nr*4 - 1})
		if r+1 < m {
			ADDQ(ldc, R)
		}
	}
	for s := range acc {
		for r := range acc[s] {
			for _, x := range acc[s][r] {
				v.zero(x)
			}
		}
	}

	loadB := func(j, p int, dst VecPhysical) {
		mem := Mem{Base: b, Disp: (p*nr + j*lanes) * esize}
		if dt == "BF16" {
			VPMOVZXWD(mem, dst)
			VPSLLD(U8(16), dst, dst)
		} else {
			VMOVUPS(mem, dst)
		}
	}
	step := func(p, set int) {
		if m > 1 { // one-row tiles are decode: a pure stream (see prefetch)
			prefetch(pf, p, nr*esize)
		}
		for j := 0; j < nvec; j++ {
			loadB(j, p, bv[j])
		}
		for r := 0; r < m; r++ {
			x := bc[r%2]
			VBROADCASTSS(Mem{Base: a, Disp: (p*m + r) * 4}, x)
			for j := 0; j < nvec; j++ {
				VFMADD231PS(bv[j], x, acc[set][r][j])
			}
		}
	}

	Label(name + "_main")
	CMPQ(k, U8(steps))
	JL(LabelRef(name + "_tail"))
	for p := 0; p < steps; p++ {
		step(p, p%u)
	}
	ADDQ(U32(steps*m*4), a)
	ADDQ(U32(steps*nr*esize), b)
	ADDQ(U32(steps*nr*esize), pf)
	SUBQ(U8(steps), k)
	JMP(LabelRef(name + "_main"))

	Label(name + "_tail")
	TESTQ(k, k)
	JZ(LabelRef(name + "_reduce"))
	step(0, 0)
	ADDQ(U32(m*4), a)
	ADDQ(U32(nr*esize), b)
	ADDQ(U32(nr*esize), pf)
	DECQ(k)
	JMP(LabelRef(name + "_tail"))

	Label(name + "_reduce")
	for s := 1; s < u; s++ {
		for r := 0; r < m; r++ {
			for j := 0; j < nvec; j++ {
				VADDPS(acc[s][r][j], acc[0][r][j], acc[0][r][j])
			}
		}
	}

	TESTQ(add, add)
	JZ(LabelRef(name + "_store"))
	MOVQ(c, R)
	for r := 0; r < m; r++ {
		for j := 0; j < nvec; j++ {
			VADDPS(Mem{Base: R, Disp: j * v.Bytes}, acc[0][r][j], acc[0][r][j])
		}
		if r+1 < m {
			ADDQ(ldc, R)
		}
	}
	Label(name + "_store")
	for r := 0; r < m; r++ {
		for j := 0; j < nvec; j++ {
			VMOVUPS(acc[0][r][j], Mem{Base: c, Disp: j * v.Bytes})
		}
		if r+1 < m {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}

// genInt8 emits kernI8<ISA>m<m>(kp int, a *uint32, b *int8, c *float32,
// ldc int, xs *float32, ws *float32), or with vnni kernI8<ISA>VNNIm<m>:
// the same kernel with VPMADDWD + VPADDD fused into one VPDPWSSD
// (AVX512_VNNI: int16 pairs multiplied, summed and added to the int32
// accumulator without saturation, exactly the two instructions it
// replaces). avo v0.5.0 lacks VPDPWSSD, so it is emitted as a raw
// instruction for the Go assembler, which encodes it (EVEX).
func genInt8(v isa, m int, vnni bool) {
	name := fmt.Sprintf("kernI8%sm%d", v.Name, m)
	if vnni {
		name = fmt.Sprintf("kernI8%sVNNIm%d", v.Name, m)
	}
	TEXT(name, NOSPLIT, "func(kp int, a *uint32, b *int8, c *float32, ldc int, xs *float32, ws *float32, pf *byte)")
	Doc(fmt.Sprintf("%s computes an %d×%d int8 tile; see the generator and kernels_amd64.go.", name, m, nvec*v.Bytes/4))
	lanes := v.Bytes / 4
	nr := nvec * lanes
	k := Load(Param("kp"), RCX)
	a := Load(Param("a"), RSI)
	b := Load(Param("b"), RDI)
	c := Load(Param("c"), RDX)
	ldc := Load(Param("ldc"), R8)
	xs := Load(Param("xs"), R9)
	ws := Load(Param("ws"), R11)
	pf := Load(Param("pf"), R10)
	SHLQ(U8(2), ldc)

	acc := make([][]VecPhysical, m)
	idx := 0
	for r := range acc {
		acc[r] = v.Vec[idx : idx+nvec]
		idx += nvec
	}
	bv := v.Vec[idx : idx+nvec]
	bc := v.Vec[idx+nvec]
	tmp := v.Vec[idx+nvec+1 : idx+nvec+3]
	for r := range acc {
		for _, x := range acc[r] {
			v.zero(x)
		}
	}
	// Each k pair: nr columns × 2 bytes; vector j widens lanes*2 bytes.
	step := func(p int) {
		if m > 1 {
			prefetch(pf, p, nr*2)
		}
		for j := 0; j < nvec; j++ {
			VPMOVSXBW(Mem{Base: b, Disp: p*nr*2 + j*lanes*2}, bv[j])
		}
		for r := 0; r < m; r++ {
			VPBROADCASTD(Mem{Base: a, Disp: (p*m + r) * 4}, bc)
			for j := 0; j < nvec; j++ {
				if vnni {
					// Go operand order: VPDPWSSD src2, src1, dst.
					Instruction(&ir.Instruction{Opcode: "VPDPWSSD", Operands: []Op{bv[j], bc, acc[r][j]}})
					continue
				}
				t := tmp[(r*nvec+j)%2]
				VPMADDWD(bv[j], bc, t)
				VPADDD(t, acc[r][j], acc[r][j])
			}
		}
	}
	Label(name + "_main")
	CMPQ(k, U8(steps))
	JL(LabelRef(name + "_tail"))
	for p := 0; p < steps; p++ {
		step(p)
	}
	ADDQ(U32(steps*m*4), a)
	ADDQ(U32(steps*nr*2), b)
	ADDQ(U32(steps*nr*2), pf)
	SUBQ(U8(steps), k)
	JMP(LabelRef(name + "_main"))

	Label(name + "_tail")
	TESTQ(k, k)
	JZ(LabelRef(name + "_store"))
	step(0)
	ADDQ(U32(m*4), a)
	ADDQ(U32(nr*2), b)
	ADDQ(U32(nr*2), pf)
	DECQ(k)
	JMP(LabelRef(name + "_tail"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VBROADCASTSS(Mem{Base: xs, Disp: r * 4}, bc)
		for j := 0; j < nvec; j++ {
			VCVTDQ2PS(acc[r][j], acc[r][j])
			VMULPS(Mem{Base: ws, Disp: j * v.Bytes}, acc[r][j], acc[r][j])
			VMULPS(bc, acc[r][j], acc[r][j])
			VMOVUPS(acc[r][j], Mem{Base: c, Disp: j * v.Bytes})
		}
		if r+1 < m {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}

// prefetch emits PREFETCHT0 for the cache lines that start in bytes
// [p·stride, (p+1)·stride) of pf's stream (one k step of a panel; a step
// of 32 bytes prefetches on even steps only). pf runs alongside b: the
// driver points it at the panel it will read next, and a prefetch never
// faults, so any address is safe. One-row tiles issue none: they are the
// decode GEMV, a single sequential stream through W that the hardware
// prefetcher follows, and the extra load-port uop only slowed them.
func prefetch(pf Register, p, stride int) {
	for off := p * stride; off < (p+1)*stride; off += 64 {
		if off%64 == 0 {
			PREFETCHT0(Mem{Base: pf, Disp: off})
		} else if (off/64+1)*64 < (p+1)*stride {
			PREFETCHT0(Mem{Base: pf, Disp: (off/64 + 1) * 64})
		}
	}
}
