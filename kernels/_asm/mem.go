// Command _asm generates kernels/mem_amd64.s, the AVX2 and AVX-512 memory
// kernels of package kernels, with avo:
//
//	cd kernels/_asm && go run . -out ../mem_amd64.s
//
// (or `go generate ./kernels/`; scripts/gen-asm.sh regenerates and fails on
// any diff). Every kernel is written once, generic over the vector width; the
// AVX2 variant uses ymm registers and the AVX-512 variant zmm registers, with
// the same control flow, so the AVX-512 code path is the AVX2 path (which is
// tested on every amd64 machine with AVX2) with wider registers.
//
// Only physical registers 0..15 are used, so every xmm/ymm instruction is
// VEX-encoded: the AVX2 functions contain no EVEX instruction, and the AVX-512
// functions need AVX512F only (zmm loads/stores/arithmetic, VEXTRACTF64X4).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa describes one vector width.
type isa struct {
	Name  string        // function name suffix: "AVX2", "AVX512"
	Vec   []VecPhysical // the 16 vector registers of this width
	Bytes int           // bytes per vector
}

func (v isa) lanes() int { return v.Bytes / 8 }

var (
	xmm = []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}

	avx2   = isa{Name: "AVX2", Vec: ymm, Bytes: 32}
	avx512 = isa{Name: "AVX512", Vec: zmm, Bytes: 64}
)

func main() {
	ConstraintExpr("!purego")
	for _, v := range []isa{avx2, avx512} {
		genRead(v)
		genWrite(v)
		genWriteNT(v)
		genCopy(v)
		genTriad(v)
	}
	Generate()
}

func at(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

func param(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// blockLoop emits
//
//	n -= elems; if n < 0 { goto done }
//	loop: body(); n -= elems; if n >= 0 { goto loop }
//	done: n += elems
//
// so body runs once per whole block of elems elements and n is left holding
// the remaining count (0 <= n < elems). n is a signed element count.
func blockLoop(name string, n Register, elems int, body func()) {
	loop, done := name+"_loop", name+"_done"
	SUBQ(U32(elems), n)
	JL(LabelRef(done))
	Label(loop)
	body()
	SUBQ(U32(elems), n)
	JGE(LabelRef(loop))
	Label(done)
	ADDQ(U32(elems), n)
}

// scalarLoop emits: for n > 0 { body(); n-- }.
func scalarLoop(name string, n Register, body func()) {
	loop, done := name+"_loop", name+"_done"
	TESTQ(n, n)
	JE(LabelRef(done))
	Label(loop)
	body()
	DECQ(n)
	JNE(LabelRef(loop))
	Label(done)
}

// genRead: one VADDPD with a memory operand per vector reaches the L1 load
// limit on Zen 4 (~165 GB/s best-of-N at 16 KiB, likwid-bench load_avx 153).
// Sending half of the vectors to the FMA pipes (VFMADD231PD by 1.0, which
// rounds like an add) to relieve the two FADD pipes was measured: no gain.
func genRead(v isa) {
	fn := "read" + v.Name
	TEXT(fn, NOSPLIT, "func(x []float64) float64")
	p := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	acc := v.Vec[:8]
	for _, a := range acc {
		VXORPD(a, a, a)
	}

	Comment("8 independent accumulators, 8 vectors per iteration; VADDPD with a memory operand (2 loads/cycle)")
	blockLoop(fn+"_block", n, 8*v.lanes(), func() {
		for i, a := range acc {
			VADDPD(at(p, i*v.Bytes), a, a)
		}
		ADDQ(U32(8*v.Bytes), p)
	})
	Comment("Whole vectors")
	blockLoop(fn+"_vec", n, v.lanes(), func() {
		VADDPD(at(p, 0), acc[0], acc[0])
		ADDQ(U32(v.Bytes), p)
	})

	Comment("Reduce the accumulators: pairwise tree, then across lanes")
	for s := 1; s < len(acc); s *= 2 {
		for i := 0; i+s < len(acc); i += 2 * s {
			VADDPD(acc[i+s], acc[i], acc[i])
		}
	}
	if v.Bytes == 64 {
		VEXTRACTF64X4(Imm(1), Z0, Y1)
		VADDPD(Y1, Y0, Y0)
	}
	VEXTRACTF128(Imm(1), Y0, X1)
	VADDPD(X1, X0, X0)
	VUNPCKHPD(X0, X0, X1)
	VADDSD(X1, X0, X0)

	Comment("Scalar tail")
	scalarLoop(fn+"_tail", n, func() {
		VADDSD(at(p, 0), X0, X0)
		ADDQ(Imm(8), p)
	})
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

func genWrite(v isa) {
	fn := "write" + v.Name
	TEXT(fn, NOSPLIT, "func(x []float64, v float64)")
	p := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	val := v.Vec[0]
	VBROADCASTSD(param("v"), val)

	Comment("8 vector stores per iteration")
	blockLoop(fn+"_block", n, 8*v.lanes(), func() {
		for i := 0; i < 8; i++ {
			VMOVUPD(val, at(p, i*v.Bytes))
		}
		ADDQ(U32(8*v.Bytes), p)
	})
	Comment("Whole vectors")
	blockLoop(fn+"_vec", n, v.lanes(), func() {
		VMOVUPD(val, at(p, 0))
		ADDQ(U32(v.Bytes), p)
	})
	Comment("Scalar tail")
	scalarLoop(fn+"_tail", n, func() {
		VMOVSD(X0, at(p, 0))
		ADDQ(Imm(8), p)
	})
	VZEROUPPER()
	RET()
}

func genWriteNT(v isa) {
	fn := "writeNT" + v.Name
	TEXT(fn, NOSPLIT, "func(x []float64, v float64)")
	p := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	bits := GP64()
	MOVQ(param("v"), bits)
	val := v.Vec[0]
	VBROADCASTSD(param("v"), val)

	Comment("Unaligned head: scalar MOVNTI until p is 64-byte (cache-line) aligned")
	head, aligned := fn+"_head", fn+"_aligned"
	Label(head)
	TESTQ(n, n)
	JE(LabelRef(aligned))
	TESTQ(U32(63), p)
	JE(LabelRef(aligned))
	MOVNTIQ(bits, at(p, 0))
	ADDQ(Imm(8), p)
	DECQ(n)
	JMP(LabelRef(head))
	Label(aligned)

	per := 256 / v.Bytes // 256 bytes = 4 cache lines per iteration
	Comment(fmt.Sprintf("%d aligned VMOVNTPD per iteration (4 whole cache lines)", per))
	blockLoop(fn+"_block", n, per*v.lanes(), func() {
		for i := 0; i < per; i++ {
			VMOVNTPD(val, at(p, i*v.Bytes))
		}
		ADDQ(U32(256), p)
	})
	Comment("Whole vectors (still aligned)")
	blockLoop(fn+"_vec", n, v.lanes(), func() {
		VMOVNTPD(val, at(p, 0))
		ADDQ(U32(v.Bytes), p)
	})
	Comment("Scalar tail")
	scalarLoop(fn+"_tail", n, func() {
		MOVNTIQ(bits, at(p, 0))
		ADDQ(Imm(8), p)
	})
	SFENCE()
	VZEROUPPER()
	RET()
}

func genCopy(v isa) {
	fn := "copy" + v.Name
	TEXT(fn, NOSPLIT, "func(dst, src []float64)")
	d := Load(Param("dst").Base(), GP64())
	s := Load(Param("src").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())

	Comment("8 vectors per iteration: 8 loads, then 8 stores")
	blockLoop(fn+"_block", n, 8*v.lanes(), func() {
		for i := 0; i < 8; i++ {
			VMOVUPD(at(s, i*v.Bytes), v.Vec[i])
		}
		for i := 0; i < 8; i++ {
			VMOVUPD(v.Vec[i], at(d, i*v.Bytes))
		}
		ADDQ(U32(8*v.Bytes), s)
		ADDQ(U32(8*v.Bytes), d)
	})
	Comment("Whole vectors")
	blockLoop(fn+"_vec", n, v.lanes(), func() {
		VMOVUPD(at(s, 0), v.Vec[0])
		VMOVUPD(v.Vec[0], at(d, 0))
		ADDQ(U32(v.Bytes), s)
		ADDQ(U32(v.Bytes), d)
	})
	Comment("Scalar tail")
	t := GP64()
	scalarLoop(fn+"_tail", n, func() {
		MOVQ(at(s, 0), t)
		MOVQ(t, at(d, 0))
		ADDQ(Imm(8), s)
		ADDQ(Imm(8), d)
	})
	VZEROUPPER()
	RET()
}

func genTriad(v isa) {
	fn := "triad" + v.Name
	TEXT(fn, NOSPLIT, "func(a, b, c []float64, s float64)")
	a := Load(Param("a").Base(), GP64())
	b := Load(Param("b").Base(), GP64())
	c := Load(Param("c").Base(), GP64())
	n := Load(Param("a").Len(), GP64())
	sv := v.Vec[8]
	VBROADCASTSD(param("s"), sv)

	Comment("8 vectors per iteration: t = c; t = s*t + b (FMA); a = t")
	blockLoop(fn+"_block", n, 8*v.lanes(), func() {
		for i := 0; i < 8; i++ {
			VMOVUPD(at(c, i*v.Bytes), v.Vec[i])
		}
		for i := 0; i < 8; i++ {
			VFMADD213PD(at(b, i*v.Bytes), sv, v.Vec[i])
		}
		for i := 0; i < 8; i++ {
			VMOVUPD(v.Vec[i], at(a, i*v.Bytes))
		}
		for _, r := range []Register{a, b, c} {
			ADDQ(U32(8*v.Bytes), r)
		}
	})
	Comment("Whole vectors")
	blockLoop(fn+"_vec", n, v.lanes(), func() {
		VMOVUPD(at(c, 0), v.Vec[0])
		VFMADD213PD(at(b, 0), sv, v.Vec[0])
		VMOVUPD(v.Vec[0], at(a, 0))
		for _, r := range []Register{a, b, c} {
			ADDQ(U32(v.Bytes), r)
		}
	})
	Comment("Scalar tail")
	scalarLoop(fn+"_tail", n, func() {
		VMOVSD(at(c, 0), X0)
		VFMADD213SD(at(b, 0), xmm[8], X0)
		VMOVSD(X0, at(a, 0))
		for _, r := range []Register{a, b, c} {
			ADDQ(Imm(8), r)
		}
	})
	VZEROUPPER()
	RET()
}
