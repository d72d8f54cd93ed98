//go:build !purego

package quant

import (
	"fmt"
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

// The same for the AVX2 K-quant kernels of the avx2 backend.
func TestKQuantAVX2Registered(t *testing.T) {
	x := cpu.X86
	if !x.HasAVX2 || !x.HasFMA || !x.HasF16C {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	if kquantAVX2SelfTestResult != "" {
		t.Fatal(kquantAVX2SelfTestResult)
	}
	for f, ks := range kquantAVX2 {
		got := byName()["avx2"].k[f]
		if len(got) != len(ks) || fmt.Sprintf("%p", got[0]) != fmt.Sprintf("%p", ks[0]) {
			t.Errorf("%s: the avx2 backend does not run kquant_amd64.s's kernels", f)
		}
	}
}
