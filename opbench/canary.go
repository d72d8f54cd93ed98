package opbench

import (
	"fmt"
	"strings"
	"time"

	"github.com/cpubench/bench/kernels"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/results"
)

// Canary is a fixed reference loop timed on the workers that measure a
// figure, before and after it (issue #16 part 3): a guest VM sees neither
// its host's other tenants nor its vCPUs' frequency, and on the 2-core KVM
// guest single-thread compute ran at half speed for seconds at a time
// with no steal time and no spread within a figure; a figure measured in
// such a phase is as steady as any other. The loop (kernels.Exp over
// canaryElems L1-resident floats, canaryPasses times: tens of µs, the
// best of canaryRuns runs) compared with its best time on the same worker
// in the run says whether the worker ran at its usual speed.
type Canary struct {
	best  map[int]float64 // best seconds of the loop per pool worker
	bufs  map[int][]float32
	times []float64 // scratch: one time per group worker
}

const (
	canaryElems  = 2048
	canaryPasses = 32
	canaryRuns   = 3
)

// Check times the loop on every worker of g (inside m, a Master of g's
// pool) and returns each worker's time, in g's order, in seconds; it
// updates the best times.
func (c *Canary) Check(m *kpool.Master, g *kpool.Group) (map[int]float64, error) {
	ws := g.Workers()
	if c.best == nil {
		c.best, c.bufs = map[int]float64{}, map[int][]float32{}
	}
	for _, w := range ws {
		if c.bufs[w] == nil {
			b := make([]float32, 2*canaryElems)
			for i := range b {
				b[i] = float32(i%61)/61 - 0.5
			}
			c.bufs[w] = b
		}
	}
	c.times = append(c.times[:0], make([]float64, len(ws))...)
	err := m.Run(g, func(local, _ int) error {
		b := c.bufs[ws[local]]
		src, dst := b[:canaryElems], b[canaryElems:]
		best := time.Duration(1 << 62)
		for range canaryRuns {
			t0 := time.Now()
			for range canaryPasses {
				kernels.Exp(dst, src)
			}
			best = min(best, time.Since(t0))
		}
		c.times[local] = best.Seconds()
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int]float64, len(ws))
	for i, w := range ws {
		out[w] = c.times[i]
		if b, ok := c.best[w]; !ok || c.times[i] < b {
			c.best[w] = c.times[i]
		}
	}
	return out, nil
}

// Ratio is the largest of times (per pool worker, from Check) over the
// best time of its worker so far: 1 when every worker ran the loop as
// fast as it ever has in the run; 0 for no times.
func (c *Canary) Ratio(times map[int]float64) float64 {
	r := 0.0
	for w, t := range times {
		if b := c.best[w]; b > 0 {
			r = max(r, t/b)
		}
	}
	return r
}

// JudgeCanary records canary ratio r in n and marks n noisy when r exceeds
// results.NoiseMaxCanary, with the reason once (judging a figure again
// updates the ratio).
func JudgeCanary(n *results.Noise, r float64) {
	if !(r > 0) {
		return
	}
	n.Canary = r
	if !(r > results.NoiseMaxCanary) || strings.Contains(n.Why, canaryWhy) {
		return
	}
	why := fmt.Sprintf("%s: a reference loop on the figure's CPUs took %.2f× its best time in the run (> %.2f×)", canaryWhy, r, results.NoiseMaxCanary)
	if n.Noisy {
		n.Why += "; " + why
		return
	}
	n.Noisy, n.Why = true, why
}

// canaryWhy begins the reason JudgeCanary gives (once per figure).
const canaryWhy = "host slowdown"
