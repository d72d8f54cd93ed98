package topotree

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Transform is one tree transformation of Sandwich §5.2.
//
//   - group(n, t, d): under every node at depth d-1, the children at depth
//     d are gathered into groups of n (n ≥ 2, fewer than the children),
//     each group taking every t-th child of a block of n·t consecutive
//     children (t = 1: n neighbours; t > 1: interleaved), which inserts a
//     level of L(d)/n "group" nodes at depth d and moves the old level to
//     d+1. n·t must divide the number of children.
//   - remove(n, d): every node at depth d-1 loses its n right-most
//     children (those with the highest IDs: the last cores of a cluster,
//     the last node of a package), with everything below them; at least
//     one child must stay.
//
// Depths count from the root (0) of the tree the transform is applied to.
type Transform struct {
	Op    string `json:"op"` // "group" or "remove"
	N     int    `json:"n"`
	T     int    `json:"t,omitempty"` // group only
	Depth int    `json:"depth"`
}

func (x Transform) String() string {
	if x.Op == "group" {
		return fmt.Sprintf("group(%d,%d,%d)", x.N, x.T, x.Depth)
	}
	return fmt.Sprintf("remove(%d,%d)", x.N, x.Depth)
}

// Apply returns a new tree with x applied; t is not changed. Errors name
// the transform, what is wrong and what is allowed, e.g.
// "remove(48,3): each node at depth 2 (numa/l3) has 48 children; n must be 1..47".
func (t *Tree) Apply(x Transform) (*Tree, error) {
	switch x.Op {
	case "group":
		return t.group(x)
	case "remove":
		return t.remove(x)
	}
	return nil, fmt.Errorf("topotree: unknown transform %q (allowed: group(n,t,d), remove(n,d))", x.Op)
}

// parentsOf checks x's depth and returns the nodes at x.Depth-1 and
// their common number of children.
func (t *Tree) parentsOf(x Transform) ([]*Node, int, error) {
	leaf := t.LeafDepth()
	if x.Depth < 1 || x.Depth > leaf {
		return nil, 0, fmt.Errorf("topotree: %s: depth %d out of range (allowed: 1..%d; 0 is the root, %d the PUs)", x, x.Depth, leaf, leaf)
	}
	parents := t.Level(x.Depth - 1)
	k := len(parents[0].Children)
	for _, p := range parents[1:] {
		if len(p.Children) != k {
			return nil, 0, fmt.Errorf("topotree: %s: the nodes at depth %d (%s) have %d and %d children; transforms need a symmetric level", x, x.Depth-1, t.LevelKind(x.Depth-1), k, len(p.Children))
		}
	}
	return parents, k, nil
}

func (t *Tree) group(x Transform) (*Tree, error) {
	_, k, err := t.parentsOf(x)
	if err != nil {
		return nil, err
	}
	if x.N < 2 || x.N >= k || x.T < 1 || k%(x.N*x.T) != 0 {
		return nil, fmt.Errorf("topotree: %s: each node at depth %d (%s) has %d children; allowed (n,t): %s", x, x.Depth-1, t.LevelKind(x.Depth-1), k, groupChoices(k))
	}
	out := t.clone()
	out.Path = append(out.Path, x)
	id := 0
	for _, p := range out.Level(x.Depth - 1) {
		var groups []*Node
		for b := 0; b < k; b += x.N * x.T {
			for g := range x.T {
				gn := &Node{Kind: "group", ID: id}
				id++
				for i := range x.N {
					c := p.Children[b+g+i*x.T]
					gn.Children = append(gn.Children, c)
					gn.CPUs = append(gn.CPUs, c.CPUs...)
				}
				slices.Sort(gn.CPUs)
				groups = append(groups, gn)
			}
		}
		p.Children = groups
	}
	return out, nil
}

// groupChoices lists the (n,t) a level of k children allows.
func groupChoices(k int) string {
	var s []string
	for _, n := range groupSizes(k) {
		var ts []string
		for _, tt := range divisors(k / n) {
			ts = append(ts, strconv.Itoa(tt))
		}
		s = append(s, fmt.Sprintf("n=%d t∈{%s}", n, strings.Join(ts, ",")))
	}
	if len(s) == 0 {
		return fmt.Sprintf("none (%d has no divisor n with 2 ≤ n < %d)", k, k)
	}
	return strings.Join(s, "; ")
}

// divisors are the divisors of k, ascending (the strides t of a group of
// n among k children are the divisors of k/n).
func divisors(k int) []int {
	var out []int
	for d := 1; d <= k; d++ {
		if k%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// groupSizes are the n with 2 ≤ n < k and n | k.
func groupSizes(k int) []int {
	var out []int
	for _, d := range divisors(k) {
		if d >= 2 && d < k {
			out = append(out, d)
		}
	}
	return out
}

func (t *Tree) remove(x Transform) (*Tree, error) {
	_, k, err := t.parentsOf(x)
	if err != nil {
		return nil, err
	}
	if x.N < 1 || x.N >= k {
		return nil, fmt.Errorf("topotree: %s: each node at depth %d (%s) has %d children; n must be 1..%d", x, x.Depth-1, t.LevelKind(x.Depth-1), k, k-1)
	}
	out := t.clone()
	out.Path = append(out.Path, x)
	for _, p := range out.Level(x.Depth - 1) {
		p.Children = p.Children[:k-x.N]
	}
	recompute(out.Root)
	return out, nil
}

// ResolveDepth turns a depth argument into a depth of t: a number, or a
// level kind (machine, package, numa, l3, l2, core, thread, group; a
// component of a merged kind such as "numa/l3" matches), which names the
// shallowest level of that kind.
func (t *Tree) ResolveDepth(arg string) (int, error) {
	arg = strings.TrimSpace(arg)
	if d, err := strconv.Atoi(arg); err == nil {
		return d, nil
	}
	for d := 0; d <= t.LeafDepth(); d++ {
		for _, k := range strings.Split(t.LevelKind(d), "/") {
			if strings.EqualFold(k, arg) {
				return d, nil
			}
		}
	}
	return 0, fmt.Errorf("topotree: depth %q: not a number nor a level of this tree (levels: %s)", arg, t.levelNames())
}

func (t *Tree) levelNames() string {
	var s []string
	for d := 0; d <= t.LeafDepth(); d++ {
		s = append(s, fmt.Sprintf("%d %s", d, t.LevelKind(d)))
	}
	return strings.Join(s, ", ")
}

// Presets are the named transform lists of ApplySpec: the core-location
// experiments of Sandwich Fig. 3(a).
var Presets = []string{"idle-per-l2", "idle-per-l3", "idle-per-node", "sc-rm[:N]", "numa-rm[:N]", "fast-numa"}

// ApplySpec applies a transform list to t, left to right, each transform
// seeing the tree the previous one made. spec is comma- or
// space-separated items, each
//
//   - group(n,t,d) or remove(n,d), d a depth number or a level kind
//     (see ResolveDepth) of the tree at that point;
//   - idle-per-l2, idle-per-l3, idle-per-node: one core left idle in every
//     L2 cluster, L3 cluster or NUMA node: remove(1, depth of the cores)
//     where the cores are the children of that level's nodes;
//   - sc-rm[:N] (N = 4): group(N,1,core) remove(1,core), one core idle in
//     every N neighbouring cores (Fig. 3(a) SC-RM, the Kunpeng-920 L3-tag
//     clusters of Fig. 5);
//   - numa-rm[:N] (N = 1): remove(N,core), the last N cores of each parent
//     of the cores (Fig. 3(a) NUMA-RM when that parent is the node);
//   - fast-numa: remove(1,numa), the last node of each package (the odd
//     nodes of Fig. 3(a) "Fast NUMA").
//
// Errors name the item and what is allowed.
func (t *Tree) ApplySpec(spec string) (*Tree, error) {
	items, err := splitSpec(spec)
	if err != nil {
		return nil, err
	}
	cur := t
	for _, it := range items {
		xs, err := cur.expand(it)
		if err != nil {
			return nil, err
		}
		for _, x := range xs {
			if cur, err = cur.Apply(x); err != nil {
				return nil, fmt.Errorf("%w (in %q)", err, it)
			}
		}
	}
	return cur, nil
}

// splitSpec splits at commas and spaces outside parentheses.
func splitSpec(spec string) ([]string, error) {
	var items []string
	depth, start := 0, 0
	flush := func(i int) {
		if s := strings.TrimSpace(spec[start:i]); s != "" {
			items = append(items, s)
		}
		start = i + 1
	}
	for i, r := range spec {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("topotree: transform list %q: unbalanced ')'", spec)
			}
		case (r == ',' || r == ' ' || r == ';') && depth == 0:
			flush(i)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("topotree: transform list %q: unbalanced '('", spec)
	}
	flush(len(spec))
	if len(items) == 0 {
		return nil, fmt.Errorf("topotree: transform list %q is empty (allowed: group(n,t,d), remove(n,d), %s)", spec, strings.Join(Presets, ", "))
	}
	return items, nil
}

// expand turns one item of a spec into transforms on cur.
func (cur *Tree) expand(it string) ([]Transform, error) {
	name, arg, hasArg := strings.Cut(it, ":")
	num := func(def int) (int, error) {
		if !hasArg {
			return def, nil
		}
		v, err := strconv.Atoi(arg)
		if err != nil || v < 1 {
			return 0, fmt.Errorf("topotree: %q: %q is not a count ≥ 1", it, arg)
		}
		return v, nil
	}
	switch strings.ToLower(name) {
	case "idle-per-l2", "idle-per-l3", "idle-per-node":
		if hasArg {
			break
		}
		kind := strings.TrimPrefix(strings.ToLower(name), "idle-per-")
		if kind == "node" {
			kind = "numa"
		}
		d, err := cur.ResolveDepth(kind)
		if err != nil {
			return nil, fmt.Errorf("topotree: %s: this tree has no %s level (levels: %s)", it, kind, cur.levelNames())
		}
		if hasKind(cur.LevelKind(d), "core") {
			return nil, fmt.Errorf("topotree: %s: each %s here holds one core (level %d %s); there is no core to leave idle per %s", it, kind, d, cur.LevelKind(d), kind)
		}
		if !hasKind(cur.LevelKind(d+1), "core") {
			return nil, fmt.Errorf("topotree: %s: the children of the %s nodes are %s, not cores, so one idle core per %s is not one remove (levels: %s); use remove(n,d)", it, kind, cur.LevelKind(d+1), kind, cur.levelNames())
		}
		return []Transform{{Op: "remove", N: 1, Depth: d + 1}}, nil
	case "sc-rm":
		n, err := num(4)
		if err != nil {
			return nil, err
		}
		d, err := cur.ResolveDepth("core")
		if err != nil {
			return nil, fmt.Errorf("topotree: %s: %w", it, err)
		}
		return []Transform{{Op: "group", N: n, T: 1, Depth: d}, {Op: "remove", N: 1, Depth: d + 1}}, nil
	case "numa-rm":
		n, err := num(1)
		if err != nil {
			return nil, err
		}
		d, err := cur.ResolveDepth("core")
		if err != nil {
			return nil, fmt.Errorf("topotree: %s: %w", it, err)
		}
		return []Transform{{Op: "remove", N: n, Depth: d}}, nil
	case "fast-numa":
		if hasArg {
			break
		}
		d, err := cur.ResolveDepth("numa")
		if err != nil {
			return nil, fmt.Errorf("topotree: %s: %w", it, err)
		}
		return []Transform{{Op: "remove", N: 1, Depth: d}}, nil
	}
	op, rest, ok := strings.Cut(it, "(")
	if !ok || !strings.HasSuffix(rest, ")") {
		return nil, fmt.Errorf("topotree: unknown transform %q (allowed: group(n,t,d), remove(n,d), %s)", it, strings.Join(Presets, ", "))
	}
	args := strings.Split(strings.TrimSuffix(rest, ")"), ",")
	op = strings.ToLower(strings.TrimSpace(op))
	want := map[string]int{"group": 3, "remove": 2}[op]
	if want == 0 {
		return nil, fmt.Errorf("topotree: unknown transform %q (allowed: group(n,t,d), remove(n,d), %s)", it, strings.Join(Presets, ", "))
	}
	if len(args) != want {
		return nil, fmt.Errorf("topotree: %q: %s takes %d arguments, got %d", it, op, want, len(args))
	}
	var ints []int
	for _, a := range args[:want-1] {
		v, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return nil, fmt.Errorf("topotree: %q: %q is not an integer", it, strings.TrimSpace(a))
		}
		ints = append(ints, v)
	}
	d, err := cur.ResolveDepth(args[want-1])
	if err != nil {
		return nil, fmt.Errorf("%w (in %q)", err, it)
	}
	if op == "group" {
		return []Transform{{Op: "group", N: ints[0], T: ints[1], Depth: d}}, nil
	}
	return []Transform{{Op: "remove", N: ints[0], Depth: d}}, nil
}

func hasKind(kind, k string) bool {
	for _, p := range strings.Split(kind, "/") {
		if p == k {
			return true
		}
	}
	return false
}
