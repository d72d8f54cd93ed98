package kernels

import "github.com/cpubench/bench/kernels/registry"

// The "go" implementation: each function is the specification of the
// kernel of the same name in the assembly implementations, and those
// kernels' doc comments repeat it. Always compiled in, on every GOARCH and
// with -tags=purego.

func goMemImpl() registry.Entry[MemImpl] {
	return newMemImpl("go", nil, "none (regular stores)", memKernels{
		read:    readGo,
		write:   writeGo,
		writeNT: writeGo,
		copy:    copyGo,
		triad:   triadGo,
	})
}

func readGo(x []float64) float64 {
	var sum float64
	for _, v := range x {
		sum += v
	}
	return sum
}

func writeGo(x []float64, v float64) {
	for i := range x {
		x[i] = v
	}
}

func copyGo(dst, src []float64) {
	for i := range dst {
		dst[i] = src[i]
	}
}

func triadGo(a, b, c []float64, s float64) {
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
}
