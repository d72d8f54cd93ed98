//go:build !purego

package kernels

import (
	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// archMemImpls returns the arm64 assembly implementation.
func archMemImpls() []registry.Entry[MemImpl] {
	return []registry.Entry[MemImpl]{
		newMemImpl("neon", lacksASIMD, "stnp", memKernels{
			read: readNEON, write: writeNEON, writeNT: writeNTNEON, copy: copyNEON, triad: triadNEON,
		}),
	}
}

// lacksASIMD is the availability of the neon kernels of every family (mem,
// nonlinear), evaluated at each call from internal/cpu.
func lacksASIMD() string { return lacks("ASIMD", cpu.ARM64.HasASIMD) }

// The kernels below are hand-written in mem_arm64.s: an unrolled block loop
// (16 elements; 8 for triad), a loop over whole 2-element vectors, then at
// most one scalar element, so every length works.

// readNEON returns the sum of x:
//
//	var sum float64
//	for _, v := range x {
//		sum += v
//	}
//	return sum
//
// It sums in a different order (8 vector accumulators of 2 lanes, reduced
// pairwise, then the scalar tail), so the result may differ from the loop's
// by rounding.
//
//go:noescape
func readNEON(x []float64) float64

// writeNEON stores v into every element with regular (ST1) stores:
//
//	for i := range x {
//		x[i] = v
//	}
//
//go:noescape
func writeNEON(x []float64, v float64)

// writeNTNEON is writeNEON with non-temporal STNP stores (Q pairs, then a D
// pair); a last odd element is a regular store, as arm64 has no
// single-register non-temporal store:
//
//	for i := range x {
//		x[i] = v
//	}
//
//go:noescape
func writeNTNEON(x []float64, v float64)

// copyNEON copies src to dst; len(src) must be at least len(dst) and the
// slices must not overlap:
//
//	for i := range dst {
//		dst[i] = src[i]
//	}
//
//go:noescape
func copyNEON(dst, src []float64)

// triadNEON is the STREAM triad, fused (FMLA: one rounding); len(b) and
// len(c) must be at least len(a):
//
//	for i := range a {
//		a[i] = b[i] + s*c[i]
//	}
//
//go:noescape
func triadNEON(a, b, c []float64, s float64)
