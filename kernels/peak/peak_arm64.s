//go:build !purego

// Hand-written arm64 compute-ceiling loops; the Go side (data layout,
// models, availability) is peak_arm64.go. Go's arm64 assembler has no
// FMLA/BFDOT/SDOT/*MMLA vector forms nor any SVE/SME instruction, so those
// are WORDs, each commented with its mnemonic as printed by
// `aarch64-linux-gnu-as -march=armv9-a+sme+sve2+bf16+i8mm+fp16 |
// aarch64-linux-gnu-objdump -d`.
//
// NEON and SVE loops: buf holds 24 accumulator vectors then the sources a
// and b (see fill in peak.go); accumulators live in V0..V23 (Z0..Z23), a in
// V24 (Z24), b in V25 (Z25). Each iteration issues one instruction per
// accumulator, so 24 independent chains cover latency x pipes of every core
// we target: 4-cycle FMLA x 4 FP/SIMD pipes = 16 in flight on Apple M1..M4
// and Neoverse V2/N2 (2 pipes x 4 cycles = 8 on Neoverse V1's 256-bit SVE),
// with 50% margin for the longer *MMLA/BFDOT latencies.
//
// SME loops run in streaming mode: SMSTART, load the four 32-bit ZA tiles
// (ZA0.S..ZA3.S) row by row from buf, load a and b into Z0 and Z1, run iters
// iterations of one outer product into each tile (4 independent tile
// accumulators), store the tiles back row by row, SMSTOP, RET. Nothing in
// streaming mode calls Go or uses a NEON instruction (Apple M4 lacks
// FEAT_SME_FA64), and every function is NOSPLIT with a $0 frame and leaves
// streaming mode before its only RET. The Go side bounds iters per call so
// one call stays well under a millisecond (assembly is not preempted).

#include "textflag.h"

// func addChain(iters int) uint64
TEXT ·addChain(SB), NOSPLIT, $0-16
	MOVD iters+0(FP), R1
	MOVD $0, R0
	MOVD $1, R2
	CMP  $0, R1
	BLE  addchain_done

addchain_loop:
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	ADD  R2, R0, R0
	SUBS $1, R1, R1
	BNE  addchain_loop

addchain_done:
	MOVD R0, ret+8(FP)
	RET

// func fmlaS4(buf *byte, iters int)
// FMLA Vd.4S, V24.4S, V25.4S (fp32 acc += a*b)
TEXT ·fmlaS4(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    fmlaS4_done

fmlaS4_loop:
	WORD $0x4e39cf00 // fmla v0.4s, v24.4s, v25.4s
	WORD $0x4e39cf01 // fmla v1.4s, v24.4s, v25.4s
	WORD $0x4e39cf02 // fmla v2.4s, v24.4s, v25.4s
	WORD $0x4e39cf03 // fmla v3.4s, v24.4s, v25.4s
	WORD $0x4e39cf04 // fmla v4.4s, v24.4s, v25.4s
	WORD $0x4e39cf05 // fmla v5.4s, v24.4s, v25.4s
	WORD $0x4e39cf06 // fmla v6.4s, v24.4s, v25.4s
	WORD $0x4e39cf07 // fmla v7.4s, v24.4s, v25.4s
	WORD $0x4e39cf08 // fmla v8.4s, v24.4s, v25.4s
	WORD $0x4e39cf09 // fmla v9.4s, v24.4s, v25.4s
	WORD $0x4e39cf0a // fmla v10.4s, v24.4s, v25.4s
	WORD $0x4e39cf0b // fmla v11.4s, v24.4s, v25.4s
	WORD $0x4e39cf0c // fmla v12.4s, v24.4s, v25.4s
	WORD $0x4e39cf0d // fmla v13.4s, v24.4s, v25.4s
	WORD $0x4e39cf0e // fmla v14.4s, v24.4s, v25.4s
	WORD $0x4e39cf0f // fmla v15.4s, v24.4s, v25.4s
	WORD $0x4e39cf10 // fmla v16.4s, v24.4s, v25.4s
	WORD $0x4e39cf11 // fmla v17.4s, v24.4s, v25.4s
	WORD $0x4e39cf12 // fmla v18.4s, v24.4s, v25.4s
	WORD $0x4e39cf13 // fmla v19.4s, v24.4s, v25.4s
	WORD $0x4e39cf14 // fmla v20.4s, v24.4s, v25.4s
	WORD $0x4e39cf15 // fmla v21.4s, v24.4s, v25.4s
	WORD $0x4e39cf16 // fmla v22.4s, v24.4s, v25.4s
	WORD $0x4e39cf17 // fmla v23.4s, v24.4s, v25.4s
	SUBS $1, R1, R1
	BNE  fmlaS4_loop

fmlaS4_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func fmlaD2(buf *byte, iters int)
// FMLA Vd.2D, V24.2D, V25.2D (fp64 acc += a*b)
TEXT ·fmlaD2(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    fmlaD2_done

fmlaD2_loop:
	WORD $0x4e79cf00 // fmla v0.2d, v24.2d, v25.2d
	WORD $0x4e79cf01 // fmla v1.2d, v24.2d, v25.2d
	WORD $0x4e79cf02 // fmla v2.2d, v24.2d, v25.2d
	WORD $0x4e79cf03 // fmla v3.2d, v24.2d, v25.2d
	WORD $0x4e79cf04 // fmla v4.2d, v24.2d, v25.2d
	WORD $0x4e79cf05 // fmla v5.2d, v24.2d, v25.2d
	WORD $0x4e79cf06 // fmla v6.2d, v24.2d, v25.2d
	WORD $0x4e79cf07 // fmla v7.2d, v24.2d, v25.2d
	WORD $0x4e79cf08 // fmla v8.2d, v24.2d, v25.2d
	WORD $0x4e79cf09 // fmla v9.2d, v24.2d, v25.2d
	WORD $0x4e79cf0a // fmla v10.2d, v24.2d, v25.2d
	WORD $0x4e79cf0b // fmla v11.2d, v24.2d, v25.2d
	WORD $0x4e79cf0c // fmla v12.2d, v24.2d, v25.2d
	WORD $0x4e79cf0d // fmla v13.2d, v24.2d, v25.2d
	WORD $0x4e79cf0e // fmla v14.2d, v24.2d, v25.2d
	WORD $0x4e79cf0f // fmla v15.2d, v24.2d, v25.2d
	WORD $0x4e79cf10 // fmla v16.2d, v24.2d, v25.2d
	WORD $0x4e79cf11 // fmla v17.2d, v24.2d, v25.2d
	WORD $0x4e79cf12 // fmla v18.2d, v24.2d, v25.2d
	WORD $0x4e79cf13 // fmla v19.2d, v24.2d, v25.2d
	WORD $0x4e79cf14 // fmla v20.2d, v24.2d, v25.2d
	WORD $0x4e79cf15 // fmla v21.2d, v24.2d, v25.2d
	WORD $0x4e79cf16 // fmla v22.2d, v24.2d, v25.2d
	WORD $0x4e79cf17 // fmla v23.2d, v24.2d, v25.2d
	SUBS $1, R1, R1
	BNE  fmlaD2_loop

fmlaD2_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func fmlaH8(buf *byte, iters int)
// FMLA Vd.8H, V24.8H, V25.8H (fp16 acc += a*b; FEAT_FP16)
TEXT ·fmlaH8(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    fmlaH8_done

fmlaH8_loop:
	WORD $0x4e590f00 // fmla v0.8h, v24.8h, v25.8h
	WORD $0x4e590f01 // fmla v1.8h, v24.8h, v25.8h
	WORD $0x4e590f02 // fmla v2.8h, v24.8h, v25.8h
	WORD $0x4e590f03 // fmla v3.8h, v24.8h, v25.8h
	WORD $0x4e590f04 // fmla v4.8h, v24.8h, v25.8h
	WORD $0x4e590f05 // fmla v5.8h, v24.8h, v25.8h
	WORD $0x4e590f06 // fmla v6.8h, v24.8h, v25.8h
	WORD $0x4e590f07 // fmla v7.8h, v24.8h, v25.8h
	WORD $0x4e590f08 // fmla v8.8h, v24.8h, v25.8h
	WORD $0x4e590f09 // fmla v9.8h, v24.8h, v25.8h
	WORD $0x4e590f0a // fmla v10.8h, v24.8h, v25.8h
	WORD $0x4e590f0b // fmla v11.8h, v24.8h, v25.8h
	WORD $0x4e590f0c // fmla v12.8h, v24.8h, v25.8h
	WORD $0x4e590f0d // fmla v13.8h, v24.8h, v25.8h
	WORD $0x4e590f0e // fmla v14.8h, v24.8h, v25.8h
	WORD $0x4e590f0f // fmla v15.8h, v24.8h, v25.8h
	WORD $0x4e590f10 // fmla v16.8h, v24.8h, v25.8h
	WORD $0x4e590f11 // fmla v17.8h, v24.8h, v25.8h
	WORD $0x4e590f12 // fmla v18.8h, v24.8h, v25.8h
	WORD $0x4e590f13 // fmla v19.8h, v24.8h, v25.8h
	WORD $0x4e590f14 // fmla v20.8h, v24.8h, v25.8h
	WORD $0x4e590f15 // fmla v21.8h, v24.8h, v25.8h
	WORD $0x4e590f16 // fmla v22.8h, v24.8h, v25.8h
	WORD $0x4e590f17 // fmla v23.8h, v24.8h, v25.8h
	SUBS $1, R1, R1
	BNE  fmlaH8_loop

fmlaH8_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func bfdotS4(buf *byte, iters int)
// BFDOT Vd.4S, V24.8H, V25.8H (fp32 acc[i] += a[2i]*b[2i] + a[2i+1]*b[2i+1], bf16 a, b; FEAT_BF16)
TEXT ·bfdotS4(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    bfdotS4_done

bfdotS4_loop:
	WORD $0x6e59ff00 // bfdot v0.4s, v24.8h, v25.8h
	WORD $0x6e59ff01 // bfdot v1.4s, v24.8h, v25.8h
	WORD $0x6e59ff02 // bfdot v2.4s, v24.8h, v25.8h
	WORD $0x6e59ff03 // bfdot v3.4s, v24.8h, v25.8h
	WORD $0x6e59ff04 // bfdot v4.4s, v24.8h, v25.8h
	WORD $0x6e59ff05 // bfdot v5.4s, v24.8h, v25.8h
	WORD $0x6e59ff06 // bfdot v6.4s, v24.8h, v25.8h
	WORD $0x6e59ff07 // bfdot v7.4s, v24.8h, v25.8h
	WORD $0x6e59ff08 // bfdot v8.4s, v24.8h, v25.8h
	WORD $0x6e59ff09 // bfdot v9.4s, v24.8h, v25.8h
	WORD $0x6e59ff0a // bfdot v10.4s, v24.8h, v25.8h
	WORD $0x6e59ff0b // bfdot v11.4s, v24.8h, v25.8h
	WORD $0x6e59ff0c // bfdot v12.4s, v24.8h, v25.8h
	WORD $0x6e59ff0d // bfdot v13.4s, v24.8h, v25.8h
	WORD $0x6e59ff0e // bfdot v14.4s, v24.8h, v25.8h
	WORD $0x6e59ff0f // bfdot v15.4s, v24.8h, v25.8h
	WORD $0x6e59ff10 // bfdot v16.4s, v24.8h, v25.8h
	WORD $0x6e59ff11 // bfdot v17.4s, v24.8h, v25.8h
	WORD $0x6e59ff12 // bfdot v18.4s, v24.8h, v25.8h
	WORD $0x6e59ff13 // bfdot v19.4s, v24.8h, v25.8h
	WORD $0x6e59ff14 // bfdot v20.4s, v24.8h, v25.8h
	WORD $0x6e59ff15 // bfdot v21.4s, v24.8h, v25.8h
	WORD $0x6e59ff16 // bfdot v22.4s, v24.8h, v25.8h
	WORD $0x6e59ff17 // bfdot v23.4s, v24.8h, v25.8h
	SUBS $1, R1, R1
	BNE  bfdotS4_loop

bfdotS4_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func bfmmlaS4(buf *byte, iters int)
// BFMMLA Vd.4S, V24.8H, V25.8H (2x2 fp32 acc += A(2x4 bf16) x B(2x4 bf16)^T; FEAT_BF16)
TEXT ·bfmmlaS4(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    bfmmlaS4_done

bfmmlaS4_loop:
	WORD $0x6e59ef00 // bfmmla v0.4s, v24.8h, v25.8h
	WORD $0x6e59ef01 // bfmmla v1.4s, v24.8h, v25.8h
	WORD $0x6e59ef02 // bfmmla v2.4s, v24.8h, v25.8h
	WORD $0x6e59ef03 // bfmmla v3.4s, v24.8h, v25.8h
	WORD $0x6e59ef04 // bfmmla v4.4s, v24.8h, v25.8h
	WORD $0x6e59ef05 // bfmmla v5.4s, v24.8h, v25.8h
	WORD $0x6e59ef06 // bfmmla v6.4s, v24.8h, v25.8h
	WORD $0x6e59ef07 // bfmmla v7.4s, v24.8h, v25.8h
	WORD $0x6e59ef08 // bfmmla v8.4s, v24.8h, v25.8h
	WORD $0x6e59ef09 // bfmmla v9.4s, v24.8h, v25.8h
	WORD $0x6e59ef0a // bfmmla v10.4s, v24.8h, v25.8h
	WORD $0x6e59ef0b // bfmmla v11.4s, v24.8h, v25.8h
	WORD $0x6e59ef0c // bfmmla v12.4s, v24.8h, v25.8h
	WORD $0x6e59ef0d // bfmmla v13.4s, v24.8h, v25.8h
	WORD $0x6e59ef0e // bfmmla v14.4s, v24.8h, v25.8h
	WORD $0x6e59ef0f // bfmmla v15.4s, v24.8h, v25.8h
	WORD $0x6e59ef10 // bfmmla v16.4s, v24.8h, v25.8h
	WORD $0x6e59ef11 // bfmmla v17.4s, v24.8h, v25.8h
	WORD $0x6e59ef12 // bfmmla v18.4s, v24.8h, v25.8h
	WORD $0x6e59ef13 // bfmmla v19.4s, v24.8h, v25.8h
	WORD $0x6e59ef14 // bfmmla v20.4s, v24.8h, v25.8h
	WORD $0x6e59ef15 // bfmmla v21.4s, v24.8h, v25.8h
	WORD $0x6e59ef16 // bfmmla v22.4s, v24.8h, v25.8h
	WORD $0x6e59ef17 // bfmmla v23.4s, v24.8h, v25.8h
	SUBS $1, R1, R1
	BNE  bfmmlaS4_loop

bfmmlaS4_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func sdotS4(buf *byte, iters int)
// SDOT Vd.4S, V24.16B, V25.16B (int32 acc[i] += sum of 4 s8*s8; FEAT_DotProd)
TEXT ·sdotS4(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    sdotS4_done

sdotS4_loop:
	WORD $0x4e999700 // sdot v0.4s, v24.16b, v25.16b
	WORD $0x4e999701 // sdot v1.4s, v24.16b, v25.16b
	WORD $0x4e999702 // sdot v2.4s, v24.16b, v25.16b
	WORD $0x4e999703 // sdot v3.4s, v24.16b, v25.16b
	WORD $0x4e999704 // sdot v4.4s, v24.16b, v25.16b
	WORD $0x4e999705 // sdot v5.4s, v24.16b, v25.16b
	WORD $0x4e999706 // sdot v6.4s, v24.16b, v25.16b
	WORD $0x4e999707 // sdot v7.4s, v24.16b, v25.16b
	WORD $0x4e999708 // sdot v8.4s, v24.16b, v25.16b
	WORD $0x4e999709 // sdot v9.4s, v24.16b, v25.16b
	WORD $0x4e99970a // sdot v10.4s, v24.16b, v25.16b
	WORD $0x4e99970b // sdot v11.4s, v24.16b, v25.16b
	WORD $0x4e99970c // sdot v12.4s, v24.16b, v25.16b
	WORD $0x4e99970d // sdot v13.4s, v24.16b, v25.16b
	WORD $0x4e99970e // sdot v14.4s, v24.16b, v25.16b
	WORD $0x4e99970f // sdot v15.4s, v24.16b, v25.16b
	WORD $0x4e999710 // sdot v16.4s, v24.16b, v25.16b
	WORD $0x4e999711 // sdot v17.4s, v24.16b, v25.16b
	WORD $0x4e999712 // sdot v18.4s, v24.16b, v25.16b
	WORD $0x4e999713 // sdot v19.4s, v24.16b, v25.16b
	WORD $0x4e999714 // sdot v20.4s, v24.16b, v25.16b
	WORD $0x4e999715 // sdot v21.4s, v24.16b, v25.16b
	WORD $0x4e999716 // sdot v22.4s, v24.16b, v25.16b
	WORD $0x4e999717 // sdot v23.4s, v24.16b, v25.16b
	SUBS $1, R1, R1
	BNE  sdotS4_loop

sdotS4_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func smmlaS4(buf *byte, iters int)
// SMMLA Vd.4S, V24.16B, V25.16B (2x2 int32 acc += A(2x8 s8) x B(2x8 s8)^T; FEAT_I8MM)
TEXT ·smmlaS4(SB), NOSPLIT, $0-16
	MOVD   buf+0(FP), R0
	MOVD   iters+8(FP), R1
	MOVD   R0, R2
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R2), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R2), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R2), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 64(R2), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R2), [V20.B16, V21.B16, V22.B16, V23.B16]
	VLD1   (R2), [V24.B16, V25.B16]
	CMP    $0, R1
	BLE    smmlaS4_done

smmlaS4_loop:
	WORD $0x4e99a700 // smmla v0.4s, v24.16b, v25.16b
	WORD $0x4e99a701 // smmla v1.4s, v24.16b, v25.16b
	WORD $0x4e99a702 // smmla v2.4s, v24.16b, v25.16b
	WORD $0x4e99a703 // smmla v3.4s, v24.16b, v25.16b
	WORD $0x4e99a704 // smmla v4.4s, v24.16b, v25.16b
	WORD $0x4e99a705 // smmla v5.4s, v24.16b, v25.16b
	WORD $0x4e99a706 // smmla v6.4s, v24.16b, v25.16b
	WORD $0x4e99a707 // smmla v7.4s, v24.16b, v25.16b
	WORD $0x4e99a708 // smmla v8.4s, v24.16b, v25.16b
	WORD $0x4e99a709 // smmla v9.4s, v24.16b, v25.16b
	WORD $0x4e99a70a // smmla v10.4s, v24.16b, v25.16b
	WORD $0x4e99a70b // smmla v11.4s, v24.16b, v25.16b
	WORD $0x4e99a70c // smmla v12.4s, v24.16b, v25.16b
	WORD $0x4e99a70d // smmla v13.4s, v24.16b, v25.16b
	WORD $0x4e99a70e // smmla v14.4s, v24.16b, v25.16b
	WORD $0x4e99a70f // smmla v15.4s, v24.16b, v25.16b
	WORD $0x4e99a710 // smmla v16.4s, v24.16b, v25.16b
	WORD $0x4e99a711 // smmla v17.4s, v24.16b, v25.16b
	WORD $0x4e99a712 // smmla v18.4s, v24.16b, v25.16b
	WORD $0x4e99a713 // smmla v19.4s, v24.16b, v25.16b
	WORD $0x4e99a714 // smmla v20.4s, v24.16b, v25.16b
	WORD $0x4e99a715 // smmla v21.4s, v24.16b, v25.16b
	WORD $0x4e99a716 // smmla v22.4s, v24.16b, v25.16b
	WORD $0x4e99a717 // smmla v23.4s, v24.16b, v25.16b
	SUBS $1, R1, R1
	BNE  smmlaS4_loop

smmlaS4_done:
	VST1.P [V0.B16, V1.B16, V2.B16, V3.B16], 64(R0)
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R0)
	VST1.P [V8.B16, V9.B16, V10.B16, V11.B16], 64(R0)
	VST1.P [V12.B16, V13.B16, V14.B16, V15.B16], 64(R0)
	VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)
	RET

// func sveVL() int
// The SVE vector length in bytes (RDVL).
TEXT ·sveVL(SB), NOSPLIT, $0-8
	WORD $0x04bf5020 // rdvl x0, #1
	MOVD R0, ret+0(FP)
	RET

// func fmlaSVE(buf *byte, iters int)
// FMLA Zd.S, P0/M, Z24.S, Z25.S with P0 all true (fp32 acc += a*b on VL/32 lanes).
TEXT ·fmlaSVE(SB), NOSPLIT, $0-16
	MOVD buf+0(FP), R0
	MOVD iters+8(FP), R1
	WORD $0x2598e3e0 // ptrue p0.s
	WORD $0x85804000 // ldr z0, [x0, #0, mul vl]
	WORD $0x85804401 // ldr z1, [x0, #1, mul vl]
	WORD $0x85804802 // ldr z2, [x0, #2, mul vl]
	WORD $0x85804c03 // ldr z3, [x0, #3, mul vl]
	WORD $0x85805004 // ldr z4, [x0, #4, mul vl]
	WORD $0x85805405 // ldr z5, [x0, #5, mul vl]
	WORD $0x85805806 // ldr z6, [x0, #6, mul vl]
	WORD $0x85805c07 // ldr z7, [x0, #7, mul vl]
	WORD $0x85814008 // ldr z8, [x0, #8, mul vl]
	WORD $0x85814409 // ldr z9, [x0, #9, mul vl]
	WORD $0x8581480a // ldr z10, [x0, #10, mul vl]
	WORD $0x85814c0b // ldr z11, [x0, #11, mul vl]
	WORD $0x8581500c // ldr z12, [x0, #12, mul vl]
	WORD $0x8581540d // ldr z13, [x0, #13, mul vl]
	WORD $0x8581580e // ldr z14, [x0, #14, mul vl]
	WORD $0x85815c0f // ldr z15, [x0, #15, mul vl]
	WORD $0x85824010 // ldr z16, [x0, #16, mul vl]
	WORD $0x85824411 // ldr z17, [x0, #17, mul vl]
	WORD $0x85824812 // ldr z18, [x0, #18, mul vl]
	WORD $0x85824c13 // ldr z19, [x0, #19, mul vl]
	WORD $0x85825014 // ldr z20, [x0, #20, mul vl]
	WORD $0x85825415 // ldr z21, [x0, #21, mul vl]
	WORD $0x85825816 // ldr z22, [x0, #22, mul vl]
	WORD $0x85825c17 // ldr z23, [x0, #23, mul vl]
	WORD $0x85834018 // ldr z24, [x0, #24, mul vl]
	WORD $0x85834419 // ldr z25, [x0, #25, mul vl]
	CMP  $0, R1
	BLE  fmlaSVE_done

fmlaSVE_loop:
	WORD $0x65b90300 // fmla z0.s, p0/m, z24.s, z25.s
	WORD $0x65b90301 // fmla z1.s, p0/m, z24.s, z25.s
	WORD $0x65b90302 // fmla z2.s, p0/m, z24.s, z25.s
	WORD $0x65b90303 // fmla z3.s, p0/m, z24.s, z25.s
	WORD $0x65b90304 // fmla z4.s, p0/m, z24.s, z25.s
	WORD $0x65b90305 // fmla z5.s, p0/m, z24.s, z25.s
	WORD $0x65b90306 // fmla z6.s, p0/m, z24.s, z25.s
	WORD $0x65b90307 // fmla z7.s, p0/m, z24.s, z25.s
	WORD $0x65b90308 // fmla z8.s, p0/m, z24.s, z25.s
	WORD $0x65b90309 // fmla z9.s, p0/m, z24.s, z25.s
	WORD $0x65b9030a // fmla z10.s, p0/m, z24.s, z25.s
	WORD $0x65b9030b // fmla z11.s, p0/m, z24.s, z25.s
	WORD $0x65b9030c // fmla z12.s, p0/m, z24.s, z25.s
	WORD $0x65b9030d // fmla z13.s, p0/m, z24.s, z25.s
	WORD $0x65b9030e // fmla z14.s, p0/m, z24.s, z25.s
	WORD $0x65b9030f // fmla z15.s, p0/m, z24.s, z25.s
	WORD $0x65b90310 // fmla z16.s, p0/m, z24.s, z25.s
	WORD $0x65b90311 // fmla z17.s, p0/m, z24.s, z25.s
	WORD $0x65b90312 // fmla z18.s, p0/m, z24.s, z25.s
	WORD $0x65b90313 // fmla z19.s, p0/m, z24.s, z25.s
	WORD $0x65b90314 // fmla z20.s, p0/m, z24.s, z25.s
	WORD $0x65b90315 // fmla z21.s, p0/m, z24.s, z25.s
	WORD $0x65b90316 // fmla z22.s, p0/m, z24.s, z25.s
	WORD $0x65b90317 // fmla z23.s, p0/m, z24.s, z25.s
	SUBS $1, R1, R1
	BNE  fmlaSVE_loop

fmlaSVE_done:
	WORD $0xe5804000 // str z0, [x0, #0, mul vl]
	WORD $0xe5804401 // str z1, [x0, #1, mul vl]
	WORD $0xe5804802 // str z2, [x0, #2, mul vl]
	WORD $0xe5804c03 // str z3, [x0, #3, mul vl]
	WORD $0xe5805004 // str z4, [x0, #4, mul vl]
	WORD $0xe5805405 // str z5, [x0, #5, mul vl]
	WORD $0xe5805806 // str z6, [x0, #6, mul vl]
	WORD $0xe5805c07 // str z7, [x0, #7, mul vl]
	WORD $0xe5814008 // str z8, [x0, #8, mul vl]
	WORD $0xe5814409 // str z9, [x0, #9, mul vl]
	WORD $0xe581480a // str z10, [x0, #10, mul vl]
	WORD $0xe5814c0b // str z11, [x0, #11, mul vl]
	WORD $0xe581500c // str z12, [x0, #12, mul vl]
	WORD $0xe581540d // str z13, [x0, #13, mul vl]
	WORD $0xe581580e // str z14, [x0, #14, mul vl]
	WORD $0xe5815c0f // str z15, [x0, #15, mul vl]
	WORD $0xe5824010 // str z16, [x0, #16, mul vl]
	WORD $0xe5824411 // str z17, [x0, #17, mul vl]
	WORD $0xe5824812 // str z18, [x0, #18, mul vl]
	WORD $0xe5824c13 // str z19, [x0, #19, mul vl]
	WORD $0xe5825014 // str z20, [x0, #20, mul vl]
	WORD $0xe5825415 // str z21, [x0, #21, mul vl]
	WORD $0xe5825816 // str z22, [x0, #22, mul vl]
	WORD $0xe5825c17 // str z23, [x0, #23, mul vl]
	RET

// func smeSVL() int
// The streaming vector length in bytes (RDSVL; legal outside streaming mode).
TEXT ·smeSVL(SB), NOSPLIT, $0-8
	WORD $0x04bf5820 // rdsvl x0, #1
	MOVD R0, ret+0(FP)
	RET

// func fmopaF32(buf *byte, iters int)
// FMOPA ZAt.S, P0/M, P0/M, Z0.S, Z1.S (fp32 outer product: every element += a*b)
//
// buf: ZA0.S..ZA3.S, row-major, SVL/32 rows of SVL bytes each, then a
// and b (SVL bytes each). R3 rows per tile, R8 bytes per tile, R10 bytes per
// row, R4..R7 the tile pointers, R9 the sources, R12 the slice index (W12).
TEXT ·fmopaF32(SB), NOSPLIT, $0-16
	MOVD buf+0(FP), R0
	MOVD iters+8(FP), R1
	WORD $0xd503477f // smstart
	WORD $0x2518e3e0 // ptrue p0.b
	WORD $0x04a0e3e3 // cntw x3
	WORD $0x04bf582a // rdsvl x10, #1
	MUL  R3, R10, R8
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	ADD  R8, R7, R9
	MOVD $0, R12

fmopaF32_load:
	WORD $0xe09f0080 // ld1w {za0h.s[w12, 0]}, p0/z, [x4]
	WORD $0xe09f00a4 // ld1w {za1h.s[w12, 0]}, p0/z, [x5]
	WORD $0xe09f00c8 // ld1w {za2h.s[w12, 0]}, p0/z, [x6]
	WORD $0xe09f00ec // ld1w {za3h.s[w12, 0]}, p0/z, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  fmopaF32_load
	WORD $0x85804120 // ldr z0, [x9]
	WORD $0x85804521 // ldr z1, [x9, #1, mul vl]
	CMP  $0, R1
	BLE  fmopaF32_done

fmopaF32_loop:
	WORD $0x80810000 // fmopa za0.s, p0/m, p0/m, z0.s, z1.s
	WORD $0x80810001 // fmopa za1.s, p0/m, p0/m, z0.s, z1.s
	WORD $0x80810002 // fmopa za2.s, p0/m, p0/m, z0.s, z1.s
	WORD $0x80810003 // fmopa za3.s, p0/m, p0/m, z0.s, z1.s
	SUBS $1, R1, R1
	BNE  fmopaF32_loop

fmopaF32_done:
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	MOVD $0, R12

fmopaF32_store:
	WORD $0xe0bf0080 // st1w {za0h.s[w12, 0]}, p0, [x4]
	WORD $0xe0bf00a4 // st1w {za1h.s[w12, 0]}, p0, [x5]
	WORD $0xe0bf00c8 // st1w {za2h.s[w12, 0]}, p0, [x6]
	WORD $0xe0bf00ec // st1w {za3h.s[w12, 0]}, p0, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  fmopaF32_store
	WORD $0xd503467f // smstop
	RET

// func bfmopaF32(buf *byte, iters int)
// BFMOPA ZAt.S, P0/M, P0/M, Z0.H, Z1.H (widening: every fp32 element += sum of 2 bf16 products)
//
// buf: ZA0.S..ZA3.S, row-major, SVL/32 rows of SVL bytes each, then a
// and b (SVL bytes each). R3 rows per tile, R8 bytes per tile, R10 bytes per
// row, R4..R7 the tile pointers, R9 the sources, R12 the slice index (W12).
TEXT ·bfmopaF32(SB), NOSPLIT, $0-16
	MOVD buf+0(FP), R0
	MOVD iters+8(FP), R1
	WORD $0xd503477f // smstart
	WORD $0x2518e3e0 // ptrue p0.b
	WORD $0x04a0e3e3 // cntw x3
	WORD $0x04bf582a // rdsvl x10, #1
	MUL  R3, R10, R8
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	ADD  R8, R7, R9
	MOVD $0, R12

bfmopaF32_load:
	WORD $0xe09f0080 // ld1w {za0h.s[w12, 0]}, p0/z, [x4]
	WORD $0xe09f00a4 // ld1w {za1h.s[w12, 0]}, p0/z, [x5]
	WORD $0xe09f00c8 // ld1w {za2h.s[w12, 0]}, p0/z, [x6]
	WORD $0xe09f00ec // ld1w {za3h.s[w12, 0]}, p0/z, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  bfmopaF32_load
	WORD $0x85804120 // ldr z0, [x9]
	WORD $0x85804521 // ldr z1, [x9, #1, mul vl]
	CMP  $0, R1
	BLE  bfmopaF32_done

bfmopaF32_loop:
	WORD $0x81810000 // bfmopa za0.s, p0/m, p0/m, z0.h, z1.h
	WORD $0x81810001 // bfmopa za1.s, p0/m, p0/m, z0.h, z1.h
	WORD $0x81810002 // bfmopa za2.s, p0/m, p0/m, z0.h, z1.h
	WORD $0x81810003 // bfmopa za3.s, p0/m, p0/m, z0.h, z1.h
	SUBS $1, R1, R1
	BNE  bfmopaF32_loop

bfmopaF32_done:
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	MOVD $0, R12

bfmopaF32_store:
	WORD $0xe0bf0080 // st1w {za0h.s[w12, 0]}, p0, [x4]
	WORD $0xe0bf00a4 // st1w {za1h.s[w12, 0]}, p0, [x5]
	WORD $0xe0bf00c8 // st1w {za2h.s[w12, 0]}, p0, [x6]
	WORD $0xe0bf00ec // st1w {za3h.s[w12, 0]}, p0, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  bfmopaF32_store
	WORD $0xd503467f // smstop
	RET

// func fmopaF16F32(buf *byte, iters int)
// FMOPA ZAt.S, P0/M, P0/M, Z0.H, Z1.H (widening: every fp32 element += sum of 2 fp16 products)
//
// buf: ZA0.S..ZA3.S, row-major, SVL/32 rows of SVL bytes each, then a
// and b (SVL bytes each). R3 rows per tile, R8 bytes per tile, R10 bytes per
// row, R4..R7 the tile pointers, R9 the sources, R12 the slice index (W12).
TEXT ·fmopaF16F32(SB), NOSPLIT, $0-16
	MOVD buf+0(FP), R0
	MOVD iters+8(FP), R1
	WORD $0xd503477f // smstart
	WORD $0x2518e3e0 // ptrue p0.b
	WORD $0x04a0e3e3 // cntw x3
	WORD $0x04bf582a // rdsvl x10, #1
	MUL  R3, R10, R8
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	ADD  R8, R7, R9
	MOVD $0, R12

fmopaF16F32_load:
	WORD $0xe09f0080 // ld1w {za0h.s[w12, 0]}, p0/z, [x4]
	WORD $0xe09f00a4 // ld1w {za1h.s[w12, 0]}, p0/z, [x5]
	WORD $0xe09f00c8 // ld1w {za2h.s[w12, 0]}, p0/z, [x6]
	WORD $0xe09f00ec // ld1w {za3h.s[w12, 0]}, p0/z, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  fmopaF16F32_load
	WORD $0x85804120 // ldr z0, [x9]
	WORD $0x85804521 // ldr z1, [x9, #1, mul vl]
	CMP  $0, R1
	BLE  fmopaF16F32_done

fmopaF16F32_loop:
	WORD $0x81a10000 // fmopa za0.s, p0/m, p0/m, z0.h, z1.h
	WORD $0x81a10001 // fmopa za1.s, p0/m, p0/m, z0.h, z1.h
	WORD $0x81a10002 // fmopa za2.s, p0/m, p0/m, z0.h, z1.h
	WORD $0x81a10003 // fmopa za3.s, p0/m, p0/m, z0.h, z1.h
	SUBS $1, R1, R1
	BNE  fmopaF16F32_loop

fmopaF16F32_done:
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	MOVD $0, R12

fmopaF16F32_store:
	WORD $0xe0bf0080 // st1w {za0h.s[w12, 0]}, p0, [x4]
	WORD $0xe0bf00a4 // st1w {za1h.s[w12, 0]}, p0, [x5]
	WORD $0xe0bf00c8 // st1w {za2h.s[w12, 0]}, p0, [x6]
	WORD $0xe0bf00ec // st1w {za3h.s[w12, 0]}, p0, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  fmopaF16F32_store
	WORD $0xd503467f // smstop
	RET

// func smopaI32(buf *byte, iters int)
// SMOPA ZAt.S, P0/M, P0/M, Z0.B, Z1.B (widening: every int32 element += sum of 4 s8*s8 products)
//
// buf: ZA0.S..ZA3.S, row-major, SVL/32 rows of SVL bytes each, then a
// and b (SVL bytes each). R3 rows per tile, R8 bytes per tile, R10 bytes per
// row, R4..R7 the tile pointers, R9 the sources, R12 the slice index (W12).
TEXT ·smopaI32(SB), NOSPLIT, $0-16
	MOVD buf+0(FP), R0
	MOVD iters+8(FP), R1
	WORD $0xd503477f // smstart
	WORD $0x2518e3e0 // ptrue p0.b
	WORD $0x04a0e3e3 // cntw x3
	WORD $0x04bf582a // rdsvl x10, #1
	MUL  R3, R10, R8
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	ADD  R8, R7, R9
	MOVD $0, R12

smopaI32_load:
	WORD $0xe09f0080 // ld1w {za0h.s[w12, 0]}, p0/z, [x4]
	WORD $0xe09f00a4 // ld1w {za1h.s[w12, 0]}, p0/z, [x5]
	WORD $0xe09f00c8 // ld1w {za2h.s[w12, 0]}, p0/z, [x6]
	WORD $0xe09f00ec // ld1w {za3h.s[w12, 0]}, p0/z, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  smopaI32_load
	WORD $0x85804120 // ldr z0, [x9]
	WORD $0x85804521 // ldr z1, [x9, #1, mul vl]
	CMP  $0, R1
	BLE  smopaI32_done

smopaI32_loop:
	WORD $0xa0810000 // smopa za0.s, p0/m, p0/m, z0.b, z1.b
	WORD $0xa0810001 // smopa za1.s, p0/m, p0/m, z0.b, z1.b
	WORD $0xa0810002 // smopa za2.s, p0/m, p0/m, z0.b, z1.b
	WORD $0xa0810003 // smopa za3.s, p0/m, p0/m, z0.b, z1.b
	SUBS $1, R1, R1
	BNE  smopaI32_loop

smopaI32_done:
	MOVD R0, R4
	ADD  R8, R4, R5
	ADD  R8, R5, R6
	ADD  R8, R6, R7
	MOVD $0, R12

smopaI32_store:
	WORD $0xe0bf0080 // st1w {za0h.s[w12, 0]}, p0, [x4]
	WORD $0xe0bf00a4 // st1w {za1h.s[w12, 0]}, p0, [x5]
	WORD $0xe0bf00c8 // st1w {za2h.s[w12, 0]}, p0, [x6]
	WORD $0xe0bf00ec // st1w {za3h.s[w12, 0]}, p0, [x7]
	ADD  R10, R4, R4
	ADD  R10, R5, R5
	ADD  R10, R6, R6
	ADD  R10, R7, R7
	ADD  $1, R12, R12
	CMP  R3, R12
	BLT  smopaI32_store
	WORD $0xd503467f // smstop
	RET
