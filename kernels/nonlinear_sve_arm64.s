//go:build !purego

// Hand-written SVE non-linear kernels, run by two backends: "sve" (normal
// mode, vector length VL from the hardware) and "sme" (the same
// instructions in streaming SVE mode, between SMSTART SM and SMSTOP SM, at
// the streaming vector length SVL). The specifications (Go loops) are on the
// declarations in nonlinear_sve_arm64.go; each lane computes the scalar
// function of nonlinear_go.go with the same operations in the same order as
// the NEON kernels in nonlinear_arm64.s (fma32 is FMLS/FMAD/FMLA, max32/min32
// are FMAX/FMIN). Go's arm64 assembler has no SVE or SME instruction, so they are
// WORDs, each commented with its mnemonic as printed by
// `aarch64-linux-gnu-as -march=armv9-a+sme+sve2 | aarch64-linux-gnu-objdump -d`.
//
// Each kernel takes the element count n from len(dst) (len(x); the RoPE
// kernels: the pairs of a head, len(cos), see their section) and a flag
// sm: with sm set it enters streaming mode first and leaves it before its
// only RET; with n = 0 it returns at once. The loop handles one vector of
// VL/32 (SVL/32) lanes per iteration, counted by INCW, with the predicate
// P1 = WHILELO(i, n) on every load, store and accumulation, so the last
// partial vector needs no padding and nothing outside [0, n) is touched.
// Arithmetic runs on all lanes (P0 all true, or unpredicated forms):
// inactive lanes hold zeros loaded by LD1W's zeroing predicate and are
// discarded.
//
// Rules of streaming mode (Apple M4 has no FEAT_SME_FA64): only SVE
// instructions and general-purpose ones between SMSTART and SMSTOP, no NEON
// or scalar FP (a result leaves through LASTB into a general register, as
// SMSTOP zeroes the vector registers); NOSPLIT with a $0 frame, no call; ZA
// is never enabled (SMSTART SM, not SMSTART), so a signal saves only the Z
// and P registers. The Go side bounds n per call (nlStreamChunk) so one
// call stays well under a millisecond.
//
// Registers: R0, R1 pointers, R4 n, R5 the element index i, R6 sm, R9/R10
// scalar scratch; Z14 the input, Z15 the result, Z0..Z7 exp temporaries, Z9
// the sum, Z10 the broadcast m or s, Z16..Z29 constants as in
// nonlinear_arm64.s; P0 all true, P1 the loop predicate, P2 scratch.

#include "textflag.h"

// func sveVL() int
// The SVE vector length in bytes (RDVL).
TEXT ·sveVL(SB), NOSPLIT, $0-8
	WORD $0x04bf5020 // rdvl x0, #1
	MOVD  R0, ret+0(FP)
	RET

// func smeSVL() int
// The streaming vector length in bytes (RDSVL; legal outside streaming mode).
TEXT ·smeSVL(SB), NOSPLIT, $0-8
	WORD $0x04bf5820 // rdsvl x0, #1
	MOVD  R0, ret+0(FP)
	RET

// func expSVE(dst, src []float32, sm bool)
TEXT ·expSVE(SB), NOSPLIT, $0-49
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  src_base+24(FP), R1
	MOVBU sm+48(FP), R6
	CBZ   R4, expSVE_ret
	CBZ   R6, expSVE_start
	WORD $0xd503437f // smstart sm

expSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	MOVW $0xc2d00000, R9 // expLo = -104
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // expHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x39506967, R9 // expP0
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3ab743ce, R9 // expP1
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3c088908, R9 // expP2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3d2aa9c1, R9 // expP3
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3e2aaaaa, R9 // expP4
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x3f000000, R9 // expP5
	WORD $0x05a0393b // mov z27.s, w9
	MOVW $0x3f800000, R9 // 1.0
	WORD $0x05a0393c // mov z28.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

expSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	// exp32(Z14) -> Z15
	WORD $0x0420bdc0 // movprfx z0, z14
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x65bb8085 // fmad z5.s, p0/m, z4.s, z27.s
	WORD $0x65840887 // fmul z7.s, z4.s, z4.s
	WORD $0x65a480e5 // fmad z5.s, p0/m, z7.s, z4.s
	WORD $0x659c00a5 // fadd z5.s, z5.s, z28.s
	WORD $0x047f9061 // asr z1.s, z3.s, #1
	WORD $0x04a10462 // sub z2.s, z3.s, z1.s
	WORD $0x04bd0021 // add z1.s, z1.s, z29.s
	WORD $0x04779c21 // lsl z1.s, z1.s, #23
	WORD $0x04bd0042 // add z2.s, z2.s, z29.s
	WORD $0x04779c42 // lsl z2.s, z2.s, #23
	WORD $0x658108a5 // fmul z5.s, z5.s, z1.s
	WORD $0x658208af // fmul z15.s, z5.s, z2.s
	WORD $0xe545440f // st1w {z15.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   expSVE_loop
	CBZ   R6, expSVE_ret
	WORD $0xd503427f // smstop sm

expSVE_ret:
	RET

// func fastExpSVE(dst, src []float32, sm bool)
TEXT ·fastExpSVE(SB), NOSPLIT, $0-49
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  src_base+24(FP), R1
	MOVBU sm+48(FP), R6
	CBZ   R4, fastExpSVE_ret
	CBZ   R6, fastExpSVE_start
	WORD $0xd503437f // smstart sm

fastExpSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	MOVW $0xc2b00000, R9 // fexpLo = -88
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // fexpHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x3d29d080, R9 // fexpQ4
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3e2bf05b, R9 // fexpQ3
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3f0002db, R9 // fexpQ2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3f7ffd9a, R9 // fexpQ1
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3f7ffff4, R9 // fexpQ0
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

fastExpSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	// fastExp32(Z14) -> Z15
	WORD $0x0420bdc0 // movprfx z0, z14
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x04bd0063 // add z3.s, z3.s, z29.s
	WORD $0x04779c63 // lsl z3.s, z3.s, #23
	WORD $0x658308af // fmul z15.s, z5.s, z3.s
	WORD $0xe545440f // st1w {z15.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   fastExpSVE_loop
	CBZ   R6, fastExpSVE_ret
	WORD $0xd503427f // smstop sm

fastExpSVE_ret:
	RET

// func expSubSumSVE(dst, src []float32, m float32, sm bool) float32
TEXT ·expSubSumSVE(SB), NOSPLIT, $0-60
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  src_base+24(FP), R1
	MOVWU m+48(FP), R10
	MOVBU sm+52(FP), R6
	MOVW  $0, R9 // the sum of no terms: +0
	CBZ   R4, expSubSumSVE_ret
	CBZ   R6, expSubSumSVE_start
	WORD $0xd503437f // smstart sm

expSubSumSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	WORD $0x05a0394a // mov z10.s, w10
	WORD $0x25b8c009 // mov z9.s, #0
	MOVW $0xc2d00000, R9 // expLo = -104
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // expHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x39506967, R9 // expP0
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3ab743ce, R9 // expP1
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3c088908, R9 // expP2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3d2aa9c1, R9 // expP3
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3e2aaaaa, R9 // expP4
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x3f000000, R9 // expP5
	WORD $0x05a0393b // mov z27.s, w9
	MOVW $0x3f800000, R9 // 1.0
	WORD $0x05a0393c // mov z28.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

expSubSumSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0x658a05ce // fsub z14.s, z14.s, z10.s
	// exp32(Z14) -> Z15
	WORD $0x0420bdc0 // movprfx z0, z14
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x65bb8085 // fmad z5.s, p0/m, z4.s, z27.s
	WORD $0x65840887 // fmul z7.s, z4.s, z4.s
	WORD $0x65a480e5 // fmad z5.s, p0/m, z7.s, z4.s
	WORD $0x659c00a5 // fadd z5.s, z5.s, z28.s
	WORD $0x047f9061 // asr z1.s, z3.s, #1
	WORD $0x04a10462 // sub z2.s, z3.s, z1.s
	WORD $0x04bd0021 // add z1.s, z1.s, z29.s
	WORD $0x04779c21 // lsl z1.s, z1.s, #23
	WORD $0x04bd0042 // add z2.s, z2.s, z29.s
	WORD $0x04779c42 // lsl z2.s, z2.s, #23
	WORD $0x658108a5 // fmul z5.s, z5.s, z1.s
	WORD $0x658208af // fmul z15.s, z5.s, z2.s
	WORD $0x658085e9 // fadd z9.s, p1/m, z9.s, z15.s
	WORD $0xe545440f // st1w {z15.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   expSubSumSVE_loop
	WORD $0x65802129 // faddv s9, p0, z9.s
	WORD $0x2598e022 // ptrue p2.s, vl1
	WORD $0x05a1a929 // lastb w9, p2, z9.s
	CBZ   R6, expSubSumSVE_ret
	WORD $0xd503427f // smstop sm

expSubSumSVE_ret:
	MOVW  R9, ret+56(FP)
	RET

// func fastExpSubSumSVE(dst, src []float32, m float32, sm bool) float32
TEXT ·fastExpSubSumSVE(SB), NOSPLIT, $0-60
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  src_base+24(FP), R1
	MOVWU m+48(FP), R10
	MOVBU sm+52(FP), R6
	MOVW  $0, R9 // the sum of no terms: +0
	CBZ   R4, fastExpSubSumSVE_ret
	CBZ   R6, fastExpSubSumSVE_start
	WORD $0xd503437f // smstart sm

fastExpSubSumSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	WORD $0x05a0394a // mov z10.s, w10
	WORD $0x25b8c009 // mov z9.s, #0
	MOVW $0xc2b00000, R9 // fexpLo = -88
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // fexpHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x3d29d080, R9 // fexpQ4
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3e2bf05b, R9 // fexpQ3
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3f0002db, R9 // fexpQ2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3f7ffd9a, R9 // fexpQ1
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3f7ffff4, R9 // fexpQ0
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

fastExpSubSumSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0x658a05ce // fsub z14.s, z14.s, z10.s
	// fastExp32(Z14) -> Z15
	WORD $0x0420bdc0 // movprfx z0, z14
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x04bd0063 // add z3.s, z3.s, z29.s
	WORD $0x04779c63 // lsl z3.s, z3.s, #23
	WORD $0x658308af // fmul z15.s, z5.s, z3.s
	WORD $0x658085e9 // fadd z9.s, p1/m, z9.s, z15.s
	WORD $0xe545440f // st1w {z15.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   fastExpSubSumSVE_loop
	WORD $0x65802129 // faddv s9, p0, z9.s
	WORD $0x2598e022 // ptrue p2.s, vl1
	WORD $0x05a1a929 // lastb w9, p2, z9.s
	CBZ   R6, fastExpSubSumSVE_ret
	WORD $0xd503427f // smstop sm

fastExpSubSumSVE_ret:
	MOVW  R9, ret+56(FP)
	RET

// func maxSVE(x []float32, sm bool) float32
TEXT ·maxSVE(SB), NOSPLIT, $0-36
	MOVD  x_base+0(FP), R1
	MOVD  x_len+8(FP), R4
	MOVBU sm+24(FP), R6
	MOVW  $0xff800000, R9 // -Inf
	CBZ   R4, maxSVE_ret
	CBZ   R6, maxSVE_start
	WORD $0xd503437f // smstart sm

maxSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	WORD $0x05a0392f // mov z15.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

maxSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0x658f45d2 // fcmgt p2.s, p1/z, z14.s, z15.s
	WORD $0x05afc9cf // mov z15.s, p2/m, z14.s
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   maxSVE_loop
	WORD $0x658621ef // fmaxv s15, p0, z15.s
	WORD $0x2598e022 // ptrue p2.s, vl1
	WORD $0x05a1a9e9 // lastb w9, p2, z15.s
	CBZ   R6, maxSVE_ret
	WORD $0xd503427f // smstop sm

maxSVE_ret:
	MOVW  R9, ret+32(FP)
	RET

// func scaleSVE(x []float32, s float32, sm bool)
TEXT ·scaleSVE(SB), NOSPLIT, $0-29
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R4
	MOVWU s+24(FP), R10
	MOVBU sm+28(FP), R6
	CBZ   R4, scaleSVE_ret
	CBZ   R6, scaleSVE_start
	WORD $0xd503437f // smstart sm

scaleSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	WORD $0x05a0394a // mov z10.s, w10
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

scaleSVE_loop:
	WORD $0xa545440e // ld1w {z14.s}, p1/z, [x0, x5, lsl #2]
	WORD $0x658a09ce // fmul z14.s, z14.s, z10.s
	WORD $0xe545440e // st1w {z14.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   scaleSVE_loop
	CBZ   R6, scaleSVE_ret
	WORD $0xd503427f // smstop sm

scaleSVE_ret:
	RET


// SiLU, SiLUMul and GELUTanh: sigmoidMul32 as in nonlinear_arm64.s, with
// Z14 x, Z15 z (GELU), Z11 the result, Z12 e, Z13 1+e, Z8 up (SiLUMul),
// Z9/Z10 geluA/geluB, Z30 2^100; the clamps of s to [0, 1] use FMAX/FMIN
// with immediates.

// func siluSVE(dst, x []float32, sm bool)
TEXT ·siluSVE(SB), NOSPLIT, $0-49
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  x_base+24(FP), R1
	MOVBU sm+48(FP), R6
	CBZ   R4, siluSVE_ret
	CBZ   R6, siluSVE_start
	WORD $0xd503437f // smstart sm

siluSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	MOVW $0xc2d00000, R9 // expLo = -104
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // expHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x39506967, R9 // expP0
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3ab743ce, R9 // expP1
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3c088908, R9 // expP2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3d2aa9c1, R9 // expP3
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3e2aaaaa, R9 // expP4
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x3f000000, R9 // expP5
	WORD $0x05a0393b // mov z27.s, w9
	MOVW $0x3f800000, R9 // 1.0
	WORD $0x05a0393c // mov z28.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVW $0x71800000, R9 // sigStep = 2^100
	WORD $0x05a0393e // mov z30.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

siluSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	// sigmoidMul32(Z14, Z14) -> Z11
	WORD $0x0420bdcb // movprfx z11, z14
	WORD $0x0500080b // orr z11.s, z11.s, #0x80000000
	// exp32(Z11) -> Z12
	WORD $0x0420bd60 // movprfx z0, z11
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x65bb8085 // fmad z5.s, p0/m, z4.s, z27.s
	WORD $0x65840887 // fmul z7.s, z4.s, z4.s
	WORD $0x65a480e5 // fmad z5.s, p0/m, z7.s, z4.s
	WORD $0x659c00a5 // fadd z5.s, z5.s, z28.s
	WORD $0x047f9061 // asr z1.s, z3.s, #1
	WORD $0x04a10462 // sub z2.s, z3.s, z1.s
	WORD $0x04bd0021 // add z1.s, z1.s, z29.s
	WORD $0x04779c21 // lsl z1.s, z1.s, #23
	WORD $0x04bd0042 // add z2.s, z2.s, z29.s
	WORD $0x04779c42 // lsl z2.s, z2.s, #23
	WORD $0x658108a5 // fmul z5.s, z5.s, z1.s
	WORD $0x658208ac // fmul z12.s, z5.s, z2.s
	WORD $0x659c018d // fadd z13.s, z12.s, z28.s
	WORD $0x659e09cb // fmul z11.s, z14.s, z30.s
	WORD $0x659e800b // fmax z11.s, p0/m, z11.s, #0.0
	WORD $0x659f802b // fmin z11.s, p0/m, z11.s, #1.0
	WORD $0x6586818b // fmax z11.s, p0/m, z11.s, z12.s
	WORD $0x658b09cb // fmul z11.s, z14.s, z11.s
	WORD $0x658d81ab // fdiv z11.s, p0/m, z11.s, z13.s
	WORD $0xe545440b // st1w {z11.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   siluSVE_loop
	CBZ   R6, siluSVE_ret
	WORD $0xd503427f // smstop sm

siluSVE_ret:
	RET

// func geluTanhSVE(dst, x []float32, sm bool)
TEXT ·geluTanhSVE(SB), NOSPLIT, $0-49
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  x_base+24(FP), R1
	MOVBU sm+48(FP), R6
	CBZ   R4, geluTanhSVE_ret
	CBZ   R6, geluTanhSVE_start
	WORD $0xd503437f // smstart sm

geluTanhSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	MOVW $0xc2d00000, R9 // expLo = -104
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // expHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x39506967, R9 // expP0
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3ab743ce, R9 // expP1
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3c088908, R9 // expP2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3d2aa9c1, R9 // expP3
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3e2aaaaa, R9 // expP4
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x3f000000, R9 // expP5
	WORD $0x05a0393b // mov z27.s, w9
	MOVW $0x3f800000, R9 // 1.0
	WORD $0x05a0393c // mov z28.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVW $0x71800000, R9 // sigStep = 2^100
	WORD $0x05a0393e // mov z30.s, w9
	MOVW $0x3fcc422a, R9 // geluA = 2·√(2/π)
	WORD $0x05a03929 // mov z9.s, w9
	MOVW $0x3d922279, R9 // geluB
	WORD $0x05a0392a // mov z10.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

geluTanhSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0x658e09cb // fmul z11.s, z14.s, z14.s
	WORD $0x0420bd2c // movprfx z12, z9
	WORD $0x65ab014c // fmla z12.s, p0/m, z10.s, z11.s
	WORD $0x658c09cf // fmul z15.s, z14.s, z12.s
	// sigmoidMul32(Z14, Z15) -> Z11
	WORD $0x0420bdeb // movprfx z11, z15
	WORD $0x0500080b // orr z11.s, z11.s, #0x80000000
	// exp32(Z11) -> Z12
	WORD $0x0420bd60 // movprfx z0, z11
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x65bb8085 // fmad z5.s, p0/m, z4.s, z27.s
	WORD $0x65840887 // fmul z7.s, z4.s, z4.s
	WORD $0x65a480e5 // fmad z5.s, p0/m, z7.s, z4.s
	WORD $0x659c00a5 // fadd z5.s, z5.s, z28.s
	WORD $0x047f9061 // asr z1.s, z3.s, #1
	WORD $0x04a10462 // sub z2.s, z3.s, z1.s
	WORD $0x04bd0021 // add z1.s, z1.s, z29.s
	WORD $0x04779c21 // lsl z1.s, z1.s, #23
	WORD $0x04bd0042 // add z2.s, z2.s, z29.s
	WORD $0x04779c42 // lsl z2.s, z2.s, #23
	WORD $0x658108a5 // fmul z5.s, z5.s, z1.s
	WORD $0x658208ac // fmul z12.s, z5.s, z2.s
	WORD $0x659c018d // fadd z13.s, z12.s, z28.s
	WORD $0x659e09eb // fmul z11.s, z15.s, z30.s
	WORD $0x659e800b // fmax z11.s, p0/m, z11.s, #0.0
	WORD $0x659f802b // fmin z11.s, p0/m, z11.s, #1.0
	WORD $0x6586818b // fmax z11.s, p0/m, z11.s, z12.s
	WORD $0x658b09cb // fmul z11.s, z14.s, z11.s
	WORD $0x658d81ab // fdiv z11.s, p0/m, z11.s, z13.s
	WORD $0xe545440b // st1w {z11.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   geluTanhSVE_loop
	CBZ   R6, geluTanhSVE_ret
	WORD $0xd503427f // smstop sm

geluTanhSVE_ret:
	RET

// func siluMulSVE(dst, gate, up []float32, sm bool)
TEXT ·siluMulSVE(SB), NOSPLIT, $0-73
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  gate_base+24(FP), R1
	MOVD  up_base+48(FP), R2
	MOVBU sm+72(FP), R6
	CBZ   R4, siluMulSVE_ret
	CBZ   R6, siluMulSVE_start
	WORD $0xd503437f // smstart sm

siluMulSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	MOVW $0xc2d00000, R9 // expLo = -104
	WORD $0x05a03930 // mov z16.s, w9
	MOVW $0x42b1999a, R9 // expHi = 88.8
	WORD $0x05a03931 // mov z17.s, w9
	MOVW $0x3fb8aa3b, R9 // log2e
	WORD $0x05a03932 // mov z18.s, w9
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	WORD $0x05a03933 // mov z19.s, w9
	MOVW $0x3f318000, R9 // expC1
	WORD $0x05a03934 // mov z20.s, w9
	MOVW $0xb95e8083, R9 // expC2
	WORD $0x05a03935 // mov z21.s, w9
	MOVW $0x39506967, R9 // expP0
	WORD $0x05a03936 // mov z22.s, w9
	MOVW $0x3ab743ce, R9 // expP1
	WORD $0x05a03937 // mov z23.s, w9
	MOVW $0x3c088908, R9 // expP2
	WORD $0x05a03938 // mov z24.s, w9
	MOVW $0x3d2aa9c1, R9 // expP3
	WORD $0x05a03939 // mov z25.s, w9
	MOVW $0x3e2aaaaa, R9 // expP4
	WORD $0x05a0393a // mov z26.s, w9
	MOVW $0x3f000000, R9 // expP5
	WORD $0x05a0393b // mov z27.s, w9
	MOVW $0x3f800000, R9 // 1.0
	WORD $0x05a0393c // mov z28.s, w9
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	WORD $0x05a0393d // mov z29.s, w9
	MOVW $0x71800000, R9 // sigStep = 2^100
	WORD $0x05a0393e // mov z30.s, w9
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

siluMulSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0xa5454448 // ld1w {z8.s}, p1/z, [x2, x5, lsl #2]
	// sigmoidMul32(Z14, Z14) -> Z11
	WORD $0x0420bdcb // movprfx z11, z14
	WORD $0x0500080b // orr z11.s, z11.s, #0x80000000
	// exp32(Z11) -> Z12
	WORD $0x0420bd60 // movprfx z0, z11
	WORD $0x65868200 // fmax z0.s, p0/m, z0.s, z16.s
	WORD $0x65878220 // fmin z0.s, p0/m, z0.s, z17.s
	WORD $0x65920801 // fmul z1.s, z0.s, z18.s
	WORD $0x65930021 // fadd z1.s, z1.s, z19.s
	WORD $0x65930422 // fsub z2.s, z1.s, z19.s
	WORD $0x04b30423 // sub z3.s, z1.s, z19.s
	WORD $0x0420bc04 // movprfx z4, z0
	WORD $0x65b42044 // fmls z4.s, p0/m, z2.s, z20.s
	WORD $0x65b52044 // fmls z4.s, p0/m, z2.s, z21.s
	WORD $0x0420bc85 // movprfx z5, z4
	WORD $0x65b782c5 // fmad z5.s, p0/m, z22.s, z23.s
	WORD $0x65b88085 // fmad z5.s, p0/m, z4.s, z24.s
	WORD $0x65b98085 // fmad z5.s, p0/m, z4.s, z25.s
	WORD $0x65ba8085 // fmad z5.s, p0/m, z4.s, z26.s
	WORD $0x65bb8085 // fmad z5.s, p0/m, z4.s, z27.s
	WORD $0x65840887 // fmul z7.s, z4.s, z4.s
	WORD $0x65a480e5 // fmad z5.s, p0/m, z7.s, z4.s
	WORD $0x659c00a5 // fadd z5.s, z5.s, z28.s
	WORD $0x047f9061 // asr z1.s, z3.s, #1
	WORD $0x04a10462 // sub z2.s, z3.s, z1.s
	WORD $0x04bd0021 // add z1.s, z1.s, z29.s
	WORD $0x04779c21 // lsl z1.s, z1.s, #23
	WORD $0x04bd0042 // add z2.s, z2.s, z29.s
	WORD $0x04779c42 // lsl z2.s, z2.s, #23
	WORD $0x658108a5 // fmul z5.s, z5.s, z1.s
	WORD $0x658208ac // fmul z12.s, z5.s, z2.s
	WORD $0x659c018d // fadd z13.s, z12.s, z28.s
	WORD $0x659e09cb // fmul z11.s, z14.s, z30.s
	WORD $0x659e800b // fmax z11.s, p0/m, z11.s, #0.0
	WORD $0x659f802b // fmin z11.s, p0/m, z11.s, #1.0
	WORD $0x6586818b // fmax z11.s, p0/m, z11.s, z12.s
	WORD $0x658b09cb // fmul z11.s, z14.s, z11.s
	WORD $0x658d81ab // fdiv z11.s, p0/m, z11.s, z13.s
	// silu32(gate[i]) * up[i]
	WORD $0x6588096b // fmul z11.s, z11.s, z8.s
	WORD $0xe545440b // st1w {z11.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   siluMulSVE_loop
	CBZ   R6, siluMulSVE_ret
	WORD $0xd503427f // smstop sm

siluMulSVE_ret:
	RET

// func sumSqSVE(x []float32, sm bool) float32
TEXT ·sumSqSVE(SB), NOSPLIT, $0-36
	MOVD  x_base+0(FP), R1
	MOVD  x_len+8(FP), R4
	MOVBU sm+24(FP), R6
	MOVW  $0, R9 // the sum of no terms: +0
	CBZ   R4, sumSqSVE_ret
	CBZ   R6, sumSqSVE_start
	WORD $0xd503437f // smstart sm

sumSqSVE_start:
	WORD $0x2598e3e0 // ptrue p0.s
	WORD $0x25b8c009 // mov z9.s, #0
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

sumSqSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0x65ae05c9 // fmla z9.s, p1/m, z14.s, z14.s
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   sumSqSVE_loop
	WORD $0x65802129 // faddv s9, p0, z9.s
	WORD $0x2598e022 // ptrue p2.s, vl1
	WORD $0x05a1a929 // lastb w9, p2, z9.s
	CBZ   R6, sumSqSVE_ret
	WORD $0xd503427f // smstop sm

sumSqSVE_ret:
	MOVW  R9, ret+32(FP)
	RET

// func mulScaleSVE(dst, x, w []float32, s float32, sm bool)
TEXT ·mulScaleSVE(SB), NOSPLIT, $0-77
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R4
	MOVD  x_base+24(FP), R1
	MOVD  w_base+48(FP), R2
	MOVWU s+72(FP), R10
	MOVBU sm+76(FP), R6
	CBZ   R4, mulScaleSVE_ret
	CBZ   R6, mulScaleSVE_start
	WORD $0xd503437f // smstart sm

mulScaleSVE_start:
	WORD $0x05a0394a // mov z10.s, w10
	MOVD  $0, R5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4

mulScaleSVE_loop:
	WORD $0xa545442e // ld1w {z14.s}, p1/z, [x1, x5, lsl #2]
	WORD $0xa545444d // ld1w {z13.s}, p1/z, [x2, x5, lsl #2]
	WORD $0x658a09ce // fmul z14.s, z14.s, z10.s
	WORD $0x658d09ce // fmul z14.s, z14.s, z13.s
	WORD $0xe545440e // st1w {z14.s}, p1, [x0, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a41ca1 // whilelo p1.s, x5, x4
	BMI   mulScaleSVE_loop
	CBZ   R6, mulScaleSVE_ret
	WORD $0xd503427f // smstop sm

mulScaleSVE_ret:
	RET

// RoPE: for every head of x (2·half elements, half = len(cos)), the pairs
// (a, b) at i < half are rotated as ropeGo does, with exact products and one
// subtract or add (FMUL, FMUL, FSUB; FMUL, FMUL, FADD: no FMA, as in the
// twin and the NEON kernels), so every lane gives the twin's bits. Lanes
// count pairs: P1 = WHILELO(i, half) on every load and store, so any even
// head dim works and nothing outside the head is touched. The Go side
// passes whole heads only (len(x) a multiple of 2·half, half > 0).
// Registers: R0 the head, R4 the end of x, R2 cos, R3 sin, R7 half, R8 the
// head's bytes, R5 i, R6 sm, R10 the head's second half (ropeHalfSVE), R11
// 2i (ropeAdjacentSVE); Z0 a, Z1 b, Z2 cos, Z3 sin, Z4..Z7 products, Z4/Z5
// the results.

// func ropeHalfSVE(x, cos, sin []float32, sm bool)
TEXT ·ropeHalfSVE(SB), NOSPLIT, $0-73
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R4
	MOVD  cos_base+24(FP), R2
	MOVD  cos_len+32(FP), R7
	MOVD  sin_base+48(FP), R3
	MOVBU sm+72(FP), R6
	CBZ   R4, ropeHalfSVE_ret
	CBZ   R7, ropeHalfSVE_ret
	ADD   R4<<2, R0, R4
	LSL   $3, R7, R8
	CBZ   R6, ropeHalfSVE_head
	WORD $0xd503437f // smstart sm

ropeHalfSVE_head:
	ADD   R7<<2, R0, R10
	MOVD  $0, R5
	WORD $0x25a71ca1 // whilelo p1.s, x5, x7

ropeHalfSVE_loop:
	WORD $0xa5454400 // ld1w {z0.s}, p1/z, [x0, x5, lsl #2]
	WORD $0xa5454541 // ld1w {z1.s}, p1/z, [x10, x5, lsl #2]
	WORD $0xa5454442 // ld1w {z2.s}, p1/z, [x2, x5, lsl #2]
	WORD $0xa5454463 // ld1w {z3.s}, p1/z, [x3, x5, lsl #2]
	WORD $0x65820804 // fmul z4.s, z0.s, z2.s
	WORD $0x65830825 // fmul z5.s, z1.s, z3.s
	WORD $0x65850484 // fsub z4.s, z4.s, z5.s
	WORD $0x65830806 // fmul z6.s, z0.s, z3.s
	WORD $0x65820827 // fmul z7.s, z1.s, z2.s
	WORD $0x658700c5 // fadd z5.s, z6.s, z7.s
	WORD $0xe5454404 // st1w {z4.s}, p1, [x0, x5, lsl #2]
	WORD $0xe5454545 // st1w {z5.s}, p1, [x10, x5, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x25a71ca1 // whilelo p1.s, x5, x7
	BMI   ropeHalfSVE_loop
	ADD   R8, R0, R0
	CMP   R4, R0
	BLO   ropeHalfSVE_head
	CBZ   R6, ropeHalfSVE_ret
	WORD $0xd503427f // smstop sm

ropeHalfSVE_ret:
	RET

// func ropeAdjacentSVE(x, cos, sin []float32, sm bool)
// LD2W splits the pairs (x[2i], x[2i+1]) into Z0 and Z1, ST2W interleaves
// the results back.
TEXT ·ropeAdjacentSVE(SB), NOSPLIT, $0-73
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R4
	MOVD  cos_base+24(FP), R2
	MOVD  cos_len+32(FP), R7
	MOVD  sin_base+48(FP), R3
	MOVBU sm+72(FP), R6
	CBZ   R4, ropeAdjacentSVE_ret
	CBZ   R7, ropeAdjacentSVE_ret
	ADD   R4<<2, R0, R4
	LSL   $3, R7, R8
	CBZ   R6, ropeAdjacentSVE_head
	WORD $0xd503437f // smstart sm

ropeAdjacentSVE_head:
	MOVD  $0, R5
	MOVD  $0, R11
	WORD $0x25a71ca1 // whilelo p1.s, x5, x7

ropeAdjacentSVE_loop:
	WORD $0xa52bc400 // ld2w {z0.s, z1.s}, p1/z, [x0, x11, lsl #2]
	WORD $0xa5454442 // ld1w {z2.s}, p1/z, [x2, x5, lsl #2]
	WORD $0xa5454463 // ld1w {z3.s}, p1/z, [x3, x5, lsl #2]
	WORD $0x65820804 // fmul z4.s, z0.s, z2.s
	WORD $0x65830825 // fmul z5.s, z1.s, z3.s
	WORD $0x65850484 // fsub z4.s, z4.s, z5.s
	WORD $0x65830806 // fmul z6.s, z0.s, z3.s
	WORD $0x65820827 // fmul z7.s, z1.s, z2.s
	WORD $0x658700c5 // fadd z5.s, z6.s, z7.s
	WORD $0xe52b6404 // st2w {z4.s, z5.s}, p1, [x0, x11, lsl #2]
	WORD $0x04b0e3e5 // incw x5
	WORD $0x04b1e3eb // incw x11, all, mul #2
	WORD $0x25a71ca1 // whilelo p1.s, x5, x7
	BMI   ropeAdjacentSVE_loop
	ADD   R8, R0, R0
	CMP   R4, R0
	BLO   ropeAdjacentSVE_head
	CBZ   R6, ropeAdjacentSVE_ret
	WORD $0xd503427f // smstop sm

ropeAdjacentSVE_ret:
	RET
