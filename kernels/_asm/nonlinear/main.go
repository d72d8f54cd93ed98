// Command nonlinear generates kernels/nonlinear_amd64.s, the AVX2 and
// AVX-512 non-linear kernels of package kernels (exp, fast exp, SiLU,
// SiLU·up, GELU-tanh, the passes of softmax and RMSNorm, and RoPE in both
// layouts), with avo:
//
//	cd kernels/_asm && go run ./nonlinear -out ../nonlinear_amd64.s
//
// (or `go generate ./kernels/`). Every kernel is written once, generic over
// the vector width: the AVX2 variant uses ymm registers, the AVX-512 variant
// zmm registers, with the same instruction sequence (only VPOR and VPXOR
// become VPORD and VPXORD, and the final lane reduction extracts one more
// half), so the AVX-512 code is the AVX2 code, tested on every AVX2 machine,
// with wider registers. Each lane computes exactly the scalar twin in
// kernels/nonlinear_go.go (exp32, fastExp32, sigmoidMul32, gelu32): the
// comments name the Go statement each group of instructions implements.
//
// Only registers 0..15 are used; the AVX-512 functions need AVX512F only (no
// compare into mask registers, no blends, no DQ instructions: selects are
// done with VMAXPS/VMINPS, the RoPE sign flip with VPXORD). Constants live in 64-byte RODATA vectors, loaded
// into the vector registers a kernel's streams leave (inRegisters), the rest
// used as memory operands (ymm reads the first 32 bytes).
package main

import (
	"math"

	"github.com/cpubench/bench/kernels/_asm/internal/asmutil"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type isa struct {
	Name  string
	Vec   []VecPhysical // the registers the streams take from (16 on both)
	Bytes int
	// All is every vector register of the ISA (AVX2 16, AVX-512 32):
	// those the streams leave hold constants (inRegisters).
	All []VecPhysical
}

func (v isa) lanes() int { return v.Bytes / 4 }

func (v isa) shift() uint64 { // log2(lanes)
	if v.Bytes == 64 {
		return 4
	}
	return 3
}

// pxor is the bitwise XOR: VPXOR (VEX, ymm) or VPXORD (EVEX, zmm; AVX512F).
func (v isa) pxor(a, b, dst Op) {
	if v.Bytes == 64 {
		VPXORD(a, b, dst)
	} else {
		VPXOR(a, b, dst)
	}
}

// por is the bitwise OR: VPOR (VEX, ymm) or VPORD (EVEX, zmm; AVX512F).
func (v isa) por(a, b, dst Op) {
	if v.Bytes == 64 {
		VPORD(a, b, dst)
	} else {
		VPOR(a, b, dst)
	}
}

var (
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	zmm = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}

	avx2   = isa{Name: "AVX2", Vec: ymm, Bytes: 32, All: asmutil.Ymm}
	avx512 = isa{Name: "AVX512", Vec: zmm, Bytes: 64, All: asmutil.Zmm}
)

// Constants: 16 copies each. The values are those of nonlinear_go.go.
var (
	cLo, cHi, cFLo, cFHi, cLog2e, cMagic, cMagicBits, cNegC1, cNegC2 Op
	cP                                                               [6]Op
	cQ                                                               [5]Op
	cOne, cZero, cBias, cSign, cStep, cGeluA, cGeluB, cNegInf        Op
	cSignEven                                                        Op
)

func f32const(name string, v float32) Mem {
	return u32const(name, math.Float32bits(v))
}

func u32const(name string, v uint32) Mem {
	m := GLOBL("nl_"+name, RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(v))
	}
	return m
}

func constants() {
	cLo = f32const("explo", -104)
	cHi = f32const("exphi", 88.8)
	cFLo = f32const("fexplo", -88)
	cFHi = f32const("fexphi", 88.8)
	cLog2e = f32const("log2e", float32(1.44269504088896341))
	cMagic = f32const("magic", 12582912)
	cMagicBits = u32const("magicbits", math.Float32bits(12582912))
	cNegC1 = f32const("negc1", -0.693359375)
	cNegC2 = f32const("negc2", 2.12194440e-4)
	for i, p := range []float32{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1} {
		cP[i] = f32const("expp"+string(rune('0'+i)), p)
	}
	for i, q := range []float32{0.999999261, 0.999963405, 0.500043586, 0.167909072, 0.0414586082} {
		cQ[i] = f32const("fexpq"+string(rune('0'+i)), q)
	}
	cOne = f32const("one", 1)
	cZero = f32const("zero", 0)
	cBias = u32const("bias", 127)
	cSign = u32const("sign", 1<<31)
	cStep = f32const("step", 0x1p100)
	cGeluA = f32const("gelua", float32(1.5957691216057308))
	cGeluB = f32const("gelub", float32(0.071354816272919400))
	cNegInf = u32const("neginf", 0xff800000)
	// The sign bit in the even lanes (the first element of each adjacent
	// RoPE pair), 0 in the odd ones.
	cSignEven = GLOBL("nl_signeven", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(uint32(1-i%2)<<31))
	}
}

func main() {
	ConstraintExpr("!purego")
	constants()
	for _, v := range []isa{avx2, avx512} {
		genUnary(v, "exp", "src", 3, 4, expConsts(), func(s []VecPhysical) { expBody(v, s) })
		genUnary(v, "fastExp", "src", 3, 4, fastExpConsts(), func(s []VecPhysical) { fastExpBody(v, s) })
		genUnary(v, "silu", "x", 2, 6, sigmoidConsts(), func(s []VecPhysical) { siluBody(v, s) })
		genUnary(v, "geluTanh", "x", 2, 7, geluConsts(), func(s []VecPhysical) { geluBody(v, s) })
		genSiLUMul(v)
		genMax(v)
		genExpSubSum(v, "expSubSum", expConsts(), expBody)
		genExpSubSum(v, "fastExpSubSum", fastExpConsts(), fastExpBody)
		genScale(v)
		genSumSq(v)
		genMulScale(v)
		genRoPEHalf(v)
		genRoPEAdjacent(v)
	}
	Generate()
}

// The constants each kernel family reads in its loop, most used first
// (inRegisters keeps as many as there are free registers).
func expConsts() []*Op {
	return []*Op{&cLo, &cHi, &cLog2e, &cMagic, &cMagicBits, &cNegC1, &cNegC2, &cP[0], &cP[1], &cP[2], &cP[3], &cP[4], &cP[5], &cOne, &cBias}
}

func fastExpConsts() []*Op {
	return []*Op{&cFLo, &cFHi, &cLog2e, &cMagic, &cMagicBits, &cNegC1, &cNegC2, &cQ[0], &cQ[1], &cQ[2], &cQ[3], &cQ[4], &cBias}
}

func sigmoidConsts() []*Op { return append(expConsts(), &cSign, &cStep, &cZero) }

func geluConsts() []*Op { return append(sigmoidConsts(), &cGeluB, &cGeluA) }

// inRegisters emits, at the start of a function, loads of the constants
// cs into the vector registers from v.All[first] on (as many as there
// are; the rest stay memory operands) and points the constants at them
// until undo, so that the kernel's loop reads registers instead of a
// memory operand per constant use. Measured on the Zen 5 VM (go test
// -bench 'Nonlinear' ./kernels, 2026-11-27, Gelem/s before → after):
// AVX-512 (16 free registers or more) exp 3.55 → 6.49, fast exp 4.19 →
// 11.4, softmax at 4096 3.23 → 4.63, SiLU 2.77 → 4.46, SiLU·up 2.69 →
// 4.15, GELU-tanh 2.56 → 3.53: their memory operands, 17 a vector in
// exp, bounded them, not their arithmetic (without VDIVPS SiLU ran no
// faster, with 3 or 4 streams no faster either); AVX2 (4 free
// registers) fast exp 4.30 → 5.65, the others within 3%.
func inRegisters(v isa, first int, cs []*Op) (undo func()) {
	free := v.All[min(first, len(v.All)):]
	n := min(len(cs), len(free))
	saved := make([]Op, n)
	for i, c := range cs[:n] {
		saved[i] = *c
		VMOVUPS(*c, free[i])
		*c = free[i]
	}
	return func() {
		for i, c := range cs[:n] {
			*c = saved[i]
		}
	}
}

func at(base Register, disp int) Mem { return Mem{Base: base, Disp: disp} }

// blockLoop: while n >= elems { body(); n -= elems }, n a signed count.
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

// vectors loads the pointer of slice param and the number of whole vectors
// of its length.
func vectors(v isa, param string) (p, n Register) {
	p = Load(Param(param).Base(), GP64())
	n = Load(Param(param).Len(), GP64())
	SHRQ(U8(v.shift()), n)
	return p, n
}

// Streams: each element computation uses the registers of one stream
// (stream[0] is its input/output), and every step is emitted for all
// streams before the next step, so U independent vectors are in flight.
type streams [][]VecPhysical

func split(v isa, first, u, per int) streams {
	var s streams
	for i := 0; i < u; i++ {
		s = append(s, v.Vec[first+i*per:first+(i+1)*per])
	}
	return s
}

// expBody computes exp32 in place on s[0] (temps s[1..3]) for every stream.
func expBody(v isa, ss []VecPhysical) { expSteps(v, streams{ss}) }

func expSteps(v isa, s streams) {
	each := func(f func(r []VecPhysical)) {
		for _, r := range s {
			f(r)
		}
	}
	// x = max32(x, expLo); x = min32(x, expHi)
	each(func(r []VecPhysical) { VMOVUPS(cLo, r[1]); VMAXPS(r[0], r[1], r[0]) })
	each(func(r []VecPhysical) { VMOVUPS(cHi, r[1]); VMINPS(r[0], r[1], r[0]) })
	// t := float32(x*log2e) + expMagic
	each(func(r []VecPhysical) { VMULPS(cLog2e, r[0], r[1]) })
	each(func(r []VecPhysical) { VADDPS(cMagic, r[1], r[1]) })
	// nf := t - expMagic; k := bits(t) - bits(expMagic)
	each(func(r []VecPhysical) { VSUBPS(cMagic, r[1], r[2]) })
	each(func(r []VecPhysical) { VPSUBD(cMagicBits, r[1], r[3]) })
	// r := fma32(nf, -expC1, x); r = fma32(nf, -expC2, r)   (r in x)
	each(func(r []VecPhysical) { VFMADD231PS(cNegC1, r[2], r[0]) })
	each(func(r []VecPhysical) { VFMADD231PS(cNegC2, r[2], r[0]) })
	// p := fma32(expP0, r, expP1); ... p = fma32(p, r, expP5)   (p in r[2])
	each(func(r []VecPhysical) { VMOVUPS(cP[0], r[2]) })
	for i := 1; i < 6; i++ {
		each(func(r []VecPhysical) { VFMADD213PS(cP[i], r[0], r[2]) })
	}
	// r2 := float32(r * r)   (in r[1])
	each(func(r []VecPhysical) { VMULPS(r[0], r[0], r[1]) })
	// y := fma32(p, r2, r); y = y + 1   (y in r[2])
	each(func(r []VecPhysical) { VFMADD213PS(r[0], r[1], r[2]) })
	each(func(r []VecPhysical) { VADDPS(cOne, r[2], r[2]) })
	// k1 := k >> 1; k2 := k - k1; s1 = (k1+127)<<23; s2 = (k2+127)<<23
	each(func(r []VecPhysical) { VPSRAD(U8(1), r[3], r[1]) })
	each(func(r []VecPhysical) { VPSUBD(r[1], r[3], r[3]) })
	each(func(r []VecPhysical) { VPADDD(cBias, r[1], r[1]) })
	each(func(r []VecPhysical) { VPADDD(cBias, r[3], r[3]) })
	each(func(r []VecPhysical) { VPSLLD(U8(23), r[1], r[1]) })
	each(func(r []VecPhysical) { VPSLLD(U8(23), r[3], r[3]) })
	// float32(y*s1) * s2
	each(func(r []VecPhysical) { VMULPS(r[1], r[2], r[2]) })
	each(func(r []VecPhysical) { VMULPS(r[3], r[2], r[0]) })
}

// fastExpBody computes fastExp32 in place on s[0] (temps s[1..3]).
func fastExpBody(v isa, r []VecPhysical) {
	// x = max32(x, fexpLo); x = min32(x, fexpHi)
	VMOVUPS(cFLo, r[1])
	VMAXPS(r[0], r[1], r[0])
	VMOVUPS(cFHi, r[1])
	VMINPS(r[0], r[1], r[0])
	// t := float32(x*log2e) + expMagic
	VMULPS(cLog2e, r[0], r[1])
	VADDPS(cMagic, r[1], r[1])
	// nf := t - expMagic; k := bits(t) - bits(expMagic)
	VSUBPS(cMagic, r[1], r[2])
	VPSUBD(cMagicBits, r[1], r[3])
	// r := fma32(nf, -expC1, x); r = fma32(nf, -expC2, r)   (r in x)
	VFMADD231PS(cNegC1, r[2], r[0])
	VFMADD231PS(cNegC2, r[2], r[0])
	// p := fma32(fexpQ4, r, fexpQ3); ... p = fma32(p, r, fexpQ0)
	VMOVUPS(cQ[4], r[2])
	for i := 3; i >= 0; i-- {
		VFMADD213PS(cQ[i], r[0], r[2])
	}
	// s := (k+127)<<23; p * s
	VPADDD(cBias, r[3], r[3])
	VPSLLD(U8(23), r[3], r[3])
	VMULPS(r[3], r[2], r[0])
}

// sigmoidMul computes sigmoidMul32(x, z) into r[0], x in rx, z in rz (rz
// may be rx); temps r[1..5].
func sigmoidMul(v isa, rx, rz VecPhysical, r []VecPhysical) {
	e, s := r[1], r[5]
	// nz := z | sign; e := exp32(nz)   (exp temps r[2..4])
	v.por(cSign, rz, e)
	expSteps(v, streams{{e, r[2], r[3], r[4]}})
	// s := float32(z * sigStep); s = max32(s, 0); s = min32(s, 1)
	VMULPS(cStep, rz, s)
	VMOVUPS(cZero, r[2])
	VMAXPS(s, r[2], s)
	VMOVUPS(cOne, r[2])
	VMINPS(s, r[2], s)
	// num := max32(e, s)   (in s); d := e + 1   (in e)
	VMAXPS(e, s, s)
	VADDPS(cOne, e, e)
	// y := float32(x * num); y / d
	VMULPS(s, rx, s)
	VDIVPS(e, s, r[0])
}

func siluBody(v isa, r []VecPhysical) { sigmoidMul(v, r[0], r[0], r[:6]) }

func geluBody(v isa, r []VecPhysical) {
	z := r[6]
	// x2 := float32(x * x); q := fma32(geluB, x2, geluA); z := float32(x * q)
	VMULPS(r[0], r[0], z)
	VMOVUPS(cGeluB, r[1])
	VFMADD213PS(cGeluA, r[1], z)
	VMULPS(r[0], z, z)
	sigmoidMul(v, r[0], z, r[:6])
}

// genUnary emits fn(dst, src []float32) over whole vectors: a block of u
// vectors (each through body with its own per registers), then single
// vectors; the constants cs in the registers the streams leave
// (inRegisters).
func genUnary(v isa, name, in string, u, per int, cs []*Op, body func(r []VecPhysical)) {
	fn := name + v.Name
	TEXT(fn, NOSPLIT, "func(dst, "+in+" []float32)")
	defer inRegisters(v, u*per, cs)()
	d, n := vectors(v, "dst")
	s := Load(Param(in).Base(), GP64())
	st := split(v, 0, u, per)
	blockLoop(fn+"_block", n, u, func() {
		for i, r := range st {
			VMOVUPS(at(s, i*v.Bytes), r[0])
		}
		for _, r := range st {
			body(r)
		}
		for i, r := range st {
			VMOVUPS(r[0], at(d, i*v.Bytes))
		}
		ADDQ(U32(u*v.Bytes), s)
		ADDQ(U32(u*v.Bytes), d)
	})
	blockLoop(fn+"_vec", n, 1, func() {
		r := st[0]
		VMOVUPS(at(s, 0), r[0])
		body(r)
		VMOVUPS(r[0], at(d, 0))
		ADDQ(U32(v.Bytes), s)
		ADDQ(U32(v.Bytes), d)
	})
	VZEROUPPER()
	RET()
}

func genSiLUMul(v isa) {
	fn := "siluMul" + v.Name
	TEXT(fn, NOSPLIT, "func(dst, gate, up []float32)")
	d, n := vectors(v, "dst")
	g := Load(Param("gate").Base(), GP64())
	up := Load(Param("up").Base(), GP64())
	const u = 2
	st := split(v, 0, u, 6)
	defer inRegisters(v, u*6, sigmoidConsts())()
	one := func(i int, r []VecPhysical) {
		sigmoidMul(v, r[0], r[0], r)
		// silu32(gate[i]) * up[i]
		VMULPS(at(up, i*v.Bytes), r[0], r[0])
	}
	blockLoop(fn+"_block", n, u, func() {
		for i, r := range st {
			VMOVUPS(at(g, i*v.Bytes), r[0])
		}
		for i, r := range st {
			one(i, r)
		}
		for i, r := range st {
			VMOVUPS(r[0], at(d, i*v.Bytes))
		}
		for _, p := range []Register{g, up, d} {
			ADDQ(U32(u*v.Bytes), p)
		}
	})
	blockLoop(fn+"_vec", n, 1, func() {
		r := st[0]
		VMOVUPS(at(g, 0), r[0])
		one(0, r)
		VMOVUPS(r[0], at(d, 0))
		for _, p := range []Register{g, up, d} {
			ADDQ(U32(v.Bytes), p)
		}
	})
	VZEROUPPER()
	RET()
}

// reduce combines accumulators acc into acc[0] with op (a tree), then the
// lanes of acc[0] into its lane 0, using tmp.
func reduce(v isa, acc []VecPhysical, tmp VecPhysical, op func(a, b, dst Op)) {
	for s := 1; s < len(acc); s *= 2 {
		for i := 0; i+s < len(acc); i += 2 * s {
			op(acc[i+s], acc[i], acc[i])
		}
	}
	a := acc[0]
	x0 := a.AsX()
	if v.Bytes == 64 {
		VEXTRACTF64X4(U8(1), a, tmp.AsY())
		op(tmp.AsY(), a.AsY(), a.AsY())
	}
	VEXTRACTF128(U8(1), a.AsY(), tmp.AsX())
	op(tmp.AsX(), x0, x0)
	VMOVHLPS(x0, x0, tmp.AsX())
	op(tmp.AsX(), x0, x0)
	VSHUFPS(U8(1), x0, x0, tmp.AsX())
	op(tmp.AsX(), x0, x0)
}

func genMax(v isa) {
	fn := "max" + v.Name
	TEXT(fn, NOSPLIT, "func(x []float32) float32")
	p, n := vectors(v, "x")
	acc := v.Vec[0:4]
	t := v.Vec[4:8]
	for _, a := range acc {
		VMOVUPS(cNegInf, a)
	}
	// m = max32(m, v): VMAXPS m, v skips a NaN v.
	blockLoop(fn+"_block", n, 4, func() {
		for i := range acc {
			VMOVUPS(at(p, i*v.Bytes), t[i])
			VMAXPS(acc[i], t[i], acc[i])
		}
		ADDQ(U32(4*v.Bytes), p)
	})
	blockLoop(fn+"_vec", n, 1, func() {
		VMOVUPS(at(p, 0), t[0])
		VMAXPS(acc[0], t[0], acc[0])
		ADDQ(U32(v.Bytes), p)
	})
	reduce(v, acc, t[0], func(a, b, dst Op) { VMAXPS(a, b, dst) })
	VZEROUPPER()
	Store(acc[0].AsX(), ReturnIndex(0))
	RET()
}

func genExpSubSum(v isa, name string, cs []*Op, body func(v isa, r []VecPhysical)) {
	fn := name + v.Name
	TEXT(fn, NOSPLIT, "func(dst, src []float32, m float32) float32")
	defer inRegisters(v, 12, cs)() // 0–11: accumulators, m, a temp and two streams
	d, n := vectors(v, "dst")
	s := Load(Param("src").Base(), GP64())
	acc := v.Vec[0:2]
	m := v.Vec[2]
	tmp := v.Vec[3]
	st := split(v, 4, 2, 4)
	for _, a := range acc {
		VMOVUPS(cZero, a)
	}
	mp, err := Param("m").Resolve()
	if err != nil {
		panic(err)
	}
	VBROADCASTSS(mp.Addr, m)
	one := func(i int, r []VecPhysical) {
		// dst[i] = exp32(src[i] - m); sum += dst[i]
		VMOVUPS(at(s, i*v.Bytes), r[0])
		VSUBPS(m, r[0], r[0])
		body(v, r)
		VMOVUPS(r[0], at(d, i*v.Bytes))
		VADDPS(r[0], acc[i], acc[i])
	}
	blockLoop(fn+"_block", n, 2, func() {
		for i, r := range st {
			one(i, r)
		}
		ADDQ(U32(2*v.Bytes), s)
		ADDQ(U32(2*v.Bytes), d)
	})
	blockLoop(fn+"_vec", n, 1, func() {
		one(0, st[0])
		ADDQ(U32(v.Bytes), s)
		ADDQ(U32(v.Bytes), d)
	})
	reduce(v, acc, tmp, func(a, b, dst Op) { VADDPS(a, b, dst) })
	VZEROUPPER()
	Store(acc[0].AsX(), ReturnIndex(0))
	RET()
}

func broadcast(name string, r VecPhysical) {
	p, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	VBROADCASTSS(p.Addr, r)
}

func genScale(v isa) {
	fn := "scale" + v.Name
	TEXT(fn, NOSPLIT, "func(x []float32, s float32)")
	p, n := vectors(v, "x")
	sc := v.Vec[0]
	broadcast("s", sc)
	t := v.Vec[1:5]
	// x[i] *= s
	blockLoop(fn+"_block", n, 4, func() {
		for i, r := range t {
			VMULPS(at(p, i*v.Bytes), sc, r)
		}
		for i, r := range t {
			VMOVUPS(r, at(p, i*v.Bytes))
		}
		ADDQ(U32(4*v.Bytes), p)
	})
	blockLoop(fn+"_vec", n, 1, func() {
		VMULPS(at(p, 0), sc, t[0])
		VMOVUPS(t[0], at(p, 0))
		ADDQ(U32(v.Bytes), p)
	})
	VZEROUPPER()
	RET()
}

func genSumSq(v isa) {
	fn := "sumSq" + v.Name
	TEXT(fn, NOSPLIT, "func(x []float32) float32")
	p, n := vectors(v, "x")
	acc := v.Vec[0:4]
	t := v.Vec[4:8]
	for _, a := range acc {
		VMOVUPS(cZero, a)
	}
	// ss = fma32(v, v, ss)
	blockLoop(fn+"_block", n, 4, func() {
		for i := range acc {
			VMOVUPS(at(p, i*v.Bytes), t[i])
			VFMADD231PS(t[i], t[i], acc[i])
		}
		ADDQ(U32(4*v.Bytes), p)
	})
	blockLoop(fn+"_vec", n, 1, func() {
		VMOVUPS(at(p, 0), t[0])
		VFMADD231PS(t[0], t[0], acc[0])
		ADDQ(U32(v.Bytes), p)
	})
	reduce(v, acc, t[0], func(a, b, dst Op) { VADDPS(a, b, dst) })
	VZEROUPPER()
	Store(acc[0].AsX(), ReturnIndex(0))
	RET()
}

func genMulScale(v isa) {
	fn := "mulScale" + v.Name
	TEXT(fn, NOSPLIT, "func(dst, x, w []float32, s float32)")
	d, n := vectors(v, "dst")
	x := Load(Param("x").Base(), GP64())
	w := Load(Param("w").Base(), GP64())
	sc := v.Vec[0]
	broadcast("s", sc)
	t := v.Vec[1:5]
	// dst[i] = float32(x[i]*s) * w[i]
	blockLoop(fn+"_block", n, 4, func() {
		for i, r := range t {
			VMULPS(at(x, i*v.Bytes), sc, r)
			VMULPS(at(w, i*v.Bytes), r, r)
		}
		for i, r := range t {
			VMOVUPS(r, at(d, i*v.Bytes))
		}
		for _, q := range []Register{x, w, d} {
			ADDQ(U32(4*v.Bytes), q)
		}
	})
	blockLoop(fn+"_vec", n, 1, func() {
		VMULPS(at(x, 0), sc, t[0])
		VMULPS(at(w, 0), t[0], t[0])
		VMOVUPS(t[0], at(d, 0))
		for _, q := range []Register{x, w, d} {
			ADDQ(U32(v.Bytes), q)
		}
	})
	VZEROUPPER()
	RET()
}

// ropeRotate computes the rotated pair of ropeGo for one vector of pairs:
// t1, b := float32(a*c) - float32(b*s), float32(a*s) + float32(b*c), with
// temp t2 (a is overwritten).
func ropeRotate(a, b, c, s, t1, t2 VecPhysical) {
	VMULPS(c, a, t1)   // float32(a*c)
	VMULPS(s, b, t2)   // float32(b*s)
	VSUBPS(t2, t1, t1) // a' = a*c - b*s
	VMULPS(s, a, a)    // float32(a*s)
	VMULPS(c, b, b)    // float32(b*c)
	VADDPS(b, a, b)    // b' = a*s + b*c
}

// genRoPEHalf emits ropeHalf<ISA>(x, cos, sin []float32): for every head
// of x (2·len(cos) elements), the pairs (x[i], x[i+half]) for i below
// len(cos) rounded down to whole vectors (the rest is left to the caller).
func genRoPEHalf(v isa) {
	fn := "ropeHalf" + v.Name
	TEXT(fn, NOSPLIT, "func(x, cos, sin []float32)")
	p := Load(Param("x").Base(), GP64())
	end := Load(Param("x").Len(), GP64())
	cb := Load(Param("cos").Base(), GP64())
	sb := Load(Param("sin").Base(), GP64())
	hb := Load(Param("cos").Len(), GP64())
	// hb = half in bytes; nb = the bytes of whole vectors of i; end = &x[len(x)]
	SHLQ(U8(2), hb)
	nb := GP64()
	MOVQ(hb, nb)
	SHRQ(U8(v.shift()+2), nb)
	SHLQ(U8(v.shift()+2), nb)
	JZ(LabelRef(fn + "_done"))
	LEAQ(Mem{Base: p, Index: end, Scale: 4}, end)
	k, q := GP64(), GP64()
	r := v.Vec
	Label(fn + "_head")
	// q = &head[half]
	LEAQ(Mem{Base: p, Index: hb, Scale: 1}, q)
	XORQ(k, k)
	Label(fn + "_loop")
	VMOVUPS(Mem{Base: p, Index: k, Scale: 1}, r[0])
	VMOVUPS(Mem{Base: q, Index: k, Scale: 1}, r[1])
	VMOVUPS(Mem{Base: cb, Index: k, Scale: 1}, r[2])
	VMOVUPS(Mem{Base: sb, Index: k, Scale: 1}, r[3])
	ropeRotate(r[0], r[1], r[2], r[3], r[4], r[5])
	VMOVUPS(r[4], Mem{Base: p, Index: k, Scale: 1})
	VMOVUPS(r[1], Mem{Base: q, Index: k, Scale: 1})
	ADDQ(U32(v.Bytes), k)
	CMPQ(k, nb)
	JB(LabelRef(fn + "_loop"))
	// next head: p += 2·half
	LEAQ(Mem{Base: q, Index: hb, Scale: 1}, p)
	CMPQ(p, end)
	JB(LabelRef(fn + "_head"))
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

// genRoPEAdjacent emits ropeAdjacent<ISA>(x, cos, sin []float32): for every
// head of x, the pairs (x[2i], x[2i+1]) for i below len(cos) rounded down to
// whole vectors of x (lanes/2 pairs; the rest is left to the caller). Each
// vector of pairs [a0 b0 a1 b1 ...] is multiplied by [c0 c0 c1 c1 ...]
// (VPMOVZXDQ then VMOVSLDUP) and, swapped to [b0 a0 ...], by
// [s0 s0 ...]; the even lanes of the second product are negated and the
// two added: a·c + -(b·s) = a·c - b·s and b·c + a·s, exactly the twin's.
func genRoPEAdjacent(v isa) {
	fn := "ropeAdjacent" + v.Name
	TEXT(fn, NOSPLIT, "func(x, cos, sin []float32)")
	p := Load(Param("x").Base(), GP64())
	end := Load(Param("x").Len(), GP64())
	cb := Load(Param("cos").Base(), GP64())
	sb := Load(Param("sin").Base(), GP64())
	hb := Load(Param("cos").Len(), GP64())
	// hb = 2·half in bytes (a head); nb = its whole vectors in bytes
	SHLQ(U8(3), hb)
	nb := GP64()
	MOVQ(hb, nb)
	SHRQ(U8(v.shift()+2), nb)
	SHLQ(U8(v.shift()+2), nb)
	JZ(LabelRef(fn + "_done"))
	LEAQ(Mem{Base: p, Index: end, Scale: 4}, end)
	k, kc := GP64(), GP64()
	r := v.Vec
	VMOVUPS(cSignEven, r[5])
	Label(fn + "_head")
	XORQ(k, k)
	XORQ(kc, kc)
	Label(fn + "_loop")
	// c := [c0 c0 c1 c1 ...]; s := [s0 s0 s1 s1 ...]
	VPMOVZXDQ(Mem{Base: cb, Index: kc, Scale: 1}, r[1])
	VMOVSLDUP(r[1], r[1])
	VPMOVZXDQ(Mem{Base: sb, Index: kc, Scale: 1}, r[2])
	VMOVSLDUP(r[2], r[2])
	VMOVUPS(Mem{Base: p, Index: k, Scale: 1}, r[0])
	// t1 = [a·c, b·c]; t2 = [b·s, a·s] with the even lanes negated
	VMULPS(r[1], r[0], r[3])
	VPERMILPS(U8(0xb1), r[0], r[0])
	VMULPS(r[2], r[0], r[4])
	v.pxor(r[5], r[4], r[4])
	VADDPS(r[4], r[3], r[3])
	VMOVUPS(r[3], Mem{Base: p, Index: k, Scale: 1})
	ADDQ(U32(v.Bytes), k)
	ADDQ(U32(v.Bytes/2), kc)
	CMPQ(k, nb)
	JB(LabelRef(fn + "_loop"))
	ADDQ(hb, p)
	CMPQ(p, end)
	JB(LabelRef(fn + "_head"))
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}
