package gemm

import (
	"fmt"
	"testing"
	"unsafe"
)

// BenchmarkMicrokernel runs one backend's full MR×NR tile kernel on
// L1-resident slivers (k = 256): the kernel's ceiling, without packing or
// cache misses.
func BenchmarkMicrokernel(b *testing.B) {
	const k = 256
	for _, im := range impls() {
		if im.dt != FP32 && im.dt != BF16 {
			continue
		}
		b.Run(fmt.Sprintf("backend=%s/k=%d", im.name, k), func(b *testing.B) {
			if u := im.lacks(); u != "" {
				b.Skip(u)
			}
			a := make([]float32, im.mr*k)
			wf := make([]float32, im.nr*k)
			wb := make([]uint16, im.nr*k)
			c := make([]float32, im.mr*im.nr)
			bp := unsafe.Pointer(&wf[0])
			if im.dt == BF16 {
				bp = unsafe.Pointer(&wb[0])
			}
			f := im.fk[im.mr-1]
			for b.Loop() {
				f(im.mr, k, &a[0], bp, &c[0], im.nr, true, bp)
			}
			b.ReportMetric(Flops(im.mr, im.nr, k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
