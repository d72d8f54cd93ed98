package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkAxpyPanels runs decode attention's panel product (QKᵀ shape:
// 2 query rows of a KV head, n = 128 head dims, 32-wide panels) over K
// panels of the given total size, fp32, bf16 and the AMX pair layout, one
// thread. SetBytes counts the panel bytes read, so ns/op and MB/s compare
// with BenchmarkRead at the same size.
func BenchmarkAxpyPanels(b *testing.B) {
	const rows, n = 2, 128
	for _, sz := range []struct {
		name  string
		bytes int
	}{{"32KiB", 32 << 10}, {"512KiB", 512 << 10}, {"8MiB", 8 << 20}, {"256MiB", 256 << 20}} {
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(i%5) * 0.25
		}
		for _, kind := range []string{"fp32", "bf16", "pairs"} {
			b.Run(fmt.Sprintf("kind=%s/size=%s", kind, sz.name), func(b *testing.B) {
				elem := 4
				if kind != "fp32" {
					elem = 2
				}
				panels := sz.bytes / (n * 32 * elem)
				acc := make([]float32, rows*panels*32)
				buf := benchAlloc(b, sz.bytes)
				for i := range buf {
					buf[i] = byte(i*7) & 0x3f // small finite values in either precision
				}
				var run func()
				switch kind {
				case "fp32":
					v := asFloat32s(buf)
					run = func() { AxpyPanels(acc, panels*32, x, n, rows, n, v, 32, n*32, panels) }
				case "bf16":
					v := asUint16s(buf)
					run = func() { AxpyPanelsBF16(acc, panels*32, x, n, rows, n, v, 32, n*32, panels) }
				default:
					v := asUint16s(buf)
					run = func() { AxpyPanelsBF16Pairs(acc, panels*32, x, n, rows, n, v, n*32, panels) }
				}
				b.SetBytes(int64(sz.bytes))
				run()
				b.ResetTimer()
				for b.Loop() {
					run()
				}
			})
		}
	}
}
