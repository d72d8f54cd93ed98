package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/kernels/pool"
	"github.com/cpubench/bench/roofline"
)

// phaseGroups are the workers of each phase's configuration (Sandwich
// §3.2–3.3: decode saturates memory bandwidth with fewer cores than
// prefill needs): views of the one pool, so switching phase starts no
// thread. Index 0 is prefill, 1 decode.
type phaseGroups struct {
	g     [2]*pool.Group
	cpus  [2][]int
	union []int // the pool's CPUs, worker by worker (phaseUnion)
}

// phaseUnion orders the pool's CPUs for per-phase configurations: the
// CPUs both phases use first (so worker 0, the master that runs the
// forward loop and the operators too small to split, lies in both
// configurations when they share a CPU), then prefill's others, then
// decode's, each ascending.
func phaseUnion(prefill, decode []int) []int {
	p, d := slices.Sorted(slices.Values(prefill)), slices.Sorted(slices.Values(decode))
	var both, onlyP, onlyD []int
	for _, c := range p {
		if slices.Contains(d, c) {
			both = append(both, c)
		} else {
			onlyP = append(onlyP, c)
		}
	}
	for _, c := range d {
		if !slices.Contains(p, c) {
			onlyD = append(onlyD, c)
		}
	}
	return slices.Concat(both, onlyP, onlyD)
}

// phaseCheck validates Options.PrefillCPUs and DecodeCPUs: both or
// neither, non-empty, no CPU twice, every CPU in the process's affinity
// mask, Threads 0, and a placement, NUMA policy and weight layout that
// run on one group of workers (cores or matrix; os; none). The attention
// pipeline pairs workers across the whole pool, so where it would run
// per-phase configurations turn it off (identical outputs,
// Options.NoPipeline).
func (m *Model) phaseCheck(o *Options) error {
	if o.PrefillCPUs == nil && o.DecodeCPUs == nil {
		return nil
	}
	const what = "engine: per-phase configurations"
	switch {
	case len(o.PrefillCPUs) == 0 || len(o.DecodeCPUs) == 0:
		return fmt.Errorf("%s: prefill CPUs %v, decode CPUs %v: give both, each non-empty", what, o.PrefillCPUs, o.DecodeCPUs)
	case o.Threads != 0:
		return fmt.Errorf("%s: threads %d: the configurations' CPUs set the threads; give threads 0", what, o.Threads)
	case o.Placement == PlaceMixed || o.Placement == PlaceAuto:
		return fmt.Errorf("%s: placement %s cuts every worker into two groups; per-phase configurations run placement cores or matrix", what, o.Placement)
	case o.NUMA != "" && o.NUMA != NUMAOS:
		return fmt.Errorf("%s: NUMA policy %s: per-phase configurations run with policy os", what, o.NUMA)
	case o.WeightLayout != "":
		return fmt.Errorf("%s: weight layout %s: per-phase configurations run without a weight layout policy", what, o.WeightLayout)
	}
	allowed, err := affinity.Allowed()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, ph := range []struct {
		name string
		cpus []int
	}{{"prefill", o.PrefillCPUs}, {"decode", o.DecodeCPUs}} {
		var outside []int
		for i, c := range ph.cpus {
			if slices.Contains(ph.cpus[:i], c) {
				return fmt.Errorf("%s: %s CPUs %s: CPU %d twice", what, ph.name, topology.FormatCPUList(ph.cpus), c)
			}
			if !slices.Contains(allowed, c) {
				outside = append(outside, c)
			}
		}
		if len(outside) > 0 {
			return fmt.Errorf("%s: %s CPUs %s: CPUs %s are outside the allowed set %s", what, ph.name,
				topology.FormatCPUList(ph.cpus), topology.FormatCPUList(outside), topology.FormatCPUList(allowed))
		}
	}
	if !o.NoPipeline && (o.ForcePipeline || attnPipelineDefault(m.attnBackend())) {
		m.Notes = append(m.Notes, phaseNotePrefix+"the prefill attention pipeline (pairs across the whole pool) is off; prefill attention runs each job serially on the prefill workers (identical outputs)")
		o.NoPipeline = true
	}
	return nil
}

// phaseGroups cuts the per-phase views of the pool startPool made from
// phaseUnion (worker i on the union's i-th CPU).
func (m *Model) phaseGroups(o Options) error {
	if o.PrefillCPUs == nil {
		return nil
	}
	return m.setPhases(phaseUnion(o.PrefillCPUs, o.DecodeCPUs), o.PrefillCPUs, o.DecodeCPUs)
}

// SetPhaseCPUs moves prefill and decode to the workers of other CPUs of
// the Model's pool (a Model made with per-phase configurations), without
// creating a thread: `--configs auto` measures several configurations on
// one Model so. Errors: a Model without per-phase configurations, an
// empty list, a CPU twice or one the pool has no worker on (naming the
// pool's CPUs). Not while a forward call runs.
func (m *Model) SetPhaseCPUs(prefill, decode []int) error {
	if m.phases == nil {
		return fmt.Errorf("engine: SetPhaseCPUs: model %s was made without per-phase configurations", m.Config.Name)
	}
	for _, set := range [][]int{prefill, decode} {
		if len(set) == 0 {
			return fmt.Errorf("engine: SetPhaseCPUs: prefill CPUs %v, decode CPUs %v: each must be non-empty", prefill, decode)
		}
		for i, c := range set {
			if slices.Contains(set[:i], c) || !slices.Contains(m.phases.union, c) {
				return fmt.Errorf("engine: SetPhaseCPUs: CPUs %s: CPU %d twice or not among the pool's CPUs %s", topology.FormatCPUList(set), c, topology.FormatCPUList(m.phases.union))
			}
		}
	}
	m.Notes = slices.DeleteFunc(m.Notes, func(n string) bool { return strings.HasPrefix(n, phaseNotePrefix) })
	return m.setPhases(m.phases.union, prefill, decode)
}

const phaseNotePrefix = "per-phase configurations: "

func (m *Model) setPhases(union, prefill, decode []int) error {
	pg := &phaseGroups{union: union}
	for i, set := range [2][]int{prefill, decode} {
		var idx []int
		for w, c := range union {
			if slices.Contains(set, c) {
				idx = append(idx, w)
			}
		}
		gs, err := m.pool.View([][]int{idx})
		if err != nil {
			return fmt.Errorf("engine: per-phase configurations: %w", err)
		}
		pg.g[i] = gs[0]
		pg.cpus[i] = slices.Sorted(slices.Values(set))
	}
	m.phases = pg
	m.Notes = append(m.Notes, fmt.Sprintf(phaseNotePrefix+"prefill on %d workers %v (CPUs %s), decode on %d workers %v (CPUs %s); one pool of %d workers, the phase's view picked per forward call (no thread created)",
		pg.g[0].Size(), pg.g[0].Workers(), topology.FormatCPUList(pg.cpus[0]), pg.g[1].Size(), pg.g[1].Workers(), topology.FormatCPUList(pg.cpus[1]), len(union)))
	var outside []string
	for i, name := range []string{"prefill", "decode"} {
		if !slices.Contains(pg.cpus[i], union[0]) {
			outside = append(outside, name)
		}
	}
	if len(outside) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf(phaseNotePrefix+"the master (worker 0, CPU %d) runs the forward loop and the operators too small to split (one row's norms, single-job attention); it is outside the %s configuration",
			union[0], strings.Join(outside, " and ")))
	}
	return nil
}

// usePhase makes p's workers (0 prefill, 1 decode) the ones the next
// operators run on; without per-phase configurations every worker runs
// both. Called on the master at the start of every forward call.
func (m *Model) usePhase(p int) {
	if m.phases != nil {
		m.all = m.phases.g[p]
	}
}

// PhaseThreads returns the number of workers that run phase p (prefill
// or decode): its configuration's (Options.PrefillCPUs, DecodeCPUs), or
// Threads without per-phase configurations.
func (m *Model) PhaseThreads(p roofline.Phase) int {
	if m.phases == nil {
		return m.Threads
	}
	return m.phases.g[phaseIndex(p)].Size()
}

// PhaseCPUs returns the CPUs of the workers that run phase p, ascending
// (with pinning off, the CPUs they were meant for); without per-phase
// configurations, CPUs().
func (m *Model) PhaseCPUs(p roofline.Phase) []int {
	if m.phases == nil {
		return m.CPUs()
	}
	return slices.Clone(m.phases.cpus[phaseIndex(p)])
}

// PerPhase reports whether the Model runs per-phase configurations.
func (m *Model) PerPhase() bool { return m.phases != nil }

func phaseIndex(p roofline.Phase) int {
	if p == roofline.Decode {
		return 1
	}
	return 0
}
