package probes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels/gemm"
	kpool "github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/results"
)

// Matrix-section shapes. The large GEMM is an LLM prefill Linear layer
// (hidden 3072, 512 tokens: 9.7 GFLOP), sized so the section stays near
// 15 s on 2 AVX2 cores (about 0.15 s per fp32 call on one core, 8 calls
// per figure); quick mode halves M and takes hidden 2048 (1.1 GFLOP).
// The GEMV weight is DRAM-sized: r.plan.dramWS in each dtype (the
// largest working set, ≥ 4× the last-level cache, and at least
// dramMinBytes: dramWorkingSet), the DRAM read roofs' working set, its
// bandwidth a fraction of the roof re-measured beside it (gemvroof.go).
// The quantized
// formats' packed weights are advised for transparent huge pages
// (kernels/quant), as the roof's read buffers are: on the Zen 5 VM (THP
// "madvise") the same GEMV on 4 KiB pages ran 0–20% slower at 1 thread
// (interleaved runs), a shortfall that had been reported as the kernel's.
var matrixShapes = map[bool][3]int{
	false: {512, 3072, 3072}, // default: M, N, K
	true:  {256, 2048, 2048}, // quick
}

// gemmShapeTable is the attained-GEMM table's shapes (matrix.gemm_shapes,
// issue #16): M rows from batched decodes (2, 4, 8: a GEMM of a few rows
// runs at a fraction of M 16's rate, 110–140 against 194 GFLOP/s on one
// core of the 2-core VM at M 2–4) to long prefills × the (N, K)
// classes of the shipped models' linears (qwen3-0.6b's 1024×1024,
// gate/up 3072×1024, down 1024×3072; the 3–8B models' ≈ 4096×4096), from
// which the roofline interpolates a linear's attained rate
// (roofline.AttainedGEMM). Measured per dtype the engine runs (fp32 on the
// cores, bf16 the matrix placement's) with each dtype's best backend, at
// every compute thread count, gemmTableReps repetitions of at least
// gemmTableRep: the big shapes are one call a repetition. From the FLOPs
// (133 GFLOP a pass per backend and thread count, 6 passes with the
// warm-up) at the 2-core VM's attained 176 and 372 GFLOP/s, about 14 s for
// fp32 and bf16 at 1 and 2 threads, more where a noisy figure is
// measured again; bf16's DRAM class (gemmTableClass) is twice the 4096×4096
// class on a 32 MiB L3, about 4 s more. Quick takes M 16 and 512 at the two qwen3-0.6b classes
// 1024×1024 and 3072×1024 (4.4 GFLOP a pass, a thirtieth of the full
// table's; larger M are read at M 512's rate, clamped).
//
// A DRAM class is also measured at M 1 (its GEMV: the baseline of
// roofline.FewRowsWeightFactor), and FewRowsNK are DRAM classes measured
// at FewRowsMs only: a reduction depth of 1024 (the 0.6–1.7B models'
// hidden size, and every model's lm_head at that size), at which a few
// rows slow the weight stream more than at 4096 (bf16 on the Zen 5 VM, 2
// threads: M 4 at 0.86 of M 1's weight GB/s at K 1024, 0.91 at K 4096);
// about 2 s more for both dtypes at 1 and 2 threads.
var gemmShapeTable = map[bool]struct {
	Ms        []int
	NK        [][2]int
	FewRowsMs []int
	FewRowsNK [][2]int
}{
	false: {Ms: []int{2, 4, 8, 16, 64, 256, 512, 2048}, NK: [][2]int{{1024, 1024}, {3072, 1024}, {1024, 3072}, {4096, 4096}},
		FewRowsMs: []int{1, 2, 4, 8, 16}, FewRowsNK: [][2]int{{16384, 1024}}},
	true: {Ms: []int{16, 512}, NK: [][2]int{{1024, 1024}, {3072, 1024}}},
}

// gemmTableDRAMNK is the size in elements (N·K) from which a class of
// gemmShapeTable is the table's DRAM class: the one whose weights stream
// from memory, from which roofline.FewRowsWeightFactor reads how a batched
// decode's few rows slow the GEMV's weight stream.
const gemmTableDRAMNK = 4096 * 4096

// gemmTableClass returns class nk of the attained-GEMM table as measured
// in dtype dt on a machine whose last-level cache holds llc bytes: a DRAM
// class (N·K ≥ gemmTableDRAMNK) has its N doubled until its weights are at
// least twice llc, so that no cache holds them in any dtype; other classes
// are returned as they are. Measured on 2026-11-27's Zen 5 VM (32 MiB L3,
// 2 threads): the 4096×4096 bf16 class (32 MiB) ran at M 2 at 74 GB/s of
// weights, above the 55 GB/s DRAM read roof (part of it in L3), so
// FewRowsWeightFactor found no DRAM class for bf16 and gave 1 where the
// lm_head's bf16 GEMM (151936×1024) streamed 53.7 GB/s at M 1, 45.1 at
// M 4 (0.84) and 40.1 at M 8 (`bench gemm --m 1,2,4,8 --n 151936 --k 1024
// --dtype fp32,bf16 --threads 2`); the engine's batch-4 decode linears on
// bf16 ran at 1.31–1.33 of their prediction.
func gemmTableClass(nk [2]int, dt gemm.DType, llc int64) [2]int {
	if nk[0]*nk[1] < gemmTableDRAMNK || llc <= 0 || gemm.WeightBytes(dt, 1, 1) <= 0 {
		return nk
	}
	for gemm.WeightBytes(dt, nk[0], nk[1]) < 2*llc {
		nk[0] *= 2
	}
	return nk
}

// gemmTableDTypes are the dtypes of the attained-GEMM table.
var gemmTableDTypes = []gemm.DType{gemm.FP32, gemm.BF16}

const (
	gemmTableReps = 5
	gemmTableRep  = 5 * time.Millisecond
)

// gemmTableBackends returns the best backend of each table dtype, except
// the portable "go" ones (too slow for the table's shapes).
func gemmTableBackends() []gemm.Backend {
	var out []gemm.Backend
	for _, dt := range gemmTableDTypes {
		if be, err := gemm.Best(dt); err == nil && be.ISA != "go" {
			out = append(out, be)
		}
	}
	return out
}

// gemmTable measures the attained-GEMM table (gemmShapeTable) on b, one
// progress step per backend and thread count.
func (r *runner) gemmTable(ctx context.Context, b *GEMMBench, compute *results.Compute, memory *results.Memory) ([]results.GEMMResult, error) {
	reps, rep, ring := b.Reps, b.RepDuration, b.OutputRing
	b.Reps, b.RepDuration = gemmTableReps, min(rep, gemmTableRep)
	llc := r.caches.size[3]
	if r.topo != nil && r.topo.LLCBytes > 0 {
		llc = r.topo.LLCBytes
	}
	b.OutputRing = ColdOutputRing(llc)
	defer func() { b.Reps, b.RepDuration, b.OutputRing = reps, rep, ring }()
	sh := gemmShapeTable[r.cfg.Quick]
	out := []results.GEMMResult{}
	for _, be := range gemmTableBackends() {
		type class struct {
			w  *GEMMWeights
			ms []int
		}
		var cs []class
		for i, nk := range append(slices.Clone(sh.NK), sh.FewRowsNK...) {
			ms := sh.Ms
			if i >= len(sh.NK) {
				ms = sh.FewRowsMs
			}
			if nk[0]*nk[1] >= gemmTableDRAMNK && ms[0] > 1 {
				ms = append([]int{1}, ms...)
			}
			nk = gemmTableClass(nk, be.DType, llc)
			w, err := NewGEMMWeights(be, nk[0], nk[1], 3)
			if err != nil {
				return nil, err
			}
			cs = append(cs, class{w, ms})
		}
		for _, t := range r.computeThreads() {
			for _, c := range cs {
				w := c.w
				for _, m := range c.ms {
					g, err := b.Measure(ctx, w, m, t, false)
					if err != nil {
						return nil, err
					}
					GEMMFraction(&g, compute, memory, nil)
					out = append(out, g)
				}
			}
			r.step(fmt.Sprintf("matrix gemm table %s threads=%d", be.Name, t))
		}
	}
	return out, nil
}

const (
	// goM is M for the portable "go" backends (about 2.5 GFLOP/s per core,
	// the only ones on arm64 and with purego): 32 rows keep a call near
	// 0.25 s at the default shape; the shape is recorded with the figure.
	goM = 32
	// gemvK is the GEMV's reduction depth; N = maxWS / bytes / gemvK.
	gemvK = 4096
	// gemmSamples is the number of elements of Y checked per figure.
	gemmSamples = 64
	// smallM is the largest M whose fraction is of the memory roof (decode:
	// the weights are read once per call and dominate the traffic).
	smallM = 16
)

// GEMMWeights is one weight matrix of a GEMM measurement: the unpacked W
// (for the reference check and pack-every-call) and its packed copy.
type GEMMWeights struct {
	Backend gemm.Backend
	N, K    int
	// Raw is []float32 (fp32), []uint16 (bf16) or gemm.RawInt8.
	Raw    any
	Packed *gemm.Weights
	// PackSeconds is the time of the one Pack call (not on the per-call path).
	PackSeconds float64
}

// hashUnit maps i to a float in [-1, 1): a cheap deterministic generator
// (splitmix64's finalizer) for large synthetic matrices.
func hashUnit(i uint64) float32 {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float32(int32(z>>32)) * 0x1p-31
}

// NewGEMMWeights makes a synthetic N×K weight matrix for backend b (values
// from seed: fp32 in [-0.05, 0.05), the same values rounded to bf16, or
// int8 in [-127, 127] with per-row scales) and packs it, timing the pack.
// Backends of different dtypes given the same seed hold the same logical W.
func NewGEMMWeights(b gemm.Backend, n, k int, seed uint64) (*GEMMWeights, error) {
	if n <= 0 || k <= 0 {
		return nil, fmt.Errorf("gemm: weights %d×%d: N and K must be positive", n, k)
	}
	w := &GEMMWeights{Backend: b, N: n, K: k}
	base := seed << 40
	var err error
	switch b.DType {
	case gemm.FP32:
		raw := make([]float32, n*k)
		for i := range raw {
			raw[i] = 0.05 * hashUnit(base+uint64(i))
		}
		t0 := time.Now()
		w.Packed, err = gemm.PackFP32(b, raw, n, k)
		w.PackSeconds, w.Raw = time.Since(t0).Seconds(), raw
	case gemm.BF16:
		raw := make([]uint16, n*k)
		for i := range raw {
			raw[i] = gemm.Float32ToBF16(0.05 * hashUnit(base+uint64(i)))
		}
		t0 := time.Now()
		w.Packed, err = gemm.PackBF16(b, raw, n, k)
		w.PackSeconds, w.Raw = time.Since(t0).Seconds(), raw
	case gemm.Int8:
		raw := gemm.RawInt8{W: make([]int8, n*k), Scales: make([]float32, n)}
		for i := range raw.W {
			raw.W[i] = int8(127 * hashUnit(base+uint64(i)))
		}
		for i := range raw.Scales {
			raw.Scales[i] = 0.05 / 127
		}
		t0 := time.Now()
		w.Packed, err = gemm.PackInt8(b, raw.W, raw.Scales, n, k)
		w.PackSeconds, w.Raw = time.Since(t0).Seconds(), raw
	default:
		return nil, fmt.Errorf("gemm: backend %q: unknown dtype %q", b.Name, b.DType)
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// gemmInput returns the M×K activations (values in [-1, 1)).
func gemmInput(m, k int) []float32 {
	x := make([]float32, m*k)
	for i := range x {
		x[i] = hashUnit(1<<62 + uint64(i))
	}
	return x
}

// GEMMBench measures GEMMs on a kernels/pool of pinned workers: the first
// t workers form the group of a t-thread figure, and every timed loop runs
// through Pool.Do on worker 0's pinned thread (the master computes its
// share inline, so no thread waits without working).
type GEMMBench struct {
	Pool        *kpool.Pool
	Reps        int
	RepDuration time.Duration
	inputs      map[[2]int][]float32
	// place (the probe's matrix section) holds figures on more than one
	// CPU to the placement the probe began with (noise.PlacementGuard).
	place *noise.PlacementGuard
	// OutputRing, when > 0, makes Measure write each call's output into
	// the next of a ring of outputs of at least this many bytes
	// (results.GEMMResult.OutputBytes: cold outputs, as in a forward
	// pass); 0: one output, hot.
	OutputRing int64
	ring       []float32 // the outputs of OutputRing, kept across figures
}

// ColdOutputRing is the output ring of the attained-GEMM table on a
// machine whose last-level cache holds llc bytes (0: unknown): four times
// that (a VM's host may give its vCPUs two dies' caches), at least
// 128 MiB. Writing a cold output cost the fp32 GEMM 3–4% of its
// rate at M 512 × N 2048–3072 × K 1024 and 8% at M 2048 × N 3072 on the
// 2-core VM (a 32 MiB L3); the engine's prefill q_proj and gate_proj ran
// at 0.84–0.93 of the same call timed standalone with a hot output.
func ColdOutputRing(llc int64) int64 {
	return max(4*llc, 128<<20)
}

// GEMMCPUs is the order GEMM threads are placed on CPUs, as in the other
// probes: one per physical core first, then the remaining hardware
// threads, within the process's affinity mask (the affinity mask alone
// when the topology cannot be read).
func GEMMCPUs() ([]int, error) {
	if t, err := topology.ReadTopology(topology.LiveRoots()); err == nil {
		if order, err := cpuOrder(t); err == nil {
			return order, nil
		}
	}
	return affinity.Allowed()
}

// NewGEMMBench starts one pinned worker per CPU of cpus (nil: GEMMCPUs). reps ≥ 1 timed repetitions of at least d follow
// one warm-up of d/2; a repetition is at least one call.
func NewGEMMBench(cpus []int, reps int, d time.Duration) (*GEMMBench, error) {
	if cpus == nil {
		order, err := GEMMCPUs()
		if err != nil {
			return nil, fmt.Errorf("gemm: CPU list: %w", err)
		}
		cpus = order
	}
	if len(cpus) == 0 {
		return nil, errors.New("gemm: no CPU to run on")
	}
	if reps < 1 {
		return nil, fmt.Errorf("gemm: --reps %d: must be ≥ 1", reps)
	}
	p, err := kpool.New(kpool.Options{CPUs: cpus})
	if err != nil {
		return nil, err
	}
	return &GEMMBench{Pool: p, Reps: reps, RepDuration: d, inputs: map[[2]int][]float32{}}, nil
}

// Close ends the workers.
func (b *GEMMBench) Close() { b.Pool.Close() }

func (b *GEMMBench) input(m, k int) []float32 {
	x, ok := b.inputs[[2]int{m, k}]
	if !ok {
		x = gemmInput(m, k)
		b.inputs[[2]int{m, k}] = x
	}
	return x
}

// groups returns the groups of the first sizes[0] workers, the next
// sizes[1], ...
func (b *GEMMBench) groups(sizes ...int) ([]*kpool.Group, error) {
	for _, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("gemm: --threads %d: must be ≥ 1", s)
		}
	}
	gs, err := b.Pool.Groups(sizes...)
	if err != nil {
		return nil, fmt.Errorf("gemm: threads %v on %d CPUs: %w", sizes, b.Pool.Size(), err)
	}
	return gs, nil
}

func (b *GEMMBench) cpusPinned(g *kpool.Group) ([]int, bool) {
	pinned := b.Pool.Pinned()
	ok := true
	for _, i := range g.Workers() {
		ok = ok && pinned[i]
	}
	return g.CPUs(), ok
}

// timeCalls runs a warm-up and b.Reps timed repetitions of call (timeOnce)
// on group g and returns the calls per second of each timed one (g's CPUs
// are the ones the placement guard checks).
func (b *GEMMBench) timeCalls(ctx context.Context, g *kpool.Group, call func(m *kpool.Master) error) (callRates, error) {
	var best callRates
	for attempt := 1; ; attempt++ {
		var c callRates
		cpus := b.Pool.CPUs()
		placeBefore, err := b.place.Before(ctx, g.CPUs())
		if err != nil {
			return callRates{}, err
		}
		steal0, total0, ticksOK := noise.CPUTicks(cpus)
		for rep := 0; rep <= b.Reps; rep++ {
			rate, err := b.timeOnce(ctx, call, rep == 0)
			if err != nil {
				return callRates{}, err
			}
			if rep > 0 {
				c.rates = append(c.rates, rate)
			}
		}
		if steal1, total1, ok := noise.CPUTicks(cpus); ok && ticksOK && total1 > total0 {
			c.noise.StealFraction = float64(steal1-steal0) / float64(total1-total0)
		}
		c.noise.LoadAvg1 = noise.LoadAvg1()
		c.noise.CV = results.Summarize(c.rates).CV
		placeAfter, err := b.place.After(ctx, g.CPUs())
		if err != nil {
			return callRates{}, err
		}
		b.place.Record(&c.noise, placeBefore, placeAfter)
		noise.Judge(&c.noise, false)
		if attempt == 1 || noisier(best.noise, c.noise) {
			best = c
		}
		best.noise.Attempts = attempt
		if !best.noise.Noisy || attempt > noiseRetries {
			return best, nil
		}
	}
}

// callRates are timeCalls' calls per second, one per timed repetition, and
// the figure's noise record (no CPU fraction: the kernels/pool workers that
// run the calls park between them).
type callRates struct {
	rates []float64
	noise results.Noise
}

// stat summarizes values derived one-to-one from the rates with the noise
// record attached.
func (c callRates) stat(values []float64) results.Stat {
	st := results.Summarize(values)
	n := c.noise
	st.Noise = &n
	return st
}

// Measure times Y = X·Wᵀ at M rows on the first threads workers: w's
// packed weights through gemm.Run, or, with packEveryCall, the unpacked
// ones through gemm.RunUnpacked (SMEPilot §5.4's ablation). The result's
// checksum is the sum of gemmSamples elements of Y, each checked against a
// float64 reference (a wrong kernel fails the measurement).
func (b *GEMMBench) Measure(ctx context.Context, w *GEMMWeights, m, threads int, packEveryCall bool) (results.GEMMResult, error) {
	g, x, y, err := b.operands(m, threads, w.N, w.K)
	if err != nil {
		return results.GEMMResult{}, err
	}
	scr := gemm.NewScratches(b.Pool.Size(), w.Packed, gemm.Blocking{})
	call := func(mm *kpool.Master) error { return w.Packed.Run(mm, g, y, x, m, scr) }
	var ringBytes int64
	if b.OutputRing > 0 && !packEveryCall {
		// One buffer for the bench, faulted in once, cut into outputs
		// written in turn.
		mn := m * w.N
		n := int((b.OutputRing + int64(mn)*4 - 1) / (int64(mn) * 4))
		if len(b.ring) < n*mn {
			b.ring = make([]float32, n*mn)
			for i := 0; i < len(b.ring); i += 1024 { // one write a 4 KiB page
				b.ring[i] = 0
			}
		}
		ring := b.ring
		ringBytes = int64(n*mn) * 4
		next := 0
		call = func(mm *kpool.Master) error {
			y = ring[next*mn : (next+1)*mn]
			next = (next + 1) % n
			return w.Packed.Run(mm, g, y, x, m, scr)
		}
	}
	if packEveryCall {
		call = func(mm *kpool.Master) error {
			return gemm.RunUnpacked(mm, g, w.Backend, gemm.Blocking{}, y, x, w.Raw, m, w.N, w.K, scr)
		}
	}
	rates, err := b.timeCalls(ctx, g, call)
	if err != nil {
		return results.GEMMResult{}, fmt.Errorf("gemm %s M=%d threads=%d: %w", w.Backend.Name, m, threads, err)
	}
	sum, err := gemm.CheckSample(w.Backend.DType, y, x, w.Raw, m, w.N, w.K, gemmSamples)
	if err != nil {
		return results.GEMMResult{}, fmt.Errorf("gemm %s M=%d threads=%d: %w", w.Backend.Name, m, threads, err)
	}
	r := b.result(g, rates, w.Backend.Name, string(w.Backend.DType), m, w.N, w.K, gemm.WeightBytes(w.Backend.DType, w.N, w.K), w.PackSeconds, sum)
	r.OutputBytes = ringBytes
	return r, nil
}

// operands checks M and returns the group of the first threads workers,
// the M×K input and an M×N output of one measurement.
func (b *GEMMBench) operands(m, threads, n, k int) (*kpool.Group, []float32, []float32, error) {
	if m < 1 {
		return nil, nil, nil, fmt.Errorf("gemm: --m %d: must be ≥ 1", m)
	}
	gs, err := b.groups(threads)
	if err != nil {
		return nil, nil, nil, err
	}
	return gs[0], b.input(m, k), make([]float32, m*n), nil
}

// result turns the calls per second of a measurement on group g into its
// figure: GFLOP/s = 2·M·N·K per call, weight GB/s = weightBytes per call
// (median), and the CPUs and pinning of g.
func (b *GEMMBench) result(g *kpool.Group, rates callRates, backend, dtype string, m, n, k int, weightBytes int64, pack, sum float64) results.GEMMResult {
	flops := gemm.Flops(m, n, k)
	gf := make([]float64, len(rates.rates))
	for i, r := range rates.rates {
		gf[i] = r * flops / 1e9
	}
	st := rates.stat(gf)
	cpus, pinned := b.cpusPinned(g)
	return results.GEMMResult{
		Backend: backend, DType: dtype, M: m, N: n, K: k,
		Threads: len(cpus), CPUs: cpus, Pinned: pinned, GFLOPS: st,
		WeightGBps:  st.Median * 1e9 / flops * float64(weightBytes) / 1e9,
		PackSeconds: pack, Checksum: sum,
	}
}

// Split runs Y = X·Wᵀ at M rows partitioned between wa on the first ta
// workers and wb on the next tb (the same logical W for two backends).
//
// The rates P_a, P_b of Eq. 1 (SMEPilot §4.4) are measured twice:
//
//   - alone: each group runs the whole GEMM while the other idles (median
//     GFLOP/s); they give the first plan and IdealAloneSeconds =
//     2MNK / (P_a,alone + P_b,alone), the "perfectly additive" ideal;
//   - co-running: a kpool.Balancer re-plans the split after every call
//     from the seconds each group took on its region while the other ran
//     too (warm-up calls until the cut stops moving, then on through the
//     timed repetitions), which includes what the groups cost each other
//     (shared L3, memory bandwidth, SMT siblings) and follows a core's
//     drifting speed on a virtual machine.
//
// gemm.PlanSplit rounds Eq. 1 to both tiles. IdealSeconds = 2MNK /
// (P_a + P_b) with the co-running rates of the timed repetitions (each
// group's FLOPs over its seconds, median over repetitions) and Ratio =
// median makespan / IdealSeconds: 1 means the partition was balanced (both
// groups finished together); RatioAlone adds what co-running costs. Each
// side of Y is checked against its own backend's float64 reference.
func (b *GEMMBench) Split(ctx context.Context, wa, wb *GEMMWeights, m, ta, tb int) (results.MatrixSplit, error) {
	if wa.N != wb.N || wa.K != wb.K {
		return results.MatrixSplit{}, fmt.Errorf("gemm: split: weights %d×%d and %d×%d differ", wa.N, wa.K, wb.N, wb.K)
	}
	gs, err := b.groups(ta, tb)
	if err != nil {
		return results.MatrixSplit{}, err
	}
	ra, err := b.alone(ctx, wa, gs[0], m)
	if err != nil {
		return results.MatrixSplit{}, err
	}
	rb, err := b.alone(ctx, wb, gs[1], m)
	if err != nil {
		return results.MatrixSplit{}, err
	}
	x := b.input(m, wa.K)
	y := make([]float32, m*wa.N)
	scr := gemm.NewScratches(b.Pool.Size(), wa.Packed, gemm.Blocking{})
	for _, i := range gs[1].Workers() {
		scr[i] = gemm.NewScratch(wb.Packed, gemm.Blocking{})
	}
	per := 2 * float64(wa.K) // FLOPs per output element
	bal := &kpool.Balancer{TileA: wa.Packed.Backend.Tile(), TileB: wb.Packed.Backend.Tile(), RateA: ra / per, RateB: rb / per}
	s, err := bal.Plan(m, wa.N)
	if err != nil {
		return results.MatrixSplit{}, err
	}
	fail := func(err error) (results.MatrixSplit, error) {
		return results.MatrixSplit{}, fmt.Errorf("gemm split %s+%s M=%d: %w", wa.Backend.Name, wb.Backend.Name, m, err)
	}
	// One call: run s, learn from it, re-plan for the next call.
	var tm kpool.Timing
	var ran kpool.Split // the split tm timed
	step := func(mm *kpool.Master) error {
		var err error
		if tm, err = gemm.RunSplit(mm, s, gs[0], wa.Packed, gs[1], wb.Packed, y, x, scr); err != nil {
			return err
		}
		ran = s
		if bal.Observe(ran, tm) {
			s, err = bal.Plan(m, wa.N)
		}
		return err
	}
	// Warm-up: until the planned cut stops moving.
	err = b.Pool.Do(func(mm *kpool.Master) error {
		for i := 0; i < splitWarmupCalls; i++ {
			prev := s.A
			if err := step(mm); err != nil {
				return err
			}
			if s.A == prev && i >= 2 {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	var secA, secB, span, rateA, rateB []float64
	var sumA, sumB, sumSpan, elA, elB float64
	calls := 0
	call := func(mm *kpool.Master) error {
		if err := step(mm); err != nil {
			return err
		}
		sumA += tm.Seconds[0]
		sumB += tm.Seconds[1]
		sumSpan += tm.Makespan
		elA += float64(ran.A.Elems())
		elB += float64(ran.B.Elems())
		calls++
		return nil
	}
	for rep := 0; rep <= b.Reps; rep++ {
		sumA, sumB, sumSpan, elA, elB, calls = 0, 0, 0, 0, 0, 0
		if _, err := b.timeOnce(ctx, call, rep == 0); err != nil {
			return fail(err)
		}
		if rep > 0 {
			secA = append(secA, sumA/float64(calls))
			secB = append(secB, sumB/float64(calls))
			span = append(span, sumSpan/float64(calls))
			if sumA > 0 && sumB > 0 {
				rateA = append(rateA, per*elA/sumA)
				rateB = append(rateB, per*elB/sumB)
			}
		}
	}
	// Check the last call's output, with the split it ran.
	last := s
	if err := b.Pool.Do(func(mm *kpool.Master) error {
		_, err := gemm.RunSplit(mm, last, gs[0], wa.Packed, gs[1], wb.Packed, y, x, scr)
		return err
	}); err != nil {
		return fail(err)
	}
	for _, c := range []struct {
		w *GEMMWeights
		r kpool.Region
	}{{wa, last.A}, {wb, last.B}} {
		if c.r.Empty() {
			continue
		}
		if _, err := gemm.CheckRegion(c.w.Backend.DType, y, x, c.w.Raw, m, wa.N, wa.K, c.r, gemmSamples); err != nil {
			return results.MatrixSplit{}, fmt.Errorf("gemm split %s region %v: %w", c.w.Backend.Name, c.r, err)
		}
	}
	flops := gemm.Flops(m, wa.N, wa.K)
	ca, cb := ra, rb // a group left without work keeps its alone rate
	if len(rateA) > 0 {
		ca, cb = results.Summarize(rateA).Median, results.Summarize(rateB).Median
	}
	gf := make([]float64, len(span))
	for i, v := range span {
		gf[i] = flops / v / 1e9
	}
	ms := results.MatrixSplit{
		BackendA: wa.Backend.Name, BackendB: wb.Backend.Name,
		CPUsA: gs[0].CPUs(), CPUsB: gs[1].CPUs(), M: m, N: wa.N, K: wa.K,
		Dim: last.Dim, AlphaIdeal: last.AlphaIdeal, AlphaChosen: last.Alpha,
		SecondsA: results.Summarize(secA), SecondsB: results.Summarize(secB), Makespan: results.Summarize(span),
		IdealSeconds: flops / (ca + cb), IdealAloneSeconds: flops / (ra + rb),
		RateAGFLOPS: ca / 1e9, RateBGFLOPS: cb / 1e9, RateAAloneGFLOPS: ra / 1e9, RateBAloneGFLOPS: rb / 1e9,
		GFLOPS: results.Summarize(gf), Note: last.Note,
	}
	ms.Ratio = ms.Makespan.Median / ms.IdealSeconds
	ms.RatioAlone = ms.Makespan.Median / ms.IdealAloneSeconds
	ms.Note = joinNote(ms.Note, fmt.Sprintf("α re-planned after every call from co-running rates (Balancer); GFLOP/s co-running (alone): %s %.1f (%.1f) on %d threads, %s %.1f (%.1f) on %d threads",
		wa.Backend.Name, ca/1e9, ra/1e9, ta, wb.Backend.Name, cb/1e9, rb/1e9, tb))
	return ms, nil
}

// splitWarmupCalls bounds the untimed calls of Split that let the Balancer
// settle before the timed repetitions.
const splitWarmupCalls = 12

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// alone returns the median FLOP/s of w on group g at M rows.
func (b *GEMMBench) alone(ctx context.Context, w *GEMMWeights, g *kpool.Group, m int) (float64, error) {
	x := b.input(m, w.K)
	y := make([]float32, m*w.N)
	scr := gemm.NewScratches(b.Pool.Size(), w.Packed, gemm.Blocking{})
	rates, err := b.timeCalls(ctx, g, func(mm *kpool.Master) error { return w.Packed.Run(mm, g, y, x, m, scr) })
	if err != nil {
		return 0, fmt.Errorf("gemm %s alone on %d threads: %w", w.Backend.Name, g.Size(), err)
	}
	if _, err := gemm.CheckSample(w.Backend.DType, y, x, w.Raw, m, w.N, w.K, gemmSamples); err != nil {
		return 0, fmt.Errorf("gemm %s alone: %w", w.Backend.Name, err)
	}
	return results.Summarize(rates.rates).Median * gemm.Flops(m, w.N, w.K), nil
}

// timeOnce runs one repetition (a warm-up one when warm) of call inside
// Pool.Do and returns the calls per second.
func (b *GEMMBench) timeOnce(ctx context.Context, call func(m *kpool.Master) error, warm bool) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	d := b.RepDuration
	if warm {
		d /= 2
	}
	var rate float64
	err := b.Pool.Do(func(m *kpool.Master) error {
		t0 := time.Now()
		for n := 1; ; n++ {
			if err := call(m); err != nil {
				return err
			}
			if el := time.Since(t0); el >= d {
				rate = float64(n) / el.Seconds()
				return nil
			}
		}
	})
	return rate, err
}

// GEMMFraction sets g.Fraction and g.FractionOf from a profile's sections
// (any may be nil) and returns "" or why no fraction was computed. For M ≤
// 16 (decode: weight traffic dominates) the reference is the DRAM read roof
// at g.Threads (memory section: its DRAM level, else its thread sweep), and
// the fraction is WeightGBps over it. For larger M it is the compute
// section's best ceiling of the dtype's precision at g.Threads (bf16
// without a bf16 ceiling: the fp32 one, which is what a backend widening
// bf16 to fp32 FMAs can reach), else the matrix section's attained GEMM of
// the same backend and thread count.
func GEMMFraction(g *results.GEMMResult, c *results.Compute, mem *results.Memory, mat *results.Matrix) string {
	g.Fraction, g.FractionOf = 0, ""
	if g.M <= smallM {
		if mem == nil {
			return "no memory section: fraction of the DRAM read roof not computed"
		}
		for _, l := range mem.Levels {
			if l.Level == "DRAM" && l.Threads == g.Threads && l.GBps.Median > 0 {
				g.Fraction = g.WeightGBps / l.GBps.Median
				g.FractionOf = fmt.Sprintf("DRAM read roof, %d threads (memory section: %.1f GB/s at %s)", l.Threads, l.GBps.Median, sizeText(l.WorkingSetBytes))
				return ""
			}
		}
		for _, b := range mem.Threads {
			if b.Kernel == "read" && b.Threads == g.Threads && b.GBps.Median > 0 {
				g.Fraction = g.WeightGBps / b.GBps.Median
				g.FractionOf = fmt.Sprintf("DRAM read, %d threads (memory section thread sweep: %.1f GB/s at %s)", b.Threads, b.GBps.Median, sizeText(b.WorkingSetBytes))
				return ""
			}
		}
		return fmt.Sprintf("no DRAM read roof at %d threads in the profile: fraction not computed", g.Threads)
	}
	if c != nil {
		for _, prec := range []string{g.DType, "fp32"} {
			if prec == "fp32" && g.DType != "bf16" && g.DType != "fp32" {
				break
			}
			var best *results.ComputePeak
			for i, p := range c.Peaks {
				if p.Precision == prec && p.Threads == g.Threads && (best == nil || p.Rate.Median > best.Rate.Median) {
					best = &c.Peaks[i]
				}
			}
			if best != nil && best.Rate.Median > 0 {
				g.Fraction = g.GFLOPS.Median / best.Rate.Median
				g.FractionOf = fmt.Sprintf("compute ceiling %s, %d threads (compute section: %.1f %s)", best.Kernel, best.Threads, best.Rate.Median, best.Unit)
				if prec != g.DType {
					g.FractionOf += "; no " + g.DType + " ceiling, bf16 weights are widened to fp32"
				}
				return ""
			}
		}
	}
	if mat != nil {
		for _, a := range mat.GEMM {
			if a.Backend == g.Backend && a.Threads == g.Threads && a.GFLOPS.Median > 0 {
				g.Fraction = g.GFLOPS.Median / a.GFLOPS.Median
				g.FractionOf = fmt.Sprintf("attained %s GEMM M=%d N=%d K=%d, %d threads (matrix section: %.1f GFLOP/s)", a.Backend, a.M, a.N, a.K, a.Threads, a.GFLOPS.Median)
				return ""
			}
		}
	}
	return fmt.Sprintf("no %s ceiling at %d threads in the profile (compute or matrix section): fraction not computed", g.DType, g.Threads)
}

// dramMinBytes is the smallest working set of the full probe's DRAM-sized
// figures (the DRAM read roofs' largest and the GEMVs' weights; unless
// --max-ws sets the working sets): the size of a decode step's weights (a
// 0.6B model's LM head alone is 622 MB in fp32), where the cache share a
// host gives a virtual machine no longer helps. Measured on the 2-vCPU
// Zen 5 KVM guest (2026-11-27, read curve of `bench probe --only memory
// --max-ws 1GiB`): at 2 threads the read kernel still fell from 90.6
// GB/s at 136 MiB to 75.0 at 384 MiB and 73.9 at 768 MiB (1 thread:
// flat from 128 MiB); interleaved `bench gemm --m 1` at 2 threads
// streamed a 622 MB fp32 weight (151936×1024) at 73–86% of the 128 MiB
// roof re-measured beside it, against 92–101% for 134 MB ones (8192×4096,
// 32768×1024, 4096×8192), and the probe's fp32 GEMV at 2 threads 44.2
// GB/s at 512 MiB against 50.2 at 128 MiB (two probes 25 s apart).
const dramMinBytes = 512 << 20

// dramWorkingSet is the DRAM-sized figures' working set for a plan whose
// largest working set is maxWS: maxWS where --max-ws set it (fixed), in
// quick mode, or where three dramMinBytes (a GEMV's raw and packed
// weights and the roof's buffers) do not fit the memory limit; else the
// larger of maxWS and dramMinBytes.
func dramWorkingSet(maxWS int64, fixed, quick bool, lim memlimit.Limit) int64 {
	if fixed || quick || maxWS >= dramMinBytes || lim.Known && 3*uint64(dramMinBytes) > lim.Usable() {
		return maxWS
	}
	return dramMinBytes
}

// gemvRows is N of the section's DRAM-sized GEMV at K gemvK for a weight
// of bytesPerWeight bytes per element: W as close to bytes as a multiple
// of 64 rows allows (at most 64 rows' bytes below it, so bytes of ≥ 4×
// the LLC keep W beyond the caches), at least 64 rows.
func gemvRows(bytes int64, bytesPerWeight float64) int {
	return max(int(float64(bytes)/bytesPerWeight/gemvK)/64*64, 64)
}

// matrixShape is the large GEMM of the section.
func (r *runner) matrixShape() (m, n, k int) {
	s := matrixShapes[r.cfg.Quick]
	return s[0], s[1], s[2]
}

// matrixShapeFor is the large GEMM's shape for backend b: the section's
// shape, or for the portable "go" backends M = goM and half N and K (a
// quarter of the work per row), so a build with only those (arm64 today,
// purego) keeps the section's time budget. The shape is in every figure.
func (r *runner) matrixShapeFor(b gemm.Backend) (m, n, k int) {
	m, n, k = r.matrixShape()
	if b.ISA == "go" {
		return min(m, goM), max(n/2, 1), max(k/2, 1)
	}
	return m, n, k
}

// matrixBackends returns the backends the section measures at the large
// shape: every available backend except the portable "go" ones where a
// faster backend of the same dtype is available (they are listed as not
// measured, with the reason). Quick measures only each dtype's best
// backend on each unit (gemm.BestOn: the ones the engine's placements and
// `bench gemm` pick), listing the others as not measured in quick mode.
func matrixBackends(quick bool) (run []gemm.Backend, skipped []results.Unavailable) {
	all := gemm.Backends()
	for _, b := range all {
		if b.Unavailable != "" {
			skipped = append(skipped, results.Unavailable{Kernel: b.Name, Why: b.Unavailable})
			continue
		}
		if b.ISA == "go" {
			if best, err := gemm.Best(b.DType); err == nil && best.Name != b.Name {
				skipped = append(skipped, results.Unavailable{Kernel: b.Name, Why: "not measured: the portable Go specification kernel; " + best.Name + " is measured for " + string(b.DType)})
				continue
			}
		}
		if quick {
			if best, err := gemm.BestOn(b.Unit, b.DType); err == nil && best.Name != b.Name {
				skipped = append(skipped, results.Unavailable{Kernel: b.Name, Why: "not measured in quick mode: " + best.Name + " is measured for " + string(b.DType) + " on the " + b.Unit.Where() + " (the full probe measures every backend)"})
				continue
			}
		}
		run = append(run, b)
	}
	return run, skipped
}

// matrixDTypes are the weight precisions, in order.
var matrixDTypes = []gemm.DType{gemm.FP32, gemm.BF16, gemm.Int8}

// quickNoGEMV are the weight formats whose DRAM-sized GEMV quick mode
// does not measure: those whose synthetic weights take longest to build
// (CPU seconds for 256 MiB on the 2-core VM: int8 3.1, int2 6.7, int1
// 10.1, against 0.1–1.4 for q8_0, q4_0, q4_k, q6_k; fp32 6.5 and bf16 7.3
// are kept as the dtypes of the engine's placements). Their quant_ebw
// model is still built, without a measured GEMV beside it.
var quickNoGEMV = []string{string(gemm.Int8), string(quant.Int2), string(quant.Int1)}

// measuresGEMV reports whether the section measures the DRAM-sized GEMV of
// weight format f ("fp32", "q4_0", ...), and if not, why.
func (r *runner) measuresGEMV(f string) (bool, results.Unavailable) {
	if !r.cfg.Quick || !slices.Contains(quickNoGEMV, f) {
		return true, results.Unavailable{}
	}
	return false, results.Unavailable{Kernel: "GEMV " + f, Why: fmt.Sprintf("not measured in quick mode: its %s synthetic weight is among the slowest to build (the full probe measures it)", sizeText(r.plan.dramWS))}
}

// gemvFormats is the number of weight formats whose GEMV the section
// measures.
func (r *runner) gemvFormats() int {
	n := 0
	for _, dt := range matrixDTypes {
		if ok, _ := r.measuresGEMV(string(dt)); ok {
			n++
		}
	}
	for _, f := range quant.KernelFormats() {
		if ok, _ := r.measuresGEMV(string(f)); ok {
			n++
		}
	}
	return n
}

// matrixPair picks the two backends of the mixed run as the engine's
// placements do (gemm.ChoosePair): A the cores' best fp32 backend, B the
// matrix unit's best backend, else a second backend on the cores (the
// best bf16 one), each computing the same logical W; p.MatrixLabel says
// which. ok is false when both are the same backend.
func matrixPair() (p gemm.Pair, ok bool) {
	p, err := gemm.ChoosePair("", "")
	return p, err == nil && p.Cores.Name != p.Matrix.Name
}

// matrixSteps is the number of progress steps of the matrix section: one
// per measured backend and thread count, one per dtype and thread count
// for the GEMV, and the mixed run with ≥ 2 cores.
func (r *runner) matrixSteps() int {
	run, _ := matrixBackends(r.cfg.Quick)
	n := (len(run) + r.gemvFormats() + len(gemmTableBackends())) * len(r.computeThreads())
	n += len(quant.KernelFormats()) // the up-convert loops
	if _, ok := matrixPair(); ok && r.plan.cores >= 2 {
		n++
	}
	return n
}

// matrixSection measures attained GEMM throughput (the roofline's
// attainable compute ceiling, SMEPilot §5.3.1) per available backend at an
// LLM prefill shape, GEMV weight bandwidth at a DRAM-sized weight per
// dtype, and one GEMM partitioned between two backends on the two halves
// of the cores (SMEPilot §4.1, Eq. 1), at 1 thread and all cores.
// compute and memory are the profile's compute and memory sections (nil
// when not run): the fractions are of their ceilings at the same thread
// count (GEMMFraction). Call it after computeSection.
//
// The GEMM threads are a kernels/pool created here over the probe's first
// r.plan.cores CPUs (the same pinned placement as the other sections) and
// closed at the end; the probe's own workers are idle meanwhile. The pool
// is the engine's: the partitioning (pool.Block at the backend's tile),
// the master-inline fork-join (Pool.Do) and the split's per-group timing
// (RunSplit) measured here are those inference runs with.
func (r *runner) matrixSection(ctx context.Context, compute *results.Compute, memory *results.Memory) (*results.Matrix, error) {
	m, n, k := r.matrixShape()
	workers := r.pool.workers[:r.plan.cores]
	b, err := NewGEMMBench(cpusOf(workers), r.cfg.Reps, r.cfg.RepDuration)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	b.place = r.place
	run, skipped := matrixBackends(r.cfg.Quick)
	out := &results.Matrix{GEMM: []results.GEMMResult{}, GEMV: []results.GEMMResult{}, Unavailable: skipped}
	out.Method = fmt.Sprintf("Y = X·Wᵀ on packed W (packed once, pack time recorded apart) through kernels/pool: "+
		"the output cut at the backend's tile among pinned workers, the caller's loop on worker 0 (Pool.Do); "+
		"warm-up then %d reps of ≥ %v (≥ 1 call each); GFLOP/s = 2MNK/s; every figure checks %d elements of Y "+
		"against a float64 reference. GEMM at M=%d N=%d K=%d per backend (M=%d, N and K halved for the portable go backends); GEMV (M=1) at K=%d with N sized so W is %s in each dtype "+
		"(≥ 4× LLC and ≥ 512 MiB in a full probe of default working sets), weight GB/s = N·K·bytes/s (quantized formats: kernels/quant, activations quantized inside every call, the packed bytes, on pages advised huge as the DRAM read roof's buffers; fp32, bf16, int8: Go heap pages); "+
		"gemm_shapes: M %v × N×K %v (a class of ≥ 4096×4096 has N doubled until its weights are ≥ 2× the LLC in the dtype: the DRAM class) per dtype's best backend (%s) at every thread count, %d reps of ≥ %v (the attained-GEMM table the roofline interpolates); quant_ebw: the up-convert-and-compute loop's marginal cost between two cache-resident one-tile panels (K and 4·K) gives γ (cycles per 32 B; the intercept is the per-call cost), ebw = min(β, 32/γ) per core (low-bit GEMV paper Eq. 3); mixed: one GEMM cut by Eq. 1 between two backends on the two halves of the cores",
		r.cfg.Reps, r.cfg.RepDuration, gemmSamples, m, n, k, min(m, goM), gemvK, sizeText(r.plan.dramWS),
		gemmShapeTable[r.cfg.Quick].Ms, gemmShapeTable[r.cfg.Quick].NK, tableBackendNames(), gemmTableReps, min(r.cfg.RepDuration, gemmTableRep))

	threads := r.computeThreads()
	packed := map[string]*GEMMWeights{}
	for _, be := range run {
		bm, bn, bk := r.matrixShapeFor(be)
		w, err := NewGEMMWeights(be, bn, bk, 1)
		if err != nil {
			return nil, err
		}
		packed[be.Name] = w
		for _, t := range threads {
			g, err := b.Measure(ctx, w, bm, t, false)
			if err != nil {
				return nil, err
			}
			GEMMFraction(&g, compute, memory, nil)
			out.GEMM = append(out.GEMM, g)
			r.step(fmt.Sprintf("matrix gemm %s threads=%d", be.Name, t))
		}
	}

	if out.GEMMShapes, err = r.gemmTable(ctx, b, compute, memory); err != nil {
		return nil, err
	}

	for _, dt := range matrixDTypes {
		if ok, why := r.measuresGEMV(string(dt)); !ok {
			out.Unavailable = append(out.Unavailable, why)
			continue
		}
		be, err := gemm.Best(dt)
		if err != nil {
			return nil, err
		}
		bytes := gemm.WeightBytes(dt, 1, 1)
		gn := gemvRows(r.plan.dramWS, float64(bytes))
		w, err := NewGEMMWeights(be, gn, gemvK, 2)
		if err != nil {
			return nil, err
		}
		for _, t := range threads {
			g, err := r.measureGEMVBeside(ctx, memory, t, func() (results.GEMMResult, error) {
				g, err := b.Measure(ctx, w, 1, t, false)
				if err == nil {
					GEMMFraction(&g, compute, memory, nil)
				}
				return g, err
			})
			if err != nil {
				return nil, err
			}
			out.GEMV = append(out.GEMV, g)
			r.step(fmt.Sprintf("matrix gemv %s threads=%d", be.Name, t))
		}
	}

	// Quantized GEMVs at the same DRAM-sized weight, and the
	// effective-bandwidth model of each format (low-bit GEMV paper §III-F);
	// tq2_0 and tq1_0 are not measured: they run int2's kernels, and their
	// ebw records are int2's (heldEBW).
	qb := quant.Best()
	clock, clockSrc := 0.0, "no compute section: γ not computed"
	if compute != nil && compute.FrequencyHz > 0 {
		clock, clockSrc = compute.FrequencyHz, "compute section: "+compute.FrequencySource
	}
	for _, f := range quant.KernelFormats() {
		var rows []results.GEMMResult
		name := QuantName(qb, f)
		if ok, why := r.measuresGEMV(string(f)); !ok {
			out.Unavailable = append(out.Unavailable, why)
		} else {
			gn := gemvRows(r.plan.dramWS, f.BytesPerWeight())
			w, err := NewQuantWeights(qb, f, gn, gemvK, 2)
			if err != nil {
				return nil, err
			}
			for _, t := range threads {
				g, err := r.measureGEMVBeside(ctx, memory, t, func() (results.GEMMResult, error) {
					g, err := b.MeasureQuant(ctx, w, 1, t)
					if err == nil {
						GEMMFraction(&g, compute, memory, nil)
					}
					return g, err
				})
				if err != nil {
					return nil, err
				}
				rows = append(rows, g)
				r.step(fmt.Sprintf("matrix gemv %s threads=%d", name, t))
			}
		}
		out.GEMV = append(out.GEMV, rows...)
		up, err := b.UpconvertCosts(ctx, qb, f)
		if err != nil {
			return nil, err
		}
		r.step(fmt.Sprintf("matrix up-convert %s", name))
		q := quantEBW(name, f, up, clock, clockSrc, memory, threads, rows)
		out.QuantEBW = append(append(out.QuantEBW, q), heldEBW(q, qb)...)
	}

	if pair, ok := matrixPair(); ok && r.plan.cores >= 2 {
		a, bb := pair.Cores, pair.Matrix
		// Both at the smaller of the two backends' shapes (the same logical W).
		sm, sn, sk := r.matrixShapeFor(a)
		if om, on, ok := r.matrixShapeFor(bb); om*on*ok < sm*sn*sk {
			sm, sn, sk = om, on, ok
		}
		wa, wb := packed[a.Name], packed[bb.Name]
		for _, pair := range []struct {
			w  **GEMMWeights
			be gemm.Backend
		}{{&wa, a}, {&wb, bb}} {
			if *pair.w == nil || (*pair.w).N != sn || (*pair.w).K != sk {
				if *pair.w, err = NewGEMMWeights(pair.be, sn, sk, 1); err != nil {
					return nil, fmt.Errorf("matrix mixed: %w", err)
				}
			}
		}
		half := r.plan.cores / 2
		s, err := b.Split(ctx, wa, wb, sm, half, r.plan.cores-half)
		if err != nil {
			return nil, err
		}
		s.Targets = "A = cores: " + pair.CoresLabel() + "; B = matrix: " + pair.MatrixLabel()
		out.Mixed = append(out.Mixed, s)
		r.step(fmt.Sprintf("matrix mixed %s+%s", a.Name, bb.Name))
	}
	return out, nil
}

// tableBackendNames lists gemmTableBackends' names.
func tableBackendNames() string {
	var n []string
	for _, be := range gemmTableBackends() {
		n = append(n, be.Name)
	}
	return strings.Join(n, ", ")
}
