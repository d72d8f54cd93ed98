package probes

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dustin/go-humanize"

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
	key := fmt.Sprintf("%s/%s/%d/%d", impl.ISA, k.name, n, node)
	t := task{}
	t.setup = func(w *worker) error {
		if w.layout == key {
			return nil
		}
		stride := arrayStride(n)
		if err := w.ensure(stride*k.arrays, node); err != nil {
			return err
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
	m, err := measureGroups(ctx, [][]*worker{ws0}, []task{t}, d, r.cfg.Reps)
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
	return m, nil
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
