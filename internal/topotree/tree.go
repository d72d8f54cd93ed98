package topotree

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/internal/topology"
	"github.com/cpubench/bench/results"
)

// Node is a node of a TopoTree. Leaves are processing units (PUs: the
// logical CPUs the kernel numbers); an inner node stands for what its
// descendants share (a package, a NUMA node, an L3, a latent group found
// by Group).
type Node struct {
	// Kind is the level's kind: machine, package, numa, l3, l2, core,
	// thread, or group (inserted by Group). Levels whose every node has
	// exactly one child are merged with that child at construction, and
	// their kinds joined with "/" (e.g. "numa/l3", "l2/core/thread").
	Kind string `json:"kind"`
	// ID is the topology's ID of the node (package id, node number, CPU
	// number of a leaf); a group's ID numbers the groups of its level 0, 1, ...
	ID int `json:"id"`
	// CPUs are the PUs below the node, ascending.
	CPUs     []int   `json:"cpus"`
	Children []*Node `json:"children,omitempty"`
}

// Tree is a TopoTree: the base tree of a machine (Sandwich §5.1) or one
// derived from it by the transforms in Path (§5.2).
type Tree struct {
	Root *Node
	// Path lists the transforms applied to the base tree, in order.
	Path []Transform
	// numa maps each CPU of the base tree to its NUMA node (-1: unknown).
	numa map[int]int
	// all are the PUs of the base tree, ascending.
	all []int
}

// FromTopology makes the base TopoTree from the probe's topology tree
// (results.Topology.Tree, Sandwich §5.1). Every node's CPU list must parse
// and equal the union of its children's, every leaf must be at the same
// depth, and a CPU must appear under one leaf only; errors say which node
// breaks this. Levels whose every node has one child are merged into
// that child's level (kinds joined with "/"), so every level of the
// result is a real branching of the hierarchy.
func FromTopology(root *results.TopoNode) (*Tree, error) {
	if root == nil {
		return nil, errors.New("topotree: the profile has no topology tree")
	}
	numa := map[int]int{}
	seen := map[int]bool{}
	var conv func(n *results.TopoNode, path string) (*Node, error)
	conv = func(n *results.TopoNode, path string) (*Node, error) {
		cpus, err := topology.ParseCPUList(n.CPUList)
		if err != nil {
			return nil, fmt.Errorf("topotree: node %s: %w", path, err)
		}
		out := &Node{Kind: n.Kind, ID: n.ID, CPUs: cpus}
		if n.Kind == "numa" {
			for _, c := range cpus {
				numa[c] = n.ID
			}
		}
		if len(n.Children) == 0 {
			if len(cpus) != 1 {
				return nil, fmt.Errorf("topotree: leaf %s has CPUs %s; a leaf is one PU", path, n.CPUList)
			}
			if seen[cpus[0]] {
				return nil, fmt.Errorf("topotree: CPU %d appears under two leaves", cpus[0])
			}
			seen[cpus[0]] = true
			return out, nil
		}
		var union []int
		for _, c := range n.Children {
			if c == nil {
				return nil, fmt.Errorf("topotree: node %s has a null child", path)
			}
			cn, err := conv(c, fmt.Sprintf("%s/%s %d", path, c.Kind, c.ID))
			if err != nil {
				return nil, err
			}
			out.Children = append(out.Children, cn)
			union = append(union, cn.CPUs...)
		}
		slices.Sort(union)
		if !slices.Equal(union, cpus) {
			return nil, fmt.Errorf("topotree: node %s has CPUs %s but its children hold %s", path, n.CPUList, topology.FormatCPUList(union))
		}
		return out, nil
	}
	r, err := conv(root, root.Kind+" "+strconv.Itoa(root.ID))
	if err != nil {
		return nil, err
	}
	t := &Tree{Root: r, numa: map[int]int{}, all: slices.Clone(r.CPUs)}
	for _, c := range r.CPUs {
		if id, ok := numa[c]; ok {
			t.numa[c] = id
		} else {
			t.numa[c] = -1
		}
	}
	if _, err := t.leafDepth(); err != nil {
		return nil, err
	}
	t.Root = merge(t.Root)
	return t, nil
}

// merge joins every level whose nodes all have exactly one child with the
// level below it, top down.
func merge(root *Node) *Node {
	// The root itself first.
	for len(root.Children) == 1 {
		c := root.Children[0]
		root = &Node{Kind: root.Kind + "/" + c.Kind, ID: root.ID, CPUs: root.CPUs, Children: c.Children}
	}
	for d := 1; ; {
		lv := levelNodes(root, d)
		if len(lv) == 0 {
			return root
		}
		single := true
		for _, n := range lv {
			if len(n.Children) != 1 {
				single = false
				break
			}
		}
		if !single {
			d++
			continue
		}
		for _, n := range lv {
			c := n.Children[0]
			n.Kind += "/" + c.Kind
			n.Children = c.Children
		}
	}
}

// levelNodes lists the nodes at depth d (root: 0), left to right.
func levelNodes(root *Node, d int) []*Node {
	lv := []*Node{root}
	for range d {
		var next []*Node
		for _, n := range lv {
			next = append(next, n.Children...)
		}
		lv = next
	}
	return lv
}

// Level returns the nodes at depth d (the root is depth 0), left to right.
func (t *Tree) Level(d int) []*Node { return levelNodes(t.Root, d) }

// LeafDepth is the depth of the leaves (PUs).
func (t *Tree) LeafDepth() int { d, _ := t.leafDepth(); return d }

func (t *Tree) leafDepth() (int, error) {
	depth := -1
	var walk func(n *Node, d int) error
	walk = func(n *Node, d int) error {
		if len(n.Children) == 0 {
			if depth >= 0 && depth != d {
				return fmt.Errorf("topotree: leaves at depths %d and %d (CPU %d); every PU must be at the same depth", depth, d, n.CPUs[0])
			}
			depth = d
			return nil
		}
		for _, c := range n.Children {
			if err := walk(c, d+1); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk(t.Root, 0)
	return depth, err
}

// Active are the PUs the tree keeps, ascending.
func (t *Tree) Active() []int { return slices.Clone(t.Root.CPUs) }

// Idle are the PUs of the base tree that removes have taken out, ascending.
func (t *Tree) Idle() []int {
	in := make(map[int]bool, len(t.Root.CPUs))
	for _, c := range t.Root.CPUs {
		in[c] = true
	}
	var out []int
	for _, c := range t.all {
		if !in[c] {
			out = append(out, c)
		}
	}
	return out
}

// NUMANode is the NUMA node of CPU c in the base tree (-1: unknown).
func (t *Tree) NUMANode(c int) int {
	if id, ok := t.numa[c]; ok {
		return id
	}
	return -1
}

// PathString is the transforms as "group(4,1,3) remove(1,4)", or "base".
func (t *Tree) PathString() string {
	if len(t.Path) == 0 {
		return "base"
	}
	s := make([]string, len(t.Path))
	for i, p := range t.Path {
		s[i] = p.String()
	}
	return strings.Join(s, " ")
}

// LevelKind is the kind of the nodes at depth d ("" past the leaves); a
// level whose nodes differ in kind gives their kinds joined with "|".
func (t *Tree) LevelKind(d int) string {
	var kinds []string
	for _, n := range t.Level(d) {
		if !slices.Contains(kinds, n.Kind) {
			kinds = append(kinds, n.Kind)
		}
	}
	return strings.Join(kinds, "|")
}

// Hash is the tree's Merkle hash (Sandwich §5.2, "Equivalent TopoTrees"):
// a leaf hashes its CPU; an inner node hashes its CPUs and its children's
// hashes in order. Kinds and IDs do not enter it, so two transform paths
// that nest the same CPU sets the same way have the same hash. Hex, 64
// characters.
func (t *Tree) Hash() string {
	h := nodeHash(t.Root)
	return hex.EncodeToString(h[:])
}

func nodeHash(n *Node) [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(len(n.CPUs)))
	h.Write(b[:])
	for _, c := range n.CPUs {
		binary.LittleEndian.PutUint64(b[:], uint64(c))
		h.Write(b[:])
	}
	for _, c := range n.Children {
		ch := nodeHash(c)
		h.Write(ch[:])
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// clone copies the tree deeply (the NUMA map and base CPUs are shared:
// they never change).
func (t *Tree) clone() *Tree {
	var cp func(n *Node) *Node
	cp = func(n *Node) *Node {
		o := &Node{Kind: n.Kind, ID: n.ID, CPUs: slices.Clone(n.CPUs)}
		for _, c := range n.Children {
			o.Children = append(o.Children, cp(c))
		}
		return o
	}
	return &Tree{Root: cp(t.Root), Path: slices.Clone(t.Path), numa: t.numa, all: t.all}
}

// recompute sets every inner node's CPUs to the union of its children's.
func recompute(n *Node) {
	if len(n.Children) == 0 {
		return
	}
	var u []int
	for _, c := range n.Children {
		recompute(c)
		u = append(u, c.CPUs...)
	}
	slices.Sort(u)
	n.CPUs = u
}

// LevelInfo describes one depth of a tree for display.
type LevelInfo struct {
	Depth int    `json:"depth"`
	Kind  string `json:"kind"`
	Nodes int    `json:"nodes"`
	// Children is the number of children of each node (min and max; equal
	// in a symmetric tree).
	ChildrenMin int `json:"children_min"`
	ChildrenMax int `json:"children_max"`
	// PUs is the number of PUs under each node (min and max).
	PUsMin int `json:"pus_min"`
	PUsMax int `json:"pus_max"`
	// CPULists are the nodes' CPUs in the kernel's cpulist syntax.
	CPULists []string `json:"cpulists"`
}

// Levels describes every depth of the tree, root first.
func (t *Tree) Levels() []LevelInfo {
	var out []LevelInfo
	for d := 0; ; d++ {
		lv := t.Level(d)
		if len(lv) == 0 {
			return out
		}
		li := LevelInfo{Depth: d, Kind: t.LevelKind(d), Nodes: len(lv), ChildrenMin: -1, PUsMin: -1}
		for _, n := range lv {
			li.ChildrenMin, li.ChildrenMax = minMax(li.ChildrenMin, li.ChildrenMax, len(n.Children))
			li.PUsMin, li.PUsMax = minMax(li.PUsMin, li.PUsMax, len(n.CPUs))
			li.CPULists = append(li.CPULists, topology.FormatCPUList(n.CPUs))
		}
		out = append(out, li)
	}
}

func minMax(lo, hi, v int) (int, int) {
	if lo < 0 || v < lo {
		lo = v
	}
	return lo, max(hi, v)
}

// Restrict returns the tree cut down to cpus (e.g. the CPUs a process may
// run on): leaves outside it are dropped, nodes left empty with them, and
// levels left with one child each merged as FromTopology does. Every CPU of
// cpus must be a PU of t; the error names those that are not and the
// tree's CPUs ("topotree: CPUs 200-201 are outside the allowed set 0-191").
// An empty cpus is an error too.
func (t *Tree) Restrict(cpus []int) (*Tree, error) {
	if len(cpus) == 0 {
		return nil, errors.New("topotree: an empty CPU set leaves no PU")
	}
	in := map[int]bool{}
	for _, c := range t.Root.CPUs {
		in[c] = true
	}
	var outside []int
	keep := map[int]bool{}
	for _, c := range cpus {
		if !in[c] {
			outside = append(outside, c)
		}
		keep[c] = true
	}
	if len(outside) > 0 {
		return nil, fmt.Errorf("topotree: CPUs %s are outside the allowed set %s", topology.FormatCPUList(outside), topology.FormatCPUList(t.Root.CPUs))
	}
	out := t.clone()
	var prune func(n *Node) bool // reports whether n keeps a PU
	prune = func(n *Node) bool {
		if len(n.Children) == 0 {
			return keep[n.CPUs[0]]
		}
		var kids []*Node
		for _, c := range n.Children {
			if prune(c) {
				kids = append(kids, c)
			}
		}
		n.Children = kids
		return len(kids) > 0
	}
	prune(out.Root)
	recompute(out.Root)
	out.all = slices.Clone(out.Root.CPUs)
	out.Root = merge(out.Root)
	return out, nil
}
