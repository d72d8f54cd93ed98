//go:build !purego

package peak

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// The loops below are hand-written in peak_arm64.s. The NEON and SVE loops
// load armAcc accumulator vectors and the sources a, b from buf (see fill),
// run iters iterations and store the accumulators back:
//
//	for range iters {
//		for j := range armAcc {
//			acc[j] = op(acc[j], a, b) // one instruction
//		}
//	}
//
// The SME loops do the same with the four 32-bit ZA tiles as accumulators
// (each tile row is one "accumulator vector" of the layout, so row r of
// tile t is seeded 1 + t·SVL/32 + r) and one outer product per tile per
// iteration.

// armAcc is the number of NEON/SVE accumulators: 24 of the 32 vector
// registers (a and b take two more). FMLA has a 4-cycle latency and 4 pipes
// on Apple M1..M4 and Neoverse V2 (16 in flight), 2 pipes x 4 cycles on
// Neoverse V1; 24 leaves margin for BFDOT/BFMMLA/SMMLA, whose latencies are
// longer on some cores.
const armAcc = 24

//go:noescape
func addChain(iters int) uint64

func addChainImpl(iters int) (uint64, bool) { return addChain(iters), true }

// fmlaS4: FMLA Vj.4S, a, b (fp32 acc += a*b).
//
//go:noescape
func fmlaS4(buf *byte, iters int)

// fmlaD2: FMLA Vj.2D, a, b (fp64).
//
//go:noescape
func fmlaD2(buf *byte, iters int)

// fmlaH8: FMLA Vj.8H, a, b (fp16, FEAT_FP16).
//
//go:noescape
func fmlaH8(buf *byte, iters int)

// bfdotS4: BFDOT Vj.4S, a.8H, b.8H (acc.fp32[i] += a[2i]*b[2i] +
// a[2i+1]*b[2i+1], bf16 sources).
//
//go:noescape
func bfdotS4(buf *byte, iters int)

// bfmmlaS4: BFMMLA Vj.4S, a.8H, b.8H: the 2x2 fp32 accumulator gains
// A·Bᵀ, A and B 2x4 bf16, so every lane gains a dot product of 4 pairs.
//
//go:noescape
func bfmmlaS4(buf *byte, iters int)

// sdotS4: SDOT Vj.4S, a.16B, b.16B (acc.i32[i] += sum of 4 s8*s8).
//
//go:noescape
func sdotS4(buf *byte, iters int)

// smmlaS4: SMMLA Vj.4S, a.16B, b.16B: the 2x2 int32 accumulator gains
// A·Bᵀ, A and B 2x8 s8, so every lane gains a dot product of 8 pairs.
//
//go:noescape
func smmlaS4(buf *byte, iters int)

// sveVL returns the SVE vector length in bytes.
func sveVL() int

// fmlaSVE: FMLA Zj.S, P0/M, a, b with P0 all true (fp32, VL/32 lanes).
//
//go:noescape
func fmlaSVE(buf *byte, iters int)

// smeSVL returns the streaming vector length in bytes.
func smeSVL() int

// fmopaF32: FMOPA ZAt.S, Z0.S, Z1.S (each fp32 element += a*b).
//
//go:noescape
func fmopaF32(buf *byte, iters int)

// bfmopaF32: BFMOPA ZAt.S, Z0.H, Z1.H (each fp32 element += 2 bf16 products).
//
//go:noescape
func bfmopaF32(buf *byte, iters int)

// fmopaF16F32: FMOPA ZAt.S, Z0.H, Z1.H (each fp32 element += 2 fp16 products).
//
//go:noescape
func fmopaF16F32(buf *byte, iters int)

// smopaI32: SMOPA ZAt.S, Z0.B, Z1.B (each int32 element += 4 s8 products).
//
//go:noescape
func smopaI32(buf *byte, iters int)

type loopID int

const (
	lFMLAS4 loopID = iota
	lFMLAD2
	lFMLAH8
	lBFDOTS4
	lBFMMLAS4
	lSDOTS4
	lSMMLAS4
	lFMLASVE
	lFMOPAF32
	lBFMOPAF32
	lFMOPAF16F32
	lSMOPAI32
)

// call runs one loop directly (a func value would make the stack buffer
// escape).
func call(id loopID, p *byte, iters int) {
	switch id {
	case lFMLAS4:
		fmlaS4(p, iters)
	case lFMLAD2:
		fmlaD2(p, iters)
	case lFMLAH8:
		fmlaH8(p, iters)
	case lBFDOTS4:
		bfdotS4(p, iters)
	case lBFMMLAS4:
		bfmmlaS4(p, iters)
	case lSDOTS4:
		sdotS4(p, iters)
	case lSMMLAS4:
		smmlaS4(p, iters)
	case lFMLASVE:
		fmlaSVE(p, iters)
	case lFMOPAF32:
		fmopaF32(p, iters)
	case lBFMOPAF32:
		bfmopaF32(p, iters)
	case lFMOPAF16F32:
		fmopaF16F32(p, iters)
	case lSMOPAI32:
		smopaI32(p, iters)
	}
}

const (
	// maxSVEBytes is the largest SVE vector length (2048 bits).
	maxSVEBytes = 256
	// maxSMEBytes is the largest streaming vector length the SME loops
	// accept (1024 bits): beyond it ZA (64 KiB at 2048 bits) does not fit
	// in the signal frame on Go's 32 KiB signal stack.
	maxSMEBytes = 128
	// armBuf holds 24 SVE accumulators + 2 sources at 2048 bits, or the four
	// ZA tiles + 2 sources at 1024 bits (16 KiB + 256 B).
	armBuf = 4*(maxSMEBytes/4)*maxSMEBytes + 2*maxSMEBytes
	// smeChunk bounds the iterations of one streaming-mode call: 4 outer
	// products per iteration, 1<<14 iterations is 64K instructions, tens of
	// microseconds on an M4 and well under the 1 ms an assembly call may
	// delay the garbage collector.
	smeChunk = 1 << 14
)

// armLoop describes one arm64 loop.
type armLoop struct {
	id                     loopID
	name, isa, instruction string
	precision              string
	l                      layout
	// mul is the number of layout steps (see model) one instruction makes:
	// 2 for the *MMLA loops, whose lanes sum twice as many products as a
	// BFDOT or SDOT lane.
	mul         int
	opsPerInstr int
	unavailable string
	// vb is the bytes per accumulator vector; rows (SME only) the rows per
	// ZA tile, so there are 4·rows accumulator vectors.
	vb, rows int
	// f16src: the SME fp16 loop stores its sources as fp16, not bf16.
	f16src bool
}

func (a armLoop) nacc() int {
	if a.rows > 0 {
		return 4 * a.rows
	}
	return armAcc
}

func (a armLoop) kernel() Kernel {
	unit := "GFLOP/s"
	if a.precision == "int8" {
		unit = "GOP/s"
	}
	instrs := armAcc
	if a.rows > 0 {
		instrs = 4
	}
	nacc, lanes := a.nacc(), a.vb/laneBytes(a.l)
	l, mul := a.l, a.mul
	k := Kernel{
		Name: a.name, ISA: a.isa, Instruction: a.instruction, Precision: a.precision, Unit: unit,
		OpsPerInstruction: a.opsPerInstr, Accumulators: instrs, IPC: 0,
		Unavailable: a.unavailable, OpsPerIter: int64(instrs * a.opsPerInstr),
		Model: func(iters int) float64 { return model(l, nacc, lanes, mul*iters) },
	}
	if a.unavailable != "" {
		return k
	}
	id, vb, sme, f16src := a.id, a.vb, a.rows > 0, a.f16src
	k.Run = func(iters int) float64 {
		var buf [armBuf]byte
		b := buf[:(nacc+2)*vb]
		fill(l, b, nacc, vb)
		if f16src {
			src := b[nacc*vb:]
			for i := 0; i < vb; i += 2 {
				binary.LittleEndian.PutUint16(src[i:], f16bits(srcVal(l, 0)))
				binary.LittleEndian.PutUint16(src[vb+i:], f16bits(srcVal(l, 1)))
			}
		}
		if !sme {
			call(id, &b[0], iters)
		} else {
			for n := iters; n > 0; n -= smeChunk {
				call(id, &b[0], min(n, smeChunk))
			}
		}
		return sum(l, b, nacc, vb)
	}
	return k
}

// laneBytes is the accumulator lane size of l.
func laneBytes(l layout) int {
	switch l {
	case f64FMA, f64MulAdd:
		return 8
	case f16FMA:
		return 2
	}
	return 4
}

func armLoops() []armLoop {
	c := cpu.ARM64
	neon := lacks("ASIMD", c.HasASIMD)
	loops := []armLoop{
		{id: lFMLAS4, name: "neon_fma_fp32", isa: "neon", instruction: "FMLA v.4s", precision: "fp32",
			l: f32FMA, mul: 1, opsPerInstr: 8, unavailable: neon, vb: 16},
		{id: lFMLAD2, name: "neon_fma_fp64", isa: "neon", instruction: "FMLA v.2d", precision: "fp64",
			l: f64FMA, mul: 1, opsPerInstr: 4, unavailable: neon, vb: 16},
		{id: lFMLAH8, name: "neon_fma_fp16", isa: "neon", instruction: "FMLA v.8h", precision: "fp16",
			l: f16FMA, mul: 1, opsPerInstr: 16, unavailable: lacks("ASIMD", c.HasASIMD, "ASIMDHP", c.HasASIMDHP), vb: 16},
		{id: lBFDOTS4, name: "neon_bfdot", isa: "neon", instruction: "BFDOT v.4s, v.8h", precision: "bf16",
			l: bf16DP, mul: 1, opsPerInstr: 16, unavailable: lacks("ASIMD", c.HasASIMD, "BF16", c.HasBF16), vb: 16},
		{id: lBFMMLAS4, name: "neon_bfmmla", isa: "neon", instruction: "BFMMLA v.4s, v.8h", precision: "bf16",
			l: bf16DP, mul: 2, opsPerInstr: 32, unavailable: lacks("ASIMD", c.HasASIMD, "BF16", c.HasBF16), vb: 16},
		{id: lSDOTS4, name: "neon_sdot", isa: "neon", instruction: "SDOT v.4s, v.16b", precision: "int8",
			l: int8DP, mul: 1, opsPerInstr: 32, unavailable: lacks("ASIMD", c.HasASIMD, "ASIMDDP", c.HasASIMDDP), vb: 16},
		{id: lSMMLAS4, name: "neon_smmla", isa: "neon", instruction: "SMMLA v.4s, v.16b", precision: "int8",
			l: int8DP, mul: 2, opsPerInstr: 64, unavailable: lacks("ASIMD", c.HasASIMD, "I8MM", c.HasI8MM), vb: 16},
	}

	sve := armLoop{id: lFMLASVE, name: "sve_fma_fp32", isa: "sve", instruction: "FMLA z.s", precision: "fp32",
		l: f32FMA, mul: 1, unavailable: lacks("SVE (HWCAP_SVE)", c.HasSVE)}
	if sve.unavailable == "" {
		sve.vb = sveVL()
		if sve.vb < 16 || sve.vb > maxSVEBytes || sve.vb%16 != 0 {
			sve.unavailable = fmt.Sprintf("unavailable: SVE vector length %d bytes is not a multiple of 16 in [16, %d]", sve.vb, maxSVEBytes)
		}
	}
	sve.opsPerInstr = 2 * sve.vb / 4
	loops = append(loops, sve)

	svl := 0
	smeOK := lacks("SME (HWCAP2_SME)", c.HasSME)
	if smeOK == "" {
		svl = smeSVL()
		if svl < 16 || svl > maxSMEBytes || svl%16 != 0 {
			smeOK = fmt.Sprintf("unavailable: streaming vector length %d bits: bench supports 128..%d (ZA must fit Go's signal stack)", 8*svl, 8*maxSMEBytes)
			svl = 0
		}
	}
	rows := svl / 4
	smeLoop := func(id loopID, name, instr, prec string, l layout, products int, feat string, has, f16 bool) armLoop {
		u := smeOK
		if u == "" {
			u = lacks(feat, has)
		}
		return armLoop{id: id, name: name, isa: "sme", instruction: instr, precision: prec, l: l, mul: 1,
			opsPerInstr: 2 * products * rows * rows, unavailable: u, vb: svl, rows: max(rows, 1), f16src: f16}
	}
	loops = append(loops,
		smeLoop(lFMOPAF32, "sme_fmopa_fp32", "FMOPA za.s, z.s", "fp32", f32FMA, 1, "SME_F32F32 (HWCAP2_SME_F32F32)", c.HasSMEF32F32, false),
		smeLoop(lBFMOPAF32, "sme_fmopa_bf16", "BFMOPA za.s, z.h", "bf16", bf16DP, 2, "SME_B16F32 (HWCAP2_SME_B16F32)", c.HasSMEB16F32, false),
		smeLoop(lFMOPAF16F32, "sme_fmopa_fp16", "FMOPA za.s, z.h", "fp16", bf16DP, 2, "SME_F16F32 (HWCAP2_SME_F16F32)", c.HasSMEF16F32, true),
		smeLoop(lSMOPAI32, "sme_smopa_int8", "SMOPA za.s, z.b", "int8", int8DP, 4, "SME_I8I32 (HWCAP2_SME_I8I32)", c.HasSMEI8I32, false),
	)
	if s := &loops[len(loops)-1]; s.unavailable == "" {
		s.unavailable = smopaSelfTest(*s)
	}
	return loops
}

var smopaCheck struct {
	once   sync.Once
	reason string
	got    float64
}

// smopaSelfTest runs one iteration of the SMOPA loop once per process and
// returns "" if its checksum equals the model, else why the kernel is
// unavailable. QEMU up to 8.2 (gitlab.com/qemu-project/qemu/-/issues/2083)
// computes the 4-way integer outer products over 64-bit chunks, so only the
// first half of each tile's rows gain their products: a checksum that
// cannot match on such a CPU would only fail every measurement.
func smopaSelfTest(a armLoop) string {
	smopaCheck.once.Do(func() {
		k := a.kernel()
		got, want := k.Run(1), k.Model(1)
		smopaCheck.got = got
		if got != want {
			smopaCheck.reason = fmt.Sprintf("unavailable: SMOPA self-test failed: checksum %v after 1 iteration, model %v (QEMU <= 8.2 bug, qemu issue 2083?)", got, want)
		}
	})
	return smopaCheck.reason
}

// archKernels registers each loop of armLoops by name: its availability
// and its Kernel come from armLoops evaluated at the call (the SVE and
// streaming vector lengths, read only where the CPU has SVE or SME, decide
// both). IPC is 0 (unknown) for every arm64 loop until ipc.go has an Arm
// table.
func archKernels() []registry.Entry[build] {
	var out []registry.Entry[build]
	for i, a := range armLoops() {
		out = append(out, registry.Entry[build]{Name: a.name, ISA: a.isa,
			Lacks: func() string { return armLoops()[i].unavailable },
			Value: func(Microarch) Kernel { return armLoops()[i].kernel() }})
	}
	return out
}

// wideKernel: no accumulator-count variants on arm64 yet (24 accumulators
// already leave 50% margin; the timing test cannot run under qemu).
func wideKernel(string) (Kernel, bool) { return Kernel{}, false }
