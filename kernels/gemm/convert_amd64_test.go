//go:build !purego

package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// convertValues returns n float32 values of kind: normal-range random,
// random bit patterns (NaNs, infinities and denormals included), or
// ties (values whose product with a power-of-two scale lands on .5).
func convertValues(r *rand.Rand, n int, kind string) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch kind {
		case "bits":
			x[i] = math.Float32frombits(r.Uint32())
		case "ties":
			x[i] = float32(r.IntN(255)-127) + 0.5
		default:
			x[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(40)-20)))
		}
	}
	return x
}

// TestQuantizeRowAVX512: the AVX-512 quantization equals quantizeRowGo bit
// for bit (int8 values and scale) on rows of every length up to 70 and a
// long one, of random values, ties, zeros, and rows holding a NaN, an
// infinity or denormals.
func TestQuantizeRowAVX512(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("CPU lacks AVX512F")
	}
	r := rand.New(rand.NewPCG(7, 8))
	lengths := []int{3072}
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, kind := range []string{"normal", "ties", "zeros", "nan", "inf", "denormal", "bits"} {
			x := convertValues(r, n, kind)
			switch kind {
			case "zeros":
				clear(x)
			case "nan", "inf", "denormal":
				if n == 0 {
					continue
				}
				v := map[string]float32{"nan": float32(math.NaN()), "inf": float32(math.Inf(-1)), "denormal": math.Float32frombits(3)}[kind]
				x[r.IntN(n)] = v
				if kind == "denormal" {
					for i := range x {
						x[i] = math.Float32frombits(uint32(r.IntN(1 << 20)))
					}
				}
			}
			got, want := make([]int8, n), make([]int8, n)
			for i := range got {
				got[i], want[i] = 99, 99
			}
			gs, ws := quantizeRowAVX512(got, x), quantizeRowGo(want, x)
			if math.Float32bits(gs) != math.Float32bits(ws) && !(gs != gs && ws != ws) {
				t.Fatalf("n=%d %s: scale %g, want %g", n, kind, gs, ws)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("n=%d %s: q[%d] = %d, want %d (x %g)", n, kind, i, got[i], want[i], x[i])
				}
			}
		}
	}
}

// TestScaleTileAVX512: the AVX-512 tile scaling equals scaleTileGo bit for
// bit (int32 sums beyond 2^24 included, so the conversion rounds), for
// 0..32 rows of whole 32-column rows and for narrower edge tiles (the Go
// path), and writes nothing past each row's n columns.
func TestScaleTileAVX512(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("CPU lacks AVX512F")
	}
	r := rand.New(rand.NewPCG(9, 10))
	const ldy = 45
	c := make([]int32, 32*amxNR)
	for i := range c {
		c[i] = int32(r.Uint32()) >> uint(r.IntN(20))
	}
	ws, xs := convertValues(r, amxNR, "normal"), convertValues(r, 32, "normal")
	for rows := 0; rows <= 32; rows++ {
		for _, n := range []int{32, 31, 7, 1} {
			got, want := make([]float32, 32*ldy), make([]float32, 32*ldy)
			for i := range got {
				got[i], want[i] = -3, -3
			}
			scaleTileAVX512Go(got, ldy, c, ws, xs, rows, n)
			scaleTileGo(want, ldy, c, ws, xs, rows, n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("rows=%d n=%d: y[%d] = %g, want %g", rows, n, i, got[i], want[i])
				}
			}
		}
	}
}

// checkSliverConvert compares a sliver conversion kernel with its Go
// specification bit for bit: row 5 of slivers of nkb K steps of parts
// terms (1..5 steps) from x of each kind, the first four values a -0,
// +Inf, a signalling NaN and special (the kind's own edge), and the
// sliver's other rows left alone.
func checkSliverConvert(t *testing.T, r *rand.Rand, parts int, kinds []string, special float32, kernel, spec func(u []uint16, x []float32, nkb int)) {
	t.Helper()
	for nkb := 1; nkb <= 5; nkb++ {
		for _, kind := range kinds {
			x := convertValues(r, nkb*32, kind)
			if kind == "bf16ties" { // a bf16 value plus half its last place
				for i := range x {
					x[i] = math.Float32frombits(r.Uint32()&0xffff0000 | 0x8000)
				}
			}
			x[0], x[1], x[2], x[3] = float32(math.Copysign(0, -1)), float32(math.Inf(1)), math.Float32frombits(0x7f800001), special
			n := nkb * parts * amxPart / 2
			got, want := make([]uint16, n), make([]uint16, n)
			for i := range got {
				got[i], want[i] = 0xabcd, 0xabcd
			}
			const row = 5
			kernel(got[row*32:], x, nkb)
			spec(want[row*32:], x, nkb)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("nkb=%d %s: u[%d] = %#x, want %#x", nkb, kind, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSplitBF16AVX512: the AVX-512 split equals splitBF16StepsGo bit for
// bit on random bit patterns (NaNs, infinities, denormals and zeros of
// both signs included) and normal values, 1..5 K steps, and leaves the
// sliver's other rows alone.
func TestSplitBF16AVX512(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("CPU lacks AVX512F")
	}
	checkSliverConvert(t, rand.New(rand.NewPCG(11, 12)), 3, []string{"bits", "normal"}, math.Float32frombits(0xffc00001), splitBF16StepsAVX512, splitBF16StepsGo)
}

// TestRoundBF16AVX512: the AVX-512 rounding equals roundBF16StepsGo bit
// for bit on random bit patterns (NaNs, infinities, denormals), normal
// values, exact ties and the largest float (which rounds to infinity),
// 1..5 K steps, and leaves the sliver's other rows alone.
func TestRoundBF16AVX512(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("CPU lacks AVX512F")
	}
	checkSliverConvert(t, rand.New(rand.NewPCG(13, 14)), 1, []string{"bits", "normal", "bf16ties"}, math.Float32frombits(0x7f7fffff), roundBF16StepsAVX512, roundBF16StepsGo)
}

// TestPackSliversAVX512: the transposing sliver packing (AVX-512 at MR 12
// where the CPU has it, AVX2 at MR 6) equals packA (the specification)
// element for element, for every sliver height and k steps around the 8-
// and 16-step blocks, and writes nothing past the packed block.
func TestPackSliversAVX512(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("CPU lacks AVX2")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, mr := range []int{12, 6} {
		for _, mb := range []int{1, 5, 11, 12, 13, 24, 30} {
			for _, kb := range []int{1, 15, 16, 17, 31, 32, 100, 256} {
				ldx := kb + 3
				x := convertValues(r, mb*ldx, "bits")
				got, want := make([]float32, mb*kb+8), make([]float32, mb*kb+8)
				for i := range got {
					got[i], want[i] = -5, -5
				}
				packSliversFast(got, x, ldx, mb, kb, mr)
				packA(want, x, ldx, mb, kb, mr)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("mr=%d mb=%d kb=%d: dst[%d] = %#x, want %#x", mr, mb, kb, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}
