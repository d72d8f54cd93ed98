//go:build !purego

// Hand-written NEON non-linear kernels; the specifications (Go loops) are on
// the declarations in nonlinear_arm64.go and each lane computes the scalar
// function of nonlinear_go.go with the same operations in the same order
// (fma32 is FMLA/FMLS, max32/min32 are FMAX/FMIN, which agree with them on
// every input the kernels see, NaN included). Go's arm64 assembler has none
// of the vector floating-point instructions used, so they are WORDs, each
// commented with its mnemonic as printed by `aarch64-linux-gnu-as |
// aarch64-linux-gnu-objdump -d`.
//
// Each kernel processes len(dst)/4 whole vectors (len(x)/4 for the
// reductions) one per loop iteration (iterations are independent, so an
// out-of-order core overlaps them) and ignores the rest.
//
// Registers: R0..R3 pointers, R4 the vector count, R9 constant scratch; V0
// the clamped input, V1..V8 exp temporaries, V9/V10 GELU constants, V11..V15
// operands, V16..V29 exp constants, V30 2^100, V31 0.

#include "textflag.h"

// func expNEON(dst, src []float32)
TEXT ·expNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD src_base+24(FP), R1
	LSR  $2, R4, R4
	CBZ  R4, expNEON_done
	MOVW $0xc2d00000, R9 // expLo = -104
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // expHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x39506967, R9 // expP0
	VDUP R9, V22.S4
	MOVW $0x3ab743ce, R9 // expP1
	VDUP R9, V23.S4
	MOVW $0x3c088908, R9 // expP2
	VDUP R9, V24.S4
	MOVW $0x3d2aa9c1, R9 // expP3
	VDUP R9, V25.S4
	MOVW $0x3e2aaaaa, R9 // expP4
	VDUP R9, V26.S4
	MOVW $0x3f000000, R9 // expP5
	VDUP R9, V27.S4
	MOVW $0x3f800000, R9 // 1.0
	VDUP R9, V28.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4

expNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	// exp32(V14) -> V15
	WORD $0x4e30f5c0 // fmax v0.4s, v14.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebb1f65 // mov v5.16b, v27.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x6e24dc87 // fmul v7.4s, v4.4s, v4.4s
	WORD $0x4ea41c88 // mov v8.16b, v4.16b
	WORD $0x4e27cca8 // fmla v8.4s, v5.4s, v7.4s
	WORD $0x4e3cd508 // fadd v8.4s, v8.4s, v28.4s
	WORD $0x4f3f0461 // sshr v1.4s, v3.4s, #1
	WORD $0x6ea18462 // sub v2.4s, v3.4s, v1.4s
	WORD $0x4ebd8421 // add v1.4s, v1.4s, v29.4s
	WORD $0x4f375421 // shl v1.4s, v1.4s, #23
	WORD $0x4ebd8442 // add v2.4s, v2.4s, v29.4s
	WORD $0x4f375442 // shl v2.4s, v2.4s, #23
	WORD $0x6e21dd08 // fmul v8.4s, v8.4s, v1.4s
	WORD $0x6e22dd0f // fmul v15.4s, v8.4s, v2.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  expNEON_loop

expNEON_done:
	RET

// func fastExpNEON(dst, src []float32)
TEXT ·fastExpNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD src_base+24(FP), R1
	LSR  $2, R4, R4
	CBZ  R4, fastExpNEON_done
	MOVW $0xc2b00000, R9 // fexpLo = -88
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // fexpHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x3d29d080, R9 // fexpQ4
	VDUP R9, V22.S4
	MOVW $0x3e2bf05b, R9 // fexpQ3
	VDUP R9, V23.S4
	MOVW $0x3f0002db, R9 // fexpQ2
	VDUP R9, V24.S4
	MOVW $0x3f7ffd9a, R9 // fexpQ1
	VDUP R9, V25.S4
	MOVW $0x3f7ffff4, R9 // fexpQ0
	VDUP R9, V26.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4

fastExpNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	// fastExp32(V14) -> V15
	WORD $0x4e30f5c0 // fmax v0.4s, v14.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebd8463 // add v3.4s, v3.4s, v29.4s
	WORD $0x4f375463 // shl v3.4s, v3.4s, #23
	WORD $0x6e23dccf // fmul v15.4s, v6.4s, v3.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  fastExpNEON_loop

fastExpNEON_done:
	RET

// func siluNEON(dst, x []float32)
TEXT ·siluNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD x_base+24(FP), R1
	LSR  $2, R4, R4
	CBZ  R4, siluNEON_done
	MOVW $0xc2d00000, R9 // expLo = -104
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // expHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x39506967, R9 // expP0
	VDUP R9, V22.S4
	MOVW $0x3ab743ce, R9 // expP1
	VDUP R9, V23.S4
	MOVW $0x3c088908, R9 // expP2
	VDUP R9, V24.S4
	MOVW $0x3d2aa9c1, R9 // expP3
	VDUP R9, V25.S4
	MOVW $0x3e2aaaaa, R9 // expP4
	VDUP R9, V26.S4
	MOVW $0x3f000000, R9 // expP5
	VDUP R9, V27.S4
	MOVW $0x3f800000, R9 // 1.0
	VDUP R9, V28.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4
	MOVW $0x71800000, R9 // sigStep = 2^100
	VDUP R9, V30.S4
	MOVW $0x00000000, R9 // 0.0
	VDUP R9, V31.S4

siluNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	// sigmoidMul32(V14, V14) -> V15
	WORD $0x4eae1dcb // mov v11.16b, v14.16b
	WORD $0x4f04740b // orr v11.4s, #0x80, lsl #24
	// exp32(V11) -> V12
	WORD $0x4e30f560 // fmax v0.4s, v11.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebb1f65 // mov v5.16b, v27.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x6e24dc87 // fmul v7.4s, v4.4s, v4.4s
	WORD $0x4ea41c88 // mov v8.16b, v4.16b
	WORD $0x4e27cca8 // fmla v8.4s, v5.4s, v7.4s
	WORD $0x4e3cd508 // fadd v8.4s, v8.4s, v28.4s
	WORD $0x4f3f0461 // sshr v1.4s, v3.4s, #1
	WORD $0x6ea18462 // sub v2.4s, v3.4s, v1.4s
	WORD $0x4ebd8421 // add v1.4s, v1.4s, v29.4s
	WORD $0x4f375421 // shl v1.4s, v1.4s, #23
	WORD $0x4ebd8442 // add v2.4s, v2.4s, v29.4s
	WORD $0x4f375442 // shl v2.4s, v2.4s, #23
	WORD $0x6e21dd08 // fmul v8.4s, v8.4s, v1.4s
	WORD $0x6e22dd0c // fmul v12.4s, v8.4s, v2.4s
	WORD $0x4e3cd58d // fadd v13.4s, v12.4s, v28.4s
	WORD $0x6e3eddcb // fmul v11.4s, v14.4s, v30.4s
	WORD $0x4e3ff56b // fmax v11.4s, v11.4s, v31.4s
	WORD $0x4ebcf56b // fmin v11.4s, v11.4s, v28.4s
	WORD $0x4e2bf58b // fmax v11.4s, v12.4s, v11.4s
	WORD $0x6e2bddcb // fmul v11.4s, v14.4s, v11.4s
	WORD $0x6e2dfd6f // fdiv v15.4s, v11.4s, v13.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  siluNEON_loop

siluNEON_done:
	RET

// func geluTanhNEON(dst, x []float32)
TEXT ·geluTanhNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD x_base+24(FP), R1
	LSR  $2, R4, R4
	CBZ  R4, geluTanhNEON_done
	MOVW $0xc2d00000, R9 // expLo = -104
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // expHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x39506967, R9 // expP0
	VDUP R9, V22.S4
	MOVW $0x3ab743ce, R9 // expP1
	VDUP R9, V23.S4
	MOVW $0x3c088908, R9 // expP2
	VDUP R9, V24.S4
	MOVW $0x3d2aa9c1, R9 // expP3
	VDUP R9, V25.S4
	MOVW $0x3e2aaaaa, R9 // expP4
	VDUP R9, V26.S4
	MOVW $0x3f000000, R9 // expP5
	VDUP R9, V27.S4
	MOVW $0x3f800000, R9 // 1.0
	VDUP R9, V28.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4
	MOVW $0x71800000, R9 // sigStep = 2^100
	VDUP R9, V30.S4
	MOVW $0x00000000, R9 // 0.0
	VDUP R9, V31.S4
	MOVW $0x3fcc422a, R9 // geluA = 2·√(2/π)
	VDUP R9, V9.S4
	MOVW $0x3d922279, R9 // geluB
	VDUP R9, V10.S4

geluTanhNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	WORD $0x6e2eddcb // fmul v11.4s, v14.4s, v14.4s
	WORD $0x4ea91d2c // mov v12.16b, v9.16b
	WORD $0x4e2bcd4c // fmla v12.4s, v10.4s, v11.4s
	WORD $0x6e2cddcf // fmul v15.4s, v14.4s, v12.4s
	// sigmoidMul32(V14, V15) -> V15
	WORD $0x4eaf1deb // mov v11.16b, v15.16b
	WORD $0x4f04740b // orr v11.4s, #0x80, lsl #24
	// exp32(V11) -> V12
	WORD $0x4e30f560 // fmax v0.4s, v11.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebb1f65 // mov v5.16b, v27.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x6e24dc87 // fmul v7.4s, v4.4s, v4.4s
	WORD $0x4ea41c88 // mov v8.16b, v4.16b
	WORD $0x4e27cca8 // fmla v8.4s, v5.4s, v7.4s
	WORD $0x4e3cd508 // fadd v8.4s, v8.4s, v28.4s
	WORD $0x4f3f0461 // sshr v1.4s, v3.4s, #1
	WORD $0x6ea18462 // sub v2.4s, v3.4s, v1.4s
	WORD $0x4ebd8421 // add v1.4s, v1.4s, v29.4s
	WORD $0x4f375421 // shl v1.4s, v1.4s, #23
	WORD $0x4ebd8442 // add v2.4s, v2.4s, v29.4s
	WORD $0x4f375442 // shl v2.4s, v2.4s, #23
	WORD $0x6e21dd08 // fmul v8.4s, v8.4s, v1.4s
	WORD $0x6e22dd0c // fmul v12.4s, v8.4s, v2.4s
	WORD $0x4e3cd58d // fadd v13.4s, v12.4s, v28.4s
	WORD $0x6e3eddeb // fmul v11.4s, v15.4s, v30.4s
	WORD $0x4e3ff56b // fmax v11.4s, v11.4s, v31.4s
	WORD $0x4ebcf56b // fmin v11.4s, v11.4s, v28.4s
	WORD $0x4e2bf58b // fmax v11.4s, v12.4s, v11.4s
	WORD $0x6e2bddcb // fmul v11.4s, v14.4s, v11.4s
	WORD $0x6e2dfd6f // fdiv v15.4s, v11.4s, v13.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  geluTanhNEON_loop

geluTanhNEON_done:
	RET

// func siluMulNEON(dst, gate, up []float32)
TEXT ·siluMulNEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD gate_base+24(FP), R1
	MOVD up_base+48(FP), R2
	LSR  $2, R4, R4
	CBZ  R4, siluMulNEON_done
	MOVW $0xc2d00000, R9 // expLo = -104
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // expHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x39506967, R9 // expP0
	VDUP R9, V22.S4
	MOVW $0x3ab743ce, R9 // expP1
	VDUP R9, V23.S4
	MOVW $0x3c088908, R9 // expP2
	VDUP R9, V24.S4
	MOVW $0x3d2aa9c1, R9 // expP3
	VDUP R9, V25.S4
	MOVW $0x3e2aaaaa, R9 // expP4
	VDUP R9, V26.S4
	MOVW $0x3f000000, R9 // expP5
	VDUP R9, V27.S4
	MOVW $0x3f800000, R9 // 1.0
	VDUP R9, V28.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4
	MOVW $0x71800000, R9 // sigStep = 2^100
	VDUP R9, V30.S4
	MOVW $0x00000000, R9 // 0.0
	VDUP R9, V31.S4

siluMulNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	// sigmoidMul32(V14, V14) -> V15
	WORD $0x4eae1dcb // mov v11.16b, v14.16b
	WORD $0x4f04740b // orr v11.4s, #0x80, lsl #24
	// exp32(V11) -> V12
	WORD $0x4e30f560 // fmax v0.4s, v11.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebb1f65 // mov v5.16b, v27.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x6e24dc87 // fmul v7.4s, v4.4s, v4.4s
	WORD $0x4ea41c88 // mov v8.16b, v4.16b
	WORD $0x4e27cca8 // fmla v8.4s, v5.4s, v7.4s
	WORD $0x4e3cd508 // fadd v8.4s, v8.4s, v28.4s
	WORD $0x4f3f0461 // sshr v1.4s, v3.4s, #1
	WORD $0x6ea18462 // sub v2.4s, v3.4s, v1.4s
	WORD $0x4ebd8421 // add v1.4s, v1.4s, v29.4s
	WORD $0x4f375421 // shl v1.4s, v1.4s, #23
	WORD $0x4ebd8442 // add v2.4s, v2.4s, v29.4s
	WORD $0x4f375442 // shl v2.4s, v2.4s, #23
	WORD $0x6e21dd08 // fmul v8.4s, v8.4s, v1.4s
	WORD $0x6e22dd0c // fmul v12.4s, v8.4s, v2.4s
	WORD $0x4e3cd58d // fadd v13.4s, v12.4s, v28.4s
	WORD $0x6e3eddcb // fmul v11.4s, v14.4s, v30.4s
	WORD $0x4e3ff56b // fmax v11.4s, v11.4s, v31.4s
	WORD $0x4ebcf56b // fmin v11.4s, v11.4s, v28.4s
	WORD $0x4e2bf58b // fmax v11.4s, v12.4s, v11.4s
	WORD $0x6e2bddcb // fmul v11.4s, v14.4s, v11.4s
	WORD $0x6e2dfd6f // fdiv v15.4s, v11.4s, v13.4s
	VLD1.P 16(R2), [V14.S4]
	WORD $0x6e2eddef // fmul v15.4s, v15.4s, v14.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  siluMulNEON_loop

siluMulNEON_done:
	RET

// func maxNEON(x []float32) float32
TEXT ·maxNEON(SB), NOSPLIT, $0-28
	MOVD x_base+0(FP), R1
	MOVD x_len+8(FP), R4
	LSR  $2, R4, R4
	MOVW $0xff800000, R9 // -Inf
	VDUP R9, V15.S4
	CBZ  R4, maxNEON_reduce

maxNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	WORD $0x6eafe5cd // fcmgt v13.4s, v14.4s, v15.4s
	WORD $0x6ead1dcf // bit v15.16b, v14.16b, v13.16b
	SUBS $1, R4, R4
	BNE  maxNEON_loop

maxNEON_reduce:
	WORD $0x6e0f41ee // ext v14.16b, v15.16b, v15.16b, #8
	WORD $0x6eafe5cd // fcmgt v13.4s, v14.4s, v15.4s
	WORD $0x6ead1dcf // bit v15.16b, v14.16b, v13.16b
	WORD $0x6e0f21ee // ext v14.16b, v15.16b, v15.16b, #4
	WORD $0x6eafe5cd // fcmgt v13.4s, v14.4s, v15.4s
	WORD $0x6ead1dcf // bit v15.16b, v14.16b, v13.16b
	FMOVS F15, ret+24(FP)
	RET

// func expSubSumNEON(dst, src []float32, m float32) float32
TEXT ·expSubSumNEON(SB), NOSPLIT, $0-60
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD src_base+24(FP), R1
	FMOVS m+48(FP), F10
	VDUP V10.S[0], V10.S4
	VEOR V9.B16, V9.B16, V9.B16
	LSR  $2, R4, R4
	CBZ  R4, expSubSumNEON_done
	MOVW $0xc2d00000, R9 // expLo = -104
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // expHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x39506967, R9 // expP0
	VDUP R9, V22.S4
	MOVW $0x3ab743ce, R9 // expP1
	VDUP R9, V23.S4
	MOVW $0x3c088908, R9 // expP2
	VDUP R9, V24.S4
	MOVW $0x3d2aa9c1, R9 // expP3
	VDUP R9, V25.S4
	MOVW $0x3e2aaaaa, R9 // expP4
	VDUP R9, V26.S4
	MOVW $0x3f000000, R9 // expP5
	VDUP R9, V27.S4
	MOVW $0x3f800000, R9 // 1.0
	VDUP R9, V28.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4

expSubSumNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	WORD $0x4eaad5ce // fsub v14.4s, v14.4s, v10.4s
	// exp32(V14) -> V15
	WORD $0x4e30f5c0 // fmax v0.4s, v14.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebb1f65 // mov v5.16b, v27.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x6e24dc87 // fmul v7.4s, v4.4s, v4.4s
	WORD $0x4ea41c88 // mov v8.16b, v4.16b
	WORD $0x4e27cca8 // fmla v8.4s, v5.4s, v7.4s
	WORD $0x4e3cd508 // fadd v8.4s, v8.4s, v28.4s
	WORD $0x4f3f0461 // sshr v1.4s, v3.4s, #1
	WORD $0x6ea18462 // sub v2.4s, v3.4s, v1.4s
	WORD $0x4ebd8421 // add v1.4s, v1.4s, v29.4s
	WORD $0x4f375421 // shl v1.4s, v1.4s, #23
	WORD $0x4ebd8442 // add v2.4s, v2.4s, v29.4s
	WORD $0x4f375442 // shl v2.4s, v2.4s, #23
	WORD $0x6e21dd08 // fmul v8.4s, v8.4s, v1.4s
	WORD $0x6e22dd0f // fmul v15.4s, v8.4s, v2.4s
	WORD $0x4e2fd529 // fadd v9.4s, v9.4s, v15.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  expSubSumNEON_loop

expSubSumNEON_done:
	WORD $0x6e29d529 // faddp v9.4s, v9.4s, v9.4s
	WORD $0x7e30d929 // faddp s9, v9.2s
	FMOVS F9, ret+56(FP)
	RET

// func fastExpSubSumNEON(dst, src []float32, m float32) float32
TEXT ·fastExpSubSumNEON(SB), NOSPLIT, $0-60
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD src_base+24(FP), R1
	FMOVS m+48(FP), F10
	VDUP V10.S[0], V10.S4
	VEOR V9.B16, V9.B16, V9.B16
	LSR  $2, R4, R4
	CBZ  R4, fastExpSubSumNEON_done
	MOVW $0xc2b00000, R9 // fexpLo = -88
	VDUP R9, V16.S4
	MOVW $0x42b1999a, R9 // fexpHi = 88.8
	VDUP R9, V17.S4
	MOVW $0x3fb8aa3b, R9 // log2e
	VDUP R9, V18.S4
	MOVW $0x4b400000, R9 // expMagic = 1.5·2^23
	VDUP R9, V19.S4
	MOVW $0x3f318000, R9 // expC1
	VDUP R9, V20.S4
	MOVW $0xb95e8083, R9 // expC2
	VDUP R9, V21.S4
	MOVW $0x3d29d080, R9 // fexpQ4
	VDUP R9, V22.S4
	MOVW $0x3e2bf05b, R9 // fexpQ3
	VDUP R9, V23.S4
	MOVW $0x3f0002db, R9 // fexpQ2
	VDUP R9, V24.S4
	MOVW $0x3f7ffd9a, R9 // fexpQ1
	VDUP R9, V25.S4
	MOVW $0x3f7ffff4, R9 // fexpQ0
	VDUP R9, V26.S4
	MOVW $0x0000007f, R9 // 127 (int32 exponent bias)
	VDUP R9, V29.S4

fastExpSubSumNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	WORD $0x4eaad5ce // fsub v14.4s, v14.4s, v10.4s
	// fastExp32(V14) -> V15
	WORD $0x4e30f5c0 // fmax v0.4s, v14.4s, v16.4s
	WORD $0x4eb1f400 // fmin v0.4s, v0.4s, v17.4s
	WORD $0x6e32dc01 // fmul v1.4s, v0.4s, v18.4s
	WORD $0x4e33d421 // fadd v1.4s, v1.4s, v19.4s
	WORD $0x4eb3d422 // fsub v2.4s, v1.4s, v19.4s
	WORD $0x6eb38423 // sub v3.4s, v1.4s, v19.4s
	WORD $0x4ea01c04 // mov v4.16b, v0.16b
	WORD $0x4eb4cc44 // fmls v4.4s, v2.4s, v20.4s
	WORD $0x4eb5cc44 // fmls v4.4s, v2.4s, v21.4s
	WORD $0x4eb71ee5 // mov v5.16b, v23.16b
	WORD $0x4e24cec5 // fmla v5.4s, v22.4s, v4.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4eb91f25 // mov v5.16b, v25.16b
	WORD $0x4e24ccc5 // fmla v5.4s, v6.4s, v4.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e24cca6 // fmla v6.4s, v5.4s, v4.4s
	WORD $0x4ebd8463 // add v3.4s, v3.4s, v29.4s
	WORD $0x4f375463 // shl v3.4s, v3.4s, #23
	WORD $0x6e23dccf // fmul v15.4s, v6.4s, v3.4s
	WORD $0x4e2fd529 // fadd v9.4s, v9.4s, v15.4s
	VST1.P [V15.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  fastExpSubSumNEON_loop

fastExpSubSumNEON_done:
	WORD $0x6e29d529 // faddp v9.4s, v9.4s, v9.4s
	WORD $0x7e30d929 // faddp s9, v9.2s
	FMOVS F9, ret+56(FP)
	RET

// func scaleNEON(x []float32, s float32)
TEXT ·scaleNEON(SB), NOSPLIT, $0-28
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R4
	FMOVS s+24(FP), F10
	VDUP V10.S[0], V10.S4
	LSR  $2, R4, R4
	CBZ  R4, scaleNEON_done

scaleNEON_loop:
	VLD1 (R0), [V14.S4]
	WORD $0x6e2addce // fmul v14.4s, v14.4s, v10.4s
	VST1.P [V14.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  scaleNEON_loop

scaleNEON_done:
	RET

// func sumSqNEON(x []float32) float32
TEXT ·sumSqNEON(SB), NOSPLIT, $0-28
	MOVD x_base+0(FP), R1
	MOVD x_len+8(FP), R4
	VEOR V9.B16, V9.B16, V9.B16
	LSR  $2, R4, R4
	CBZ  R4, sumSqNEON_done

sumSqNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	WORD $0x4e2ecdc9 // fmla v9.4s, v14.4s, v14.4s
	SUBS $1, R4, R4
	BNE  sumSqNEON_loop

sumSqNEON_done:
	WORD $0x6e29d529 // faddp v9.4s, v9.4s, v9.4s
	WORD $0x7e30d929 // faddp s9, v9.2s
	FMOVS F9, ret+24(FP)
	RET

// func mulScaleNEON(dst, x, w []float32, s float32)
TEXT ·mulScaleNEON(SB), NOSPLIT, $0-76
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R4
	MOVD x_base+24(FP), R1
	MOVD w_base+48(FP), R2
	FMOVS s+72(FP), F10
	VDUP V10.S[0], V10.S4
	LSR  $2, R4, R4
	CBZ  R4, mulScaleNEON_done

mulScaleNEON_loop:
	VLD1.P 16(R1), [V14.S4]
	VLD1.P 16(R2), [V13.S4]
	WORD $0x6e2addce // fmul v14.4s, v14.4s, v10.4s
	WORD $0x6e2dddce // fmul v14.4s, v14.4s, v13.4s
	VST1.P [V14.S4], 16(R0)
	SUBS $1, R4, R4
	BNE  mulScaleNEON_loop

mulScaleNEON_done:
	RET

// The RoPE kernels rotate, for every head of x (2·len(cos) elements), the
// pairs of the first len(cos)&^3 indices i, four per iteration: a in V0, b
// in V1, cos[i] in V2, sin[i] in V3; a' = float32(a*c) - float32(b*s) in V4,
// b' = float32(a*s) + float32(b*c) in V5 (no FMA: the twin's bits). R0 the
// head, R4 the end of x, R5 the head's bytes (half's for ropeHalfNEON), R6
// the vectors per head; R7, R8 the cos and sin pointers, R9 the count, R10
// (and R1) the pair pointers.

// func ropeHalfNEON(x, cos, sin []float32)
TEXT ·ropeHalfNEON(SB), NOSPLIT, $0-72
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R4
	MOVD cos_base+24(FP), R2
	MOVD cos_len+32(FP), R5
	MOVD sin_base+48(FP), R3
	LSR  $2, R5, R6
	CBZ  R6, ropeHalfNEON_done
	ADD  R4<<2, R0, R4
	LSL  $2, R5, R5

ropeHalfNEON_head:
	MOVD R0, R10
	ADD  R5, R0, R1 // &head[half]
	MOVD R2, R7
	MOVD R3, R8
	MOVD R6, R9

ropeHalfNEON_loop:
	VLD1   (R10), [V0.S4]
	VLD1   (R1), [V1.S4]
	VLD1.P 16(R7), [V2.S4]
	VLD1.P 16(R8), [V3.S4]
	WORD   $0x6e22dc04 // fmul v4.4s, v0.4s, v2.4s
	WORD   $0x6e23dc25 // fmul v5.4s, v1.4s, v3.4s
	WORD   $0x4ea5d484 // fsub v4.4s, v4.4s, v5.4s
	WORD   $0x6e23dc06 // fmul v6.4s, v0.4s, v3.4s
	WORD   $0x6e22dc27 // fmul v7.4s, v1.4s, v2.4s
	WORD   $0x4e27d4c5 // fadd v5.4s, v6.4s, v7.4s
	VST1.P [V4.S4], 16(R10)
	VST1.P [V5.S4], 16(R1)
	SUBS   $1, R9, R9
	BNE    ropeHalfNEON_loop
	ADD    R5<<1, R0, R0
	CMP    R4, R0
	BLO    ropeHalfNEON_head

ropeHalfNEON_done:
	RET

// func ropeAdjacentNEON(x, cos, sin []float32)
// LD2 splits four pairs into a (V0) and b (V1); ST2 interleaves them back.
TEXT ·ropeAdjacentNEON(SB), NOSPLIT, $0-72
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R4
	MOVD cos_base+24(FP), R2
	MOVD cos_len+32(FP), R5
	MOVD sin_base+48(FP), R3
	LSR  $2, R5, R6
	CBZ  R6, ropeAdjacentNEON_done
	ADD  R4<<2, R0, R4
	LSL  $3, R5, R5

ropeAdjacentNEON_head:
	MOVD R0, R10
	MOVD R2, R7
	MOVD R3, R8
	MOVD R6, R9

ropeAdjacentNEON_loop:
	VLD2   (R10), [V0.S4, V1.S4]
	VLD1.P 16(R7), [V2.S4]
	VLD1.P 16(R8), [V3.S4]
	WORD   $0x6e22dc04 // fmul v4.4s, v0.4s, v2.4s
	WORD   $0x6e23dc25 // fmul v5.4s, v1.4s, v3.4s
	WORD   $0x4ea5d484 // fsub v4.4s, v4.4s, v5.4s
	WORD   $0x6e23dc06 // fmul v6.4s, v0.4s, v3.4s
	WORD   $0x6e22dc27 // fmul v7.4s, v1.4s, v2.4s
	WORD   $0x4e27d4c5 // fadd v5.4s, v6.4s, v7.4s
	VST2.P [V4.S4, V5.S4], 32(R10)
	SUBS   $1, R9, R9
	BNE    ropeAdjacentNEON_loop
	ADD    R5, R0, R0
	CMP    R4, R0
	BLO    ropeAdjacentNEON_head

ropeAdjacentNEON_done:
	RET
