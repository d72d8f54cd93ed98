package topotree

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/results"
)

// shapeKinds are the level kinds a shape may name, in the order they must
// appear.
var shapeKinds = []string{"package", "numa", "l3", "l2", "core", "thread"}

// maxShapeCPUs bounds a synthetic machine.
const maxShapeCPUs = 1 << 16

// Synthetic builds the topology tree of a made-up symmetric machine from
// a shape such as "package=4,numa=2,core=24" (Sandwich's 4-socket
// Kunpeng-920 of Fig. 5: 4 CPUs × 2 SCCLs × 24 cores) or
// "package=2,numa=1,l3=8,core=8,thread=2": each item is a level kind
// (package, numa, l3, l2, core, thread, in that order, each at most once)
// and the number of children each node of the level above has. "core"
// is required; a missing "thread" means one thread per core. CPUs are
// numbered depth first (thread siblings consecutive); package, node,
// cache and core IDs count 0, 1, ... across the machine. Errors name the
// item and what is allowed.
func Synthetic(shape string) (*results.TopoNode, error) {
	type lvl struct {
		kind string
		n    int
	}
	var lv []lvl
	last := -1
	total := 1
	for _, it := range strings.Split(shape, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(it), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		idx := slices.Index(shapeKinds, k)
		if !ok || idx < 0 {
			return nil, fmt.Errorf("topotree: shape item %q: want kind=count with kind one of %s", it, strings.Join(shapeKinds, ", "))
		}
		if idx <= last {
			return nil, fmt.Errorf("topotree: shape item %q: levels go %s, each once", it, strings.Join(shapeKinds, ", "))
		}
		last = idx
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > maxShapeCPUs {
			return nil, fmt.Errorf("topotree: shape item %q: count must be 1..%d", it, maxShapeCPUs)
		}
		total *= n
		if total > maxShapeCPUs {
			return nil, fmt.Errorf("topotree: shape %q: more than %d CPUs", shape, maxShapeCPUs)
		}
		lv = append(lv, lvl{k, n})
	}
	if !slices.ContainsFunc(lv, func(l lvl) bool { return l.kind == "core" }) {
		return nil, fmt.Errorf("topotree: shape %q: needs a core=N item", shape)
	}
	if lv[len(lv)-1].kind != "thread" {
		lv = append(lv, lvl{"thread", 1})
	}
	ids := map[string]int{}
	cpu := 0
	var build func(i int) *results.TopoNode
	build = func(i int) *results.TopoNode {
		l := lv[i]
		n := &results.TopoNode{Kind: l.kind}
		if l.kind == "thread" {
			n.ID = cpu
			n.CPUList = strconv.Itoa(cpu)
			cpu++
			return n
		}
		n.ID = ids[l.kind]
		ids[l.kind]++
		var cpus []int
		for range lv[i+1].n {
			c := build(i + 1)
			n.Children = append(n.Children, c)
			cs, _ := topology.ParseCPUList(c.CPUList)
			cpus = append(cpus, cs...)
		}
		n.CPUList = topology.FormatCPUList(cpus)
		return n
	}
	root := &results.TopoNode{Kind: "machine"}
	var cpus []int
	for range lv[0].n {
		c := build(0)
		root.Children = append(root.Children, c)
		cs, _ := topology.ParseCPUList(c.CPUList)
		cpus = append(cpus, cs...)
	}
	root.CPUList = topology.FormatCPUList(cpus)
	return root, nil
}
