package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/cpubench/bench/internal/cpu"
)

// Which implementations these tests exercise depends on the CPU: each test
// loops over MemImpls() and skips the unavailable ones. AVX-512 cannot run on
// the development machine (Zen 4 guest without AVX-512), and QEMU 7.2's TCG
// implements AVX2 but no AVX-512 (qemu-x86_64 -cpu max, -cpu max,+avx512f
// and -cpu Skylake-Server all leave AVX512F off), so the avx512
// implementation is exercised only on a machine with AVX512F (CI) or under
// Intel SDE. Its code is the AVX2 generator with zmm registers (see _asm) and
// `go vet` checks its frame layout. To prove which path ran:
//
//	go test -c -o kernels.test ./kernels/
//	BENCH_REQUIRE_ISA=go   qemu-x86_64 -cpu Nehalem ./kernels.test
//	BENCH_REQUIRE_ISA=avx2 qemu-x86_64 -cpu Haswell ./kernels.test
//	BENCH_REQUIRE_ISA=avx512 sde64 -skx -- ./kernels.test
//	GOARCH=arm64 BENCH_REQUIRE_ISA=neon go test -exec 'qemu-aarch64 -cpu max' ./kernels/

// sentinel is the NaN bit pattern of guard elements around every output;
// kernels must never write it.
const sentinel = 0x7ff4_dead_beef_cafe

const guard = 16 // guard elements before and after each output

// lengths: every length 0..300 (all block/vector/tail combinations of every
// ISA), then a few large ones.
func lengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4099, 1<<16+7)
}

// offsets returns the element offsets to test for length n: 0..7, so the
// slice starts at every 8-byte position of a 64-byte line (fewer for the
// large lengths, to keep -race fast).
func offsets(n int) []int {
	if n > 300 {
		return []int{0, 3}
	}
	return []int{0, 1, 2, 3, 4, 5, 6, 7}
}

// guarded returns a slice of n elements starting off elements after a
// 64-byte boundary, inside a buffer whose guard elements before and after
// hold sentinel; check reports any guard that changed.
func guarded(n, off int) (x []float64, check func(t *testing.T, what string)) {
	buf := make([]float64, 2*guard+n+16)
	for i := range buf {
		buf[i] = math.Float64frombits(sentinel)
	}
	lead := guard
	for uintptr(unsafe.Pointer(&buf[lead]))%64 != 0 {
		lead++
	}
	lead += off
	x = buf[lead : lead+n : lead+n]
	check = func(t *testing.T, what string) {
		t.Helper()
		for i, v := range buf {
			if i >= lead && i < lead+n {
				continue
			}
			if math.Float64bits(v) != sentinel {
				t.Fatalf("%s: guard element %d (output is [%d:%d]) = %#x, want sentinel %#x",
					what, i, lead, lead+n, math.Float64bits(v), uint64(sentinel))
			}
		}
	}
	return x, check
}

func random(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64() * math.Exp2(float64(r.IntN(8)))
	}
	return x
}

// forImpls runs f for every implementation compiled in, skipping the
// unavailable ones.
func forImpls(t *testing.T, f func(t *testing.T, m MemImpl)) {
	for _, m := range MemImpls() {
		t.Run(m.ISA, func(t *testing.T) {
			if m.Unavailable != "" {
				t.Skip(m.Unavailable)
			}
			f(t, m)
		})
	}
}

// exactSum is the correctly rounded sum of x.
func exactSum(x []float64) float64 {
	s := new(big.Float).SetPrec(4096)
	for _, v := range x {
		s.Add(s, new(big.Float).SetFloat64(v))
	}
	f, _ := s.Float64()
	return f
}

func TestRead(t *testing.T) {
	forImpls(t, func(t *testing.T, m MemImpl) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, n := range lengths() {
			for _, off := range offsets(n) {
				x, check := guarded(n, off)
				// Small integers: every partial sum is exact, so any
				// summation order must give exactly the loop's result.
				for i := range x {
					x[i] = float64(r.IntN(2001) - 1000)
				}
				if got, want := m.Read(x), readGo(x); got != want {
					t.Fatalf("n=%d off=%d integers: Read = %v, want exactly %v", n, off, got, want)
				}
				// Random magnitudes: within the summation error bound
				// n·ε·Σ|x| of the exact sum (any order satisfies it).
				var abs float64
				for i := range x {
					x[i] = r.NormFloat64() * math.Exp2(float64(r.IntN(20)-10))
					abs += math.Abs(x[i])
				}
				exact := exactSum(x)
				tol := float64(n) * 0x1p-52 * abs
				if got := m.Read(x); math.Abs(got-exact) > tol {
					t.Fatalf("n=%d off=%d: Read = %v, exact sum %v, |diff| %g > tolerance %g", n, off, got, exact, math.Abs(got-exact), tol)
				}
				if got := readGo(x); math.Abs(got-exact) > tol {
					t.Fatalf("n=%d off=%d: readGo = %v, exact sum %v beyond tolerance %g", n, off, got, exact, tol)
				}
				check(t, fmt.Sprintf("n=%d off=%d Read", n, off))
			}
		}
	})
}

func testWrite(t *testing.T, name string, write func(m MemImpl) func([]float64, float64)) {
	forImpls(t, func(t *testing.T, m MemImpl) {
		w := write(m)
		for _, n := range lengths() {
			for _, off := range offsets(n) {
				x, check := guarded(n, off)
				v := -1.25 - float64(n)
				w(x, v)
				want := make([]float64, n)
				writeGo(want, v)
				for i := range x {
					if x[i] != want[i] {
						t.Fatalf("n=%d off=%d: %s: x[%d] = %v, want %v", n, off, name, i, x[i], want[i])
					}
				}
				check(t, fmt.Sprintf("n=%d off=%d %s", n, off, name))
			}
		}
	})
}

func TestWrite(t *testing.T) {
	testWrite(t, "Write", func(m MemImpl) func([]float64, float64) { return m.Write })
}

func TestWriteNT(t *testing.T) {
	testWrite(t, "WriteNT", func(m MemImpl) func([]float64, float64) { return m.WriteNT })
}

func TestCopy(t *testing.T) {
	forImpls(t, func(t *testing.T, m MemImpl) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, n := range lengths() {
			for _, off := range offsets(n) {
				srcOff := (off * 3) % 8 // dst and src at different alignments
				dst, check := guarded(n, off)
				src, checkSrc := guarded(n, srcOff)
				copy(src, random(r, n))
				orig := slices.Clone(src)
				m.Copy(dst, src)
				want := make([]float64, n)
				copyGo(want, src)
				for i := range dst {
					if math.Float64bits(dst[i]) != math.Float64bits(want[i]) {
						t.Fatalf("n=%d off=%d/%d: Copy: dst[%d] = %v, want %v", n, off, srcOff, i, dst[i], want[i])
					}
				}
				if !slices.Equal(src, orig) {
					t.Fatalf("n=%d off=%d/%d: Copy changed src", n, off, srcOff)
				}
				check(t, fmt.Sprintf("n=%d off=%d Copy dst", n, off))
				checkSrc(t, fmt.Sprintf("n=%d off=%d Copy src", n, off))
			}
		}
	})
}

func TestTriad(t *testing.T) {
	forImpls(t, func(t *testing.T, m MemImpl) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range lengths() {
			for _, off := range offsets(n) {
				a, check := guarded(n, off)
				b, c := random(r, n), random(r, n)
				b0, c0 := slices.Clone(b), slices.Clone(c)
				s := 1 + r.Float64()
				m.Triad(a, b, c, s)
				twin := make([]float64, n)
				triadGo(twin, b, c, s)
				for i := range a {
					// Exactly one of the two roundings: fused (FMA, the
					// assembly kernels and Go on arm64) or product then sum.
					fused := math.FMA(s, c[i], b[i])
					unfused := b[i] + float64(s*c[i])
					if a[i] != fused && a[i] != unfused {
						t.Fatalf("n=%d off=%d: Triad: a[%d] = %v, want %v (fused) or %v", n, off, i, a[i], fused, unfused)
					}
					if twin[i] != fused && twin[i] != unfused {
						t.Fatalf("n=%d off=%d: triadGo: a[%d] = %v, want %v (fused) or %v", n, off, i, twin[i], fused, unfused)
					}
					if math.Abs(a[i]-twin[i]) > 0x1p-51*(math.Abs(b[i])+math.Abs(s*c[i])) {
						t.Fatalf("n=%d off=%d: Triad a[%d] = %v, triadGo %v", n, off, i, a[i], twin[i])
					}
				}
				if !slices.Equal(b, b0) || !slices.Equal(c, c0) {
					t.Fatalf("n=%d off=%d: Triad changed b or c", n, off)
				}
				check(t, fmt.Sprintf("n=%d off=%d Triad", n, off))
			}
		}
	})
}

func TestLengthMismatchPanics(t *testing.T) {
	forImpls(t, func(t *testing.T, m MemImpl) {
		mustPanic := func(what string, f func()) {
			t.Helper()
			defer func() {
				if e := recover(); e == nil {
					t.Errorf("%s: no panic", what)
				} else if !strings.Contains(fmt.Sprint(e), m.ISA) {
					t.Errorf("%s: panic %q does not name the isa", what, e)
				}
			}()
			f()
		}
		x := make([]float64, 10)
		mustPanic("Copy", func() { m.Copy(x, x[:9]) })
		mustPanic("Triad", func() { m.Triad(x, x, x[:9], 1) })
	})
}

func TestRegistry(t *testing.T) {
	impls := MemImpls()
	if impls[0].ISA != "go" || impls[0].Unavailable != "" || impls[0].NT != "none (regular stores)" {
		t.Fatalf("MemImpls()[0] = %q (%q, NT %q), want available go with no NT", impls[0].ISA, impls[0].Unavailable, impls[0].NT)
	}
	want := map[string][]string{"amd64": {"go", "avx2", "avx512"}, "arm64": {"go", "neon"}}[runtime.GOARCH]
	if purego || want == nil {
		want = []string{"go"}
	}
	var got []string
	for _, m := range impls {
		got = append(got, m.ISA)
		if m.Read == nil || m.Write == nil || m.WriteNT == nil || m.Copy == nil || m.Triad == nil || m.NT == "" {
			t.Errorf("%s: missing kernel or NT", m.ISA)
		}
		if m.Unavailable != "" && !strings.HasPrefix(m.Unavailable, "unavailable: CPU lacks ") {
			t.Errorf("%s: Unavailable = %q", m.ISA, m.Unavailable)
		}
		mm, err := MemImplByISA(m.ISA)
		if (err == nil) != (m.Unavailable == "") {
			t.Errorf("MemImplByISA(%q) error %v, Unavailable %q", m.ISA, err, m.Unavailable)
		}
		if err != nil && !strings.Contains(err.Error(), m.Unavailable) || err == nil && mm.ISA != m.ISA {
			t.Errorf("MemImplByISA(%q) = %q, %v", m.ISA, mm.ISA, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MemImpls() ISAs = %v, want %v", got, want)
	}
	if _, err := MemImplByISA("sse9"); err == nil || !strings.Contains(err.Error(), `"sse9"`) || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("MemImplByISA(sse9) error = %v, want unknown naming sse9", err)
	}
	t.Logf("BestMem: %s; all: %v", BestMem().ISA, got)
}

// TestDisabledNeverSelected: with an ISA disabled in internal/cpu, BestMem
// falls back and MemImplByISA refuses it.
func TestDisabledNeverSelected(t *testing.T) {
	has512 := cpu.X86.HasAVX512F && cpu.X86.HasFMA
	has2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	func() {
		defer cpu.DisableAVX512()()
		if got := BestMem().ISA; got == "avx512" {
			t.Fatalf("AVX-512 disabled, BestMem().ISA = %q", got)
		}
		if _, err := MemImplByISA("avx512"); runtime.GOARCH == "amd64" && !purego &&
			(err == nil || !strings.Contains(err.Error(), `"avx512": unavailable: CPU lacks AVX512F`)) {
			t.Fatalf("AVX-512 disabled, MemImplByISA(avx512) error = %v", err)
		}
		if runtime.GOARCH == "amd64" && !purego && has2 && BestMem().ISA != "avx2" {
			t.Fatalf("AVX-512 disabled on an AVX2 CPU: BestMem().ISA = %q, want avx2", BestMem().ISA)
		}
	}()
	func() {
		defer cpu.DisableAVX2()()
		if got := BestMem().ISA; got == "avx512" || got == "avx2" {
			t.Fatalf("AVX2 disabled, BestMem().ISA = %q", got)
		}
		if runtime.GOARCH == "amd64" && BestMem().ISA != "go" {
			t.Fatalf("AVX2 disabled on amd64: BestMem().ISA = %q, want go", BestMem().ISA)
		}
	}()
	// Undo restored the flags.
	if runtime.GOARCH == "amd64" && !purego {
		want := "go"
		if has2 {
			want = "avx2"
		}
		if has512 {
			want = "avx512"
		}
		if got := BestMem().ISA; got != want {
			t.Fatalf("after undo, BestMem().ISA = %q, want %q", got, want)
		}
	}
}

// TestRequireISA fails unless BestMem selects $BENCH_REQUIRE_ISA, so a CI run
// under an emulator (qemu -cpu <model>, SDE) proves which path it tested.
func TestRequireISA(t *testing.T) {
	want := os.Getenv("BENCH_REQUIRE_ISA")
	if want == "" {
		t.Skip("BENCH_REQUIRE_ISA not set")
	}
	if got := BestMem().ISA; got != want {
		t.Fatalf("BENCH_REQUIRE_ISA=%s but BestMem().ISA = %q (features: %v)", want, got, cpu.RawFeatures)
	}
}
