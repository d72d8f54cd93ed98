package probes

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cpubench/bench/internal/hugepage"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// ByteCounting is recorded in every profile's memory section.
const ByteCounting = "STREAM convention: read and write = 8 bytes per element, copy = 16, triad = 24; write-allocate (read-for-ownership) traffic is not counted; GB/s = 1e9 bytes/s over the span from the first thread's start to the last thread's end"

// memKernel describes one bandwidth kernel: how many arrays it touches and
// how many bytes per element it counts.
type memKernel struct {
	name   string
	arrays int
	bytes  int64 // counted bytes per element index
}

var (
	kRead    = memKernel{"read", 1, 8}
	kWrite   = memKernel{"write", 1, 8}
	kWriteNT = memKernel{"write_nt", 1, 8}
	kCopy    = memKernel{"copy", 2, 16}
	kTriad   = memKernel{"triad", 3, 24}
	// MemoryKernels is the order the memory section runs and reports them in.
	allMemKernels = []memKernel{kRead, kWrite, kWriteNT, kCopy, kTriad}
)

// MemoryKernelNames lists the bandwidth kernels of the memory section.
func MemoryKernelNames() []string {
	out := make([]string, len(allMemKernels))
	for i, k := range allMemKernels {
		out[i] = k.name
	}
	return out
}

func memKernelByName(name string) (memKernel, error) {
	for _, k := range allMemKernels {
		if k.name == name {
			return k, nil
		}
	}
	return memKernel{}, fmt.Errorf("unknown memory kernel %q (want one of %v)", name, MemoryKernelNames())
}

// Values the arrays are filled with; all sums stay exact in float64.
const (
	writeValue = 1.5
	triadS     = 0.25
	triadC     = 2.0 // c[i]; a[i] = b[i] + 0.25*2 = b[i] + 0.5
)

// pattern is the value of b[i] (and of the read array): i mod 8.
func pattern(i int) float64 { return float64(i & 7) }

// patternSum is the exact sum of pattern(i) for i < n.
func patternSum(n int) float64 {
	s := float64(n/8) * 28
	for r := 0; r < n%8; r++ {
		s += float64(r)
	}
	return s
}

// arrayStride is the distance between the starts of a kernel's arrays: the
// array rounded up to a page plus 17 cache lines, so the streams do not
// alias in the L1 (4 KiB aliasing) and every array is 64-byte aligned.
func arrayStride(n int) int {
	b := n * 8
	return (b+4095)&^4095 + 17*64
}

// elemsPerArray is the per-thread array length in elements for a total
// working set of ws bytes over threads threads: a multiple of 8 elements
// (64 bytes), at least 8.
func elemsPerArray(ws int64, threads int, k memKernel) int {
	n := ws / int64(threads) / int64(8*k.arrays)
	n &^= 7
	return int(max(n, 8))
}

// memTask returns the task that runs kernel k of impl over n elements per
// array on each worker, with buffers bound to node (-1: first touch).
func memTask(impl kernels.MemImpl, k memKernel, n int, node int) task {
	return memTaskPages(impl, k, n, node, false)
}

// memTaskPages is memTask with the buffers advised for transparent huge
// pages (MADV_HUGEPAGE, before their first touch) when huge is set.
func memTaskPages(impl kernels.MemImpl, k memKernel, n int, node int, huge bool) task {
	key := fmt.Sprintf("%s/%s/%d/%d/huge=%v", impl.ISA, k.name, n, node, huge)
	t := task{}
	t.setup = func(w *worker) error {
		if w.layout == key {
			return nil
		}
		stride := arrayStride(n)
		if huge || strings.HasSuffix(w.layout, "huge=true") {
			// Fresh pages: advice given after the first touch would
			// leave the 4 KiB pages in place (khugepaged collapses them
			// later, if ever), and pages advised huge must not serve a
			// 4 KiB figure.
			w.free()
		}
		if err := w.ensure(stride*k.arrays, node); err != nil {
			return err
		}
		if huge {
			hugepage.Advise(w.arena)
		}
		for a := 0; a < k.arrays; a++ {
			w.f64[a] = numa.Float64s(w.arena[a*stride : a*stride+n*8])
		}
		switch k.name {
		case "read", "copy":
			x := w.f64[0]
			if k.name == "copy" {
				x = w.f64[1]
				clear(w.f64[0])
			}
			for i := range x {
				x[i] = pattern(i)
			}
		case "write", "write_nt":
			clear(w.f64[0])
		case "triad":
			clear(w.f64[0])
			b, c := w.f64[1], w.f64[2]
			for i := range b {
				b[i], c[i] = pattern(i), triadC
			}
		}
		w.layout = key
		return nil
	}
	bytes := int64(n) * k.bytes
	switch k.name {
	case "read":
		t.run = func(w *worker) (int64, float64) { return bytes, impl.Read(w.f64[0]) }
		want := patternSum(n)
		t.check = func(w *worker, sum float64) error {
			if sum != want {
				return fmt.Errorf("read checksum %v over %d elements, want %v", sum, n, want)
			}
			return nil
		}
		return t
	case "write":
		t.run = func(w *worker) (int64, float64) { impl.Write(w.f64[0], writeValue); return bytes, 0 }
	case "write_nt":
		t.run = func(w *worker) (int64, float64) { impl.WriteNT(w.f64[0], writeValue); return bytes, 0 }
	case "copy":
		t.run = func(w *worker) (int64, float64) { impl.Copy(w.f64[0], w.f64[1]); return bytes, 0 }
	case "triad":
		t.run = func(w *worker) (int64, float64) { impl.Triad(w.f64[0], w.f64[1], w.f64[2], triadS); return bytes, 0 }
	}
	t.check = func(w *worker, _ float64) error {
		got, want := sampleChecksum(k, w.f64[0])
		w.spare = got
		if got != want {
			return fmt.Errorf("%s output checksum %v over %d elements, want %v", k.name, got, n, want)
		}
		return nil
	}
	return t
}

// sampleChecksum sums a strided sample of a kernel's output array (every
// 61st element and the last) and returns it with the value it must have.
func sampleChecksum(k memKernel, a []float64) (got, want float64) {
	idx := func(yield func(int) bool) {
		for i := 0; i < len(a); i += 61 {
			if !yield(i) {
				return
			}
		}
		if len(a) > 0 && (len(a)-1)%61 != 0 {
			yield(len(a) - 1)
		}
	}
	for i := range idx {
		got += a[i]
		switch k.name {
		case "write", "write_nt":
			want += writeValue
		case "copy":
			want += pattern(i)
		case "triad":
			want += pattern(i) + triadS*triadC
		}
	}
	return got, want
}

// measureBandwidth measures kernel k on the first threads workers of the pool
// at a total working set of ws bytes and returns the figure.
func (r *runner) measureBandwidth(ctx context.Context, k memKernel, ws int64, threads int, node int) (results.Bandwidth, error) {
	return r.measureOn(ctx, r.pool.workers[:threads], k, ws, node, r.cfg.RepDuration)
}

// measureOn measures kernel k on the given workers at a total working set of
// ws bytes with buffers bound to node (-1: first touch).
func (r *runner) measureOn(ctx context.Context, ws0 []*worker, k memKernel, ws int64, node int, d time.Duration) (results.Bandwidth, error) {
	threads := len(ws0)
	n := elemsPerArray(ws, threads, k)
	t := memTask(r.impl, k, n, node)
	m, err := measureGroups(ctx, r.place, [][]*worker{ws0}, []task{t}, d, r.cfg.Reps)
	if err != nil {
		return results.Bandwidth{}, fmt.Errorf("memory %s ws=%d threads=%d: %w", k.name, ws, threads, err)
	}
	sum := m.sums[0]
	if k.name != "read" {
		sum = ws0[0].spare
	}
	return results.Bandwidth{
		Kernel:          k.name,
		ISA:             r.impl.ISA,
		WorkingSetBytes: int64(n) * 8 * int64(k.arrays) * int64(threads),
		Threads:         threads,
		CPUs:            cpusOf(ws0),
		Pinned:          allPinned(ws0),
		GBps:            m.stat(0),
		Checksum:        sum,
	}, nil
}

func cpusOf(ws []*worker) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = w.cpu
	}
	return out
}

func allPinned(ws []*worker) bool {
	for _, w := range ws {
		if !w.pinned {
			return false
		}
	}
	return true
}

// WorkingSets returns log-spaced sizes from lo to at least hi bytes with
// perOctave points per doubling, each rounded to a multiple of 4 KiB.
func WorkingSets(lo, hi int64, perOctave int) []int64 {
	var out []int64
	for k := 0; ; k++ {
		v := float64(lo) * math.Pow(2, float64(k)/float64(perOctave))
		s := (int64(v) + 4095) &^ 4095
		if len(out) == 0 || s != out[len(out)-1] {
			out = append(out, s)
		}
		if s >= hi {
			return out
		}
	}
}

// memorySection runs the working-set sweep (at 1 thread and at all threads)
// and the thread sweep (at the largest working set), then picks the
// per-level read roofs.
func (r *runner) memorySection(ctx context.Context) (*results.Memory, error) {
	m := &results.Memory{ByteCounting: ByteCounting, ISA: r.impl.ISA}
	for _, st := range r.plan.memWS {
		b, err := r.measureBandwidth(ctx, st.k, st.ws, st.threads, -1)
		if err != nil {
			return nil, err
		}
		m.WorkingSet = append(m.WorkingSet, b)
		r.step(fmt.Sprintf("memory %s %s x%d", st.k.name, sizeText(st.ws), st.threads))
	}
	for _, st := range r.plan.memThreads {
		b, err := r.measureBandwidth(ctx, st.k, st.ws, st.threads, -1)
		if err != nil {
			return nil, err
		}
		m.Threads = append(m.Threads, b)
		r.step(fmt.Sprintf("memory %s threads=%d", st.k.name, st.threads))
	}
	m.Levels = pickLevels(m.WorkingSet, r.caches)
	if err := r.dramRoofs(ctx, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Pages of a DRAM roof candidate.
const (
	pagesSmall = "4 KiB"
	pagesHuge  = "huge (MADV_HUGEPAGE)"
)

// dramCandidate is one way of measuring the DRAM read roof.
type dramCandidate struct {
	kernel string // "read" or "read_pf"
	pages  string
}

// dramWorkingSets are the DRAM roof's working sets: the plan's dramWS
// (the sweep's largest, or dramMinBytes where that is larger:
// dramWorkingSet) and, unless quick, 3/4 and 1/2 of it where each is
// still at least dramMinWS at every thread count the plan measures and
// 64 MiB.
func (r *runner) dramWorkingSets() []int64 {
	maxWS := max(r.plan.maxWS, r.plan.dramWS)
	if r.cfg.Quick {
		return []int64{maxWS}
	}
	out := []int64{maxWS}
	minWS := int64(64 << 20)
	for _, t := range r.plan.levelThreads {
		minWS = max(minWS, r.dramMinWS(t))
	}
	for _, f := range []int64{3, 2} {
		ws := (maxWS * f / 4) &^ 4095
		if ws >= minWS {
			out = append(out, ws)
		}
	}
	return out
}

// dramMinWS is the smallest working set (bytes) whose read at threads
// threads is a DRAM figure: 4× the last-level cache's total (all
// instances), and on a virtual machine also 2× one LLC instance per
// thread, since the host may place each vCPU on its own LLC instance
// (one Zen 5 CCD's 32 MiB L3 each) while the guest's topology shows one
// shared LLC. Measured on a 2-vCPU KVM guest of a Zen 5 host whose CPUID
// shows one 32 MiB L3: the prefetching read kernel repeated over 32 MiB
// per thread streamed 53.7 GB/s at 2 threads and over 64 MiB per thread
// 44.7, against 43.0 for one pass over 512 MiB; at 1 thread 32 MiB gave
// 53.3 and 48 MiB 48.1 against 38.2. The largest cache's total without a
// topology's L3 is what the caches report (unknownLLCMaxWS covers that).
func (r *runner) dramMinWS(threads int) int64 {
	llcTotal, inst := int64(0), int64(0)
	for lvl := 1; lvl <= 3; lvl++ {
		llcTotal = max(llcTotal, r.caches.size[lvl]*int64(max(1, r.caches.instances[lvl])))
		inst = max(inst, r.caches.size[lvl])
	}
	return r.minWSFor(threads, llcTotal, inst)
}

// minWSFor is dramMinWS's rule for an LLC of llcTotal bytes in all and
// inst bytes per instance.
func (r *runner) minWSFor(threads int, llcTotal, inst int64) int64 {
	ws := 4 * llcTotal
	if r.virtual {
		ws = max(ws, 2*inst*int64(max(1, threads)))
	}
	return ws
}

// dramRoofs measures the DRAM read roof of each thread count of the
// levels (issue #16 part 1): the read kernel on 4 KiB pages and on pages
// advised huge, at several DRAM-sized working sets, each in several rounds
// apart in time (round-robin over working sets and candidates; quick:
// each candidate's rounds back to back), and
// records per thread count the best candidate's figure: the median of its
// points' medians, with their spread (min, max, cv) — the best honest
// sustained read bandwidth, as likwid-bench load or STREAM report it. The
// DRAM entry of m.Levels becomes that figure.
func (r *runner) dramRoofs(ctx context.Context, m *results.Memory) error {
	var threads []int
	for _, l := range m.Levels {
		if l.Level == "DRAM" && !slices.Contains(threads, l.Threads) {
			threads = append(threads, l.Threads)
		}
	}
	rounds := 3
	if r.cfg.Quick {
		rounds = 2
	}
	cands := r.dramCandidates()
	wss := r.dramWorkingSets()
	type point struct {
		ci int
		ws int64
	}
	var order []point
	if r.cfg.Quick {
		// Quick: each candidate's rounds back to back, so its buffers
		// (4 KiB pages, or fresh pages advised huge) are built once.
		for ci := range cands {
			for range rounds {
				for _, ws := range wss {
					order = append(order, point{ci, ws})
				}
			}
		}
	} else {
		for range rounds {
			for _, ws := range wss {
				for ci := range cands {
					order = append(order, point{ci, ws})
				}
			}
		}
	}
	for _, t := range threads {
		medians := make([][]float64, len(cands))
		noises := make([][]results.Noise, len(cands))
		for _, pt := range order {
			b, err := r.measureDRAMCandidate(ctx, cands[pt.ci], pt.ws, t)
			if err != nil {
				return err
			}
			medians[pt.ci] = append(medians[pt.ci], b.GBps.Median)
			if b.GBps.Noise != nil {
				noises[pt.ci] = append(noises[pt.ci], *b.GBps.Noise)
			}
		}
		best := 0
		dr := results.DRAMRoof{Threads: t, WorkingSets: wss, Rounds: rounds, Candidates: map[string]float64{}}
		for ci, c := range cands {
			st := results.Summarize(medians[ci])
			dr.Candidates[c.kernel+" "+c.pages] = st.Median
			if st.Median > results.Summarize(medians[best]).Median {
				best = ci
			}
		}
		dr.Kernel, dr.Pages = cands[best].kernel, cands[best].pages
		dr.GBps = results.Summarize(medians[best])
		dr.GBps.Noise = dramNoise(noises[best], dr.GBps.CV)
		m.DRAM = append(m.DRAM, dr)
		for i := range m.Levels {
			if l := &m.Levels[i]; l.Level == "DRAM" && l.Threads == t {
				l.Kernel, l.WorkingSetBytes, l.GBps = dr.Kernel, wss[0], dr.GBps
			}
		}
	}
	return nil
}

// dramNoise combines the noise records of a DRAM roof's points: the least
// CPU share and the most steal and load of any point, the spread (cv) of
// the points' medians, judged by the same thresholds; nil without records.
func dramNoise(ns []results.Noise, cv float64) *results.Noise {
	if len(ns) == 0 {
		return nil
	}
	out := results.Noise{CV: cv, Attempts: 1, CPUFraction: ns[0].CPUFraction}
	cpuOK := true
	for _, n := range ns {
		if n.CPUFraction == 0 {
			cpuOK = false
		}
		out.CPUFraction = min(out.CPUFraction, n.CPUFraction)
		out.StealFraction = max(out.StealFraction, n.StealFraction)
		out.LoadAvg1 = max(out.LoadAvg1, n.LoadAvg1)
		noise.MergePlacement(&out, n)
	}
	if !cpuOK {
		out.CPUFraction = 0
	}
	noise.Judge(&out, cpuOK)
	return &out
}

// dramCandidates are the ways the DRAM roof is measured: the memory
// section's read kernel on 4 KiB pages; on pages advised huge where THP
// allows it; and the prefetching read (kernels.ReadPF) on the larger pages,
// where it has assembly.
func (r *runner) dramCandidates() []dramCandidate {
	pages := pagesSmall
	cands := []dramCandidate{{"read", pagesSmall}}
	if hugepage.Allowed() {
		pages = pagesHuge
		cands = append(cands, dramCandidate{"read", pagesHuge})
	}
	if kernels.ReadPFISA() != "go" {
		cands = append(cands, dramCandidate{"read_pf", pages})
	}
	return cands
}

// dramSteps is the number of progress steps of dramRoofs.
func (r *runner) dramSteps() int {
	rounds := 3
	if r.cfg.Quick {
		rounds = 2
	}
	return len(r.plan.levelThreads) * rounds * len(r.dramWorkingSets()) * len(r.dramCandidates())
}

// readPFTask is t with its pass replaced by the prefetching read
// (kernels.ReadPF) over the same array; the checksum is the same sum.
func readPFTask(t task, n int) task {
	bytes := int64(n) * kRead.bytes
	t.run = func(w *worker) (int64, float64) { return bytes, kernels.ReadPF(w.f64[0]) }
	return t
}

// measureDRAMCandidate measures one DRAM roof point.
func (r *runner) measureDRAMCandidate(ctx context.Context, c dramCandidate, ws int64, threads int) (results.Bandwidth, error) {
	b, err := r.measureDRAM(ctx, c, ws, threads)
	if err == nil {
		r.step(fmt.Sprintf("memory dram %s %s %s x%d", c.kernel, c.pages, sizeText(ws), threads))
	}
	return b, err
}

// measureDRAM is measureDRAMCandidate without its progress step.
func (r *runner) measureDRAM(ctx context.Context, c dramCandidate, ws int64, threads int) (results.Bandwidth, error) {
	ws0 := r.pool.workers[:threads]
	n := elemsPerArray(ws, threads, kRead)
	t := memTaskPages(r.impl, kRead, n, -1, c.pages == pagesHuge)
	if c.kernel == "read_pf" {
		t = readPFTask(t, n)
	}
	mm, err := measureGroups(ctx, r.place, [][]*worker{ws0}, []task{t}, r.cfg.RepDuration, r.cfg.Reps)
	if err != nil {
		return results.Bandwidth{}, fmt.Errorf("memory dram %s %s ws=%d threads=%d: %w", c.kernel, c.pages, ws, threads, err)
	}
	return results.Bandwidth{Kernel: c.kernel, ISA: r.impl.ISA, WorkingSetBytes: int64(n) * 8 * int64(threads), Threads: threads,
		CPUs: cpusOf(ws0), Pinned: allPinned(ws0), GBps: mm.stat(0), Checksum: mm.sums[0]}, nil
}

// cacheSizes are the per-instance data cache sizes and how many threads share
// one instance, from the topology.
type cacheSizes struct {
	size      [4]int64 // index = level (1..3); 0 = absent
	sharers   [4]int   // logical CPUs per instance
	instances [4]int   // instances in the machine
}

// perThread returns the share of level lvl's capacity one thread gets when
// threads threads run (threads spread over instances, sharers per instance).
func (c cacheSizes) perThread(lvl, threads, instances int) float64 {
	if c.size[lvl] == 0 {
		return 0
	}
	perInst := max(1, min(c.sharers[lvl], (threads+instances-1)/max(1, instances)))
	return float64(c.size[lvl]) / float64(perInst)
}

// pickLevels picks, for 1 thread and for the largest thread count, the read
// roof of each cache level: the best median among working sets whose
// per-thread share lies in (2 x share of the level below, 1/2 x share of the
// level]; DRAM is the largest working set.
func pickLevels(pts []results.Bandwidth, c cacheSizes) []results.LevelBandwidth {
	var out []results.LevelBandwidth
	threadsSeen := map[int]bool{}
	var tlist []int
	for _, p := range pts {
		if p.Kernel == "read" && !threadsSeen[p.Threads] {
			threadsSeen[p.Threads] = true
			tlist = append(tlist, p.Threads)
		}
	}
	for _, t := range tlist {
		var reads []results.Bandwidth
		for _, p := range pts {
			if p.Kernel == "read" && p.Threads == t {
				reads = append(reads, p)
			}
		}
		lowShare := 0.0
		for lvl := 1; lvl <= 3; lvl++ {
			if c.size[lvl] == 0 {
				continue
			}
			inst := max(1, c.instances[lvl])
			hi := c.perThread(lvl, t, inst) / 2
			best := -1
			for i, p := range reads {
				share := float64(p.WorkingSetBytes) / float64(t)
				if share > 2*lowShare && share <= hi && (best < 0 || p.GBps.Median > reads[best].GBps.Median) {
					best = i
				}
			}
			if best >= 0 {
				p := reads[best]
				out = append(out, results.LevelBandwidth{Level: fmt.Sprintf("L%d", lvl), Kernel: "read", Threads: t, WorkingSetBytes: p.WorkingSetBytes, GBps: p.GBps})
			}
			lowShare = c.perThread(lvl, t, inst)
		}
		if len(reads) > 0 {
			p := reads[len(reads)-1]
			out = append(out, results.LevelBandwidth{Level: "DRAM", Kernel: "read", Threads: t, WorkingSetBytes: p.WorkingSetBytes, GBps: p.GBps})
		}
	}
	return out
}

// sizeText renders a size for progress messages.
func sizeText(n int64) string { return humanize.IBytes(uint64(n)) }
