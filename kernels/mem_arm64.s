//go:build !purego

// Hand-written NEON memory kernels; specifications (Go loops) are on the
// declarations in mem_arm64.go. Go's arm64 assembler has no vector FADD,
// FADDP, STNP or scalar FMADD with the operand forms used here, so those are
// WORDs; each is commented with its mnemonic, as printed by
// `aarch64-linux-gnu-as | aarch64-linux-gnu-objdump -d`.
//
// Registers: R0..R3 pointers/counts, V0..V7 accumulators or data,
// V16..V23 loaded data, V16 also the broadcast scalar in triad.

#include "textflag.h"

// func readNEON(x []float64) float64
TEXT ·readNEON(SB), NOSPLIT, $0-32
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16

	// 16 elements per iteration into 8 independent accumulators.
	SUBS $16, R1, R1
	BLT  read_block_done

read_block_loop:
	VLD1.P 64(R0), [V16.D2, V17.D2, V18.D2, V19.D2]
	VLD1.P 64(R0), [V20.D2, V21.D2, V22.D2, V23.D2]
	WORD   $0x4e70d400                              // fadd v0.2d, v0.2d, v16.2d
	WORD   $0x4e71d421                              // fadd v1.2d, v1.2d, v17.2d
	WORD   $0x4e72d442                              // fadd v2.2d, v2.2d, v18.2d
	WORD   $0x4e73d463                              // fadd v3.2d, v3.2d, v19.2d
	WORD   $0x4e74d484                              // fadd v4.2d, v4.2d, v20.2d
	WORD   $0x4e75d4a5                              // fadd v5.2d, v5.2d, v21.2d
	WORD   $0x4e76d4c6                              // fadd v6.2d, v6.2d, v22.2d
	WORD   $0x4e77d4e7                              // fadd v7.2d, v7.2d, v23.2d
	SUBS   $16, R1, R1
	BGE    read_block_loop

read_block_done:
	ADD $16, R1, R1

	// Whole vectors (2 elements).
	SUBS $2, R1, R1
	BLT  read_vec_done

read_vec_loop:
	VLD1.P 16(R0), [V16.D2]
	WORD   $0x4e70d400      // fadd v0.2d, v0.2d, v16.2d
	SUBS   $2, R1, R1
	BGE    read_vec_loop

read_vec_done:
	ADD $2, R1, R1

	// Reduce: pairwise tree, then across the two lanes.
	WORD $0x4e61d400 // fadd v0.2d, v0.2d, v1.2d
	WORD $0x4e63d442 // fadd v2.2d, v2.2d, v3.2d
	WORD $0x4e65d484 // fadd v4.2d, v4.2d, v5.2d
	WORD $0x4e67d4c6 // fadd v6.2d, v6.2d, v7.2d
	WORD $0x4e62d400 // fadd v0.2d, v0.2d, v2.2d
	WORD $0x4e66d484 // fadd v4.2d, v4.2d, v6.2d
	WORD $0x4e64d400 // fadd v0.2d, v0.2d, v4.2d
	WORD $0x7e70d800 // faddp d0, v0.2d

	// Scalar tail.
	CBZ R1, read_tail_done

read_tail_loop:
	FMOVD.P 8(R0), F1
	FADDD   F1, F0
	SUB     $1, R1
	CBNZ    R1, read_tail_loop

read_tail_done:
	FMOVD F0, ret+24(FP)
	RET

// func writeNEON(x []float64, v float64)
TEXT ·writeNEON(SB), NOSPLIT, $0-32
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	MOVD v+24(FP), R2
	VDUP R2, V0.D2
	VDUP R2, V1.D2
	VDUP R2, V2.D2
	VDUP R2, V3.D2

	// 16 elements per iteration.
	SUBS $16, R1, R1
	BLT  write_block_done

write_block_loop:
	VST1.P [V0.D2, V1.D2, V2.D2, V3.D2], 64(R0)
	VST1.P [V0.D2, V1.D2, V2.D2, V3.D2], 64(R0)
	SUBS   $16, R1, R1
	BGE    write_block_loop

write_block_done:
	ADD $16, R1, R1

	// Whole vectors (2 elements).
	SUBS $2, R1, R1
	BLT  write_vec_done

write_vec_loop:
	VST1.P [V0.D2], 16(R0)
	SUBS   $2, R1, R1
	BGE    write_vec_loop

write_vec_done:
	ADD $2, R1, R1

	// Scalar tail (at most one element).
	CBZ  R1, write_tail_done
	MOVD R2, (R0)

write_tail_done:
	RET

// func writeNTNEON(x []float64, v float64)
TEXT ·writeNTNEON(SB), NOSPLIT, $0-32
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	MOVD v+24(FP), R2
	VDUP R2, V0.D2
	VDUP R2, V1.D2

	// 16 elements per iteration: 4 STNP of a Q pair (32 bytes each).
	// STNP needs no alignment beyond the element's.
	SUBS $16, R1, R1
	BLT  writent_block_done

writent_block_loop:
	WORD $0xac000400 // stnp q0, q1, [x0]
	WORD $0xac010400 // stnp q0, q1, [x0, #32]
	WORD $0xac020400 // stnp q0, q1, [x0, #64]
	WORD $0xac030400 // stnp q0, q1, [x0, #96]
	ADD  $128, R0
	SUBS $16, R1, R1
	BGE  writent_block_loop

writent_block_done:
	ADD $16, R1, R1

	// Pairs of elements: STNP of a D pair (16 bytes).
	SUBS $2, R1, R1
	BLT  writent_pair_done

writent_pair_loop:
	WORD $0x6c000400 // stnp d0, d1, [x0]
	ADD  $16, R0
	SUBS $2, R1, R1
	BGE  writent_pair_loop

writent_pair_done:
	ADD $2, R1, R1

	// A last odd element: arm64 has no single-register non-temporal
	// store, so it is a regular store.
	CBZ  R1, writent_tail_done
	MOVD R2, (R0)

writent_tail_done:
	RET

// func copyNEON(dst, src []float64)
TEXT ·copyNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1

	// 16 elements per iteration.
	SUBS $16, R2, R2
	BLT  copy_block_done

copy_block_loop:
	VLD1.P 64(R1), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P 64(R1), [V4.D2, V5.D2, V6.D2, V7.D2]
	VST1.P [V0.D2, V1.D2, V2.D2, V3.D2], 64(R0)
	VST1.P [V4.D2, V5.D2, V6.D2, V7.D2], 64(R0)
	SUBS   $16, R2, R2
	BGE    copy_block_loop

copy_block_done:
	ADD $16, R2, R2

	// Whole vectors (2 elements).
	SUBS $2, R2, R2
	BLT  copy_vec_done

copy_vec_loop:
	VLD1.P 16(R1), [V0.D2]
	VST1.P [V0.D2], 16(R0)
	SUBS   $2, R2, R2
	BGE    copy_vec_loop

copy_vec_done:
	ADD $2, R2, R2

	// Scalar tail (at most one element).
	CBZ  R2, copy_tail_done
	MOVD (R1), R3
	MOVD R3, (R0)

copy_tail_done:
	RET

// func triadNEON(a, b, c []float64, s float64)
TEXT ·triadNEON(SB), NOSPLIT, $0-80
	MOVD  a_base+0(FP), R0
	MOVD  a_len+8(FP), R3
	MOVD  b_base+24(FP), R1
	MOVD  c_base+48(FP), R2
	FMOVD s+72(FP), F16
	VDUP  V16.D[0], V16.D2

	// 8 elements per iteration: t = b; t += c*s (FMLA); a = t.
	SUBS $8, R3, R3
	BLT  triad_block_done

triad_block_loop:
	VLD1.P 64(R1), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P 64(R2), [V4.D2, V5.D2, V6.D2, V7.D2]
	WORD   $0x4e70cc80                          // fmla v0.2d, v4.2d, v16.2d
	WORD   $0x4e70cca1                          // fmla v1.2d, v5.2d, v16.2d
	WORD   $0x4e70ccc2                          // fmla v2.2d, v6.2d, v16.2d
	WORD   $0x4e70cce3                          // fmla v3.2d, v7.2d, v16.2d
	VST1.P [V0.D2, V1.D2, V2.D2, V3.D2], 64(R0)
	SUBS   $8, R3, R3
	BGE    triad_block_loop

triad_block_done:
	ADD $8, R3, R3

	// Whole vectors (2 elements).
	SUBS $2, R3, R3
	BLT  triad_vec_done

triad_vec_loop:
	VLD1.P 16(R1), [V0.D2]
	VLD1.P 16(R2), [V4.D2]
	WORD   $0x4e70cc80      // fmla v0.2d, v4.2d, v16.2d
	VST1.P [V0.D2], 16(R0)
	SUBS   $2, R3, R3
	BGE    triad_vec_loop

triad_vec_done:
	ADD $2, R3, R3

	// Scalar tail (at most one element).
	CBZ   R3, triad_tail_done
	FMOVD (R1), F0
	FMOVD (R2), F1
	WORD  $0x1f500020 // fmadd d0, d1, d16, d0
	FMOVD F0, (R0)

triad_tail_done:
	RET
