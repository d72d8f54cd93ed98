package engine

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/affinity"
)

var parkingWeights = sync.OnceValues(func() (*Weights, error) {
	data, err := os.ReadFile(filepath.Join("..", "models", "configs", "qwen3-0.6b.json"))
	if err != nil {
		return nil, err
	}
	c, err := FromHF(data, "qwen3-0.6b")
	if err != nil {
		return nil, err
	}
	return Synthetic(c, 2, 1)
})

// BenchmarkDecodeParking (issue #16): 64 greedy decode steps of one
// sequence of qwen3-0.6b (synthetic weights, 2 layers, 2 threads, after a
// 16-token prefill), with the argmax over the 151936 logits on the caller
// between steps (Decode, then Argmax: the workers spin out their 200 µs
// and park, and layer 0's q_proj, the step's first parallel operator,
// pays their wake-up), inside the step on every worker (DecodeNext), and
// so with the loop itself on worker 0 (Model.Hold: no hand-over of the
// thread between steps).
// It reports, per mode, layer 0's decode q_proj time over layer 1's
// (about 1 when no worker parks between steps) and TPOT. On a loaded
// machine compare the two modes of one run only.
func BenchmarkDecodeParking(b *testing.B) {
	if cpus, err := affinity.Allowed(); err != nil || len(cpus) < 2 {
		b.Skip("needs 2 CPUs")
	}
	w, err := parkingWeights()
	if err != nil {
		b.Fatal(err)
	}
	const steps, prompt = 64, 16
	for _, mode := range []string{"caller", "pool", "pool+hold"} {
		b.Run("argmax="+mode, func(b *testing.B) {
			m, err := New(w, Options{Threads: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			bt, err := m.NewBatch(1, prompt+steps+1)
			if err != nil {
				b.Fatal(err)
			}
			toks := make([]int, prompt)
			for i := range toks {
				toks[i] = (i * 7919) % m.Config.Vocab
			}
			var decodeNs int64
			bt.ResetTimings()
			loop := func() error { return nil }
			for b.Loop() {
				bt.Reset(0)
				next, err := bt.PrefillNext(0, toks, nil)
				if err != nil {
					b.Fatal(err)
				}
				cur := []int{next}
				loop = func() error {
					for range steps {
						st := time.Now()
						if mode == "caller" {
							var l []float32
							if l, err = bt.Decode([]int{0}, cur); err == nil {
								cur[0] = Argmax(l)
							}
						} else {
							err = bt.DecodeNext([]int{0}, cur, cur, nil)
						}
						if err != nil {
							return err
						}
						decodeNs += int64(time.Since(st))
					}
					return nil
				}
				if mode == "pool+hold" {
					err = m.Hold(loop)
				} else {
					err = loop()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			var q [2]float64
			for _, t := range bt.Timings() {
				if t.Phase == Decode && t.Op == OpQProj && t.Layer < 2 {
					q[t.Layer] = t.Seconds
				}
			}
			n := float64(b.N * steps)
			b.ReportMetric(q[0]/q[1], "qproj-L0/L1")
			b.ReportMetric(q[0]/n*1e6, "qproj-L0-µs")
			b.ReportMetric(q[1]/n*1e6, "qproj-L1-µs")
			b.ReportMetric(float64(decodeNs)/n/1e6, "TPOT-ms")
			b.Logf("argmax on the %s: layer-0/layer-1 decode q_proj %.2f× (%.0f vs %.0f µs), TPOT %.2f ms over %d steps",
				mode, q[0]/q[1], q[0]/n*1e6, q[1]/n*1e6, float64(decodeNs)/n/1e6, int(n))
		})
	}
}
