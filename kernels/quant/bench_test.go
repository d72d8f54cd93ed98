package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkUpconvert is the γ loop of the probe: one L1-resident panel,
// activations quantized once; bytes are the packed weight bytes.
// go test -run '^$' -bench Upconvert ./kernels/quant
func BenchmarkUpconvert(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, be := range Backends() {
		if be.Unavailable != "" {
			continue
		}
		for _, f := range Formats() {
			for _, m := range []int{1, 4} {
				for _, kk := range []int{512, 2048, 8192} {
					k := kk
					w, _ := Quantize(f, randMat(rng, PanelRows*k, 0.02), PanelRows, k)
					var a Activations
					_ = a.Quantize(f, randMat(rng, m*k, 1), m, k)
					y := make([]float32, m*PanelRows)
					im := byName()[be.Name]
					b.Run(fmt.Sprintf("%s/%s/M=%d/K=%d", be.Name, f, m, k), func(b *testing.B) {
						b.SetBytes(w.Bytes())
						for b.Loop() {
							mul(im, w, &a, y, PanelRows, 0, PanelRows)
						}
					})
				}
			}
		}
	}
}

// BenchmarkGEMV is the decode GEMV (M = 1, one thread, Best's backend) on
// both layouts (lane order, and column order where the backend has its
// kernels), at an L2-resident shape (N 1024 × K 512) and a DRAM-sized one
// (N 8192 × K 4096: 18 MiB of q4_0, 35 MiB of q8_0); bytes are the packed
// weight bytes (MB/s is their streaming rate), ns/block the time per
// 32-weight block of W. The host may be loaded: compare the layouts within
// one run.
// go test -run '^$' -bench GEMV ./kernels/quant
func BenchmarkGEMV(b *testing.B) {
	be := Best()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range []Format{Q8_0, Q4_0} {
		for _, sh := range [][2]int{{1024, 512}, {8192, 4096}} {
			n, k := sh[0], sh[1]
			w, _ := Random(f, n, k, 7)
			var a Activations
			_ = a.Quantize(f, randMat(rng, k, 1), 1, k)
			y := make([]float32, n)
			for _, lay := range []Layout{LaneOrder, ColumnOrder} {
				if lay == ColumnOrder {
					w.Repack(be)
					if w.Layout() != ColumnOrder {
						continue
					}
				}
				b.Run(fmt.Sprintf("%s/%s/%s/N=%d/K=%d", be.Name, f, lay, n, k), func(b *testing.B) {
					b.SetBytes(w.Bytes())
					for b.Loop() {
						_ = Mul(be, w, &a, y, n, 0, n)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*k/BlockLen), "ns/block")
				})
			}
		}
	}
}
