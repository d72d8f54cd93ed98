package quant

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
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

// BenchmarkGEMV is the decode GEMV (M = 1, one thread, every available
// backend with column-order kernels) on both layouts (lane order, and
// column order; on avx512bw the lane order runs avx2's tiles, so its
// column/lane is the ratio to the avx2 backend), at an L2-resident shape (N 1024 × K 512), N 8192 × K 4096
// (18 MiB of q4_0, 35 MiB of q8_0: within or about a Zen 5 CCD's 32 MiB
// L3) and a DRAM-sized one (N 16384 × K 8192: 72 MiB of q4_0, 136 MiB of
// q8_0). Each iteration runs both layouts, one call each, alternately, so
// that a loaded host's drift hits both alike: lane-GB/s and column-GB/s
// are the packed weight bytes' streaming rates, column/lane the ratio of
// their times (above 1: the column order faster), ns/block the column
// order's time per 32-weight block of W.
// go test -run '^$' -bench GEMV ./kernels/quant
func BenchmarkGEMV(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, be := range Backends() {
		for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, Q4_K, Q6_K} {
			if !slices.Contains(be.ColumnFormats(), f) {
				continue
			}
			benchGEMV(b, be, f, rng)
		}
	}
}

func benchGEMV(b *testing.B, be Backend, f Format, rng *rand.Rand) {
	{
		for _, sh := range [][2]int{{1024, 512}, {8192, 4096}, {16384, 8192}} {
			n, k := sh[0], sh[1]
			b.Run(fmt.Sprintf("%s/%s/N=%d/K=%d", be.Name, f, n, k), func(b *testing.B) {
				lane, _ := Random(f, n, k, 7)
				col, _ := Random(f, n, k, 7)
				col.Repack(be)
				var a Activations
				_ = a.Quantize(f, randMat(rng, k, 1), 1, k)
				y := make([]float32, n)
				var tl, tc time.Duration
				for b.Loop() {
					t0 := time.Now()
					_ = Mul(be, lane, &a, y, n, 0, n)
					t1 := time.Now()
					_ = Mul(be, col, &a, y, n, 0, n)
					tl, tc = tl+t1.Sub(t0), tc+time.Since(t1)
				}
				perCall := func(t time.Duration) float64 { return float64(t.Nanoseconds()) / float64(b.N) }
				b.ReportMetric(float64(lane.Bytes())/perCall(tl), "lane-GB/s")
				b.ReportMetric(float64(col.Bytes())/perCall(tc), "column-GB/s")
				b.ReportMetric(float64(tl)/float64(tc), "column/lane")
				b.ReportMetric(perCall(tc)/float64(n*k/BlockLen), "ns/block")
			})
		}
	}
}

// BenchmarkGEMVWorkers is the DRAM-sized decode GEMV (M = 1, N 16384 × K
// 8192, the shape of the 2-thread shortfall of issue #13) on 1 and 2
// goroutines locked to OS threads, W's rows split at RowTile as
// probes.MeasureQuant splits them, both layouts of each format alternately
// per iteration: lane-GB/s and column-GB/s are the packed bytes per
// second of one whole GEMV. Indicative only on a loaded host (no pinning
// here; the probe pins).
// go test -run '^$' -bench GEMVWorkers ./kernels/quant
func BenchmarkGEMVWorkers(b *testing.B) {
	be := Best()
	rng := rand.New(rand.NewPCG(5, 6))
	const n, k = 16384, 8192
	for _, f := range []Format{Q8_0, Q4_0, Int2, Int1, Q4_K, Q6_K} {
		if !slices.Contains(be.ColumnFormats(), f) {
			continue
		}
		lane, _ := Random(f, n, k, 7)
		col, _ := Random(f, n, k, 7)
		col.Repack(be)
		var a Activations
		_ = a.Quantize(f, randMat(rng, k, 1), 1, k)
		y := make([]float32, n)
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%s/workers=%d", be.Name, f, workers), func(b *testing.B) {
				run := func(w *Matrix) time.Duration {
					t0 := time.Now()
					tiles := (n + w.RowTile() - 1) / w.RowTile()
					var wg sync.WaitGroup
					for i := range workers {
						n0, n1 := min(tiles*i/workers*w.RowTile(), n), min(tiles*(i+1)/workers*w.RowTile(), n)
						wg.Go(func() {
							runtime.LockOSThread()
							defer runtime.UnlockOSThread()
							_ = Mul(be, w, &a, y, n, n0, n1)
						})
					}
					wg.Wait()
					return time.Since(t0)
				}
				var tl, tc time.Duration
				for b.Loop() {
					tl += run(lane)
					tc += run(col)
				}
				perCall := func(t time.Duration) float64 { return float64(t.Nanoseconds()) / float64(b.N) }
				b.ReportMetric(float64(lane.Bytes())/perCall(tl), "lane-GB/s")
				b.ReportMetric(float64(col.Bytes())/perCall(tc), "column-GB/s")
				b.ReportMetric(float64(tl)/float64(tc), "column/lane")
			})
		}
	}
}
