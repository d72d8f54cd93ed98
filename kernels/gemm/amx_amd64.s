//go:build !purego

#include "textflag.h"

// The AMX tile kernels of amx_amd64.go (see amxTileSpec in amx.go for what
// they compute, exactly). The Go assembler and avo know no AMX
// instruction, so each is emitted as BYTEs under a comment giving its Intel
// mnemonic; amx_amd64_test.go assembles every commented mnemonic with
// GNU as and compares the bytes (the encodings were also checked with
// llvm-mc 14 when written). Tiles: C00, C01, C10, C11 = tmm0..3 (fp32 or
// int32, 16×16), A rows 0..15 and 16..31 = tmm4, tmm5, B columns 0..15 and
// 16..31 = tmm6, tmm7; the configuration at cfg (palette 1, every tile 16
// rows × 64 bytes) is loaded on entry and released (TILERELEASE) on exit,
// so no tile state outlives a call. A is read as amx.go's slivers: per K
// step and part, tile A0 (16 rows, lda bytes apart) and A1 16·lda further;
// the next part starts 32·lda after A0.

// func amxTileBF16(cfg *byte, a *byte, lda int, b *byte, nkb int, parts int, c *byte)
TEXT ·amxTileBF16(SB), NOSPLIT, $0-56
	MOVQ cfg+0(FP), SI
	// LDTILECFG [rsi]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0x06
	MOVQ a+8(FP), R8
	MOVQ lda+16(FP), R9
	MOVQ b+24(FP), R10
	MOVQ nkb+32(FP), CX
	MOVQ parts+40(FP), R11
	MOVQ c+48(FP), DI
	MOVQ R9, R12
	SHLQ $4, R12 // R12 = 16·lda: from A rows 0..15 to rows 16..31
	LEAQ (R12)(R12*1), R13 // R13 = 32·lda: from one part's two A tiles to the next
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
	MOVQ R9, DX // A: lda bytes per row
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
	LEAQ (R8)(R12*1), SI
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
	ADDQ R13, R8 // the next part's (or K step's) A tiles
	DECQ BX
	JNZ  amxTileBF16_part
	ADDQ $2048, R10 // the next 16 k-group rows of the panel
	DECQ CX
	JNZ  amxTileBF16_kb

	MOVQ $128, DX // C: 32 columns of 4 bytes per row
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
	// TILERELEASE
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0xc0
	RET

// func amxTileI8(cfg *byte, a *byte, lda int, b *byte, nkb int, parts int, c *byte)
TEXT ·amxTileI8(SB), NOSPLIT, $0-56
	MOVQ cfg+0(FP), SI
	// LDTILECFG [rsi]
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0x06
	MOVQ a+8(FP), R8
	MOVQ lda+16(FP), R9
	MOVQ b+24(FP), R10
	MOVQ nkb+32(FP), CX
	MOVQ parts+40(FP), R11
	MOVQ c+48(FP), DI
	MOVQ R9, R12
	SHLQ $4, R12 // R12 = 16·lda: from A rows 0..15 to rows 16..31
	LEAQ (R12)(R12*1), R13 // R13 = 32·lda: from one part's two A tiles to the next
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
	MOVQ R9, DX // A: lda bytes per row
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
	LEAQ (R8)(R12*1), SI
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
	ADDQ R13, R8 // the next part's (or K step's) A tiles
	DECQ BX
	JNZ  amxTileI8_part
	ADDQ $2048, R10 // the next 16 k-group rows of the panel
	DECQ CX
	JNZ  amxTileI8_kb

	MOVQ $128, DX // C: 32 columns of 4 bytes per row
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
	// TILERELEASE
	BYTE $0xc4
	BYTE $0xe2
	BYTE $0x78
	BYTE $0x49
	BYTE $0xc0
	RET
