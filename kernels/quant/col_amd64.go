//go:build !purego

package quant

//go:generate sh -c "cd ../_asm && GOWORK=off go run ./quantcol -out ../quant/col_amd64.s"

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/cpubench/bench/internal/cpu"
)

// vnniColKerns are the avx512vnni backend's column-order GEMV tiles
// (kernels/_asm/quantcol), heights 1..4; the ternary formats run int2's;
// int1's are vnniColI1's choice.
var vnniColKerns = map[Format][]kern{
	TQ2_0: {kernColI2VNNIm1, kernColI2VNNIm2, kernColI2VNNIm3, kernColI2VNNIm4},
	TQ1_0: {kernColI2VNNIm1, kernColI2VNNIm2, kernColI2VNNIm3, kernColI2VNNIm4},
	Q8_0:  {kernColQ8VNNIm1, kernColQ8VNNIm2, kernColQ8VNNIm3, kernColQ8VNNIm4},
	Q4_0:  {kernColQ4VNNIm1, kernColQ4VNNIm2, kernColQ4VNNIm3, kernColQ4VNNIm4},
	Int2:  {kernColI2VNNIm1, kernColI2VNNIm2, kernColI2VNNIm3, kernColI2VNNIm4},
	Int1:  vnniColI1(),
	Q4_K:  {kernColQ4KVNNIm1, kernColQ4KVNNIm2, kernColQ4KVNNIm3, kernColQ4KVNNIm4},
	Q6_K:  {kernColQ6KVNNIm1, kernColQ6KVNNIm2, kernColQ6KVNNIm3, kernColQ6KVNNIm4},
}

// vnniColI1 returns the avx512vnni int1 column-order tiles for this CPU
// (cpu.X86 when the package initializes, BENCH_CPU_DISABLE=gfni
// included): with GFNI those that up-convert a bit plane with one
// VGF2P8AFFINEQB, else those with VPTESTMB and a zero-masked move
// (kernColI1MVNNIm*, 1.4× slower on the Zen 5 VM: genLow in
// kernels/_asm/quantcol).
func vnniColI1() []kern {
	vnniColI1GFNI = cpu.X86.HasGFNI
	if vnniColI1GFNI {
		return []kern{kernColI1VNNIm1, kernColI1VNNIm2, kernColI1VNNIm3, kernColI1VNNIm4}
	}
	return vnniColI1Mask
}

// vnniColI1GFNI records vnniColI1's choice.
var vnniColI1GFNI bool

// vnniColI1Note says which int1 tiles vnniColI1 chose.
func vnniColI1Note() string {
	if vnniColI1GFNI {
		return "int1 bit planes up-converted by VGF2P8AFFINEQB (GFNI)"
	}
	return "int1 bit planes up-converted by VPTESTMB and a zero-masked move (no GFNI: 1.4× slower than VGF2P8AFFINEQB on a Zen 5 core)"
}

// vnniColI1Mask are the avx512vnni int1 column-order tiles without GFNI.
var vnniColI1Mask = []kern{kernColI1MVNNIm1, kernColI1MVNNIm2, kernColI1MVNNIm3, kernColI1MVNNIm4}

// bwColKerns are the avx512bw backend's column-order GEMV tiles
// (kernels/_asm/quantcol's genBW, genLowBW, genKBW, genK6BW: VPMADDUBSW +
// VPMADDWD), heights 1..4; the ternary formats run int2's.
var bwColKerns = map[Format][]kern{
	TQ2_0: {kernColI2BWm1, kernColI2BWm2, kernColI2BWm3, kernColI2BWm4},
	TQ1_0: {kernColI2BWm1, kernColI2BWm2, kernColI2BWm3, kernColI2BWm4},
	Q8_0:  {kernColQ8BWm1, kernColQ8BWm2, kernColQ8BWm3, kernColQ8BWm4},
	Q4_0:  {kernColQ4BWm1, kernColQ4BWm2, kernColQ4BWm3, kernColQ4BWm4},
	Int2:  {kernColI2BWm1, kernColI2BWm2, kernColI2BWm3, kernColI2BWm4},
	Int1:  {kernColI1BWm1, kernColI1BWm2, kernColI1BWm3, kernColI1BWm4},
	Q4_K:  {kernColQ4KBWm1, kernColQ4KBWm2, kernColQ4KBWm3, kernColQ4KBWm4},
	Q6_K:  {kernColQ6KBWm1, kernColQ6KBWm2, kernColQ6KBWm3, kernColQ6KBWm4},
}

// colSelfTest runs every column-order VPDPBUSD kernel once on fixed inputs
// whose result is exact in float32 (scales 1, integer sums) and compares
// it bit for bit with kernColGo, as vnniSelfTest does for the lane-order
// tiles: "" on a match, else why not.
func colSelfTest() string { return colSelfTestOf(vnniColKerns, "VPDPBUSD") }

// bwSelfTest is colSelfTest for the avx512bw backend's tiles, run once.
var bwSelfTest = sync.OnceValue(func() string { return colSelfTestOf(bwColKerns, "VPMADDUBSW") })

// colSelfTestOf runs colSelfTest's check on the tiles ks (what names their
// instruction in the verdict). The activations span −127..127 and the
// weights every byte; q4_0's corrections are arbitrary, q8_0's those of
// the activations (colCorrZ, as the avx512bw q8_0 tiles require); int2 and
// int1 every field and bit.
func colSelfTestOf(ks map[Format][]kern, what string) string {
	const np, mr = 3, 4
	seed := uint32(919)
	next := func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 16 }
	a := make([]byte, np*mr*pairLen)
	for i := range a {
		a[i] = byte(int8(int32(next()%255) - 127))
	}
	as := make([]float32, np*mr*2)
	ac := make([]int32, np*mr*2)
	for i := range as {
		as[i] = 1
		ac[i] = int32(next()%64) - 32
	}
	bs := make([]uint32, np*ColRows)
	for i := range bs {
		bs[i] = 0x3c003c00 // fp16 1.0 twice
	}
	if v := colSelfTestK(ks, what); v != "" {
		return v
	}
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1} {
		if ks[f] == nil {
			continue
		}
		if f == Q8_0 {
			colCorrZ(f, a, ac, np, mr) // the BW kernels' precondition
		}
		b := make([]byte, 2*np*f.colBytes())
		for i := range b {
			b[i] = byte(next())
		}
		for m := 1; m <= mr; m++ {
			const ldc = ColRows + 3
			want, got := make([]float32, m*ldc), make([]float32, m*ldc)
			kernColGo(f, m, np, &a[0], &as[0], &ac[0], mr*pairLen, &b[0], &bs[0], &want[0], ldc)
			ks[f][m-1](np, &a[0], &as[0], &ac[0], mr*pairLen, &b[0], &bs[0], &got[0], ldc)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					return fmt.Sprintf("unavailable: column-order %s self-test failed (%s, m=%d, output %d: %v, want %v)", what, f, m, i, got[i], want[i])
				}
			}
		}
	}
	return ""
}

// colSelfTestK is colSelfTestOf's check of the K-quant tiles of ks (if
// any) against kernColGoK and kernColGoK6, on 2 super-blocks of inputs
// whose result is exact in float32 in any summation order (as
// kquantSelfTest's: d = 0.5, activations −7..7, dx 1/2, 1 or 2; Q4_K
// dmin = 2, the 6-bit scales and mins at most 39, the min terms
// integers; Q6_K scales −8..7, corrections −32..31): quants every byte,
// the scale bytes random under those bounds.
func colSelfTestK(ks map[Format][]kern, what string) string {
	if v := colSelfTestK6(ks, what); v != "" {
		return v
	}
	if ks[Q4_K] == nil {
		return ""
	}
	const nsb, mr = 2, 4
	np := nsb * superPairs
	a, as, next := colSelfTestActs(1717, np, mr)
	ac := make([]int32, nsb*mr*8)
	for i := range ac {
		ac[i] = int32(math.Float32bits(float32(int32(next()%64) - 32)))
	}
	b := make([]byte, nsb*colKBytes)
	for i := range b {
		b[i] = byte(next())
	}
	for s := range nsb {
		c := b[s*colKBytes:]
		for l := range ColRows {
			binary.LittleEndian.PutUint16(c[2*l:], 0x3800)    // d = 0.5
			binary.LittleEndian.PutUint16(c[32+2*l:], 0x4000) // dmin = 2
		}
		for i := 64; i < 256; i++ {
			if i < 192 {
				c[i] &= 0xc7
			} else {
				c[i] &= 0x77
			}
		}
	}
	return colSelfTestCompare(ks[Q4_K], Q4_K, what, func(m int, c *float32) {
		kernColGoK(m, np, &a[0], &as[0], &ac[0], mr*pairLen, &b[0], c, colSelfTestLDC)
	}, func(k kern, c *float32) {
		var bs uint32
		k(np, &a[0], &as[0], &ac[0], mr*pairLen, &b[0], &bs, c, colSelfTestLDC)
	})
}

// colSelfTestK6 is colSelfTestK's check of the Q6_K tiles.
func colSelfTestK6(ks map[Format][]kern, what string) string {
	if ks[Q6_K] == nil {
		return ""
	}
	const nsb, mr = 2, 4
	np := nsb * superPairs
	a, as, next := colSelfTestActs(2323, np, mr)
	ac := make([]int32, np*mr*4)
	for i := range ac {
		ac[i] = int32(next()%64) - 32
	}
	b := make([]byte, nsb*colK6Bytes)
	for i := range b {
		b[i] = byte(next())
	}
	for s := range nsb {
		c := b[s*colK6Bytes:]
		for l := range ColRows {
			binary.LittleEndian.PutUint16(c[2*l:], 0x3800) // d = 0.5
		}
		for i := 64; i < 320; i++ {
			c[i] = byte(int8(next()%16) - 8)
		}
	}
	return colSelfTestCompare(ks[Q6_K], Q6_K, what, func(m int, c *float32) {
		kernColGoK6(m, np, &a[0], &as[0], &ac[0], mr*pairLen, &b[0], c, colSelfTestLDC)
	}, func(k kern, c *float32) {
		var bs uint32
		k(np, &a[0], &as[0], &ac[0], mr*pairLen, &b[0], &bs, c, colSelfTestLDC)
	})
}

// colSelfTestLDC is the K-quant self-tests' output row stride (wider than
// a tile, so a store past the tile's columns shows).
const colSelfTestLDC = ColRows + 3

// colSelfTestActs returns the K-quant self-tests' activations, np pairs of
// mr rows of int8 −7..7, and their scales 1/2, 1 or 2, drawn from an LCG
// seeded with seed, and the generator to draw the rest from.
func colSelfTestActs(seed uint32, np, mr int) (a []byte, as []float32, next func() uint32) {
	next = func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 16 }
	a = make([]byte, np*mr*pairLen)
	for i := range a {
		a[i] = byte(int8(int32(next()%15) - 7))
	}
	as = make([]float32, np*mr*2)
	for i := range as {
		as[i] = float32(int(1)<<(next()%3)) / 2
	}
	return a, as, next
}

// colSelfTestCompare runs format f's tiles ks (tile m-1 computes m rows)
// through kernel and its Go specification spec into outputs of m rows at
// colSelfTestLDC, and returns the first bit difference as an
// "unavailable: …" line, "" when every tile matches.
func colSelfTestCompare(ks []kern, f Format, what string, spec func(m int, c *float32), kernel func(k kern, c *float32)) string {
	for m := 1; m <= len(ks); m++ {
		want, got := make([]float32, m*colSelfTestLDC), make([]float32, m*colSelfTestLDC)
		spec(m, &want[0])
		kernel(ks[m-1], &got[0])
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				return fmt.Sprintf("unavailable: column-order %s self-test failed (%s, m=%d, output %d: %v, want %v)", what, f, m, i, got[i], want[i])
			}
		}
	}
	return ""
}

func pfConvColQ8(np int, src *byte, ds *uint32, dst *byte, dd *uint16)
func pfConvColQ4(np int, src *byte, ds *uint32, dst *byte, dd *uint16)
func pfConvColI2(np int, src *byte, ds *uint32, dst *byte, dd *uint16)
func pfConvColI1(np int, src *byte, ds *uint32, dst *byte, dd *uint16)
func pfConvColQ4K(np int, src *byte, dst *byte, dd *float32)
func pfConvColQ6K(np int, src *byte, dst *byte, dd *float32)

func kernColQ8VNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ8VNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ8VNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ8VNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4VNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4VNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4VNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4VNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)

func kernColQ4KVNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4KVNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4KVNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4KVNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)

func kernColQ6KVNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KVNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KVNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KVNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)

func kernColQ4KBWm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4KBWm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4KBWm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4KBWm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KBWm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KBWm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KBWm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ6KBWm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)

func kernColQ8BWm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ8BWm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ8BWm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ8BWm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4BWm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4BWm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4BWm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColQ4BWm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2VNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2VNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2VNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2VNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1VNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1VNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1VNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1VNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1MVNNIm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1MVNNIm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1MVNNIm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1MVNNIm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2BWm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2BWm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2BWm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI2BWm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1BWm1(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1BWm2(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1BWm3(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
func kernColI1BWm4(np int, a *byte, as *float32, ac *int32, sa int, b *byte, bs *uint32, c *float32, ldc int)
