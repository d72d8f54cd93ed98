package main

// Encoders for the instructions avo and the Go assembler lack. Operands are
// in Intel order: dst (ModRM.reg), src1 (VEX/EVEX.vvvv), src2 (ModRM.rm), all
// registers. References: Intel SDM vol. 2, 2.3 (VEX) and 2.7 (EVEX).

const (
	map0F38 = 2 // VEX m-mmmm / EVEX mmm
	map6    = 6 // EVEX map 6 (AVX512-FP16 FMA)

	ppNone = 0
	pp66   = 1
	ppF3   = 2
	ppF2   = 3
)

func bit(x, n int) int { return (x >> n) & 1 }

// evex512 encodes a 512-bit, unmasked EVEX instruction with register
// operands 0..31.
func evex512(mmm, pp, w int, opcode byte, dst, src1, src2 int) []byte {
	p0 := (1-bit(dst, 3))<<7 | (1-bit(src2, 4))<<6 | (1-bit(src2, 3))<<5 | (1-bit(dst, 4))<<4 | mmm
	p1 := w<<7 | (^src1&15)<<3 | 1<<2 | pp
	p2 := 2<<5 | (1-bit(src1, 4))<<3 // L'L = 10 (512 bits), z = b = aaa = 0
	modrm := 3<<6 | (dst&7)<<3 | src2&7
	return []byte{0x62, byte(p0), byte(p1), byte(p2), opcode, byte(modrm)}
}

// vex3 encodes a three-byte VEX instruction; l is VEX.L (1 = 256 bits);
// modrm and the bytes after it are given.
func vex3(mmmmm, pp, w, l int, opcode byte, r, x, b, vvvv int, tail ...byte) []byte {
	b1 := (1-r)<<7 | (1-x)<<6 | (1-b)<<5 | mmmmm
	b2 := w<<7 | (^vvvv&15)<<3 | l<<2 | pp
	return append([]byte{0xC4, byte(b1), byte(b2), opcode}, tail...)
}

func vexRRR(pp, l int, opcode byte, dst, src1, src2 int) []byte {
	return vex3(map0F38, pp, 0, l, opcode, bit(dst, 3), 0, bit(src2, 3), src1, byte(3<<6|(dst&7)<<3|src2&7))
}

// VDPBF16PS zmm1, zmm2, zmm3: EVEX.512.F3.0F38.W0 52 /r (AVX512_BF16).
func encVDPBF16PS(dst, src1, src2 int) []byte {
	return evex512(map0F38, ppF3, 0, 0x52, dst, src1, src2)
}

// VFMADD231PH zmm1, zmm2, zmm3: EVEX.512.66.MAP6.W0 B8 /r (AVX512_FP16).
func encVFMADD231PH(dst, src1, src2 int) []byte { return evex512(map6, pp66, 0, 0xB8, dst, src1, src2) }

// VPDPBUSD zmm1, zmm2, zmm3: EVEX.512.66.0F38.W0 50 /r (AVX512_VNNI).
func encVPDPBUSDzmm(dst, src1, src2 int) []byte {
	return evex512(map0F38, pp66, 0, 0x50, dst, src1, src2)
}

// {vex} VPDPBUSD ymm1, ymm2, ymm3: VEX.256.66.0F38.W0 50 /r (AVX-VNNI).
func encVPDPBUSDymmVEX(dst, src1, src2 int) []byte { return vexRRR(pp66, 1, 0x50, dst, src1, src2) }

// TDPBF16PS tmm1, tmm2, tmm3: VEX.128.F3.0F38.W0 5C 11:rrr:bbb, with
// tmm1 (C) in ModRM.reg, tmm2 (A) in ModRM.rm and tmm3 (B) in VEX.vvvv.
func encTDPBF16PS(c, a, b int) []byte { return vexRRR(ppF3, 0, 0x5C, c, b, a) }

// TDPBUSD tmm1, tmm2, tmm3: VEX.128.66.0F38.W0 5E 11:rrr:bbb (A unsigned,
// B signed bytes).
func encTDPBUSD(c, a, b int) []byte { return vexRRR(pp66, 0, 0x5E, c, b, a) }

// LDTILECFG [rsi]: VEX.128.NP.0F38.W0 49 /0, ModRM 00:000:110.
func encLDTILECFGrsi() []byte { return vex3(map0F38, ppNone, 0, 0, 0x49, 0, 0, 0, 0, 0x06) }

// TILERELEASE: VEX.128.NP.0F38.W0 49 C0.
func encTILERELEASE() []byte { return vex3(map0F38, ppNone, 0, 0, 0x49, 0, 0, 0, 0, 0xC0) }

// TILELOADD tmm, [rsi+rdx*1]: VEX.128.F2.0F38.W0 4B /r, ModRM 00:tmm:100,
// SIB 00:010(rdx):110(rsi).
func encTILELOADD(t int) []byte {
	return vex3(map0F38, ppF2, 0, 0, 0x4B, 0, 0, 0, 0, byte(t<<3|4), 0x16)
}

// TILESTORED [rsi+rdx*1], tmm: VEX.128.F3.0F38.W0 4B /r.
func encTILESTORED(t int) []byte {
	return vex3(map0F38, ppF3, 0, 0, 0x4B, 0, 0, 0, 0, byte(t<<3|4), 0x16)
}
