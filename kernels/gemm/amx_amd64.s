//go:build !purego

#include "textflag.h"

// The AMX tile kernels of amx_amd64.go (see amxTileSpec in amx.go for what
// they compute, exactly). The Go assembler and avo know no AMX
// instruction, so each is emitted as BYTEs under a comment giving its Intel
// mnemonic; amx_amd64_test.go assembles every commented mnemonic with
// GNU as and compares the bytes (the encodings were also checked with
// llvm-mc 14 when first written). Tiles: C00, C01, C10, C11 = tmm0..3
// (fp32 or int32, 16×16), A rows 0..15 and 16..31 = tmm4, tmm5, B columns
// 0..15 and 16..31 = tmm6, tmm7; the configuration at cfg (palette 1,
// every tile 16 rows × 64 bytes) is loaded on entry and released
// (TILERELEASE) on exit, so no tile state outlives a call.
//
// One call multiplies one 32-row sliver of A by np panels of B over nkb K
// steps: per panel, C is loaded from c (load ≠ 0) or zeroed, the K steps
// run (B tiles, then parts × (A tiles, 4 products)), and C is stored back
// to c; the next panel's B is bstride bytes on and its C 4 KiB on. A is
// read as amx.go's slivers: per K step and part, tile A0 (16 rows, 64
// bytes apart) and A1 1 KiB further; the next part starts 2 KiB after A0.
// The same nkb·parts·2 KiB of A are read for every panel: from the
// second panel on they come from L1 where they fit.

// func amxTileBF16(cfg *byte, a *byte, b *byte, bstride int, np int, nkb int, parts int, c *byte, load int)
TEXT ·amxTileBF16(SB), NOSPLIT, $0-72
	MOVQ cfg+0(FP), SI
	// LDTILECFG [rsi]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0x06
	MOVQ a+8(FP), AX // A: the sliver's first K step of the chunk
	MOVQ b+16(FP), R9 // B: the first panel's first K step of the chunk
	MOVQ bstride+24(FP), R12 // bytes from one panel to the next
	MOVQ np+32(FP), R13
	MOVQ parts+48(FP), R11
	MOVQ c+56(FP), DI

amxTileBF16_panel:
	MOVQ $128, DX // C: 32 columns of 4 bytes per row
	CMPQ load+64(FP), $0
	JEQ  amxTileBF16_zero
	MOVQ DI, SI
	// TILELOADD tmm0, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x04
	BYTE $0x16
	LEAQ 64(DI), SI
	// TILELOADD tmm1, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x0c
	BYTE $0x16
	LEAQ 2048(DI), SI
	// TILELOADD tmm2, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x14
	BYTE $0x16
	LEAQ 2112(DI), SI
	// TILELOADD tmm3, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x1c
	BYTE $0x16
	JMP  amxTileBF16_k

amxTileBF16_zero:
	// TILEZERO tmm0
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xc0
	// TILEZERO tmm1
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xc8
	// TILEZERO tmm2
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xd0
	// TILEZERO tmm3
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xd8

amxTileBF16_k:
	MOVQ AX, R8 // A of this K step and part
	MOVQ R9, R10 // B of this K step
	MOVQ nkb+40(FP), CX

amxTileBF16_kb:
	MOVQ $128, DX // B panel: 128 bytes per k-group row
	MOVQ R10, SI
	// TILELOADD tmm6, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x34
	BYTE $0x16
	LEAQ 64(R10), SI
	// TILELOADD tmm7, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x3c
	BYTE $0x16
	MOVQ $64, DX // A: 64 bytes per row (amxLDA)
	MOVQ R11, BX

amxTileBF16_part:
	MOVQ R8, SI
	// TILELOADD tmm4, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x24
	BYTE $0x16
	LEAQ 1024(R8), SI // rows 16..31: 16·64 bytes on
	// TILELOADD tmm5, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x2c
	BYTE $0x16
	// TDPBF16PS tmm0, tmm4, tmm6
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x4a
	BYTE $0x5c
	BYTE $0xc4
	// TDPBF16PS tmm1, tmm4, tmm7
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x42
	BYTE $0x5c
	BYTE $0xcc
	// TDPBF16PS tmm2, tmm5, tmm6
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x4a
	BYTE $0x5c
	BYTE $0xd5
	// TDPBF16PS tmm3, tmm5, tmm7
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x42
	BYTE $0x5c
	BYTE $0xdd
	ADDQ $2048, R8 // the next part's (or K step's) A tiles
	DECQ BX
	JNZ  amxTileBF16_part
	ADDQ $2048, R10 // the next 16 k-group rows of the panel
	DECQ CX
	JNZ  amxTileBF16_kb

	MOVQ $128, DX
	MOVQ DI, SI
	// TILESTORED [rsi+rdx*1], tmm0
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x04
	BYTE $0x16
	LEAQ 64(DI), SI
	// TILESTORED [rsi+rdx*1], tmm1
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x0c
	BYTE $0x16
	LEAQ 2048(DI), SI
	// TILESTORED [rsi+rdx*1], tmm2
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x14
	BYTE $0x16
	LEAQ 2112(DI), SI
	// TILESTORED [rsi+rdx*1], tmm3
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x1c
	BYTE $0x16
	ADDQ $4096, DI // the next panel's C
	ADDQ R12, R9 // the next panel's B
	DECQ R13
	JNZ  amxTileBF16_panel
	// TILERELEASE
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0xc0
	RET

// func amxTileI8(cfg *byte, a *byte, b *byte, bstride int, np int, nkb int, parts int, c *byte, load int)
TEXT ·amxTileI8(SB), NOSPLIT, $0-72
	MOVQ cfg+0(FP), SI
	// LDTILECFG [rsi]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0x06
	MOVQ a+8(FP), AX // A: the sliver's first K step of the chunk
	MOVQ b+16(FP), R9 // B: the first panel's first K step of the chunk
	MOVQ bstride+24(FP), R12 // bytes from one panel to the next
	MOVQ np+32(FP), R13
	MOVQ parts+48(FP), R11
	MOVQ c+56(FP), DI

amxTileI8_panel:
	MOVQ $128, DX // C: 32 columns of 4 bytes per row
	CMPQ load+64(FP), $0
	JEQ  amxTileI8_zero
	MOVQ DI, SI
	// TILELOADD tmm0, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x04
	BYTE $0x16
	LEAQ 64(DI), SI
	// TILELOADD tmm1, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x0c
	BYTE $0x16
	LEAQ 2048(DI), SI
	// TILELOADD tmm2, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x14
	BYTE $0x16
	LEAQ 2112(DI), SI
	// TILELOADD tmm3, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x1c
	BYTE $0x16
	JMP  amxTileI8_k

amxTileI8_zero:
	// TILEZERO tmm0
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xc0
	// TILEZERO tmm1
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xc8
	// TILEZERO tmm2
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xd0
	// TILEZERO tmm3
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x49
	BYTE $0xd8

amxTileI8_k:
	MOVQ AX, R8 // A of this K step and part
	MOVQ R9, R10 // B of this K step
	MOVQ nkb+40(FP), CX

amxTileI8_kb:
	MOVQ $128, DX // B panel: 128 bytes per k-group row
	MOVQ R10, SI
	// TILELOADD tmm6, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x34
	BYTE $0x16
	LEAQ 64(R10), SI
	// TILELOADD tmm7, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x3c
	BYTE $0x16
	MOVQ $64, DX // A: 64 bytes per row (amxLDA)
	MOVQ R11, BX

amxTileI8_part:
	MOVQ R8, SI
	// TILELOADD tmm4, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x24
	BYTE $0x16
	LEAQ 1024(R8), SI // rows 16..31: 16·64 bytes on
	// TILELOADD tmm5, [rsi+rdx*1]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7b
	BYTE $0x4b
	BYTE $0x2c
	BYTE $0x16
	// TDPBSSD tmm0, tmm4, tmm6
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x4b
	BYTE $0x5e
	BYTE $0xc4
	// TDPBSSD tmm1, tmm4, tmm7
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x43
	BYTE $0x5e
	BYTE $0xcc
	// TDPBSSD tmm2, tmm5, tmm6
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x4b
	BYTE $0x5e
	BYTE $0xd5
	// TDPBSSD tmm3, tmm5, tmm7
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x43
	BYTE $0x5e
	BYTE $0xdd
	ADDQ $2048, R8 // the next part's (or K step's) A tiles
	DECQ BX
	JNZ  amxTileI8_part
	ADDQ $2048, R10 // the next 16 k-group rows of the panel
	DECQ CX
	JNZ  amxTileI8_kb

	MOVQ $128, DX
	MOVQ DI, SI
	// TILESTORED [rsi+rdx*1], tmm0
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x04
	BYTE $0x16
	LEAQ 64(DI), SI
	// TILESTORED [rsi+rdx*1], tmm1
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x0c
	BYTE $0x16
	LEAQ 2048(DI), SI
	// TILESTORED [rsi+rdx*1], tmm2
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x14
	BYTE $0x16
	LEAQ 2112(DI), SI
	// TILESTORED [rsi+rdx*1], tmm3
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x7a
	BYTE $0x4b
	BYTE $0x1c
	BYTE $0x16
	ADDQ $4096, DI // the next panel's C
	ADDQ R12, R9 // the next panel's B
	DECQ R13
	JNZ  amxTileI8_panel
	// TILERELEASE
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0xc0
	RET
