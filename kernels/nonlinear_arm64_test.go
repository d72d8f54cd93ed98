//go:build !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// The NEON backend is registered on arm64 (so every forNL test covers it)
// and selected when ASIMD is present.
func TestNEONRegistered(t *testing.T) {
	var found bool
	for _, m := range NonlinearImpls() {
		if m.ISA == "neon" {
			found = true
			if (m.Unavailable == "") != cpu.ARM64.HasASIMD {
				t.Fatalf("neon: unavailable %q with ASIMD %v", m.Unavailable, cpu.ARM64.HasASIMD)
			}
		}
	}
	if !found {
		t.Fatal("no neon backend in NonlinearImpls")
	}
	if cpu.ARM64.HasASIMD && (BestNonlinear().ISA != "neon" || bestNL() != &neonNLKernels) {
		t.Fatalf("best backend %s, want neon", BestNonlinear().ISA)
	}
}

// Each NEON lane runs the twin's operations in the same order: the
// elementwise kernels agree with the "go" ones bit for bit on ordinary
// inputs (rare fma32 double roundings aside, which would show as 1 ULP).
func TestNEONMatchesTwinBits(t *testing.T) {
	if !cpu.ARM64.HasASIMD {
		t.Skip("no ASIMD")
	}
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 4099)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 20)
	}
	x[0], x[1], x[2] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	for _, c := range []struct {
		name       string
		neon, twin func(dst, src []float32)
	}{
		{"exp", expNEONAll, expGo}, {"fastexp", fastExpNEONAll, fastExpGo},
		{"silu", siluNEONAll, siluGo}, {"gelu", geluNEONAll, geluGo},
	} {
		got, want := make([]float32, len(x)), make([]float32, len(x))
		c.neon(got, x)
		c.twin(want, x)
		diff := 0
		for i := range x {
			if d := bitsApart(got[i], want[i]); d > 1 {
				t.Fatalf("%s(%v) = %v, twin %v", c.name, x[i], got[i], want[i])
			} else if d == 1 {
				diff++
			}
		}
		if diff > len(x)/100 {
			t.Errorf("%s: %d of %d results 1 ULP from the twin", c.name, diff, len(x))
		}
	}
}
