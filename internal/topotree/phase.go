package topotree

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/internal/topology"
)

// ConfigSyntax is what a phase configuration (ParseConfigSpec) may be, for
// error messages and help texts.
const ConfigSyntax = "all, cpus=LIST (kernel cpulist, e.g. cpus=0-7), config=N (the N-th line of 'bench topo --configs --model M' for the model run), " +
	"or a transform list: group(n,t,d), remove(n,d), " + "idle-per-l2, idle-per-l3, idle-per-node, sc-rm[:N], numa-rm[:N], fast-numa"

// ConfigSpec is a parsed phase configuration (Sandwich §3.2–3.3: prefill
// and decode each run on a service configuration of their own). Kind is
//
//   - "all": every PU of the tree;
//   - "cpus": the CPUs of List (cpus=LIST);
//   - "config": the Index-th (1-based) service configuration that
//     Explore lists for the tree with Configs (config=N; `bench topo
//     --configs` numbers them so);
//   - "transform": the active PUs of Tree.ApplySpec(Transforms).
type ConfigSpec struct {
	Spec       string
	Kind       string
	List       []int
	Index      int
	Transforms string
}

// ParseConfigSpec parses a phase configuration without a tree: its
// syntax only (a transform list's items are checked against the tree by
// ResolveConfig). Errors: one line naming the value and ConfigSyntax.
func ParseConfigSpec(spec string) (ConfigSpec, error) {
	s := strings.TrimSpace(spec)
	c := ConfigSpec{Spec: s}
	bad := func(why string) (ConfigSpec, error) {
		return ConfigSpec{}, fmt.Errorf("topotree: configuration %q: %s (allowed: %s)", spec, why, ConfigSyntax)
	}
	key, val, kv := strings.Cut(s, "=")
	switch {
	case s == "":
		return bad("empty")
	case strings.EqualFold(s, "all"):
		c.Kind = "all"
	case kv && strings.EqualFold(strings.TrimSpace(key), "cpus"):
		l, err := topology.ParseCPUList(strings.TrimSpace(val))
		if err != nil || len(l) == 0 {
			return bad(fmt.Sprintf("%q is not a CPU list", val))
		}
		c.Kind, c.List = "cpus", l
	case kv && strings.EqualFold(strings.TrimSpace(key), "config"):
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 1 {
			return bad(fmt.Sprintf("%q is not a configuration number ≥ 1", val))
		}
		c.Kind, c.Index = "config", n
	case kv:
		return bad(fmt.Sprintf("unknown key %q", key))
	default:
		items, err := splitSpec(s)
		if err != nil {
			return bad(err.Error())
		}
		for _, it := range items {
			if !knownItem(it) {
				return bad(fmt.Sprintf("unknown transform %q", it))
			}
		}
		c.Kind, c.Transforms = "transform", s
	}
	return c, nil
}

// knownItem reports whether a transform list item names a transform or a
// preset (its arguments are checked against a tree later).
func knownItem(it string) bool {
	name, _, _ := strings.Cut(strings.ToLower(it), ":")
	switch name {
	case "idle-per-l2", "idle-per-l3", "idle-per-node", "sc-rm", "numa-rm", "fast-numa":
		return true
	}
	op, _, ok := strings.Cut(strings.ToLower(it), "(")
	op = strings.TrimSpace(op)
	return ok && (op == "group" || op == "remove")
}

// PhaseConfig is a phase configuration resolved on a tree: the CPUs the
// phase's workers run on (ascending; one process, TP degree 1) and what
// chose them.
type PhaseConfig struct {
	// Spec is the configuration as given; Label says what it resolved to
	// ("remove(1,core): CPUs 0-2"); Tree the transform path it was read
	// from ("base" for all and cpus=).
	Spec  string `json:"spec"`
	Label string `json:"label"`
	Tree  string `json:"tree"`
	CPUs  []int  `json:"cpus"`
}

// String is the Label.
func (p PhaseConfig) String() string { return p.Label }

// ResolveConfig resolves spec (ParseConfigSpec's syntax) on t, whose
// active PUs are the CPUs allowed (for the live machine: the process's
// affinity mask). lim are the model's head limits for config=N (the
// numbering is Explore's with EnumOptions' defaults, as `bench topo
// --configs --model M` prints it). Errors, one line each naming the
// value and what is allowed: bad syntax, CPUs outside the allowed set,
// an unknown transform or one the tree cannot take, a configuration
// number beyond the list, and a configuration whose TP degree is above 1
// (it needs the tensor-parallel engine: --numa tp).
func ResolveConfig(t *Tree, spec string, lim Limits) (PhaseConfig, error) {
	c, err := ParseConfigSpec(spec)
	if err != nil {
		return PhaseConfig{}, err
	}
	allowed := t.Active()
	out := PhaseConfig{Spec: c.Spec, Tree: "base"}
	switch c.Kind {
	case "all":
		out.CPUs = allowed
		out.Label = "all: CPUs " + topology.FormatCPUList(allowed)
	case "cpus":
		var outside []int
		for _, x := range c.List {
			if !slices.Contains(allowed, x) {
				outside = append(outside, x)
			}
		}
		if len(outside) > 0 {
			return PhaseConfig{}, fmt.Errorf("topotree: configuration %q: CPUs %s are outside the allowed set %s", spec,
				topology.FormatCPUList(outside), topology.FormatCPUList(allowed))
		}
		out.CPUs = slices.Compact(slices.Sorted(slices.Values(c.List)))
		out.Label = "CPUs " + topology.FormatCPUList(out.CPUs)
	case "config":
		r, err := Explore(t, "", ExploreOptions{Configs: true, Limits: lim})
		if err != nil {
			return PhaseConfig{}, err
		}
		if c.Index > len(r.Configs) {
			return PhaseConfig{}, fmt.Errorf("topotree: configuration %q: this machine has %d configurations (config=1 to config=%d; bench topo --configs lists them)",
				spec, len(r.Configs), len(r.Configs))
		}
		cf := r.Configs[c.Index-1]
		if cf.TP > 1 {
			return PhaseConfig{}, fmt.Errorf("topotree: configuration %q: TP degree %d (%d processes) needs the tensor-parallel engine, --numa tp; here only TP degree 1 configurations run (one process)",
				spec, cf.TP, cf.Processes)
		}
		out.CPUs, out.Tree = slices.Clone(cf.CPUs[0]), cf.Tree
		out.Label = fmt.Sprintf("config %d (%s, %s): CPUs %s", c.Index, cf.Tree, cf.Phase, topology.FormatCPUList(out.CPUs))
	case "transform":
		tr, err := t.ApplySpec(c.Transforms)
		if err != nil {
			return PhaseConfig{}, fmt.Errorf("topotree: configuration %q: %s", spec, strings.TrimPrefix(err.Error(), "topotree: "))
		}
		out.CPUs, out.Tree = tr.Active(), tr.PathString()
		out.Label = fmt.Sprintf("%s: CPUs %s", c.Transforms, topology.FormatCPUList(out.CPUs))
	}
	return out, nil
}

// Candidate is a TP-degree-1 service configuration of a tree, as
// `--configs auto` ranks them: its CPUs and the configurations (by
// 1-based Explore number) that give that CPU set.
type Candidate struct {
	PhaseConfig
	Index int    `json:"index"`
	Phase string `json:"phase"` // Config.Phase: prefill (every PU) or decode (some idle)
}

// Candidates lists the distinct CPU sets of t's TP-degree-1 service
// configurations (Explore with Configs and lim, EnumOptions' defaults),
// each once, in Explore's order; configurations of TP degree > 1 are
// left out (they need --numa tp).
func Candidates(t *Tree, lim Limits) ([]Candidate, error) {
	r, err := Explore(t, "", ExploreOptions{Configs: true, Limits: lim})
	if err != nil {
		return nil, err
	}
	var out []Candidate
	seen := map[string]bool{}
	for i, cf := range r.Configs {
		if cf.TP != 1 {
			continue
		}
		key := topology.FormatCPUList(cf.CPUs[0])
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, Candidate{Index: i + 1, Phase: cf.Phase, PhaseConfig: PhaseConfig{
			Spec: fmt.Sprintf("config=%d", i+1), Tree: cf.Tree, CPUs: slices.Clone(cf.CPUs[0]),
			Label: fmt.Sprintf("config %d (%s): CPUs %s", i+1, cf.Tree, key)}})
	}
	return out, nil
}

// Location is one core-location experiment of Sandwich Fig. 3(a) on a
// tree: a preset remove transform (or "all cores"), the CPUs it keeps
// active and those it leaves idle, or why it does not apply here.
type Location struct {
	Name          string `json:"name"`
	Spec          string `json:"spec"`
	CPUs          []int  `json:"cpus,omitempty"`
	Idle          []int  `json:"idle,omitempty"`
	NotApplicable string `json:"not_applicable,omitempty"`
}

// LocationPresets are the transforms of Fig. 3(a) that Locations tries,
// in order: one idle core per L2 cluster, per L3 cluster, per NUMA node;
// SC-RM (one in every 4 neighbouring cores); NUMA-RM (the last core of
// each core's parent); fast NUMA (the last node of each package).
var LocationPresets = []string{"idle-per-l2", "idle-per-l3", "idle-per-node", "sc-rm", "numa-rm", "fast-numa"}

// Locations lists "all cores" and every LocationPresets transform on t.
// A preset that fails on t (no such level, one core per cluster, a
// group that does not divide) or that leaves no CPU idle or none active
// is kept with NotApplicable saying why, not dropped.
func Locations(t *Tree) []Location {
	out := []Location{{Name: "all cores", Spec: "all", CPUs: t.Active()}}
	for _, p := range LocationPresets {
		l := Location{Name: p, Spec: p}
		tr, err := t.ApplySpec(p)
		switch {
		case err != nil:
			l.NotApplicable = strings.ReplaceAll(err.Error(), "topotree: ", "")
		case len(tr.Active()) == 0:
			l.NotApplicable = "it leaves no CPU active"
		case len(tr.Idle()) == 0:
			l.NotApplicable = "it leaves no CPU idle"
		default:
			l.CPUs, l.Idle = tr.Active(), tr.Idle()
		}
		out = append(out, l)
	}
	return out
}
