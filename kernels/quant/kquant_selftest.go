package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// kquantReg is one backend's assembly K-quant kernels as its arch's init
// offered them to registerKQuant, with kquantSelfTest's verdict.
type kquantReg struct {
	kerns   map[Format][]kern
	verdict string // "" when registered
}

// kquantRegistered holds, per backend name, the K-quant kernels offered
// at start-up (only where the CPU has the backend's features), for the
// tests.
var kquantRegistered = map[string]kquantReg{}

// registerKQuant makes ks the K-quant tiles of backend when they pass
// kquantSelfTest (what names their instruction in its verdict); else the
// backend keeps the Go tiles that impl.fill gives it (and lists in
// goTiles). It is called from init, where the CPU has the backend's
// features: it makes impls then, so it sets the kernels in the backend's
// impl before any caller sees it.
// A kernel set with fewer tile heights than the backend's mr is refused
// (Mul would index past it), with a verdict saying so.
func registerKQuant(backend, what string, ks map[Format][]kern) {
	im := byName()[backend]
	if im == nil {
		return
	}
	r := kquantReg{kerns: ks}
	for _, f := range []Format{Q4_K, Q6_K} {
		if n := len(ks[f]); n > 0 && n < im.mr {
			r.verdict = fmt.Sprintf("%s kernels for %s: %d tile heights for a backend of %d", what, f, n, im.mr)
		}
	}
	if r.verdict == "" {
		r.verdict = kquantSelfTest(ks, what)
	}
	kquantRegistered[backend] = r
	if r.verdict != "" {
		return
	}
	for f, k := range ks {
		im.k[f] = k
	}
	im.goTiles = slices.DeleteFunc(im.goTiles, func(f Format) bool { return ks[f] != nil })
}

// kquantSelfTest runs every K-quant kernel of ks (tile heights 1..len)
// on 2 super-blocks of fixed inputs whose result is exact in float32
// (scales powers of two, small integer sums) and compares it bit for bit
// with kernGoK: "" on a match, else the first difference (what names the
// kernels' instruction).
func kquantSelfTest(ks map[Format][]kern, what string) string {
	const nsb, mr = 2, 4
	np := nsb * superPairs
	seed := uint32(99)
	next := func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 16 }
	sa := mr * pairLen
	for _, f := range []Format{Q4_K, Q6_K} {
		pb, mw := f.pairBytes(), f.metaWords()
		a := make([]byte, np*sa)
		for i := range a {
			a[i] = byte(int8(int32(next()%15) - 7))
		}
		as := make([]float32, np*mr*2)
		for i := range as {
			as[i] = float32(int(1)<<(next()%3)) / 2
		}
		b := make([]byte, np*PanelRows*pb)
		for i := range b {
			b[i] = byte(next())
		}
		bs := make([]uint32, nsb*PanelRows*mw)
		meta := make([]byte, 4*len(bs))
		for i := range meta {
			meta[i] = byte(next())
		}
		// Scales small enough that every partial sum is a multiple of 1/4
		// below 2^22 (exact in float32 in any order): Q4_K bytes 0..7 keep
		// their top 2 bits (sub-blocks 4..7's bits 5:4) and 3 low bits,
		// bytes 8..11 nibbles of at most 7; Q6_K scales in −8..7.
		for i := 0; i < len(meta); i += 4 * mw {
			binary.LittleEndian.PutUint16(meta[i:], 0x3800) // d = 0.5
			if f == Q4_K {
				binary.LittleEndian.PutUint16(meta[i+2:], 0x4000) // dmin = 2
				for k := range 12 {
					meta[i+4+k] &= map[bool]byte{true: 0xc7, false: 0x77}[k < 8]
				}
			} else {
				meta[i+2], meta[i+3] = 0, 0
				for k := range 16 {
					meta[i+4+k] = byte(int8(next()%16) - 8)
				}
			}
		}
		for i := range bs {
			bs[i] = binary.LittleEndian.Uint32(meta[4*i:])
		}
		var ac []int32
		if f == Q4_K {
			ac = make([]int32, nsb*mr*8)
			for i := range ac {
				ac[i] = int32(math.Float32bits(float32(int32(next()%64) - 32)))
			}
		} else {
			// The lane corrections −32·Σq that Activations.quantizeK
			// makes (kernels that make u − 32 in register do not read
			// them).
			ac = make([]int32, np*mr*16)
			for i := range ac {
				for _, v := range a[4*i:][:4] {
					ac[i] -= 32 * int32(int8(v))
				}
			}
		}
		for m := 1; m <= len(ks[f]); m++ {
			want, got := make([]float32, m*PanelRows), make([]float32, m*PanelRows)
			kernGoK(f, m, PanelRows, np, &a[0], &as[0], &ac[0], sa, &b[0], &bs[0], &want[0], PanelRows)
			ks[f][m-1](np, &a[0], &as[0], &ac[0], sa, &b[0], &bs[0], &got[0], PanelRows)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					return fmt.Sprintf("unavailable: %s K-quant self-test failed (%s, m=%d, output %d: %v, want %v)", what, f, m, i, got[i], want[i])
				}
			}
		}
	}
	return ""
}
