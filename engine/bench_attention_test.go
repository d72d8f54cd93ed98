package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
)

// naiveAttend is the attention loop of the engine before attendBlock (one
// query head at a time: all scores of a row, kernels.Softmax, weighted sum
// of V), restricted to the heads of one KV head: the baseline of
// BenchmarkAttention. scores needs (pos0+r1) floats.
func naiveAttend(out, q []float32, ldq int, kc, vc []float32, ldkv int, r0, r1, pos0, kvHead, group, hd int, scale float32, scores []float32) {
	ko := kvHead * hd
	for h := kvHead * group; h < (kvHead+1)*group; h++ {
		for t := r0; t < r1; t++ {
			qh := q[t*ldq+h*hd : t*ldq+(h+1)*hd]
			row := scores[:pos0+t+1]
			for j := range row {
				kj := kc[j*ldkv+ko : j*ldkv+ko+hd]
				var dot float32
				for i, qv := range qh {
					dot += qv * kj[i]
				}
				row[j] = dot * scale
			}
			kernels.Softmax(row, row)
			o := out[t*ldq+h*hd : t*ldq+(h+1)*hd]
			clear(o)
			for j, p := range row {
				vj := vc[j*ldkv+ko : j*ldkv+ko+hd]
				for i := range o {
					o[i] += p * vj[i]
				}
			}
		}
	}
}

// benchKV is one KV head's cache for the benchmarks: the row-major keys
// and values of ctx positions (kvHeads heads) written in layout lay.
func benchKV(lay kvLayout, kc, vc []float32, ctx int) (ck, cv []float32) {
	nk, nv := lay.floats()
	ck, cv = make([]float32, nk), make([]float32, nv)
	kvd := lay.kvHeads * lay.hd
	for j := range ctx {
		lay.write(ck, cv, j, kc[j*kvd:(j+1)*kvd], vc[j*kvd:(j+1)*kvd])
	}
	return ck, cv
}

// BenchmarkAttention compares attendBlock with naiveAttend for one KV head
// on one worker: prefill of T = 512 rows from an empty cache (in one call,
// and in blocks of 32 rows as the engine's work units), and decode (one
// row) after 512 and 4096 cached positions, at head dims 64 and 128 and
// groups 1 and 4, on gemm.Best(FP32). impl=packed reads the
// producer-packed cache, impl=kv-packing the row-major one, packing each
// tile per call (the ablation). GFLOP/s counts 4·headDim flops per (query
// row, visible key) pair (QKᵀ and P·V).
func BenchmarkAttention(b *testing.B) {
	type shape struct {
		name              string
		rows, pos0, block int
	}
	shapes := []shape{
		{"prefill/T=512/block=512", 512, 0, 512},
		{"prefill/T=512/block=32", 512, 0, 32},
		{"decode/ctx=512", 1, 511, 1},
		{"decode/ctx=4096", 1, 4095, 1},
	}
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		b.Fatal(err)
	}
	for _, sh := range shapes {
		for _, hd := range []int{64, 128} {
			for _, group := range []int{1, 4} {
				const kvHeads = 2
				ldq, ldkv := kvHeads*group*hd, kvHeads*hd
				ctx := sh.pos0 + sh.rows
				rng := rand.New(rand.NewPCG(1, 2))
				fill := func(n int) []float32 {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					return x
				}
				q, kc, vc := fill(sh.rows*ldq), fill(ctx*ldkv), fill(ctx*ldkv)
				out := make([]float32, len(q))
				scale := float32(1 / math.Sqrt(float64(hd)))
				pairs := float64(group) * float64(sh.rows) * float64(2*sh.pos0+sh.rows+1) / 2
				for _, impl := range []string{"naive", "packed", "kv-packing"} {
					if impl == "naive" && sh.block != sh.rows {
						continue // the same work as the whole block
					}
					b.Run(fmt.Sprintf("shape=%s/hd=%d/group=%d/impl=%s", sh.name, hd, group, impl), func(b *testing.B) {
						lay := newKVLayout(be, kvHeads, hd, ctx, impl == "packed")
						ws := newAttnScratch(be, lay, group)
						ck, cv := benchKV(lay, kc, vc, ctx)
						scores := make([]float32, ctx)
						for b.Loop() {
							for r0 := 0; r0 < sh.rows; r0 += sh.block {
								r1 := min(r0+sh.block, sh.rows)
								if impl == "naive" {
									naiveAttend(out, q, ldq, kc, vc, ldkv, r0, r1, sh.pos0, 1, group, hd, scale, scores)
								} else {
									attendBlock(out, q, ldq, ck, cv, r0, r1, sh.pos0, 1, group, scale, ws)
								}
							}
						}
						b.ReportMetric(4*float64(hd)*pairs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			}
		}
	}
}

// cpuTimer measures a benchmark's loop in CPU time of its (locked) OS
// thread as well as in wall time: on a loaded machine the thread's CPU
// time is the closer figure to an idle machine's wall time.
type cpuTimer struct {
	b  *testing.B
	t0 float64
	ok bool
}

func startCPUTimer(b *testing.B) *cpuTimer {
	runtime.LockOSThread()
	t0, ok := threadCPUSeconds()
	return &cpuTimer{b: b, t0: t0, ok: ok}
}

// report stops the timer, reports flops per iteration as GFLOP/s (wall)
// and GFLOP/s-cpu (thread CPU time, where readable) and returns the
// CPU-time rate (the wall one where CPU time is unknown).
func (c *cpuTimer) report(flops float64) float64 {
	t1, ok := threadCPUSeconds()
	runtime.UnlockOSThread()
	wall := flops * float64(c.b.N) / c.b.Elapsed().Seconds() / 1e9
	c.b.ReportMetric(wall, "GFLOP/s")
	if !c.ok || !ok || t1 <= c.t0 {
		return wall
	}
	cpu := flops * float64(c.b.N) / (t1 - c.t0) / 1e9
	c.b.ReportMetric(cpu, "GFLOP/s-cpu")
	return cpu
}

// BenchmarkPrefillAttention is SMEPilot §4.3's producer-packed KV cache
// against its ablation on the shape the issue names: the prefill
// attention of one KV head (head dim 128, GQA group 2) over contexts of
// 2K, 4K and 8K positions from an empty cache, in the engine's work units
// (attendBlock on attnPlanRows query rows at a time, latest first), on one
// worker and gemm.Best(FP32). impl=packed reads the cache as its producer
// wrote it; impl=kv-packing packs every K and V tile inside each call
// (the --ablate kv-packing path); impl=bf16 reads a bf16 cache, converting
// each tile to fp32 (--kv-dtype bf16). Beside them impl=gemm is the backend's
// fp32 GEMM on packed weights (M 256, N and K 1024: Weights.Block), the
// single-core compute ceiling attention is held to. GFLOP/s counts
// 4·headDim flops per (query row, visible key) pair, per second of wall
// time and (GFLOP/s-cpu) of the thread's CPU time; at the end one line per
// context gives the CPU-time rates, the packed/ablation speedup and the
// packed rate as a fraction of the GEMM's (printed to stdout, so it shows
// without -v).
func BenchmarkPrefillAttention(b *testing.B) {
	const hd, group, kvHeads = 128, 2, 1
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	gemmRate := 0.0
	b.Run("impl=gemm/M=256/N=1024/K=1024", func(b *testing.B) {
		const m, n, k = 256, 1024, 1024
		w, err := gemm.PackFP32(be, fill(n*k), n, k)
		if err != nil {
			b.Fatal(err)
		}
		x, y := fill(m*k), make([]float32, m*n)
		s := gemm.NewScratch(w, gemm.Blocking{})
		tm := startCPUTimer(b)
		for b.Loop() {
			if err := w.Block(y, n, x, k, 0, m, 0, n, s); err != nil {
				b.Fatal(err)
			}
		}
		gemmRate = tm.report(gemm.Flops(m, n, k))
	})
	var lines []string
	for _, ctx := range []int{2048, 4096, 8192} {
		ldq := kvHeads * group * hd
		q, kc, vc := fill(ctx*ldq), fill(ctx*kvHeads*hd), fill(ctx*kvHeads*hd)
		out := make([]float32, len(q))
		scale := float32(1 / math.Sqrt(float64(hd)))
		pairs := float64(group) * float64(ctx) * float64(ctx+1) / 2
		rate := map[string]float64{}
		for _, impl := range []string{"packed", "kv-packing", "bf16"} {
			b.Run(fmt.Sprintf("ctx=%d/hd=%d/group=%d/impl=%s", ctx, hd, group, impl), func(b *testing.B) {
				lay := newKVLayout(be, kvHeads, hd, ctx, impl != "kv-packing")
				if impl == "bf16" {
					lay = newKVLayoutBF16(be, kvHeads, hd, ctx)
				}
				ws := newAttnScratch(be, lay, group)
				ck, cv := benchKV(lay, kc, vc, ctx)
				tm := startCPUTimer(b)
				for b.Loop() {
					rows := attnPlanRows(be, group)
					for r1 := ctx; r1 > 0; r1 -= rows {
						attendBlock(out, q, ldq, ck, cv, max(0, r1-rows), r1, 0, 0, group, scale, ws)
					}
				}
				rate[impl] = tm.report(4 * hd * pairs)
			})
		}
		if p, a := rate["packed"], rate["kv-packing"]; p > 0 && a > 0 {
			line := fmt.Sprintf("prefill attention ctx=%d hd=%d group=%d on %s (per CPU second): packed %.1f GFLOP/s, kv-packing ablation %.1f GFLOP/s, packed/ablation %.2f×, bf16 cache %.1f GFLOP/s", ctx, hd, group, be.Name, p, a, p/a, rate["bf16"])
			if gemmRate > 0 {
				line += fmt.Sprintf(", packed/GEMM (%.1f GFLOP/s) %.0f%%", gemmRate, 100*p/gemmRate)
			}
			lines = append(lines, line)
		}
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}
