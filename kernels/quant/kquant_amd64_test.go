//go:build !purego

package quant

import (
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// The K-quant VNNI kernels are registered wherever the CPU runs them: a
// self-test failure fails the tests instead of leaving the Go tiles.
func TestKQuantVNNIRegistered(t *testing.T) {
	x := cpu.X86
	if !x.HasAVX512F || !x.HasAVX512BW || !x.HasAVX512VL || !x.HasAVX512VNNI || !x.HasF16C {
		t.Skip("CPU lacks AVX512-VNNI")
	}
	if kquantSelfTestResult != "" {
		t.Fatal(kquantSelfTestResult)
	}
	for f, ks := range kquantVNNI {
		if got := byName()["avx512vnni"].k[f]; len(got) != len(ks) {
			t.Errorf("%s: %d avx512vnni kernels registered", f, len(got))
		}
	}
}
