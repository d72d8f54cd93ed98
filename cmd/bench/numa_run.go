package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/internal/topology"
)

// The NUMA flags of `bench run` (engine/numa.go; ArcLight §2.3–3.4).

func addNUMAFlags(f *pflag.FlagSet, o *runOptions) {
	f.StringVar(&o.NUMA, "numa", "os", "NUMA policy (ArcLight §2.3–3.4): os (memory by first touch), interleave (pages interleaved over the nodes of the threads), local (each thread's weight rows and activations bound to its node) or tp (cross-NUMA tensor parallelism, one thread group per node, its weight slices, KV cache and activations bound to its node)")
	f.IntVar(&o.TPDegree, "tp", 0, "--numa tp: thread groups (0: one per NUMA node of the threads); must divide the query and KV heads")
	f.StringVar(&o.Sync, "sync", "", "--numa tp: a (global barrier per operator) or b (group-local barriers, global only at the Gathers; default)")
}

func (o *runOptions) validateNUMA() error {
	p, err := engine.ParseNUMAPolicy(o.NUMA)
	if err != nil {
		return fmt.Errorf("run: --numa: %w", err)
	}
	if _, err := engine.ParseSyncMode(o.Sync); err != nil {
		return fmt.Errorf("run: --sync: %w", err)
	}
	switch {
	case o.TPDegree < 0:
		return fmt.Errorf("run: --tp %d: must be ≥ 0 (0: one group per NUMA node)", o.TPDegree)
	case o.TPDegree > 0 && p != engine.NUMATP:
		return fmt.Errorf("run: --tp %d: only with --numa tp", o.TPDegree)
	case o.Sync != "" && p != engine.NUMATP:
		return fmt.Errorf("run: --sync %s: only with --numa tp", o.Sync)
	}
	return nil
}

// runNUMA is the NUMA policy's part of `bench run --json`: the policy and,
// under tp, the degree, the sync mode and each thread group.
type runNUMA struct {
	Policy   string       `json:"policy"`
	TPDegree int          `json:"tp_degree,omitempty"`
	Sync     string       `json:"sync,omitempty"`
	Groups   []runTPGroup `json:"tp_groups,omitempty"`
	// Placement is where each tensor class's sampled pages were found
	// (interleave, local, tp: engine.Model.NUMAPlacement; under tp the
	// KV caches and activations one row per thread group).
	Placement []engine.NUMAPlacement `json:"placement,omitempty"`
}

// runTPGroup is one tensor-parallel thread group: its CPUs, their node
// (-1: several or unknown) and the heads and KV heads it owns
// ([first, last+1)).
type runTPGroup struct {
	CPUs    []int  `json:"cpus"`
	Node    int    `json:"node"`
	Heads   [2]int `json:"heads"`
	KVHeads [2]int `json:"kv_heads"`
}

// numaResult is what the model runs with (nil under os, the default).
func numaResult(m *engine.Model, policy string) *runNUMA {
	if policy == "" || policy == string(engine.NUMAOS) {
		return nil
	}
	r := &runNUMA{Policy: policy}
	if tp := m.TP(); tp != nil {
		r.TPDegree, r.Sync = tp.Degree, string(tp.Sync)
		for _, g := range tp.Groups {
			r.Groups = append(r.Groups, runTPGroup{CPUs: g.CPUs, Node: g.Node, Heads: g.Heads, KVHeads: g.KVHeads})
		}
	}
	return r
}

// writeRunNUMA prints the policy line (nothing under os).
func writeRunNUMA(w io.Writer, r *runNUMA) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "NUMA policy %s", r.Policy)
	if r.TPDegree > 0 {
		fmt.Fprintf(w, ": degree %d, sync %s (%s)", r.TPDegree, r.Sync, map[string]string{
			"a": "global barrier after every operator", "b": "group-local barriers, global only at the Gathers"}[r.Sync])
		for g, gr := range r.Groups {
			node := "nodes mixed or unknown"
			if gr.Node >= 0 {
				node = fmt.Sprintf("node %d", gr.Node)
			}
			fmt.Fprintf(w, "; group %d: CPUs %s (%s), heads %d–%d, KV heads %d–%d", g, topology.FormatCPUList(gr.CPUs), node,
				gr.Heads[0], gr.Heads[1]-1, gr.KVHeads[0], gr.KVHeads[1]-1)
		}
	}
	fmt.Fprint(w, "\n\n")
}

// writeRunNUMAPlacement prints where each tensor class's sampled pages
// were found under --numa interleave, local or tp
// (engine.Model.NUMAPlacement; tp's KV caches and activations one row per
// thread group, "kv_cache, group 1", the node they were bound to in the
// intended column), as the probe reports its NUMA matrix's page
// placement.
func writeRunNUMAPlacement(w io.Writer, r *runNUMA) error {
	if r == nil || len(r.Placement) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nNUMA policy %s: sampled pages per tensor class (move_pages)\n\n", r.Policy)
	t := newMarkdown(w, "tensor", "intended", "buffers", "MB", "pages sampled", "on intended", "pages per node")
	for _, p := range r.Placement {
		nodes := slices.Sorted(maps.Keys(p.PagesPerNode))
		per := make([]string, len(nodes))
		for i, n := range nodes {
			name := fmt.Sprintf("node %d", n)
			if n < 0 {
				name = fmt.Sprintf("not placed (%d)", n)
			}
			per[i] = fmt.Sprintf("%s: %d", name, p.PagesPerNode[n])
		}
		tensor := p.Tensor
		if p.TPGroup >= 0 {
			tensor = fmt.Sprintf("%s, group %d", p.Tensor, p.TPGroup)
		}
		t.Append([]string{tensor, p.Intended, fmt.Sprint(p.Buffers), fmt.Sprintf("%.3g", float64(p.Bytes)/1e6),
			fmt.Sprint(p.Sampled), fmt.Sprintf("%d (%.0f%%)", p.OnIntended, 100*p.Fraction), strings.Join(per, ", ")})
	}
	return t.Render()
}
