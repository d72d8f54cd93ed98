//go:build !purego

package gemm

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/cpubench/bench/internal/cpu"
)

// TestSelfTestI8 checks the init-time self-test that guards
// avx512vnni-int8: it passes the int8 kernels this CPU can run and catches
// a kernel that is off by one in a single element.
func TestSelfTestI8(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("needs AVX2 for a real kernel to test against")
	}
	if got := selfTestI8("AVX2", kernI8AVX2, 16); got != "" {
		t.Errorf("selfTestI8(kernI8AVX2) = %q, want a pass", got)
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW {
		if got := selfTestI8("AVX512", kernI8AVX512, 32); got != "" {
			t.Errorf("selfTestI8(kernI8AVX512) = %q, want a pass", got)
		}
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		if got := vnniSelfTest(); got != "" {
			t.Errorf("vnniSelfTest() = %q, want a pass", got)
		}
	}
	broken := make([]asmI, len(kernI8AVX2))
	for i, k := range kernI8AVX2 {
		broken[i] = func(kp int, a *uint32, b *int8, c *float32, ldc int, xs *float32, ws *float32, pf *byte) {
			k(kp, a, b, c, ldc, xs, ws, pf)
			if i == 2 { // the 3-row tile: corrupt row 2, column 7
				unsafe.Slice(c, 2*ldc+8)[2*ldc+7]++
			}
		}
	}
	got := selfTestI8("broken", broken, 16)
	if !strings.HasPrefix(got, "unavailable: broken self-test failed (m=3, row 2, column 7") {
		t.Errorf("selfTestI8(broken) = %q, want the m=3 row 2 column 7 failure", got)
	}
}
