package kernels

import (
	"fmt"
	"testing"
)

// Benchmark sizes are the whole working set, split evenly among the arrays a
// kernel touches (as likwid-bench's -w S0:<size>): Copy at 16KiB uses two
// 8 KiB arrays. SetBytes counts the bytes the kernel reads plus writes, as
// STREAM does (no write-allocate traffic). Names carry key=value parts:
// Read/isa=avx2/size=16KiB. Buffers come from benchAlloc (huge pages on
// Linux), each array 2 MiB aligned, as likwid-bench's are page aligned.
var benchSizes = []struct {
	name  string
	bytes int
}{
	{"16KiB", 16 << 10},   // L1
	{"1MiB", 1 << 20},     // L2
	{"256MiB", 256 << 20}, // DRAM
}

func benchMem(b *testing.B, arrays int, run func(m MemImpl, bufs [][]float64)) {
	for _, m := range MemImpls() {
		for _, sz := range benchSizes {
			b.Run(fmt.Sprintf("isa=%s/size=%s", m.ISA, sz.name), func(b *testing.B) {
				if m.Unavailable != "" {
					b.Skip(m.Unavailable)
				}
				n := sz.bytes / 8 / arrays
				bufs := make([][]float64, arrays)
				for i := range bufs {
					bufs[i] = asFloat64s(benchAlloc(b, n*8))
					for j := range bufs[i] {
						bufs[i][j] = float64(j % 7)
					}
				}
				b.SetBytes(int64(n * 8 * arrays))
				run(m, bufs) // warm caches and TLB
				b.ResetTimer()
				for b.Loop() {
					run(m, bufs)
				}
			})
		}
	}
}

var sink float64

func BenchmarkRead(b *testing.B) {
	benchMem(b, 1, func(m MemImpl, x [][]float64) { sink += m.Read(x[0]) })
}

func BenchmarkWrite(b *testing.B) {
	benchMem(b, 1, func(m MemImpl, x [][]float64) { m.Write(x[0], 1.5) })
}

func BenchmarkWriteNT(b *testing.B) {
	benchMem(b, 1, func(m MemImpl, x [][]float64) { m.WriteNT(x[0], 1.5) })
}

func BenchmarkCopy(b *testing.B) {
	benchMem(b, 2, func(m MemImpl, x [][]float64) { m.Copy(x[0], x[1]) })
}

func BenchmarkTriad(b *testing.B) {
	benchMem(b, 3, func(m MemImpl, x [][]float64) { m.Triad(x[0], x[1], x[2], 3) })
}

// BenchmarkChase reports the load-to-use latency per dependent load.
func BenchmarkChase(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("line=64B/size=%s", sz.name), func(b *testing.B) {
			buf := asUint64s(benchAlloc(b, sz.bytes))
			start := BuildChase(buf, 64, 1)
			const steps = 1 << 16
			var sum uint64
			for b.Loop() {
				start = Chase(buf, start, steps)
				sum += start
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/steps, "ns/load")
			sink += float64(sum)
		})
	}
}
