// Command quantcol generates kernels/quant/col_amd64.s, the AVX512-VNNI
// GEMV/small-M GEMM microkernels of package quant on its column-order
// layout (kernels/quant/col.go), and the same tiles in a second flavour
// for AVX512BW without VNNI (kernCol<F>BWm<m>: VPMADDUBSW + VPMADDWD +
// VPADDD, see genBW), and the q4_k and q6_k tiles on their column-order
// layouts (kernels/quant/colk.go; kernColQ4KVNNIm<m>, kernColQ6KVNNIm<m>:
// genK, genK6), with avo:
//
//	cd kernels/_asm && go run ./quantcol -out ../quant/col_amd64.s
//
// (or `go generate ./kernels/quant/`).
//
// Every kernel has the kern signature
//
//	func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
//
// and computes one mr×16 tile of Y (16 rows of W: one column-order group)
// over np block pairs exactly as kernColGo in kernels/quant/col.go
// specifies: b and bs point at the group's chunk 0 and its 16 fp16 scales.
// A zmm lane is one row of W, so a lane sums a whole block and the float
// scaling is once per block for the 16 rows (the prefill kernels' column
// order, kernels/_asm/quantpf), where the lane-order GEMV kernels
// (kernels/_asm/quant) scale every VPDPBUSD's partial sum.
//
// Per block h of the pair and row r of X:
//
//   - q8_0: the int32 accumulator starts from the block's offset
//     correction −o·Σq (VPSLLD by 3 of corrZ = −o·Σq/8, broadcast from
//     memory); 8 VPDPBUSD add, per lane, the 4-element dot product of the
//     lane's 4 weights (a 64-byte load, shared by the mr rows) with the
//     row's 4 int8 activations of that group (an embedded 32-bit
//     broadcast from memory, VPDPBUSD.BCST).
//   - q4_0: each 64-byte load (ggml's qs bytes 4k..4k+3 of 16 rows) gives
//     lo = AND 0x0f (elements 4k..4k+3) and hi = AND 0xf0 (16× elements
//     16+4k..16+4k+3): two accumulators, L from 0 (VPXORD) with the 4 lo
//     VPDPBUSD, H from 16·(−o·Σq) (VPSLLD by 7) with the 4 hi VPDPBUSD,
//     then L += H >> 4 (VPSRAD: H is a multiple of 16, the shift exact).
//
// then VCVTDQ2PS, the 16 rows' fp16 scales widened (VCVTPH2PS from memory,
// shared by the rows) times the row's dx (VMULPS with an embedded
// broadcast), and VFMADD231PS into the row's float accumulator, whose 16
// lanes are the 16 outputs: no horizontal reduction. Per block and 16
// rows at mr = 1: q8_0 8 loads, 8 VPDPBUSD, 5 others; q4_0 4 loads, 8
// ANDs, 8 VPDPBUSD, 8 others (the lane-order kernels, kernels/_asm/quant:
// 8 VPDPBUSD, 48 others and 24 loads). Measured on the loaded Zen 5 VM
// (fastest of interleaved runs, N 1024 × K 512 in L2): q4_0 as one chain
// (H, VPSRAD, then the lo VPDPBUSD into it) took 0.25 ns per 32-weight
// block against 0.21 with two accumulators; prefetch distances of 1, 4
// and 8 KiB, or none, did not differ beyond the host's noise. Tried again
// on the DRAM stream (W 128 MiB on huge pages, K 4096, 1 thread, thread
// CPU time, each call between two calls of the read kernel): PREFETCHT0
// at 0.25, 1, 2, 4, 8 and 16 KiB, PREFETCHT1, PREFETCHNTA or no prefetch
// gave q4_0 and q8_0 the same 20–25 GB/s within the noise (the read
// kernel: 25–35), and q4_0's L and H split into two
// accumulators each (chains of 2 VPDPBUSD) left its L2-resident rate at
// 89–95 GB/s, so neither is in the generator. q8_0's DRAM stream once
// more (N 16384 × K 8192, 136 MiB, one thread, variants alternated in
// one run under the measure lock): PREFETCHT0 1, 2, 4, 8 and 16 KiB
// ahead, T0 at 2 KiB with T1 at 16 KiB, NTA, every other line, and a
// prefetch of the scale stream all streamed 23–27 GB/s against the DRAM
// read kernel's 26–32 (ReadPF in the same repetitions), none apart from
// the others beyond the noise (1 KiB a little slower). The scales moved
// into the quants' stream (each pair's 64 bytes of scales ahead of its
// chunks, one array) first looked a fifth faster, but that comparison had
// the interleaved copy on a fresh mmap; with both copies from the same
// allocator and each kernel call alternated, q8_0 and q4_0 came out
// −5 to +11% (mixed) and int2 8–20% slower in 3 of 3 runs, so the
// per-32 formats keep their scales in Matrix.d (the K-quants' chunks,
// colk.go, carry theirs).
//
// No saturation: |q| ≤ 127, so a lane's VPDPBUSD adds at most 4·255·127
// per group: 8 groups plus the correction |128·Σq| ≤ 128·32·127 stay far
// below 2^31; q4_0's H is at most 16·(16·15·127 + 8·32·127) in magnitude.
// The float32 conversions are exact below 2^24 (q4_0: |S| ≤ 32·15·127 +
// 8·32·127; q8_0: 32·255·127 + 128·32·127 < 2^21).
//
// Registers, mr = 4: 4 float and 8 int32 accumulators, 3 weight vectors, 2
// masks, the scales and one temporary.
package main

import (
	"fmt"

	"github.com/cpubench/bench/kernels/_asm/internal/asmutil"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const signature = "func(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)"

// pfDist is how far ahead (bytes) the kernels prefetch the group's quants
// (asmutil.PFDist), pfFar how far a second prefetch reaches
// (asmutil.PFFar).
var pfDist, pfFar = asmutil.PFDist(), asmutil.PFFar()

// prefetch emits the prefetches of the line at b+off: PREFETCHT0 pfDist
// ahead and, for the K-quants (far) where pfFar > 0, PREFETCHNTA pfFar
// ahead (asmutil.PFFar gives the measurements; the per-32 formats ran
// slower with it).
func prefetch(b Register, off int, far bool) {
	PREFETCHT0(Mem{Base: b, Disp: pfDist + off})
	if far && pfFar > 0 {
		PREFETCHNTA(Mem{Base: b, Disp: pfFar + off})
	}
}

// prefetchPair prefetches the chunks of a pair of blocks (2·cb bytes at
// b) pfDist bytes ahead and, with scales, their 16 rows' scales (the line
// at bs: 64 bytes a pair) as far ahead in time, pfDist·64/(2·cb) bytes.
// The low-bit tiles (genLow, genLowBW) prefetch their scales: a third of
// int1's bytes, a fifth of int2's. Measured on the Zen 5 VM (bench gemm
// --m 1 --n 32768 --k 16384 --dtype int2,int1, binaries with and without
// run in turn, 3 rounds, 2026-11-27): int1 34.3-35.5 GB/s without, 43.9-44.3
// with on 1 thread, 51.2-51.9 against 55.0-58.9 on 2; int2 41.7-42.2
// against 41.4-43.0 and 54.3-56.6 against 55.2-57.1. q8_0 and q4_0 (n
// 16384, k 16384; scales a ninth and a seventeenth of the bytes) did not
// move beyond the noise (q4_0 on 1 thread 42.9-44.2 without, 42.1-42.3
// with), so gen and genBW do not.
func prefetchPair(b, bs Register, cb int, scales bool) {
	for off := 0; off < 2*cb; off += 64 {
		prefetch(b, off, false)
	}
	if scales {
		PREFETCHT0(Mem{Base: bs, Disp: pfDist * 64 / (2 * cb)})
	}
}

var (
	mask0F = asmutil.Bytes64("colmask0f", func(int) byte { return 0x0f })
	maskF0 = asmutil.Bytes64("colmaskf0", func(int) byte { return 0xf0 })
)

// The flavours of the GEMV tiles: the integer dot product of a group of
// 4 weights and 4 activations per 32-bit lane.
const (
	// vnni: VPDPBUSD (AVX512_VNNI), kernCol<F>VNNIm<m>.
	vnni = "VNNI"
	// bw: VPMADDUBSW + VPMADDWD + VPADDD (AVX512BW), kernCol<F>BWm<m>
	// (genBW).
	bw = "BW"
)

func main() {
	ConstraintExpr("!purego")
	flavours := map[string]func(f string, m int){vnni: gen, bw: genBW}
	for _, fl := range []string{vnni, bw} {
		for _, f := range []string{"Q8", "Q4"} {
			for m := 1; m <= 4; m++ {
				flavours[fl](f, m)
			}
			if fl == vnni {
				genConv(f)
			}
		}
	}
	for _, f := range []string{"I2", "I1", i1Mask} {
		for m := 1; m <= 4; m++ {
			genLow(f, m)
		}
		if f == i1Mask {
			continue
		}
		genConvLow(f)
		for m := 1; m <= 4; m++ {
			genLowBW(f, m)
		}
	}
	for m := 1; m <= 4; m++ {
		genK(m)
	}
	for m := 1; m <= 4; m++ {
		genK6(m)
	}
	for m := 1; m <= 4; m++ {
		genKBW(m)
	}
	for m := 1; m <= 4; m++ {
		genK6BW(m)
	}
	genConvK("Q4K")
	genConvK("Q6K")
	Generate()
}

func zmm(i int) VecPhysical { return asmutil.Zmm[i] }

func gen(f string, m int) {
	name := fmt.Sprintf("kernCol%sVNNIm%d", f, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order %s tile with VPDPBUSD; see the generator.", name, m, f))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC) // floats → bytes
	q4 := f == "Q4"
	cb, nk := 512, 8 // chunk bytes, 64-byte loads per chunk
	if q4 {
		cb, nk = 256, 4
	}
	facc := make([]VecPhysical, m)
	iacc := make([]VecPhysical, m) // L (q8_0: the only one)
	hacc := make([]VecPhysical, m) // q4_0's H
	for r := 0; r < m; r++ {
		facc[r], iacc[r], hacc[r] = zmm(r), zmm(4+r), zmm(8+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	w, lo, hi := zmm(12), zmm(13), zmm(14)
	k0F, kF0 := zmm(15), zmm(16)
	dw, s := zmm(17), zmm(18)
	if q4 {
		VMOVDQU64(mask0F(), k0F)
		VMOVDQU64(maskF0(), kF0)
	}

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	prefetchPair(g.B, g.BS, cb, false)
	for h := 0; h < 2; h++ {
		corr := func(r int) Mem { return Mem{Base: g.AC, Disp: (r*2 + h) * 4} }
		for r := 0; r < m; r++ {
			if q4 {
				VPSLLD_BCST(U8(7), corr(r), hacc[r])
				VPXORD(iacc[r], iacc[r], iacc[r])
			} else {
				VPSLLD_BCST(U8(3), corr(r), iacc[r])
			}
		}
		// x(r, k): row r's 4 activations of group k of block h, 32-bit
		// word 2k+h of the row's 64 bytes in lane order.
		x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
		for k := 0; k < nk; k++ {
			VMOVDQU64(Mem{Base: g.B, Disp: h*cb + k*64}, w)
			if q4 {
				VPANDD(k0F, w, lo)
				VPANDD(kF0, w, hi)
				for r := 0; r < m; r++ {
					asmutil.VPDPBUSD(x(r, k), lo, iacc[r], true)
					asmutil.VPDPBUSD(x(r, 4+k), hi, hacc[r], true)
				}
				continue
			}
			for r := 0; r < m; r++ {
				asmutil.VPDPBUSD(x(r, k), w, iacc[r], true)
			}
		}
		VCVTPH2PS(Mem{Base: g.BS, Disp: h * 32}, dw)
		for r := 0; r < m; r++ {
			if q4 {
				VPSRAD(U8(4), hacc[r], hacc[r])
				VPADDD(hacc[r], iacc[r], iacc[r])
			}
			VCVTDQ2PS(iacc[r], iacc[r])
			VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, dw, s)
			VFMADD231PS(iacc[r], s, facc[r])
		}
	}
	ADDQ(g.SA, g.A)
	ADDQ(g.SA8, g.AS)
	ADDQ(g.SA8, g.AC)
	ADDQ(U32(2*cb), g.B)
	ADDQ(U32(2*32), g.BS)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

const convSignature = "func(np int, src *byte, ds *uint32, dst *byte, dd *uint16)"

// genConv emits pfConvCol<F>, pfConvertCol's up-convert of one
// column-order group (16 rows of W) into half a prefill tile
// (kernels/quant/prefill.go), every block pair: src and ds at the group's
// chunk 0 and its scales, dst and dd at pair 0 of the half. q8_0 chunks
// are the tile's 8 groups of a block as they are (8 loads and stores);
// q4_0's 64-byte load k gives the tile's group k (AND 0x0f) and group 4+k
// (VPSRLW by 4, AND 0x0f); the 16 fp16 scales of a block are copied.
func genConv(f string) {
	name := "pfConvCol" + f
	TEXT(name, NOSPLIT, convSignature)
	Doc(name + " up-converts a column-order group of W into half a prefill tile; see the generator.")
	np := Load(Param("np"), RCX)
	src := Load(Param("src"), RSI)
	ds := Load(Param("ds"), R8)
	dst := Load(Param("dst"), RDI)
	dd := Load(Param("dd"), RDX)
	q4 := f == "Q4"
	cb, nk := 512, 8
	if q4 {
		cb, nk = 256, 4
	}
	const half = 8 * 64 // one block of 16 rows in the tile
	k0F := zmm(31)
	if q4 {
		VMOVDQU64(mask0F(), k0F)
	}
	TESTQ(np, np)
	JZ(LabelRef(name + "_done"))
	Label(name + "_loop")
	for h := 0; h < 2; h++ {
		for k := 0; k < nk; k++ {
			v, hi := zmm(2*k), zmm(2*k+1)
			VMOVDQU64(Mem{Base: src, Disp: h*cb + k*64}, v)
			if q4 {
				VPSRLW(U8(4), v, hi)
				VPANDD(k0F, v, v)
				VPANDD(k0F, hi, hi)
				VMOVDQU64(hi, Mem{Base: dst, Disp: h*2*half + (4+k)*64})
			}
			VMOVDQU64(v, Mem{Base: dst, Disp: h*2*half + k*64})
		}
		VMOVDQU(Mem{Base: ds, Disp: h * 32}, Y0)
		VMOVDQU(Y0, Mem{Base: dd, Disp: h * 32 * 2})
	}
	ADDQ(U32(2*cb), src)
	ADDQ(U32(2*32), ds)
	ADDQ(U32(4*half), dst)
	ADDQ(U32(2*32*2), dd)
	DECQ(np)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

var (
	onesW   = asmutil.Bytes64("colbwones", func(i int) byte { return byte(1 - i%2) }) // int16 1s
	mask80  = asmutil.Bytes64("colbw80", func(int) byte { return 0x80 })
	bwMask0 = asmutil.Bytes64("colbw0f", func(int) byte { return 0x0f })
)

// genBW emits kernCol<F>BWm<m>, the avx512bw backend's column-order tile:
// the layout, the arguments and the float part of gen, with VPDPBUSD
// replaced by VPMADDUBSW (u8 × s8 → int16 pair sums, saturating),
// VPMADDWD by int16 ones (→ int32) and VPADDD, for CPUs with AVX512BW and
// no AVX512_VNNI (Skylake-SP/X, Cascade Lake without VNNI use). VPMADDUBSW
// has no embedded broadcast, so each row's 4 activations of a group are
// VPBROADCASTD from memory into a register (a load, no ALU work).
//
//   - q4_0: each 64-byte load gives lo = AND 0x0f and hi = (VPSRLW 4) AND
//     0x0f, both u in 0..15 (not gen's AND 0xf0 = 16·u: 2·240·127 would
//     saturate). A VPMADDUBSW pair is at most 2·15·127 = 3810 in
//     magnitude, so the 8 of a block (4 lo, 4 hi) sum in int16 with VPADDW
//     to at most 30480 < 2^15 − 1: exact, no saturation anywhere; one
//     VPMADDWD by ones per block and row widens the sum, VPADDD adds it to
//     the correction 8·corrZ = −8·Σq (VPSLLD by 3, broadcast).
//   - q8_0: u = q + 128 is 0..255 and 2·255·127 = 64770 would saturate
//     int16, so the unsigned-offset form cannot be used. The sign trick of
//     the avx2 kernels instead: s = u XOR 0x80 = q (int8), the mask of its
//     negative bytes (VPMOVB2M), |s| (VPABSB; −128 → 0x80, 128 as u8), all
//     three shared by the rows; per row the broadcast activations negated
//     where s < 0 (VPSUBB from zero, merge-masked: AVX-512 has no
//     VPSIGNB), so VPMADDUBSW(|s|, x·sign(s)) = s·x exactly: a pair is at
//     most 2·128·127 = 32512 < 2^15 − 1 (the activations are in
//     −127..127: Activations.Quantize's d = max|x|/127, so −(−128) never
//     arises). No offset, so no correction: the int32 sum of the 8 groups'
//     VPMADDWD is S of kernColGo (Σu·q − 128·Σq = Σs·q). Every group needs
//     its own VPMADDWD and VPADDD (two pairs could reach 65024).
//
// The int32 sums are as gen's (and as small); the float part is gen's, so
// the result is kernColGo's bit for bit wherever the float32 products are
// exact. Per block and 16 rows at mr = 1: q4_0 4 + 8 loads, 12 unpack
// ops, 8 VPMADDUBSW, 7 VPADDW, 1 VPMADDWD and 5 others; q8_0 8 + 8
// loads, 24 shared ops, 8 VPSUBB, 8 VPMADDUBSW, 8 VPMADDWD, 8 VPADDD and
// 3 others.
//
// Registers, mr = 4: 4 float and 4 int32 accumulators, 4 int16 sums
// (q4_0), 4 broadcasts, 4 products, the weights and their unpacks, the
// constants (0x0f or 0x80, ones, zero), the scales and one temporary; K1
// the sign mask.
func genBW(f string, m int) {
	name := fmt.Sprintf("kernCol%sBWm%d", f, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order %s tile with VPMADDUBSW and VPMADDWD (AVX512BW); see genBW in the generator.", name, m, f))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC) // floats → bytes
	q4 := f == "Q4"
	cb, nk := 512, 8
	if q4 {
		cb, nk = 256, 4
	}
	facc := make([]VecPhysical, m)
	iacc := make([]VecPhysical, m)
	s16 := make([]VecPhysical, m) // q4_0's int16 block sums
	xb := make([]VecPhysical, m)  // broadcast activations
	t := make([]VecPhysical, m)   // products
	for r := 0; r < m; r++ {
		facc[r], iacc[r], s16[r], xb[r], t[r] = zmm(r), zmm(4+r), zmm(8+r), zmm(12+r), zmm(16+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	w, lo, hi := zmm(20), zmm(21), zmm(22)
	kc, ones, zero := zmm(23), zmm(24), zmm(25) // kc: 0x0f (q4_0) or 0x80 (q8_0)
	dw, s := zmm(26), zmm(27)
	VMOVDQU64(onesW(), ones)
	if q4 {
		VMOVDQU64(bwMask0(), kc)
	} else {
		VMOVDQU64(mask80(), kc)
		VPXORD(zero, zero, zero)
	}

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	prefetchPair(g.B, g.BS, cb, false)
	for h := 0; h < 2; h++ {
		corr := func(r int) Mem { return Mem{Base: g.AC, Disp: (r*2 + h) * 4} }
		x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
		for k := 0; k < nk; k++ {
			VMOVDQU64(Mem{Base: g.B, Disp: h*cb + k*64}, w)
			if q4 {
				VPANDD(kc, w, lo)
				VPSRLW(U8(4), w, hi)
				VPANDD(kc, hi, hi)
				for r := 0; r < m; r++ {
					VPBROADCASTD(x(r, k), xb[r])
					if k == 0 {
						VPMADDUBSW(xb[r], lo, s16[r])
					} else {
						VPMADDUBSW(xb[r], lo, t[r])
						VPADDW(t[r], s16[r], s16[r])
					}
					VPBROADCASTD(x(r, 4+k), xb[r])
					VPMADDUBSW(xb[r], hi, t[r])
					VPADDW(t[r], s16[r], s16[r])
				}
				continue
			}
			VPXORD(kc, w, w) // s = q
			VPMOVB2M(w, K1)  // s < 0
			VPABSB(w, w)     // |s| as u8
			for r := 0; r < m; r++ {
				VPBROADCASTD(x(r, k), xb[r])
				VPSUBB(xb[r], zero, K1, xb[r]) // x·sign(s)
				VPMADDUBSW(xb[r], w, t[r])
				if k == 0 {
					VPMADDWD(ones, t[r], iacc[r])
				} else {
					VPMADDWD(ones, t[r], t[r])
					VPADDD(t[r], iacc[r], iacc[r])
				}
			}
		}
		VCVTPH2PS(Mem{Base: g.BS, Disp: h * 32}, dw)
		for r := 0; r < m; r++ {
			if q4 {
				VPSLLD_BCST(U8(3), corr(r), iacc[r])
				VPMADDWD(ones, s16[r], t[r])
				VPADDD(t[r], iacc[r], iacc[r])
			}
			VCVTDQ2PS(iacc[r], iacc[r])
			VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, dw, s)
			VFMADD231PS(iacc[r], s, facc[r])
		}
	}
	ADDQ(g.SA, g.A)
	ADDQ(g.SA8, g.AS)
	ADDQ(g.SA8, g.AC)
	ADDQ(U32(2*cb), g.B)
	ADDQ(U32(2*32), g.BS)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

var (
	mask0C = asmutil.Bytes64("colmask0c", func(int) byte { return 0x0c })
	mask30 = asmutil.Bytes64("colmask30", func(int) byte { return 0x30 })
	byte16 = asmutil.Bytes64("colbyte16", func(int) byte { return 16 })
)

// i1Mask is genLow's name for its int1 tiles without GFNI (VPTESTMB and
// a zero-masked move in place of VGF2P8AFFINEQB): kernColI1MVNNIm<m>.
const i1Mask = "I1M"

// i1GF[k] and i1Bit[k] are the constants of int1 bit plane k (the
// column-order chunk's byte 4l+i holds in bit k the sign bit of element
// 4k+i of row l): i1GF[k] the 8×8 bit matrix (every qword) with which
// VGF2P8AFFINEQB maps a byte's bit k to bit 4 and clears the rest, so
// each byte becomes u = 16·s_k (result bit i is the parity of matrix
// byte 7−i AND the byte: byte 3 is 1<<k, the others 0); i1Bit[k] the
// byte 1<<k, for VPTESTMB.
var i1GF, i1Bit [8]func() Mem

func init() {
	for k := range 8 {
		i1GF[k] = asmutil.Words64(fmt.Sprintf("coli1gf%d", k), true, func(int) uint64 { return 1 << k << 24 })
		i1Bit[k] = asmutil.Bytes64(fmt.Sprintf("coli1bit%d", k), func(int) byte { return 1 << k })
	}
}

// i1Consts loads the 8 bit planes' constants into regs: i1GF's with
// gfni, else i1Bit's (VPTESTMB's memory operand form ran 15-30% slower
// than a register's on the Zen 5 VM).
func i1Consts(gfni bool, regs []VecPhysical) {
	for k, r := range regs {
		if gfni {
			VMOVDQU64(i1GF[k](), r)
		} else {
			VMOVDQU64(i1Bit[k](), r)
		}
	}
}

// i1Plane emits the int1 up-convert of bit plane k of the chunk word w
// into u = 16·s per byte, c the plane's constant (i1Consts): with gfni
// one VGF2P8AFFINEQB; else VPTESTMB into kr and a zero-masked VMOVDQU8 of
// c16 (16 in every byte).
func i1Plane(gfni bool, c, w, u, c16 VecPhysical, kr Register) {
	if gfni {
		asmutil.VGF2P8AFFINEQB(0, c, w, u)
		return
	}
	VPTESTMB(c, w, kr)
	VMOVDQU8_Z(c16, kr, u)
}

// genLow emits kernCol<F>VNNIm<m> for the low-bit formats' column-order
// layouts (kernels/quant/col.go), with VPDPBUSD as gen:
//
//   - int2 (I2): a chunk is 2 words of 64 bytes; word j holds, per row
//     (4-byte lane) and byte i, element 16j+4s+i in bits 2s+1:2s. One load
//     gives the 4 groups of 4 elements of 16 rows with 6 instructions:
//     (w VPSLLW 2) AND 0x0c and w AND 0x0c are 4·q of fields 0 and 1, w
//     AND 0x30 and (w VPSRLW 2) AND 0x30 are 16·q of fields 2 and 3 (the
//     bits a 16-bit shift moves across a byte boundary are masked off).
//     Two accumulators per row as q4_0's: L (the 4·q products) from the
//     correction 8·corrZ = −8·Σq_x (VPSLLD by 3, broadcast), H (the 16·q
//     ones) from 0, then L += H >> 2 (VPSRAD, exact: H is a multiple of
//     16), so the lane's sum is Σ 4q·q_x − 8·Σq_x, kernColGo's S with u =
//     4q, o = 8 and the stored scale d/4 of the lane order.
//   - int1 (I1): a chunk is 64 bytes of 8 bit planes: bit k of byte 4l+i
//     is the sign bit of element 4k+i of row l, so one load gives a
//     block's 8 groups of 4 elements of 16 rows, and plane k's unsigned
//     bytes u = 16·s are one VGF2P8AFFINEQB (GFNI) by the bit matrix
//     i1GF[k] (held in registers); even groups sum into L (from 8·corrZ),
//     odd ones into H (from 0), L += H. Without GFNI (I1M, the tiles
//     kernColI1MVNNIm<m>) a plane is VPTESTMB with the byte 1<<k into a
//     mask register and a zero-masked VMOVDQU8 of 16s.
//
// Per block and 16 rows at mr = 1: int2 2 loads, 12 unpack ops, 8
// VPDPBUSD, 7 others; int1 1 load, 8 VGF2P8AFFINEQB (I1M: 16 ops through
// mask registers), 8 VPDPBUSD, 6 others. The earlier int1 layout, 8
// 64-bit mask words per chunk read by KMOVQ, ran 8 mask loads and 8
// zero-masked moves a block: measured on the Zen 5 VM (go test -bench
// 'GEMV/avx512vnni/int1' ./kernels/quant, 1 thread, 2026-11-27) 37.0,
// 39.5 and 30.4 GB/s at N×K 1024×512, 8192×4096 and 16384×8192 against
// 50.2, 54.5 and 42.8 with VGF2P8AFFINEQB on the planes; VPTESTMB on the
// planes ran as KMOVQ did (37.2, 37.4, 35.8): the mask registers, not
// the loads, bounded it.
// No saturation: |S| ≤ 32·12·127 + 8·32·127 (int2) or 32·16·127 + 8·32·127
// (int1), exact in float32.
func genLow(f string, m int) {
	name := fmt.Sprintf("kernCol%sVNNIm%d", f, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order %s tile with VPDPBUSD; see genLow in the generator.", name, m, f))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC) // floats → bytes
	i2, gfni := f == "I2", f == "I1"
	cb := 64
	if i2 {
		cb = 128
	}
	facc := make([]VecPhysical, m)
	iacc := make([]VecPhysical, m)
	hacc := make([]VecPhysical, m)
	for r := 0; r < m; r++ {
		facc[r], iacc[r], hacc[r] = zmm(r), zmm(4+r), zmm(8+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	w := zmm(12)
	u := []VecPhysical{zmm(13), zmm(14), zmm(15), zmm(16)}
	c1, c2 := zmm(17), zmm(18)
	dw, s := zmm(19), zmm(20)
	if i2 {
		VMOVDQU64(mask0C(), c1)
		VMOVDQU64(mask30(), c2)
	} else {
		VMOVDQU64(byte16(), c1)
	}
	planes := asmutil.Zmm[21:29] // int1's plane constants
	if !i2 {
		i1Consts(gfni, planes)
	}
	ks := []Register{K1, K2, K3, K4}

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	prefetchPair(g.B, g.BS, cb, true)
	for h := 0; h < 2; h++ {
		corr := func(r int) Mem { return Mem{Base: g.AC, Disp: (r*2 + h) * 4} }
		for r := 0; r < m; r++ {
			VPSLLD_BCST(U8(3), corr(r), iacc[r])
			VPXORD(hacc[r], hacc[r], hacc[r])
		}
		x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
		if i2 {
			for j := 0; j < 2; j++ {
				VMOVDQU64(Mem{Base: g.B, Disp: h*cb + j*64}, w)
				VPSLLW(U8(2), w, u[0])
				VPANDD(c1, u[0], u[0])
				VPANDD(c1, w, u[1])
				VPANDD(c2, w, u[2])
				VPSRLW(U8(2), w, u[3])
				VPANDD(c2, u[3], u[3])
				for sf := 0; sf < 4; sf++ {
					for r := 0; r < m; r++ {
						acc := iacc[r]
						if sf >= 2 {
							acc = hacc[r]
						}
						asmutil.VPDPBUSD(x(r, 4*j+sf), u[sf], acc, true)
					}
				}
			}
		} else {
			VMOVDQU64(Mem{Base: g.B, Disp: h * cb}, w)
			for k := 0; k < 8; k++ {
				i1Plane(gfni, planes[k], w, u[k%4], c1, ks[k%4])
				for r := 0; r < m; r++ {
					acc := iacc[r]
					if k%2 == 1 {
						acc = hacc[r]
					}
					asmutil.VPDPBUSD(x(r, k), u[k%4], acc, true)
				}
			}
		}
		VCVTPH2PS(Mem{Base: g.BS, Disp: h * 32}, dw)
		for r := 0; r < m; r++ {
			if i2 {
				VPSRAD(U8(2), hacc[r], hacc[r])
			}
			VPADDD(hacc[r], iacc[r], iacc[r])
			VCVTDQ2PS(iacc[r], iacc[r])
			VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, dw, s)
			VFMADD231PS(iacc[r], s, facc[r])
		}
	}
	ADDQ(g.SA, g.A)
	ADDQ(g.SA8, g.AS)
	ADDQ(g.SA8, g.AC)
	ADDQ(U32(2*cb), g.B)
	ADDQ(U32(2*32), g.BS)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

// genConvLow emits pfConvCol<F> for int2 and int1 (genConv's signature and
// tile): int2's 64-byte word j of a block gives the tile's groups 4j+s, s
// < 4, as 4·q: (w VPSLLW 2), w, (w VPSRLW 2) and (w VPSRLW 4), each AND
// 0x0c; int1's word gives group k from bit plane k as genLow's I1M tiles
// do (VPTESTMB, a zero-masked VMOVDQU8 of 16s: no GFNI needed; prefill's
// GEMM tiles, not this, bound the prefill).
func genConvLow(f string) {
	name := "pfConvCol" + f
	TEXT(name, NOSPLIT, convSignature)
	Doc(name + " up-converts a column-order group of W into half a prefill tile; see genConvLow in the generator.")
	np := Load(Param("np"), RCX)
	src := Load(Param("src"), RSI)
	ds := Load(Param("ds"), R8)
	dst := Load(Param("dst"), RDI)
	dd := Load(Param("dd"), RDX)
	i2 := f == "I2"
	cb := 64
	if i2 {
		cb = 128
	}
	const half = 8 * 64
	c := zmm(31)
	if i2 {
		VMOVDQU64(mask0C(), c)
	} else {
		VMOVDQU64(byte16(), c)
	}
	ks := []Register{K1, K2, K3, K4}
	planes := asmutil.Zmm[16:24] // int1's VPTESTMB bits
	if !i2 {
		i1Consts(false, planes)
	}
	TESTQ(np, np)
	JZ(LabelRef(name + "_done"))
	Label(name + "_loop")
	for h := 0; h < 2; h++ {
		out := func(k int) Mem { return Mem{Base: dst, Disp: h*2*half + k*64} }
		if i2 {
			for j := 0; j < 2; j++ {
				w := zmm(8 * j)
				u := []VecPhysical{zmm(8*j + 1), zmm(8*j + 2), zmm(8*j + 3), zmm(8*j + 4)}
				VMOVDQU64(Mem{Base: src, Disp: h*cb + j*64}, w)
				VPSLLW(U8(2), w, u[0])
				VPSRLW(U8(2), w, u[2])
				VPSRLW(U8(4), w, u[3])
				VPANDD(c, w, u[1])
				VPANDD(c, u[0], u[0])
				VPANDD(c, u[2], u[2])
				VPANDD(c, u[3], u[3])
				for s := 0; s < 4; s++ {
					VMOVDQU64(u[s], out(4*j+s))
				}
			}
		} else {
			VMOVDQU64(Mem{Base: src, Disp: h * cb}, zmm(8))
			for k := 0; k < 8; k++ {
				i1Plane(false, planes[k], zmm(8), zmm(k), c, ks[k%4])
				VMOVDQU64(zmm(k), out(k))
			}
		}
		VMOVDQU(Mem{Base: ds, Disp: h * 32}, Y15)
		VMOVDQU(Y15, Mem{Base: dd, Disp: h * 32 * 2})
	}
	ADDQ(U32(2*cb), src)
	ADDQ(U32(2*32), ds)
	ADDQ(U32(4*half), dst)
	ADDQ(U32(2*32*2), dd)
	DECQ(np)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

var mask03 = asmutil.Bytes64("colmask03", func(int) byte { return 0x03 })

// genLowBW emits kernCol<F>BWm<m>, genLow's tiles for the avx512bw
// backend (genBW's VPMADDUBSW + VPMADDWD by ones, the activations
// VPBROADCASTD into a register), on the same layouts:
//
//   - int2: a 64-byte word gives q of fields 0 and 2 (w AND 0x03, (w
//     VPSRLW 4) AND 0x03) and 4·q of fields 1 and 3 (w AND 0x0c, (w VPSRLW
//     4) AND 0x0c): 1 shift and 4 ANDs (genLow's 16·q would saturate
//     VPMADDUBSW's pair sums over a block). Per block and row the q
//     products sum in int16 into A (4 of at most 2·3·127 = 762), the 4·q
//     ones into B (4 of at most 3048), then A·4 + B (VPSLLW 2, VPADDW: at
//     most 24384 < 2^15 − 1, exact) is Σ 4q·q_x, widened by one VPMADDWD
//     by ones and added to 8·corrZ.
//   - int1: genLow's u = 16·s from bit plane k (its I1M tiles' VPTESTMB
//     and zero-masked VMOVDQU8: the CPUs of this backend have no GFNI); a pair is at
//     most 2·16·127 = 4064, the 8 of a block at most 32512 < 2^15 − 1 in
//     int16, one VPMADDWD per block and row.
//
// So the int32 sums are genLow's and the result kernColGo's bit for bit
// wherever the float products are exact.
func genLowBW(f string, m int) {
	name := fmt.Sprintf("kernCol%sBWm%d", f, m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order %s tile with VPMADDUBSW and VPMADDWD (AVX512BW); see genLowBW in the generator.", name, m, f))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC) // floats → bytes
	i2 := f == "I2"
	cb := 64
	if i2 {
		cb = 128
	}
	facc := make([]VecPhysical, m)
	iacc := make([]VecPhysical, m)
	sa := make([]VecPhysical, m) // int16 sums (int2: the q products)
	sb := make([]VecPhysical, m) // int2: the 4·q products
	for r := 0; r < m; r++ {
		facc[r], iacc[r], sa[r], sb[r] = zmm(r), zmm(4+r), zmm(8+r), zmm(12+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	xb, t, w := zmm(16), zmm(17), zmm(18)
	u := []VecPhysical{zmm(19), zmm(20), zmm(21), zmm(22)}
	c1, c2, ones := zmm(23), zmm(24), zmm(25)
	dw, s := zmm(26), zmm(27)
	VMOVDQU64(onesW(), ones)
	// int1's VPTESTMB bits: the registers int2's sb and c2 would take, and
	// four more
	var planes []VecPhysical
	if i2 {
		VMOVDQU64(mask03(), c1)
		VMOVDQU64(mask0C(), c2)
	} else {
		VMOVDQU64(byte16(), c1)
		planes = []VecPhysical{zmm(12), zmm(13), zmm(14), zmm(15), c2, zmm(28), zmm(29), zmm(30)}
		i1Consts(false, planes)
	}
	ks := []Register{K1, K2, K3, K4}

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	prefetchPair(g.B, g.BS, cb, true)
	for h := 0; h < 2; h++ {
		corr := func(r int) Mem { return Mem{Base: g.AC, Disp: (r*2 + h) * 4} }
		x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
		// madd adds row r's product of group k with the bytes v into acc
		// (first: acc is set).
		madd := func(r, k int, v, acc VecPhysical, first bool) {
			VPBROADCASTD(x(r, k), xb)
			if first {
				VPMADDUBSW(xb, v, acc)
				return
			}
			VPMADDUBSW(xb, v, t)
			VPADDW(t, acc, acc)
		}
		if i2 {
			for j := 0; j < 2; j++ {
				VMOVDQU64(Mem{Base: g.B, Disp: h*cb + j*64}, w)
				VPANDD(c1, w, u[0])
				VPANDD(c2, w, u[1])
				VPSRLW(U8(4), w, u[2])
				VPANDD(c2, u[2], u[3])
				VPANDD(c1, u[2], u[2])
				for sf := 0; sf < 4; sf++ {
					for r := 0; r < m; r++ {
						acc := sa[r]
						if sf%2 == 1 {
							acc = sb[r]
						}
						madd(r, 4*j+sf, u[sf], acc, j == 0 && sf < 2)
					}
				}
			}
			for r := 0; r < m; r++ {
				VPSLLW(U8(2), sa[r], sa[r])
				VPADDW(sb[r], sa[r], sa[r])
			}
		} else {
			VMOVDQU64(Mem{Base: g.B, Disp: h * cb}, w)
			for k := 0; k < 8; k++ {
				i1Plane(false, planes[k], w, u[k%4], c1, ks[k%4])
				for r := 0; r < m; r++ {
					madd(r, k, u[k%4], sa[r], k == 0)
				}
			}
		}
		VCVTPH2PS(Mem{Base: g.BS, Disp: h * 32}, dw)
		for r := 0; r < m; r++ {
			VPSLLD_BCST(U8(3), corr(r), iacc[r])
			VPMADDWD(ones, sa[r], t)
			VPADDD(t, iacc[r], iacc[r])
			VCVTDQ2PS(iacc[r], iacc[r])
			VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, dw, s)
			VFMADD231PS(iacc[r], s, facc[r])
		}
	}
	ADDQ(g.SA, g.A)
	ADDQ(g.SA8, g.AS)
	ADDQ(g.SA8, g.AC)
	ADDQ(U32(2*cb), g.B)
	ADDQ(U32(2*32), g.BS)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

var (
	mask3F = asmutil.Bytes64("colk3f", func(int) byte { return 0x3f })
	// selK[j]: the VPSHUFB index that moves byte j of every 32-bit lane to
	// the lane's low byte and zeroes the other three.
	selK = func() (out [4]func() Mem) {
		for j := range out {
			out[j] = asmutil.Bytes64(fmt.Sprintf("colksel%d", j), func(i int) byte {
				if i%4 == 0 {
					return byte(i%16 + j)
				}
				return 0x80
			})
		}
		return
	}()
)

// kSuper is the bytes of a q4_k column-order chunk (16 rows × one
// super-block, kernels/quant/colk.go): 256 bytes of scales, then 8
// sub-block chunks of 256 bytes in q4_0's column layout.
const kSuper = 256 + 8*256

// genK emits kernColQ4KVNNIm<m>, the avx512vnni q4_k tile on the
// column-order layout of kernels/quant/colk.go (kernColGoK specifies it).
// b points at the group's first super-block chunk; bs is not read; ac is
// the activations' K-quant terms (Activations.kx: float32 d_x·Σq per
// sub-block, super-block s of row r at ac + s·sa/2 + r·32 bytes); np is a
// multiple of 4 (whole super-blocks).
//
// Per super-block, shared by the mr rows: the chunk's 16 d and 16 dmin
// (VCVTPH2PS from memory: dv, mv) and ggml's 12 scale bytes of each row,
// three 64-byte words W1..W3 (row l's bytes 4i..4i+3 at lane l of word
// i): the 6-bit scales of sub-blocks 0..3 are W1 AND 0x3f (a byte each),
// their mins W2 AND 0x3f; sub-blocks 4..7's are (W3 AND 0x0f) OR ((W1
// VPSRLD 2) AND 0x30) and ((W3 VPSRLD 4) AND 0x0f) OR ((W2 VPSRLD 2) AND
// 0x30): 14 instructions give four vectors holding, per lane, 4 scales
// or 4 mins as bytes. Per sub-block j (activation block j of the
// super-block): its scale and min move to whole lanes (VPSHUFB with a
// constant index from memory), VCVTDQ2PS, times dv or mv: D = d·sc and
// M = dmin·m, exact in float32 (11 × 6 bits), as kScalesOf makes them;
// 4 loads of quants, each giving lo = AND 0x0f and hi = AND 0xf0 (16·q)
// as gen's q4_0 (two accumulators from zero, L += H >> 4); then per row
// VCVTDQ2PS, D times the row's dx (VMULPS with an embedded broadcast),
// VFMADD231PS into the row's float accumulator and VFNMADD231PS of M
// times the row's d_x·Σq (embedded broadcast from ac): the min term is
// subtracted per sub-block, no separate sum. Per sub-block and 16 rows
// at mr = 1: 4 loads, 8 ANDs, 8 VPDPBUSD, 6 shared scale ops and 8
// others (2 zeroings, shift, add, convert, multiply, 2 FMAs) plus 1/8 of
// the super-block's 16: the q4_0 tile's work and 7 more.
//
// No saturation: q ≤ 15 and |q_x| ≤ 127, so |L| ≤ 16·15·127 and |H| ≤
// 16·16·15·127; the block sum is below 2^24 (exact in float32).
//
// Registers, mr = 4: 4 float and 8 int32 accumulators, 3 weight vectors,
// 4 masks, 4 scale and min vectors, dv, mv, D, M and one temporary.
func genK(m int) {
	name := fmt.Sprintf("kernColQ4KVNNIm%d", m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order q4_k tile with VPDPBUSD; see genK in the generator.", name, m))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC) // floats → bytes
	kxs := g.BS        // bs is not read: the kx stride per super-block, sa/2 bytes
	MOVQ(g.SA, kxs)
	SHRQ(U8(1), kxs)
	SHRQ(U8(2), g.NP) // pairs → super-blocks
	facc := make([]VecPhysical, m)
	iacc := make([]VecPhysical, m)
	hacc := make([]VecPhysical, m)
	for r := 0; r < m; r++ {
		facc[r], iacc[r], hacc[r] = zmm(r), zmm(4+r), zmm(8+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	w, lo, hi := zmm(12), zmm(13), zmm(14)
	k0F, kF0, k3F, k30 := zmm(15), zmm(16), zmm(17), zmm(18)
	scLo, scHi, mLo, mHi := zmm(19), zmm(20), zmm(21), zmm(22)
	dv, mv, D, M, t := zmm(23), zmm(24), zmm(25), zmm(26), zmm(27)
	VMOVDQU64(mask0F(), k0F)
	VMOVDQU64(maskF0(), kF0)
	VMOVDQU64(mask3F(), k3F)
	VMOVDQU64(mask30(), k30)

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	kScalesQ4K(g.B, k0F, k3F, k30, scLo, scHi, mLo, mHi, dv, mv, t)
	for pp := 0; pp < 4; pp++ {
		for l := 0; l < 9; l++ {
			prefetch(g.B, (9*pp+l)*64, true)
		}
		for h := 0; h < 2; h++ {
			j := 2*pp + h
			for r := 0; r < m; r++ {
				VPXORD(iacc[r], iacc[r], iacc[r])
				VPXORD(hacc[r], hacc[r], hacc[r])
			}
			x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
			for k := 0; k < 4; k++ {
				VMOVDQU64(Mem{Base: g.B, Disp: 256 + j*256 + k*64}, w)
				VPANDD(k0F, w, lo)
				VPANDD(kF0, w, hi)
				for r := 0; r < m; r++ {
					asmutil.VPDPBUSD(x(r, k), lo, iacc[r], true)
					asmutil.VPDPBUSD(x(r, 4+k), hi, hacc[r], true)
				}
			}
			sc, mn := scLo, mLo
			if j >= 4 {
				sc, mn = scHi, mHi
			}
			VPSHUFB(selK[j%4](), sc, D)
			VCVTDQ2PS(D, D)
			VMULPS(dv, D, D)
			VPSHUFB(selK[j%4](), mn, M)
			VCVTDQ2PS(M, M)
			VMULPS(mv, M, M)
			for r := 0; r < m; r++ {
				VPSRAD(U8(4), hacc[r], hacc[r])
				VPADDD(hacc[r], iacc[r], iacc[r])
				VCVTDQ2PS(iacc[r], iacc[r])
				VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, D, t)
				VFMADD231PS(iacc[r], t, facc[r])
				VFNMADD231PS_BCST(Mem{Base: g.AC, Disp: r*32 + j*4}, M, facc[r])
			}
		}
		ADDQ(g.SA, g.A)
		ADDQ(g.SA8, g.AS)
	}
	ADDQ(kxs, g.AC)
	ADDQ(U32(kSuper), g.B)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

// k6Super is the bytes of a q6_k column-order chunk (kernels/quant/colk.go):
// 320 bytes of scales, then 16 sub-block chunks of 192.
const k6Super = 320 + 16*192

// genK6 emits kernColQ6KVNNIm<m>, the avx512vnni q6_k tile on the
// column-order layout of kernels/quant/colk.go (kernColGoK6 specifies it).
// b points at the group's first super-block chunk; bs is not read; ac is
// the activations' column-order Q6_K corrections (Activations.kc: int32
// −32·Σq per 16-weight sub-block, pair p of row r at ac + p·sa/4 + r·16
// bytes); np is a multiple of 4.
//
// Per super-block the 16 rows' d (VCVTPH2PS from memory, dv); per
// sub-block j (half t of activation block h): D = d·sc (VPMOVSXBD of the
// sub-block's 16 int8 scales from memory, VCVTDQ2PS, times dv: exact in
// float32, 11 × 8 bits), the 3 words A, B, C give the 4 groups' q (0..63)
// with 9 instructions,
//
//	u0 = A AND 0x3f, u1 = B AND 0x3f,
//	u2 = (C AND 0x0f) OR ((A VPSRLW 2) AND 0x30),
//	u3 = ((C VPSRLW 4) AND 0x0f) OR ((B VPSRLW 2) AND 0x30)
//
// (each OR with its AND 0x0f one VPTERNLOGD selecting by the 0x0f mask;
// the bits a 16-bit shift moves across a byte are masked off), and per
// row the int32 accumulator starts from the sub-block's correction
// (VPBROADCASTD from memory), takes 4 VPDPBUSD (activations broadcast
// from memory) and is scaled as gen's: VCVTDQ2PS, D times the row's dx
// (VMULPS with an embedded broadcast), VFMADD231PS. Per 32-weight block
// and 16 rows at mr = 1: 6 loads, 18 unpack ops, 8 VPDPBUSD, 6 scale ops
// and 8 others.
//
// No saturation: q ≤ 63 and |q_x| ≤ 127: |S| ≤ 16·63·127 + 32·16·127 <
// 2^24, exact in float32.
//
// Registers, mr = 4: 4 float and 4 int32 accumulators, 3 words, 4
// unpacked vectors, 3 masks, dv, D and one temporary.
func genK6(m int) {
	name := fmt.Sprintf("kernColQ6KVNNIm%d", m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order q6_k tile with VPDPBUSD; see genK6 in the generator.", name, m))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC) // floats → bytes
	kcs := g.BS        // bs is not read: the kc stride per pair, sa/4 bytes
	MOVQ(g.SA, kcs)
	SHRQ(U8(2), kcs)
	SHRQ(U8(2), g.NP) // pairs → super-blocks
	facc := make([]VecPhysical, m)
	iacc := make([]VecPhysical, m)
	for r := 0; r < m; r++ {
		facc[r], iacc[r] = zmm(r), zmm(4+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	wa, wb, wc := zmm(8), zmm(9), zmm(10)
	u := []VecPhysical{zmm(11), zmm(12), zmm(13), zmm(14)}
	k3F, k30, k0F := zmm(15), zmm(16), zmm(17)
	dv, D, t := zmm(18), zmm(19), zmm(20)
	VMOVDQU64(mask3F(), k3F)
	VMOVDQU64(mask30(), k30)
	VMOVDQU64(mask0F(), k0F)
	// sel: dst = (dst AND NOT k0F) OR (src AND k0F), dst holding only
	// bits 4..5 (VPTERNLOGD 0xd8: k0F ? src : dst).
	sel := func(src, dst VecPhysical) { VPTERNLOGD(U8(0xd8), k0F, src, dst) }

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	VCVTPH2PS(Mem{Base: g.B}, dv)
	for pp := 0; pp < 4; pp++ {
		for l := 0; l < 14; l++ {
			prefetch(g.B, (14*pp+l)*64, true)
		}
		for h := 0; h < 2; h++ {
			for th := 0; th < 2; th++ {
				j := 4*pp + 2*h + th
				for r := 0; r < m; r++ {
					VPBROADCASTD(Mem{Base: g.AC, Disp: r*16 + (2*h+th)*4}, iacc[r])
				}
				base := 320 + 192*j
				VMOVDQU64(Mem{Base: g.B, Disp: base}, wa)
				VMOVDQU64(Mem{Base: g.B, Disp: base + 64}, wb)
				VMOVDQU64(Mem{Base: g.B, Disp: base + 128}, wc)
				VPANDD(k3F, wa, u[0])
				VPANDD(k3F, wb, u[1])
				VPSRLW(U8(2), wa, u[2])
				VPANDD(k30, u[2], u[2])
				sel(wc, u[2])
				VPSRLW(U8(4), wc, t)
				VPSRLW(U8(2), wb, u[3])
				VPANDD(k30, u[3], u[3])
				sel(t, u[3])
				x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
				for gi := 0; gi < 4; gi++ {
					for r := 0; r < m; r++ {
						asmutil.VPDPBUSD(x(r, 4*th+gi), u[gi], iacc[r], true)
					}
				}
				VPMOVSXBD(Mem{Base: g.B, Disp: 64 + 16*j}, D)
				VCVTDQ2PS(D, D)
				VMULPS(dv, D, D)
				for r := 0; r < m; r++ {
					VCVTDQ2PS(iacc[r], iacc[r])
					VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, D, t)
					VFMADD231PS(iacc[r], t, facc[r])
				}
			}
		}
		ADDQ(g.SA, g.A)
		ADDQ(g.SA8, g.AS)
		ADDQ(kcs, g.AC)
	}
	ADDQ(U32(k6Super), g.B)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

// kScalesQ4K emits genK's per-super-block unpack of the 16 rows' q4_k
// scales and mins (b at the chunk): dv, mv and the four byte vectors.
func kScalesQ4K(b Register, k0F, k3F, k30, scLo, scHi, mLo, mHi, dv, mv, t VecPhysical) {
	word := func(i int) Mem { return Mem{Base: b, Disp: 64 * i} }
	VCVTPH2PS(word(0), dv)
	VCVTPH2PS(Mem{Base: b, Disp: 32}, mv)
	VPANDD(word(1), k3F, scLo)
	VPANDD(word(2), k3F, mLo)
	VPSRLD(U8(2), word(1), t)
	VPANDD(k30, t, t)
	VPANDD(word(3), k0F, scHi)
	VPORD(t, scHi, scHi)
	VPSRLD(U8(2), word(2), t)
	VPANDD(k30, t, t)
	VPSRLD(U8(4), word(3), mHi)
	VPANDD(k0F, mHi, mHi)
	VPORD(t, mHi, mHi)
}

// genKBW emits kernColQ4KBWm<m>, genK's tile for the avx512bw backend
// (genBW's VPMADDUBSW + VPMADDWD by ones, the activations VPBROADCASTD
// into a register): per sub-block the 4 loads give lo = AND 0x0f and hi
// = (VPSRLW 4) AND 0x0f (q 0..15), a row's 8 VPMADDUBSW (pairs at most
// 2·15·127 = 3810) sum in int16 to at most 30480 < 2^15 − 1 (exact), one
// VPMADDWD by ones widens the sum; the scales, mins and the float part
// are genK's, so the result is kernColGoK's bit for bit wherever the
// float32 products are exact.
func genKBW(m int) {
	name := fmt.Sprintf("kernColQ4KBWm%d", m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order q4_k tile with VPMADDUBSW and VPMADDWD (AVX512BW); see genKBW in the generator.", name, m))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC)
	kxs := g.BS
	MOVQ(g.SA, kxs)
	SHRQ(U8(1), kxs)
	SHRQ(U8(2), g.NP)
	facc := make([]VecPhysical, m)
	s16 := make([]VecPhysical, m)
	for r := 0; r < m; r++ {
		facc[r], s16[r] = zmm(r), zmm(4+r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	t, xb, w, lo, hi := zmm(8), zmm(9), zmm(10), zmm(11), zmm(12)
	k0F, k3F, k30 := zmm(13), zmm(14), zmm(15)
	scLo, scHi, mLo, mHi := zmm(16), zmm(17), zmm(18), zmm(19)
	dv, mv, D, M, ones, t2 := zmm(20), zmm(21), zmm(22), zmm(23), zmm(24), zmm(25)
	VMOVDQU64(mask0F(), k0F)
	VMOVDQU64(mask3F(), k3F)
	VMOVDQU64(mask30(), k30)
	VMOVDQU64(onesW(), ones)

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	kScalesQ4K(g.B, k0F, k3F, k30, scLo, scHi, mLo, mHi, dv, mv, t)
	for pp := 0; pp < 4; pp++ {
		for l := 0; l < 9; l++ {
			prefetch(g.B, (9*pp+l)*64, true)
		}
		for h := 0; h < 2; h++ {
			j := 2*pp + h
			x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
			for k := 0; k < 4; k++ {
				VMOVDQU64(Mem{Base: g.B, Disp: 256 + j*256 + k*64}, w)
				VPANDD(k0F, w, lo)
				VPSRLW(U8(4), w, hi)
				VPANDD(k0F, hi, hi)
				for r := 0; r < m; r++ {
					VPBROADCASTD(x(r, k), xb)
					if k == 0 {
						VPMADDUBSW(xb, lo, s16[r])
					} else {
						VPMADDUBSW(xb, lo, t)
						VPADDW(t, s16[r], s16[r])
					}
					VPBROADCASTD(x(r, 4+k), xb)
					VPMADDUBSW(xb, hi, t)
					VPADDW(t, s16[r], s16[r])
				}
			}
			sc, mn := scLo, mLo
			if j >= 4 {
				sc, mn = scHi, mHi
			}
			VPSHUFB(selK[j%4](), sc, D)
			VCVTDQ2PS(D, D)
			VMULPS(dv, D, D)
			VPSHUFB(selK[j%4](), mn, M)
			VCVTDQ2PS(M, M)
			VMULPS(mv, M, M)
			for r := 0; r < m; r++ {
				VPMADDWD(ones, s16[r], t)
				VCVTDQ2PS(t, t)
				VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, D, t2)
				VFMADD231PS(t, t2, facc[r])
				VFNMADD231PS_BCST(Mem{Base: g.AC, Disp: r*32 + j*4}, M, facc[r])
			}
		}
		ADDQ(g.SA, g.A)
		ADDQ(g.SA8, g.AS)
	}
	ADDQ(kxs, g.AC)
	ADDQ(U32(kSuper), g.B)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

// genK6BW emits kernColQ6KBWm<m>, genK6's tile for the avx512bw backend:
// genK6's unpack to q (0..63), then per row and sub-block VPMADDUBSW of
// the 4 groups against the broadcast activations (pairs at most 2·63·127
// = 16002), summed two at a time in int16 (at most 32004 < 2^15 − 1:
// exact), each sum widened by VPMADDWD by ones, the two added to the
// sub-block's correction (VPADDD with an embedded broadcast); the float
// part is genK6's, so the result is kernColGoK6's bit for bit wherever
// the float32 products are exact.
func genK6BW(m int) {
	name := fmt.Sprintf("kernColQ6KBWm%d", m)
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes an %d×16 column-order q6_k tile with VPMADDUBSW and VPMADDWD (AVX512BW); see genK6BW in the generator.", name, m))
	g := asmutil.LoadArgs("ac")
	SHLQ(U8(2), g.LDC)
	kcs := g.BS
	MOVQ(g.SA, kcs)
	SHRQ(U8(2), kcs)
	SHRQ(U8(2), g.NP)
	facc := make([]VecPhysical, m)
	for r := 0; r < m; r++ {
		facc[r] = zmm(r)
		VPXORD(facc[r], facc[r], facc[r])
	}
	wa, wb, wc := zmm(8), zmm(9), zmm(10)
	u := []VecPhysical{zmm(11), zmm(12), zmm(13), zmm(14)}
	k3F, k30, k0F := zmm(15), zmm(16), zmm(17)
	dv, D, t := zmm(18), zmm(19), zmm(20)
	xb, s16, p16, i32, ones := zmm(21), zmm(22), zmm(23), zmm(24), zmm(25)
	VMOVDQU64(mask3F(), k3F)
	VMOVDQU64(mask30(), k30)
	VMOVDQU64(mask0F(), k0F)
	VMOVDQU64(onesW(), ones)
	sel := func(src, dst VecPhysical) { VPTERNLOGD(U8(0xd8), k0F, src, dst) }

	TESTQ(g.NP, g.NP)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	VCVTPH2PS(Mem{Base: g.B}, dv)
	for pp := 0; pp < 4; pp++ {
		for l := 0; l < 14; l++ {
			prefetch(g.B, (14*pp+l)*64, true)
		}
		for h := 0; h < 2; h++ {
			for th := 0; th < 2; th++ {
				j := 4*pp + 2*h + th
				base := 320 + 192*j
				VMOVDQU64(Mem{Base: g.B, Disp: base}, wa)
				VMOVDQU64(Mem{Base: g.B, Disp: base + 64}, wb)
				VMOVDQU64(Mem{Base: g.B, Disp: base + 128}, wc)
				VPANDD(k3F, wa, u[0])
				VPANDD(k3F, wb, u[1])
				VPSRLW(U8(2), wa, u[2])
				VPANDD(k30, u[2], u[2])
				sel(wc, u[2])
				VPSRLW(U8(4), wc, t)
				VPSRLW(U8(2), wb, u[3])
				VPANDD(k30, u[3], u[3])
				sel(t, u[3])
				VPMOVSXBD(Mem{Base: g.B, Disp: 64 + 16*j}, D)
				VCVTDQ2PS(D, D)
				VMULPS(dv, D, D)
				x := func(r, k int) Mem { return Mem{Base: g.A, Disp: r*64 + (2*k+h)*4} }
				for r := 0; r < m; r++ {
					for half := 0; half < 2; half++ {
						VPBROADCASTD(x(r, 4*th+2*half), xb)
						VPMADDUBSW(xb, u[2*half], s16)
						VPBROADCASTD(x(r, 4*th+2*half+1), xb)
						VPMADDUBSW(xb, u[2*half+1], p16)
						VPADDW(p16, s16, s16)
						if half == 0 {
							VPMADDWD(ones, s16, i32)
						} else {
							VPMADDWD(ones, s16, s16)
							VPADDD(s16, i32, i32)
						}
					}
					VPADDD_BCST(Mem{Base: g.AC, Disp: r*16 + (2*h+th)*4}, i32, i32)
					VCVTDQ2PS(i32, i32)
					VMULPS_BCST(Mem{Base: g.AS, Disp: (r*2 + h) * 4}, D, t)
					VFMADD231PS(i32, t, facc[r])
				}
			}
		}
		ADDQ(g.SA, g.A)
		ADDQ(g.SA8, g.AS)
		ADDQ(kcs, g.AC)
	}
	ADDQ(U32(k6Super), g.B)
	DECQ(g.NP)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	for r := 0; r < m; r++ {
		VMOVUPS(facc[r], Mem{Base: g.C})
		if r+1 < m {
			ADDQ(g.LDC, g.C)
		}
	}
	VZEROUPPER()
	RET()
}

// f32x32 is 16 float32 32.0s (q6_k's min term Mn = 32·D).
var f32x32 = asmutil.Words64("colk32f", false, func(int) uint64 { return 0x42000000 })

// genConvK emits pfConvColQ4K and pfConvColQ6K, the prefill up-converts
// of one column-order q4_k or q6_k group (16 rows, np pairs, np a
// multiple of 4) into half a prefill tile and its scale words
// (kernels/quant/colk.go pfkConvertCol, pfkConvertColK6), signature
// func(np int, src *byte, dst *byte, dd *float32): src at the group's
// first super-block chunk, dst at pair 0 of the half (pair stride 2048
// bytes, block h at 1024·h, group k at 64·k), dd at the half's first
// scale word (pair stride 2·nsub·32 floats, sub-block b's 16 rows at
// 32·b, its min term at 32·(nsub + b)). q4_k's sub-block j = 2p'+h of a
// super-block is block h of pair p': its 4 loads give the tile's groups
// k (AND 0x0f) and 4+k (VPSRLW 4, AND 0x0f), as genConv's q4_0, and
// genK's D = d·sc and M = dmin·m of the 16 rows are stored whole; q6_k's
// sub-block j = 4p'+2h+t gives groups 4t..4t+3 of block h with genK6's
// unpack, D = d·sc and 32·D (exact) stored.
func genConvK(f string) {
	name := "pfConvCol" + f
	TEXT(name, NOSPLIT, "func(np int, src *byte, dst *byte, dd *float32)")
	Doc(name + " up-converts a column-order group of W into half a prefill tile; see genConvK in the generator.")
	np := Load(Param("np"), RCX)
	src := Load(Param("src"), RSI)
	dst := Load(Param("dst"), RDI)
	dd := Load(Param("dd"), RDX)
	SHRQ(U8(2), np)
	const half = 8 * 64
	k0F, k3F, k30 := zmm(31), zmm(30), zmm(29)
	scLo, scHi, mLo, mHi, dv, mv, D, M, t := zmm(20), zmm(21), zmm(22), zmm(23), zmm(24), zmm(25), zmm(26), zmm(27), zmm(28)
	VMOVDQU64(mask0F(), k0F)
	VMOVDQU64(mask3F(), k3F)
	VMOVDQU64(mask30(), k30)
	sb, nsub := kSuper, 2
	if f == "Q6K" {
		sb, nsub = k6Super, 4
	}
	sw := 2 * nsub * 32 * 4 // scale-word bytes per pair
	out := func(pp, h, k int) Mem { return Mem{Base: dst, Disp: pp*4*half + h*2*half + k*64} }
	word := func(pp, b int) Mem { return Mem{Base: dd, Disp: pp*sw + b*32*4} }
	TESTQ(np, np)
	JZ(LabelRef(name + "_done"))
	Label(name + "_loop")
	if f == "Q4K" {
		kScalesQ4K(src, k0F, k3F, k30, scLo, scHi, mLo, mHi, dv, mv, t)
	} else {
		VCVTPH2PS(Mem{Base: src}, dv)
	}
	for pp := 0; pp < 4; pp++ {
		for h := 0; h < 2; h++ {
			if f == "Q4K" {
				j := 2*pp + h
				for k := 0; k < 4; k++ {
					v, hi := zmm(2*k), zmm(2*k+1)
					VMOVDQU64(Mem{Base: src, Disp: 256 + j*256 + k*64}, v)
					VPSRLW(U8(4), v, hi)
					VPANDD(k0F, v, v)
					VPANDD(k0F, hi, hi)
					VMOVDQU64(v, out(pp, h, k))
					VMOVDQU64(hi, out(pp, h, 4+k))
				}
				sc, mn := scLo, mLo
				if j >= 4 {
					sc, mn = scHi, mHi
				}
				VPSHUFB(selK[j%4](), sc, D)
				VCVTDQ2PS(D, D)
				VMULPS(dv, D, D)
				VPSHUFB(selK[j%4](), mn, M)
				VCVTDQ2PS(M, M)
				VMULPS(mv, M, M)
				VMOVUPS(D, word(pp, h))
				VMOVUPS(M, word(pp, nsub+h))
				continue
			}
			for th := 0; th < 2; th++ {
				j := 4*pp + 2*h + th
				base := 320 + 192*j
				wa, wb, wc, tt := zmm(0), zmm(1), zmm(2), zmm(3)
				u := []VecPhysical{zmm(4), zmm(5), zmm(6), zmm(7)}
				VMOVDQU64(Mem{Base: src, Disp: base}, wa)
				VMOVDQU64(Mem{Base: src, Disp: base + 64}, wb)
				VMOVDQU64(Mem{Base: src, Disp: base + 128}, wc)
				VPANDD(k3F, wa, u[0])
				VPANDD(k3F, wb, u[1])
				VPSRLW(U8(2), wa, u[2])
				VPANDD(k30, u[2], u[2])
				VPTERNLOGD(U8(0xd8), k0F, wc, u[2])
				VPSRLW(U8(4), wc, tt)
				VPSRLW(U8(2), wb, u[3])
				VPANDD(k30, u[3], u[3])
				VPTERNLOGD(U8(0xd8), k0F, tt, u[3])
				for g := 0; g < 4; g++ {
					VMOVDQU64(u[g], out(pp, h, 4*th+g))
				}
				b := 2*h + th
				VPMOVSXBD(Mem{Base: src, Disp: 64 + 16*j}, D)
				VCVTDQ2PS(D, D)
				VMULPS(dv, D, D)
				VMOVUPS(D, word(pp, b))
				VMULPS(f32x32(), D, M) // 32·D, exact
				VMOVUPS(M, word(pp, nsub+b))
			}
		}
	}
	ADDQ(U32(sb), src)
	ADDQ(U32(4*4*half), dst)
	ADDQ(U32(4*sw), dd)
	DECQ(np)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
