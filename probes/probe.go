package probes

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/results"
)

// placementAdoptAfter is how long the probe waits, before one figure on
// more than one CPU, for the host to put the CPUs back before it takes
// the host's new placement as its reference (noise.PlacementGuard).
const placementAdoptAfter = 15 * time.Second

// Sections lists every section of `bench probe`, in run order.
var Sections = []string{
	results.SectionMachine, results.SectionTopology, results.SectionMemory,
	results.SectionLatency, results.SectionShared, results.SectionNUMA,
	results.SectionCompute, results.SectionMixed, results.SectionNonlinear,
	results.SectionMatrix, results.SectionDispatch,
}

// Progress receives the probe's progress. Implementations must be cheap: Step
// is called between measurements, never inside one.
type Progress interface {
	Start(total int)
	Step(desc string)
	Finish()
}

type nopProgress struct{}

func (nopProgress) Start(int)   {}
func (nopProgress) Step(string) {}
func (nopProgress) Finish()     {}

// Config selects what `bench probe` measures.
type Config struct {
	// Sections to run; nil means all of Sections.
	Sections []string
	// Quick trades resolution for time, every figure still the median of
	// at least 5 repetitions: 5 repetitions of 6 ms; thread sweeps at 1
	// and all cores only; the working-set sweep one size per octave, read
	// kernel only; pointer chases every second octave down from half the
	// largest working set; the default largest working set 4x the
	// last-level cache in whole MiB (not the power of two above), 256 MiB
	// instead of 1 GiB with the L3 size unknown; the matrix section's
	// shapes fewer and smaller, each dtype's best backend only, no int8,
	// int2 or int1 GEMV (matrixShapes, gemmShapeTable, quickNoGEMV).
	Quick bool
	// Threads are the thread counts of the thread sweep; nil means 1, 2, 4,
	// ... and all cores (quick: 1 and all cores). Each must be in 1..logical
	// CPUs allowed.
	Threads []int
	// MaxWorkingSet is the largest working set in bytes; 0 means the next
	// power of two at or above 4 x the total last-level cache (min 64 MiB),
	// lowered to a power of two that fits in the memory this process may
	// use. A MaxWorkingSet that does not fit is an error
	// (CheckMaxWorkingSet).
	MaxWorkingSet int64
	// MemoryLimit is what this process may use (nil: memlimit.Available()).
	MemoryLimit *memlimit.Limit
	// ISA picks the memory kernels' implementation ("avx512", "avx2",
	// "neon", "go"); "" means the best available.
	ISA string
	// Reps is the number of timed repetitions per figure (min 5; default 7,
	// quick 5); RepDuration the length of one (default 20 ms, quick 6 ms).
	Reps        int
	RepDuration time.Duration
	// PlacementWait bounds the time the run waits in all, before figures
	// on 2 or more CPUs, for the host to put the CPUs back where they were
	// when it began (Profile.Placement; noise.PlacementGuard); 0: no
	// waiting (such figures are checked and marked all the same).
	PlacementWait time.Duration
	// Roots are where /sys and /proc are read from.
	Roots    topology.Roots
	Progress Progress
	// Host overrides the host name recorded in the profile.
	Host    string
	Version string
}

// ValidateSections checks section names and returns them in run order.
func ValidateSections(names []string) ([]string, error) {
	if len(names) == 0 {
		return slices.Clone(Sections), nil
	}
	var out []string
	for _, s := range Sections {
		for _, n := range names {
			if n == s && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	for _, n := range names {
		if !slices.Contains(Sections, n) {
			return nil, fmt.Errorf("unknown section %q (want one of %s)", n, strings.Join(Sections, ", "))
		}
	}
	return out, nil
}

// step is one planned measurement of the memory section.
type memStep struct {
	k       memKernel
	ws      int64
	threads int
}

// plan is everything the run will measure, computed up front so the progress
// bar knows the total.
type plan struct {
	cores      int // workers used for "all cores"
	memWS      []memStep
	memThreads []memStep
	// levelThreads are the thread counts of the working-set sweep, whose
	// levels (and DRAM roofs) are recorded.
	levelThreads []int
	latWS        []int64
	shared       []sharedSpec
	numaWS       int64
	numaLatWS    int64
	numaSteps    int
	maxWS        int64
	// dramWS is the working set of the DRAM-sized figures: the largest of
	// the memory section's DRAM read roofs and the matrix section's GEMV
	// weights; maxWS, or dramMinBytes where that is larger
	// (dramWorkingSet).
	dramWS int64
	note   string // a remark for the profile's notes, e.g. how the caches were found
}

type runner struct {
	cfg    Config
	topo   *results.Topology
	impl   kernels.MemImpl
	pool   *pool
	caches cacheSizes
	plan   plan
	prog   Progress
	// virtual is true when the machine is a virtual machine's guest
	// (results.Machine.Hypervisor not ""): its vCPUs may each sit on a
	// host LLC instance the guest's topology does not show (dramMinWS).
	virtual bool
	// place holds figures on more than one CPU to the placement the run
	// began with (nil: fewer than 2 CPUs, or not measured).
	place *noise.PlacementGuard
}

func (r *runner) step(desc string) { r.prog.Step(desc) }

// Run executes the selected sections and returns the profile. It returns
// ctx.Err() when interrupted, and an error naming the problem for bad
// configuration (unknown section, thread count out of range, unknown ISA) or
// unreadable /sys files.
func Run(ctx context.Context, cfg Config) (*results.Profile, error) {
	sections, err := ValidateSections(cfg.Sections)
	if err != nil {
		return nil, err
	}
	cfg.Sections = sections
	if cfg.Roots == (topology.Roots{}) {
		cfg.Roots = topology.LiveRoots()
	}
	if cfg.Reps == 0 {
		cfg.Reps = 7
		if cfg.Quick {
			cfg.Reps = 5
		}
	}
	if cfg.Reps < 5 {
		return nil, fmt.Errorf("--reps %d: must be at least 5", cfg.Reps)
	}
	if cfg.RepDuration == 0 {
		cfg.RepDuration = 20 * time.Millisecond
		if cfg.Quick {
			cfg.RepDuration = 6 * time.Millisecond
		}
	}
	prog := cfg.Progress
	if prog == nil {
		prog = nopProgress{}
	}
	host := cfg.Host
	if host == "" {
		host, _ = os.Hostname()
		if host == "" {
			host = "unknown"
		}
	}
	p := &results.Profile{
		Schema:    results.SchemaV1,
		CreatedAt: time.Now().UTC().Truncate(time.Second),
		Host:      host,
		Tool:      results.Tool{Name: "bench", Version: cfg.Version, GoVersion: runtime.Version()},
	}
	has := func(s string) bool { return slices.Contains(sections, s) }
	needMeasure := has(results.SectionMemory) || has(results.SectionLatency) || has(results.SectionShared) ||
		has(results.SectionNUMA) || has(results.SectionNonlinear) || has(results.SectionCompute) || has(results.SectionMixed) ||
		has(results.SectionMatrix) || has(results.SectionDispatch)

	if has(results.SectionMachine) {
		m, err := topology.ReadMachine(cfg.Roots)
		if err != nil {
			return nil, err
		}
		p.Machine = m
	}
	var topo *results.Topology
	if has(results.SectionTopology) || needMeasure {
		topo, err = topology.ReadTopology(cfg.Roots)
		if err != nil {
			return nil, err
		}
		if has(results.SectionTopology) {
			p.Topology = topo
		}
	}
	p.Options = results.Options{Quick: cfg.Quick, Sections: sections, Reps: cfg.Reps, MinRepSeconds: cfg.RepDuration.Seconds()}
	if !needMeasure {
		return p, nil
	}

	r := &runner{cfg: cfg, topo: topo, prog: prog}
	if p.Machine != nil {
		r.virtual = p.Machine.Hypervisor != ""
	} else if m, err := topology.ReadMachine(cfg.Roots); err == nil {
		r.virtual = m.Hypervisor != ""
	}
	if cfg.ISA == "" {
		r.impl = kernels.BestMem()
	} else if r.impl, err = kernels.MemImplByISA(cfg.ISA); err != nil {
		return nil, fmt.Errorf("--isa %s: %w", cfg.ISA, err)
	}
	order, err := cpuOrder(topo)
	if err != nil {
		return nil, err
	}
	if err := r.makePlan(order); err != nil {
		return nil, err
	}
	p.Options.Threads = threadCounts(r.plan.memThreads, cfg.Threads)
	p.Options.MaxWorkingSetBytes = r.plan.maxWS
	p.Options.ISA = r.impl.ISA

	// Each pinned worker needs its own P while the others spin at a barrier.
	if prev := runtime.GOMAXPROCS(0); prev < len(order)+1 {
		runtime.GOMAXPROCS(len(order) + 1)
		defer runtime.GOMAXPROCS(prev)
	}
	r.pool = newPool(order)
	defer r.pool.close()
	if r.plan.note != "" {
		p.Notes = append(p.Notes, r.plan.note)
	}
	if r.pool.pinErr != nil {
		p.Notes = append(p.Notes, "threads could not be pinned: "+r.pool.pinErr.Error()+"; figures say pinned=false")
	}

	// Where the host put the CPUs as the run begins: the reference of every
	// figure on more than one CPU (issue #16 part 3).
	if len(order) >= 2 && r.pool.pinErr == nil {
		pl, err := noise.MeasurePlacement(ctx, order)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			p.Notes = append(p.Notes, "placement: core-to-core round trips not measured: "+err.Error()+"; figures on more than one CPU are not checked against the host moving the CPUs")
		default:
			p.Placement = pl
			r.place = noise.NewPlacementGuard(pl, cfg.PlacementWait, placementAdoptAfter)
		}
	}

	run := func(section string) error {
		var err error
		switch section {
		case results.SectionMemory:
			p.Memory, err = r.memorySection(ctx)
		case results.SectionLatency:
			p.Latency, err = r.latencySection(ctx)
		case results.SectionShared:
			p.Shared, err = r.sharedSection(ctx)
		case results.SectionNUMA:
			p.NUMA, err = r.numaSection(ctx)
		case results.SectionCompute:
			p.Compute, err = r.computeSection(ctx)
		case results.SectionMixed:
			p.Mixed, err = r.mixedSection(ctx)
		case results.SectionNonlinear:
			p.Nonlinear, err = r.nonlinearSection(ctx)
		case results.SectionMatrix:
			p.Matrix, err = r.matrixSection(ctx, p.Compute, p.Memory)
		case results.SectionDispatch:
			p.Dispatch, err = r.dispatchSection(ctx)
		}
		return err
	}
	prog.Start(r.total(sections))
	defer prog.Finish()
	for _, s := range Sections {
		if has(s) {
			if err := run(s); err != nil {
				return nil, err
			}
		}
	}
	if g := r.place; g != nil {
		if err := g.Err(); err != nil {
			p.Notes = append(p.Notes, "placement: the checks stopped at a failed core-to-core round trip ("+err.Error()+"); later figures on more than one CPU are not checked against the host moving the CPUs")
		}
		if g.Waited() > 0 || g.Adopted() > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("placement: the host moved the CPUs during the run (core-to-core round trips away from the placement in force); the probe waited %.1f s in all (at most %v, --wait-placement) for them to come back before figures on more than one CPU, and took the host's new placement as its reference %d times (after %v of waiting for one figure)",
				g.Waited().Seconds(), cfg.PlacementWait, g.Adopted(), placementAdoptAfter))
		}
		if at, away, changed := noise.Rereference(p); changed {
			p.Notes = append(p.Notes, fmt.Sprintf("placement: %d of %d figures on more than one CPU were measured away from the placement the probe began with: profile.placement is now theirs, and the %d measured in the first are marked noisy", away, at+away, at))
		} else if away > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("placement: %d of %d figures on more than one CPU were measured away from profile.placement and are marked noisy", away, at+away))
		}
		// The sections with figures measured in the other placement are
		// measured again, waiting for profile.placement (never adopting
		// another): a profile whose DRAM roof was measured in one
		// placement and its GEMVs in the other predicts neither.
		if redo, moved := MovedSections(p); len(redo) > 0 && cfg.PlacementWait > 0 && g.Err() == nil {
			r.place = noise.NewPlacementGuard(p.Placement, cfg.PlacementWait, 0)
			prog.Finish()
			prog.Start(r.total(redo))
			for _, s := range redo {
				if err := run(s); err != nil {
					return nil, err
				}
			}
			at, away, _ := noise.Rereference(p)
			p.Notes = append(p.Notes, fmt.Sprintf("placement: measured again, waiting for profile.placement (%.1f s of at most %v, --wait-placement): the sections %s, which had %d figures measured in the other placement; now %d of %d figures on more than one CPU were measured away from it (marked noisy)",
				r.place.Waited().Seconds(), cfg.PlacementWait, strings.Join(redo, ", "), moved, away, at+away))
		}
	}
	// A last-level cache CPUID and sysfs hide (a VM), from the knee of the
	// read bandwidth curves (knee.go).
	if q, note := WithMeasuredLLC(p); note != "" {
		q.Notes = append(slices.Clone(q.Notes), note)
		p = q
	}
	return p, nil
}

// MovedSections returns the sections of profile p (in run order) with
// figures measured away from p.Placement (a recorded round trip
// results.NoisePlacementRatio or more from the reference's: noise.Moved),
// and how many such figures there are.
func MovedSections(p *results.Profile) (sections []string, figures int) {
	seen := map[string]bool{}
	p.WalkStats(func(path string, st *results.Stat) {
		if st.Noise == nil || !noise.Moved(*st.Noise) {
			return
		}
		figures++
		seen[strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' })[0]] = true
	})
	for _, s := range Sections {
		if seen[s] {
			sections = append(sections, s)
		}
	}
	return sections, figures
}

func threadCounts(steps []memStep, cfg []int) []int {
	var out []int
	for _, s := range steps {
		if !slices.Contains(out, s.threads) {
			out = append(out, s.threads)
		}
	}
	if len(out) == 0 {
		return cfg
	}
	return out
}

// cpuOrder is the order threads are placed on CPUs: one per physical core
// first (topology.CoreCPUs), then the remaining hardware threads, restricted
// to the process's affinity mask.
func cpuOrder(t *results.Topology) ([]int, error) {
	allowed, err := affinity.Allowed()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, c := range t.CoreCPUs {
		if slices.Contains(allowed, c) {
			out = append(out, c)
		}
	}
	for _, c := range t.OnlineCPUs {
		if slices.Contains(allowed, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no usable CPU: online %v, allowed %v", t.OnlineCPUs, allowed)
	}
	return out, nil
}

// unknownLLCMaxWS is the default largest working set when the last-level
// cache's size is unknown.
const unknownLLCMaxWS = 1 << 30

// quickUnknownLLCMaxWS is quick mode's: 4x an L3 of 64 MiB (twice one Zen
// 5 CCD's), a quarter of the full probe's, since every DRAM-sized figure
// (the sweeps' largest points, the DRAM roof, the GEMVs' weights) costs
// time in proportion to it.
const quickUnknownLLCMaxWS = 256 << 20

func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}

func (r *runner) makePlan(order []int) error {
	t := r.topo
	// Cache sizes per level, data or unified.
	for _, c := range t.Caches {
		if c.Level >= 1 && c.Level <= 3 && c.Type != "Instruction" {
			r.caches.size[c.Level] = c.SizeBytes
			r.caches.sharers[c.Level] = max(1, c.SharedBy)
			r.caches.instances[c.Level] = max(1, c.Instances)
		}
	}
	cores := 0
	for _, c := range t.CoreCPUs {
		if slices.Contains(order, c) {
			cores++
		}
	}
	cores = max(cores, 1)
	r.plan.cores = cores
	maxThreads := len(order)

	lim := memlimit.Limit{}
	if r.cfg.MemoryLimit != nil {
		lim = *r.cfg.MemoryLimit
	} else {
		lim, _ = memlimit.Available()
	}
	maxWS := r.cfg.MaxWorkingSet
	if maxWS < 0 {
		return fmt.Errorf("--max-ws %d: must be at least 64 KiB", maxWS)
	}
	if maxWS > 0 {
		if err := checkMaxWS(uint64(maxWS), r.cfg.Sections, lim); err != nil {
			return err
		}
	} else {
		llcTotal := t.LLCBytes
		for _, c := range t.Caches {
			if c.SizeBytes == t.LLCBytes && c.Type != "Instruction" {
				llcTotal = c.SizeBytes * int64(max(1, c.Instances))
			}
		}
		minWS := r.minWSFor(maxThreads, llcTotal, t.LLCBytes)
		maxWS = max(nextPow2(minWS), 64<<20)
		if r.cfg.Quick {
			// dramMinWS itself, in whole MiB: the power of two above it
			// can be up to twice that, and every DRAM-sized figure costs
			// time in proportion.
			maxWS = max((minWS+1<<20-1)&^(1<<20-1), 64<<20)
		}
		if r.caches.size[3] == 0 && t.CacheNote != "" {
			// The caches came from CPUID without an L3 size: a server
			// part's L3 may be far above 16 MiB (one Zen 5 CCD has 32
			// MiB), so sweep to 1 GiB for the DRAM figures to be DRAM.
			if r.cfg.Quick {
				maxWS = max(maxWS, quickUnknownLLCMaxWS)
				r.plan.note = fmt.Sprintf("%s; quick: the working sets go up to %s (the full probe's go to %s), so the DRAM figures are beyond an L3 of up to %s",
					t.CacheNote, sizeText(maxWS), sizeText(unknownLLCMaxWS), sizeText(maxWS/4))
			} else {
				maxWS = max(maxWS, unknownLLCMaxWS)
				r.plan.note = fmt.Sprintf("%s; the working sets go up to %s so that the DRAM figures are beyond any L3", t.CacheNote, sizeText(maxWS))
			}
		}
		fit, why, ok := fitWorkingSet(maxWS, r.cfg.Sections, lim)
		if !ok {
			return fmt.Errorf("memory: %d working sets of 64 KiB do not fit in the %s this process may use (%s)",
				workingSetCopies(r.cfg.Sections), memlimit.Of(lim.Usable()), lim.Source)
		}
		if why != "" {
			if fit < 4*llcTotal {
				why += fmt.Sprintf("; below 4× the last-level cache (%s), so the DRAM figures are partly cache", sizeText(llcTotal))
			}
			maxWS = fit
			r.plan.note = strings.TrimPrefix(r.plan.note+"; "+why, "; ")
		}
	}
	if maxWS < 64<<10 {
		return fmt.Errorf("--max-ws %d: must be at least 64 KiB", maxWS)
	}
	r.plan.maxWS = maxWS
	r.plan.dramWS = dramWorkingSet(maxWS, r.cfg.MaxWorkingSet > 0, r.cfg.Quick, lim)

	threads := r.cfg.Threads
	if threads == nil {
		threads = defaultThreads(cores, r.cfg.Quick)
	}
	for _, n := range threads {
		if n < 1 || n > maxThreads {
			return fmt.Errorf("--threads %d: must be between 1 and %d", n, maxThreads)
		}
	}
	allT := slices.Max(threads)

	perOct := 2
	sweepKernels := allMemKernels
	if r.cfg.Quick {
		// Quick: one working set per octave, none past the largest, and
		// the read kernel only (the levels and the knee are read roofs;
		// copy and triad are in the thread sweep).
		perOct = 1
		sweepKernels = []memKernel{kRead}
	}
	tcfgs := []int{1}
	if allT > 1 {
		tcfgs = append(tcfgs, allT)
	}
	r.plan.levelThreads = tcfgs
	for _, tc := range tcfgs {
		lo := max(int64(16<<10), int64(tc)*4096*3)
		wss := WorkingSets(lo, maxWS, perOct)
		if r.cfg.Quick {
			wss = clipWorkingSets(wss, maxWS)
		}
		for _, ws := range wss {
			for _, k := range sweepKernels {
				r.plan.memWS = append(r.plan.memWS, memStep{k, ws, tc})
			}
		}
	}
	for _, n := range threads {
		for _, k := range []memKernel{kRead, kCopy, kTriad} {
			r.plan.memThreads = append(r.plan.memThreads, memStep{k, maxWS, n})
		}
	}
	r.plan.latWS = WorkingSets(16<<10, maxWS, 1)
	if r.cfg.Quick {
		r.plan.latWS = quickLatencyWorkingSets(maxWS)
	}
	r.plan.shared = []sharedSpec{
		{name: "dram-read", k: kRead, wsPerThread: maxWS / int64(cores)},
	}
	if l2 := r.caches.size[2]; l2 > 0 {
		r.plan.shared = append(r.plan.shared, sharedSpec{name: "l2-read", k: kRead, wsPerThread: l2 / 2})
	}
	r.plan.numaWS = maxWS
	r.plan.numaLatWS = maxWS
	if r.cfg.Quick {
		// The latency section's largest chase (quickLatencyWorkingSets).
		r.plan.numaLatWS = quickLatencyMax(maxWS)
	}
	withCPUs := 0
	for _, n := range t.Nodes {
		if len(n.CPUs) > 0 {
			withCPUs++
		}
	}
	r.plan.numaSteps = withCPUs * len(t.Nodes)
	return nil
}

// defaultThreads is the thread sweep when --threads is not given: 1, 2, 4,
// ... and all cores; quick: 1 and all cores, so that quick's time does not
// grow with the log of the core count on top of the per-figure cost.
func defaultThreads(cores int, quick bool) []int {
	var out []int
	if quick {
		out = []int{1}
		if cores > 1 {
			out = append(out, cores)
		}
		return out
	}
	for n := 1; n < cores; n *= 2 {
		out = append(out, n)
	}
	return append(out, cores)
}

// clipWorkingSets drops the sizes of wss above maxWS and ends the list at
// maxWS (WorkingSets overshoots it when lo is not maxWS over a power of
// two, e.g. 1.5 GiB for 2 threads at a 1 GiB maximum).
func clipWorkingSets(wss []int64, maxWS int64) []int64 {
	var out []int64
	for _, ws := range wss {
		if ws < maxWS {
			out = append(out, ws)
		}
	}
	return append(out, maxWS)
}

// quickLatencyWorkingSets are quick mode's pointer-chase working sets:
// half the largest working set (≥ 2x the last-level cache, so the chase
// misses in it) and every second octave below it down to 16 KiB, in
// increasing order. The full probe's every octave up to the largest costs
// far more: one repetition is at least a whole chase, over a second for 1
// GiB of 64-byte lines.
func quickLatencyWorkingSets(maxWS int64) []int64 {
	var out []int64
	for ws := quickLatencyMax(maxWS); ws >= 16<<10; ws /= 4 {
		out = append([]int64{ws &^ 4095}, out...)
	}
	if len(out) == 0 {
		out = []int64{16 << 10}
	}
	return out
}

// quickLatencyMax is quick mode's largest pointer chase, the NUMA
// section's too: half the largest working set.
func quickLatencyMax(maxWS int64) int64 {
	return max(maxWS/2, 16<<10)
}

// total is the number of progress steps of the selected sections.
func (r *runner) total(sections []string) int {
	p := r.plan
	n := 0
	for _, s := range sections {
		switch s {
		case results.SectionMemory:
			n += len(p.memWS) + len(p.memThreads) + r.dramSteps()
		case results.SectionLatency:
			n += len(p.latWS)
		case results.SectionShared:
			if p.cores >= 2 {
				n += len(p.shared)
			}
		case results.SectionNUMA:
			n += p.numaSteps
		case results.SectionCompute:
			n += r.computeSteps()
		case results.SectionMixed:
			n += r.mixedSteps()
		case results.SectionNonlinear:
			n += r.nonlinearSteps()
		case results.SectionMatrix:
			n += r.matrixSteps()
		case results.SectionDispatch:
			n += len(r.dispatchThreads())
			if r.plan.cores >= 2 {
				n++ // the core-to-core reads
			}
		}
	}
	return n
}
