// Command readpf generates kernels/readpf_amd64.s, the AVX2 read kernel
// with software prefetch of package kernels (readpf.go), with avo:
//
//	cd kernels/_asm && go run ./readpf -out ../readpf_amd64.s
//
// (or `go generate ./kernels/`). It is the memory kernels' AVX2 read
// (kernels/_asm/mem.go genRead: eight accumulators, one VADDPD with a
// memory operand per vector) with one PREFETCHT0 per cache line, issued
// `ahead` bytes before the loads reach it, so that more lines are in
// flight than the hardware prefetcher alone keeps (likwid-bench's load
// kernels and STREAM builds with -fprefetch-loop-arrays do the same).
// Prefetching past the end of x is harmless: PREFETCHT0 never faults.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}

func at(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

func main() {
	ConstraintExpr("!purego")
	genReadPF()
	Generate()
}

func genReadPF() {
	const bytes, lanes = 32, 4
	TEXT("readPFAVX2", NOSPLIT, "func(x []float64, ahead int) float64")
	p := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	ahead := Load(Param("ahead"), GP64())
	acc := ymm
	for _, a := range acc {
		VXORPD(a, a, a)
	}
	Comment("8 accumulators, 8 vectors (4 lines) per iteration, each line prefetched `ahead` bytes early")
	loop, done := "readpf_block_loop", "readpf_block_done"
	SUBQ(U32(8*lanes), n)
	JL(LabelRef(done))
	Label(loop)
	for l := 0; l < 4; l++ {
		PREFETCHT0(Mem{Base: p, Index: ahead, Scale: 1, Disp: l * 64})
	}
	for i, a := range acc {
		VADDPD(at(p, i*bytes), a, a)
	}
	ADDQ(U32(8*bytes), p)
	SUBQ(U32(8*lanes), n)
	JGE(LabelRef(loop))
	Label(done)
	ADDQ(U32(8*lanes), n)

	Comment("Whole vectors")
	vloop, vdone := "readpf_vec_loop", "readpf_vec_done"
	SUBQ(U32(lanes), n)
	JL(LabelRef(vdone))
	Label(vloop)
	VADDPD(at(p, 0), acc[0], acc[0])
	ADDQ(U32(bytes), p)
	SUBQ(U32(lanes), n)
	JGE(LabelRef(vloop))
	Label(vdone)
	ADDQ(U32(lanes), n)

	Comment("Reduce the accumulators: pairwise tree, then across lanes")
	for s := 1; s < len(acc); s *= 2 {
		for i := 0; i+s < len(acc); i += 2 * s {
			VADDPD(acc[i+s], acc[i], acc[i])
		}
	}
	VEXTRACTF128(Imm(1), Y0, X1)
	VADDPD(X1, X0, X0)
	VUNPCKHPD(X0, X0, X1)
	VADDSD(X1, X0, X0)

	Comment("Scalar tail")
	tloop, tdone := "readpf_tail_loop", "readpf_tail_done"
	TESTQ(n, n)
	JE(LabelRef(tdone))
	Label(tloop)
	VADDSD(at(p, 0), X0, X0)
	ADDQ(Imm(8), p)
	DECQ(n)
	JNE(LabelRef(tloop))
	Label(tdone)
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}
