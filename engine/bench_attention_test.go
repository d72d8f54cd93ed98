package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cpubench/bench/kernels"
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

// BenchmarkAttention compares attendBlock with naiveAttend for one KV head
// on one worker: prefill of T = 512 rows from an empty cache (in one call,
// and in blocks of 32 rows as the engine's work units), and decode (one
// row) after 512 and 4096 cached positions, at head dims 64 and 128 and
// groups 1 and 4. impl=flash is the automatic choice, flash-scalar and
// flash-gemm force the tile products. GFLOP/s counts 4·headDim flops per
// (query row, visible key) pair (QKᵀ and P·V).
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
				for _, impl := range []string{"naive", "flash", "flash-scalar", "flash-gemm"} {
					if impl == "naive" && sh.block != sh.rows {
						continue // the same work as the whole block
					}
					b.Run(fmt.Sprintf("shape=%s/hd=%d/group=%d/impl=%s", sh.name, hd, group, impl), func(b *testing.B) {
						ws := newAttnScratch(hd, group)
						switch impl {
						case "flash-scalar":
							ws.useGEMM = -1
						case "flash-gemm":
							ws.useGEMM = 1
						}
						scores := make([]float32, ctx)
						for b.Loop() {
							for r0 := 0; r0 < sh.rows; r0 += sh.block {
								r1 := min(r0+sh.block, sh.rows)
								if impl == "naive" {
									naiveAttend(out, q, ldq, kc, vc, ldkv, r0, r1, sh.pos0, 1, group, hd, scale, scores)
								} else {
									attendBlock(out, q, ldq, kc, vc, ldkv, r0, r1, sh.pos0, 1, group, hd, scale, ws)
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
