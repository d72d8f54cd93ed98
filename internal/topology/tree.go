package topology

import (
	"cmp"
	"slices"

	"github.com/cpubench/bench/results"
)

// level is one level of the topology tree: a partition of the online CPUs.
type level struct {
	kind   string
	groups []*group       // sorted by id, then lowest CPU
	of     map[int]*group // CPU → its group
}

type group struct {
	id    int
	cpus  []int // ascending
	bytes int64 // cache size for l2/l3 groups
}

// partition groups CPUs by the key f returns; f also gives the group's id
// and cache size. If f says a CPU has no group (ok == false) the level does
// not cover the machine and partition returns nil.
func partition(kind string, cpus []*cpuTopo, f func(*cpuTopo) (key string, id int, bytes int64, ok bool)) *level {
	lv := &level{kind: kind, of: make(map[int]*group, len(cpus))}
	byKey := map[string]*group{}
	for _, t := range cpus {
		k, id, bytes, ok := f(t)
		if !ok {
			return nil
		}
		g := byKey[k]
		if g == nil {
			g = &group{id: id, bytes: bytes}
			byKey[k] = g
			lv.groups = append(lv.groups, g)
		}
		g.cpus = append(g.cpus, t.cpu) // cpus are visited in ascending order
		lv.of[t.cpu] = g
	}
	slices.SortFunc(lv.groups, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.cpus[0], b.cpus[0]))
	})
	return lv
}

// cachePartition is the level of the level-n Data or Unified caches
// ("l3" or "l2"), or nil if some online CPU has none. Groups are numbered
// 0, 1, ... in the order of their lowest CPU (sysfs cache ids are not read).
func cachePartition(n int, cpus []*cpuTopo) *level {
	kind := "l" + string(rune('0'+n))
	lv := partition(kind, cpus, func(t *cpuTopo) (string, int, int64, bool) {
		for _, cr := range t.caches {
			if cr.level == n && cr.typ != "Instruction" {
				return FormatCPUList(cr.shared), 0, cr.size, true
			}
		}
		return "", 0, 0, false
	})
	if lv == nil {
		return nil
	}
	slices.SortFunc(lv.groups, func(a, b *group) int { return cmp.Compare(a.cpus[0], b.cpus[0]) })
	for i, g := range lv.groups {
		g.id = i
	}
	return lv
}

// nestLevels orders the levels coarsest first (stable, so ties keep the
// canonical package, numa, l3, l2, core order) and keeps a level only if
// each of its groups lies within one group of the last level kept.
func nestLevels(levels []*level) []*level {
	slices.SortStableFunc(levels, func(a, b *level) int { return cmp.Compare(len(a.groups), len(b.groups)) })
	var kept []*level
	for _, lv := range levels {
		if len(kept) == 0 || refines(lv, kept[len(kept)-1]) {
			kept = append(kept, lv)
		}
	}
	return kept
}

func refines(child, parent *level) bool {
	for _, g := range child.groups {
		p := parent.of[g.cpus[0]]
		for _, c := range g.cpus[1:] {
			if parent.of[c] != p {
				return false
			}
		}
	}
	return true
}

// buildTree makes the machine node with the given levels below it and one
// "thread" leaf (ID = CPU number) per online CPU.
func buildTree(online []int, levels []*level) *results.TopoNode {
	root := &results.TopoNode{Kind: "machine", ID: 0, CPUList: FormatCPUList(online)}
	addChildren(root, online, levels)
	return root
}

func addChildren(n *results.TopoNode, cpus []int, levels []*level) {
	if len(levels) == 0 {
		for _, c := range cpus {
			n.Children = append(n.Children, &results.TopoNode{Kind: "thread", ID: c, CPUList: FormatCPUList([]int{c})})
		}
		return
	}
	in := make(map[int]bool, len(cpus))
	for _, c := range cpus {
		in[c] = true
	}
	lv := levels[0]
	for _, g := range lv.groups {
		if !in[g.cpus[0]] {
			continue
		}
		child := &results.TopoNode{Kind: lv.kind, ID: g.id, CPUList: FormatCPUList(g.cpus), CacheBytes: g.bytes}
		addChildren(child, g.cpus, levels[1:])
		n.Children = append(n.Children, child)
	}
}
