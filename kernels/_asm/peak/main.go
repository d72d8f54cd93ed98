// Command peak generates kernels/peak/peak_amd64.s, the register-resident
// compute-peak loops of package peak, with avo:
//
//	cd kernels/_asm && go run ./peak -out ../peak/peak_amd64.s
//
// (or `go generate ./kernels/peak/`; scripts/gen-asm.sh checks the result).
//
// Every loop has the same shape: load nacc accumulator vectors and two source
// vectors from buf (acc j at j*vecBytes, the sources after the last
// accumulator), run iters iterations of one instruction per accumulator, store
// the accumulators back to buf. Accumulators are independent chains, so the
// loop is bound by issue throughput when nacc >= latency x issue rate.
//
// avo v0.5.0 (and the Go assembler) lack VDPBF16PS, VFMADD231PH, the VEX form
// of VPDPBUSD (AVX-VNNI) and AMX, so those instructions are emitted as BYTEs
// by the encoders in encode.go, each preceded by a comment with its Intel
// mnemonic; encode_test.go checks the encoders against GNU as when installed.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var (
	xmm = []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
)

// ChainLen is the number of dependent ADDs per iteration of addChain.
const chainLen = 64

func main() {
	ConstraintExpr("!purego")

	genAddChain()

	// SSE has no FMA: half the chains multiply by a (1.0), half add b.
	genLoop("mulAddSSEPD", xmm, 14, 16, false, func(j int, acc, a, b VecPhysical) {
		if j < 7 {
			MULPD(a, acc)
		} else {
			ADDPD(b, acc)
		}
	})
	genLoop("mulAddSSEPS", xmm, 14, 16, false, func(j int, acc, a, b VecPhysical) {
		if j < 7 {
			MULPS(a, acc)
		} else {
			ADDPS(b, acc)
		}
	})

	fmaPD := func(_ int, acc, a, b VecPhysical) { VFMADD231PD(b, a, acc) }
	fmaPS := func(_ int, acc, a, b VecPhysical) { VFMADD231PS(b, a, acc) }
	genLoop("fmaAVX2PD", ymm, 12, 32, true, fmaPD)
	genLoop("fmaAVX2PS", ymm, 12, 32, true, fmaPS)
	genLoop("fmaAVX2PS14", ymm, 14, 32, true, fmaPS)
	genLoop("fmaAVX512PD", zmm, 12, 64, true, fmaPD)
	genLoop("fmaAVX512PS", zmm, 12, 64, true, fmaPS)
	genLoop("fmaAVX512PS24", zmm, 24, 64, true, fmaPS)

	raw := func(mnemonic string, enc func(dst, src1, src2 int) []byte) func(int, VecPhysical, VecPhysical, VecPhysical) {
		return func(_ int, acc, a, b VecPhysical) {
			d, s1, s2 := regNum(acc), regNum(a), regNum(b)
			emit(fmt.Sprintf("%s %s, %s, %s", mnemonic, regName(acc), regName(a), regName(b)), enc(d, s1, s2))
		}
	}
	genLoop("dpbf16AVX512", zmm, 12, 64, true, raw("VDPBF16PS", encVDPBF16PS))
	genLoop("fmaphAVX512", zmm, 12, 64, true, raw("VFMADD231PH", encVFMADD231PH))
	genLoop("dpbusdAVX512", zmm, 12, 64, true, raw("VPDPBUSD", encVPDPBUSDzmm))
	genLoop("dpbusdAVXVNNI", ymm, 12, 32, true, raw("{vex} VPDPBUSD", encVPDPBUSDymmVEX))

	genAMX("amxBF16", "TDPBF16PS", encTDPBF16PS)
	genAMX("amxInt8", "TDPBUSD", encTDPBUSD)

	Generate()
}

func regNum(r VecPhysical) int { return int(r.PhysicalIndex()) }

// regName is the Intel name of a vector register: xmm3, ymm3, zmm31.
func regName(r VecPhysical) string {
	prefix := map[uint]string{16: "xmm", 32: "ymm", 64: "zmm"}[r.Size()]
	return fmt.Sprintf("%s%d", prefix, r.PhysicalIndex())
}

// emit writes raw instruction bytes, preceded by the Intel mnemonic.
func emit(mnemonic string, b []byte) {
	Comment(mnemonic)
	for _, x := range b {
		Instruction(&ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(x)}})
	}
}

// genLoop emits func name(buf *byte, iters int): nacc accumulators in
// vec[0:nacc], sources a and b in the last two registers of vec.
func genLoop(name string, vec []VecPhysical, nacc, vecBytes int, vex bool, body func(j int, acc, a, b VecPhysical)) {
	TEXT(name, NOSPLIT, "func(buf *byte, iters int)")
	a, b := vec[len(vec)-2], vec[len(vec)-1]
	Doc(fmt.Sprintf("%s runs iters iterations of %d independent accumulator updates (see the Go declaration).", name, nacc))
	p := Load(Param("buf"), RDI)
	n := Load(Param("iters"), RCX)
	mov := func(src, dst Op) {
		if vex {
			VMOVUPS(src, dst)
		} else {
			MOVUPS(src, dst)
		}
	}
	for j := 0; j < nacc; j++ {
		mov(Mem{Base: p, Disp: j * vecBytes}, vec[j])
	}
	mov(Mem{Base: p, Disp: nacc * vecBytes}, a)
	mov(Mem{Base: p, Disp: (nacc + 1) * vecBytes}, b)
	TESTQ(n, n)
	JLE(LabelRef(name + "_done"))
	Label(name + "_loop")
	for j := 0; j < nacc; j++ {
		body(j, vec[j], a, b)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	for j := 0; j < nacc; j++ {
		mov(vec[j], Mem{Base: p, Disp: j * vecBytes})
	}
	if vex {
		VZEROUPPER()
	}
	RET()
}

// genAddChain emits func addChain(iters int) uint64: chainLen dependent
// ADDQ BX, AX per iteration (1 cycle latency each on every x86 core bench
// knows; a register source, not an immediate, so no renamer folds them).
func genAddChain() {
	TEXT("addChain", NOSPLIT, "func(iters int) uint64")
	Doc("addChain returns chainLen*iters, computed by a chain of dependent adds.")
	n := Load(Param("iters"), RCX)
	XORQ(RAX, RAX)
	MOVQ(U32(1), RBX)
	TESTQ(n, n)
	JLE(LabelRef("addChain_done"))
	Label("addChain_loop")
	for range chainLen {
		ADDQ(RBX, RAX)
	}
	DECQ(n)
	JNZ(LabelRef("addChain_loop"))
	Label("addChain_done")
	Store(RAX, ReturnIndex(0))
	RET()
}

// AMX buffer layout (amxBufBytes, see peak_amd64.go): A0, A1, B0, B1 and
// C0..C3, 1 KiB each (16 rows x 64 bytes), then the 64-byte tile
// configuration. Tiles: C0..C3 = tmm0..3, A0, A1 = tmm4, tmm5, B0, B1 =
// tmm6, tmm7; every iteration does C[2i+j] += A[i] * B[j], four independent
// accumulations.
func genAMX(name, mnemonic string, enc func(c, a, b int) []byte) {
	TEXT(name, NOSPLIT, "func(buf *byte, iters int)")
	Doc(fmt.Sprintf("%s runs iters iterations of four %s on tiles loaded from buf.", name, mnemonic))
	Load(Param("buf"), RDI)
	n := Load(Param("iters"), RCX)
	MOVQ(U32(64), RDX)
	LEAQ(Mem{Base: RDI, Disp: 8 << 10}, RSI)
	emit("LDTILECFG [rsi]", encLDTILECFGrsi())
	load := func(t, off int) {
		LEAQ(Mem{Base: RDI, Disp: off}, RSI)
		emit(fmt.Sprintf("TILELOADD tmm%d, [rsi+rdx*1]", t), encTILELOADD(t))
	}
	for i := 0; i < 2; i++ {
		load(4+i, i<<10) // A
		load(6+i, (2+i)<<10)
	}
	for c := 0; c < 4; c++ {
		load(c, (4+c)<<10)
	}
	TESTQ(n, n)
	JLE(LabelRef(name + "_done"))
	Label(name + "_loop")
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			c, a, b := 2*i+j, 4+i, 6+j
			emit(fmt.Sprintf("%s tmm%d, tmm%d, tmm%d", mnemonic, c, a, b), enc(c, a, b))
		}
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	for c := 0; c < 4; c++ {
		LEAQ(Mem{Base: RDI, Disp: (4 + c) << 10}, RSI)
		emit(fmt.Sprintf("TILESTORED [rsi+rdx*1], tmm%d", c), encTILESTORED(c))
	}
	emit("TILERELEASE", encTILERELEASE())
	RET()
}
