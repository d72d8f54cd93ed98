// Command dot generates kernels/dot_amd64.s, the AVX2 kernels of DotRows
// and AxpyRows (package kernels, dot.go), with avo:
//
//	cd kernels/_asm && go run ./dot -out ../dot_amd64.s
//
// (or `go generate ./kernels/`). Each kernel is written generic over the
// vector width, but only the AVX2 (ymm) variant is generated: an AVX-512
// variant could not be executed on any machine this project tests on, and
// these kernels are load-bound at decode, so AVX-512 machines run the AVX2
// code.
//
// Both kernels keep eight independent FMA chains in flight (eight rows of
// k for dotRows8, eight vectors of acc for axpyRows), enough to cover the
// 4-cycle FMA latency at two FMAs per cycle; each FMA reads its second
// operand from memory, so the loops are bound by the loads (nine per eight
// FMAs).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type isa struct {
	Name  string
	Vec   []VecPhysical
	Bytes int
}

func (v isa) shift() uint64 { // log2(lanes)
	if v.Bytes == 64 {
		return 4
	}
	return 3
}

var (
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

	avx2 = isa{Name: "AVX2", Vec: ymm, Bytes: 32}
)

func main() {
	ConstraintExpr("!purego")
	for _, v := range []isa{avx2} {
		genDotRows8(v)
		genAxpyRows(v)
	}
	Generate()
}

func at(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

// genDotRows8 emits
//
//	func dotRows8<ISA>(out, q, k []float32, ldk int)
//
// for groups of eight rows g < len(out)/8 and r < 8:
//
//	out[8g+r] = Σ_i q[i]·k[(8g+r)·ldk+i]     i < len(q)
//
// len(q) a nonzero multiple of the lanes and len(out) a nonzero multiple of
// 8, both trusted. Row r of a group accumulates in its own vector (lane l
// sums the i ≡ l (mod lanes)), then the eight vectors are reduced to the
// eight sums with a tree of pairwise additions.
func genDotRows8(v isa) {
	fn := "dotRows8" + v.Name
	TEXT(fn, NOSPLIT, "func(out, q, k []float32, ldk int)")
	outp := Load(Param("out").Base(), GP64())
	groups := Load(Param("out").Len(), GP64())
	SHRQ(U8(3), groups)
	qbase := Load(Param("q").Base(), GP64())
	nv := Load(Param("q").Len(), GP64())
	SHRQ(U8(v.shift()), nv)
	kbase := Load(Param("k").Base(), GP64())
	ld := Load(Param("ldk"), GP64())
	SHLQ(U8(2), ld) // bytes
	ld3 := GP64()
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)

	acc := v.Vec[0:8]
	qv := v.Vec[8]
	qp, k0, k4, cnt := GP64(), GP64(), GP64(), GP64()

	Label(fn + "_group")
	for _, a := range acc {
		// VEX VXORPS on the ymm half zeroes the whole register (also a
		// zmm), with AVX only (the EVEX VXORPS on zmm needs AVX512DQ).
		VXORPS(a.AsY(), a.AsY(), a.AsY())
	}
	MOVQ(qbase, qp)
	MOVQ(kbase, k0)
	LEAQ(Mem{Base: kbase, Index: ld, Scale: 4}, k4)
	MOVQ(nv, cnt)

	// acc[r] = fma(q[i:i+lanes], k_r[i:i+lanes], acc[r]) for the rows
	// k_r at k0 + r·ld (r < 4) and k4 + (r-4)·ld.
	Label(fn + "_vec")
	VMOVUPS(at(qp, 0), qv)
	for h, base := range []Register{k0, k4} {
		rows := []Mem{
			{Base: base},
			{Base: base, Index: ld, Scale: 1},
			{Base: base, Index: ld, Scale: 2},
			{Base: base, Index: ld3, Scale: 1},
		}
		for r, m := range rows {
			VFMADD231PS(m, qv, acc[4*h+r])
		}
	}
	ADDQ(U32(v.Bytes), qp)
	ADDQ(U32(v.Bytes), k0)
	ADDQ(U32(v.Bytes), k4)
	DECQ(cnt)
	JNZ(LabelRef(fn + "_vec"))

	// The eight row sums into one ymm: [Σacc0, ..., Σacc7].
	y := make([]VecPhysical, 8)
	for r, a := range acc {
		y[r] = a.AsY().(VecPhysical)
		if v.Bytes == 64 {
			VEXTRACTF64X4(U8(1), a, qv.AsY())
			VADDPS(qv.AsY(), y[r], y[r])
		}
	}
	// VHADDPS b, a, d: d = [a0+a1, a2+a3, b0+b1, b2+b3] in each 128-bit half.
	VHADDPS(y[1], y[0], y[0])
	VHADDPS(y[3], y[2], y[2])
	VHADDPS(y[5], y[4], y[4])
	VHADDPS(y[7], y[6], y[6])
	VHADDPS(y[2], y[0], y[0])              // rows 0-3: low half from lanes 0-3, high half from lanes 4-7
	VHADDPS(y[6], y[4], y[4])              // rows 4-7
	VPERM2F128(U8(0x20), y[4], y[0], y[1]) // [rows 0-3 low, rows 4-7 low]
	VPERM2F128(U8(0x31), y[4], y[0], y[2]) // [rows 0-3 high, rows 4-7 high]
	VADDPS(y[2], y[1], y[1])
	VMOVUPS(y[1], at(outp, 0))

	ADDQ(U32(32), outp)
	LEAQ(Mem{Base: kbase, Index: ld, Scale: 8}, kbase)
	DECQ(groups)
	JNZ(LabelRef(fn + "_group"))
	VZEROUPPER()
	RET()
}

// genAxpyRows emits
//
//	func axpyRows<ISA>(acc, p, v []float32, ldv int)
//
// computing, for j = 0, 1, ..., len(p)-1 in order and i < len(acc):
//
//	acc[i] = fma(p[j], v[j·ldv+i], acc[i])
//
// len(acc) a nonzero multiple of the lanes and len(p) nonzero, both
// trusted. The columns go in chunks of eight vectors (eight accumulators in
// registers over all j), then four, then one.
func genAxpyRows(v isa) {
	fn := "axpyRows" + v.Name
	TEXT(fn, NOSPLIT, "func(acc, p, v []float32, ldv int)")
	ap := Load(Param("acc").Base(), GP64())
	nv := Load(Param("acc").Len(), GP64())
	SHRQ(U8(v.shift()), nv)
	pbase := Load(Param("p").Base(), GP64())
	np := Load(Param("p").Len(), GP64())
	vbase := Load(Param("v").Base(), GP64())
	ld := Load(Param("ldv"), GP64())
	SHLQ(U8(2), ld) // bytes
	pp, vp, cnt := GP64(), GP64(), GP64()
	pb := v.Vec[8]

	for _, w := range []int{8, 4, 1} {
		acc := v.Vec[:w]
		name := fmt.Sprintf("%s_w%d", fn, w)
		// while nv >= w
		SUBQ(U32(w), nv)
		JL(LabelRef(name + "_done"))
		Label(name + "_chunk")
		for c, a := range acc {
			VMOVUPS(at(ap, c*v.Bytes), a)
		}
		MOVQ(pbase, pp)
		MOVQ(vbase, vp)
		MOVQ(np, cnt)
		Label(name + "_row")
		VBROADCASTSS(at(pp, 0), pb)
		for c, a := range acc {
			VFMADD231PS(at(vp, c*v.Bytes), pb, a)
		}
		ADDQ(U32(4), pp)
		ADDQ(ld, vp)
		DECQ(cnt)
		JNZ(LabelRef(name + "_row"))
		for c, a := range acc {
			VMOVUPS(a, at(ap, c*v.Bytes))
		}
		ADDQ(U32(w*v.Bytes), ap)
		ADDQ(U32(w*v.Bytes), vbase)
		SUBQ(U32(w), nv)
		JGE(LabelRef(name + "_chunk"))
		Label(name + "_done")
		ADDQ(U32(w), nv)
	}
	VZEROUPPER()
	RET()
}
