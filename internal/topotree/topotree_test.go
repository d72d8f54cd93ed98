package topotree

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/topology"
)

func synth(t *testing.T, shape string) *Tree {
	t.Helper()
	r, err := Synthetic(shape)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func snapshot(t *testing.T, name string) *Tree {
	t.Helper()
	dir := "../topology/testdata/" + name
	topo, err := topology.ReadTopology(topology.Roots{Sys: dir + "/sys", Proc: dir + "/proc"})
	if err != nil {
		t.Skipf("snapshot %s: %v", name, err)
	}
	tr, err := FromTopology(topo.Tree)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func levelsString(tr *Tree) string {
	var s []string
	for _, l := range tr.Levels() {
		s = append(s, fmt.Sprintf("%s×%d", l.Kind, l.Nodes))
	}
	return strings.Join(s, " ")
}

func list(c []int) string { return topology.FormatCPUList(c) }

// sandwichKunpeng is Sandwich's machine of Figs. 3(a), 5 and 6: four
// Kunpeng-920 CPUs, each two SCCLs (NUMA nodes) of 24 cores.
const sandwichKunpeng = "package=4,numa=2,core=24"

func TestSyntheticLevels(t *testing.T) {
	tr := synth(t, sandwichKunpeng)
	if got, want := levelsString(tr), "machine×1 package×4 numa×8 core/thread×192"; got != want {
		t.Errorf("levels %s, want %s", got, want)
	}
	if tr.LeafDepth() != 3 || len(tr.Active()) != 192 || len(tr.Idle()) != 0 {
		t.Errorf("leaf depth %d, active %d, idle %d", tr.LeafDepth(), len(tr.Active()), len(tr.Idle()))
	}
	tr = synth(t, "package=1,numa=1,l3=2,core=4,thread=2")
	if got, want := levelsString(tr), "machine/package/numa×1 l3×2 core×8 thread×16"; got != want {
		t.Errorf("levels %s, want %s", got, want)
	}
}

// TestFig6 checks the worked example of Sandwich Figs. 5 and 6: group
// every 4 cores of an SCCL into a CCL (the latent L3-tag cluster), remove
// the last core of each CCL, and read the tree at the SCCL and CCL
// cross-sections.
func TestFig6(t *testing.T) {
	base := synth(t, sandwichKunpeng)
	tr, err := base.ApplySpec("group(4,1,core) remove(1,core)")
	if err != nil {
		t.Fatal(err)
	}
	if tr.PathString() != "group(4,1,3) remove(1,4)" {
		t.Errorf("path %s", tr.PathString())
	}
	if got, want := levelsString(tr), "machine×1 package×4 numa×8 group×48 core/thread×144"; got != want {
		t.Errorf("levels %s, want %s", got, want)
	}
	if got, want := list(tr.Idle()), "3,7,11,15,19,23"; !strings.HasPrefix(got, want+",") {
		t.Errorf("idle %s, want prefix %s", got, want)
	}
	if n := len(tr.Idle()); n != 48 {
		t.Errorf("%d idle PUs, want 48 (6 per node)", n)
	}
	cs := Configs([]*Tree{tr}, Limits{})
	byKind := map[string]Config{}
	for _, c := range cs.Configs {
		byKind[c.Kind] = c
	}
	// SCCL cross-section: 8 processes, NUMA nodes [0..7], 3 of every 4
	// cores of each node (18 PUs; the figure's prose says 16).
	sccl := byKind["numa"]
	if sccl.Processes != 8 || sccl.PUsMin != 18 || sccl.PUsMax != 18 || sccl.NodesString() != "0 1 2 3 4 5 6 7" || sccl.Phase != "decode" {
		t.Errorf("SCCL cross-section %+v nodes %s", sccl, sccl.NodesString())
	}
	if got := list(sccl.CPUs[0]); got != "0-2,4-6,8-10,12-14,16-18,20-22" {
		t.Errorf("process 0 CPUs %s", got)
	}
	// CCL cross-section: 48 processes of 3 cores, 6 per node (the caption's
	// "8 × '0'" would be 64 processes).
	ccl := byKind["group"]
	if ccl.Processes != 48 || ccl.PUsMin != 3 || ccl.NodesString() != "0×6 1×6 2×6 3×6 4×6 5×6 6×6 7×6" {
		t.Errorf("CCL cross-section %d processes, %d PUs, nodes %s", ccl.Processes, ccl.PUsMin, ccl.NodesString())
	}
	// The root and PU cross-sections are configurations too: 1 process of
	// 144, and 144 processes of 1.
	if c := byKind["machine"]; c.Processes != 1 || c.PUsMin != 144 {
		t.Errorf("root cross-section %+v", c)
	}
	if c := byKind["package"]; c.Processes != 4 || c.NodesString() != "0,1 2,3 4,5 6,7" {
		t.Errorf("package cross-section %d processes nodes %s", c.Processes, c.NodesString())
	}
	// Operator limits: a model with 32 query and 8 KV heads allows TP 1, 2,
	// 4, 8 here (not 48 or 144).
	lim := Configs([]*Tree{tr}, Limits{Heads: 32, KVHeads: 8})
	var tps []int
	for _, c := range lim.Configs {
		tps = append(tps, c.TP)
	}
	if !slices.Equal(tps, []int{1, 4, 8}) || lim.Limited != 2 {
		t.Errorf("TP degrees %v (limited %d), want [1 4 8] with 2 limited", tps, lim.Limited)
	}
}

// TestFig3Removes checks the core-location schemes of Sandwich Fig. 3(a) as
// remove transforms on its 192-core Kunpeng.
func TestFig3Removes(t *testing.T) {
	base := synth(t, sandwichKunpeng)
	for _, tc := range []struct {
		spec, path, idlePrefix string
		idle                   int
	}{
		// SC-RM: one core of every 4.
		{"sc-rm", "group(4,1,3) remove(1,4)", "3,7,11,", 48},
		// NUMA-RM: as many cores, the last ones of each node.
		{"numa-rm:6", "remove(6,3)", "18-23,42-47,", 48},
		// Fast NUMA: the even nodes only (the last node of each CPU removed).
		{"fast-numa", "remove(1,2)", "24-47,72-95,", 96},
		{"idle-per-node", "remove(1,3)", "23,47,71,", 8},
		{"idle-per-l3", "remove(1,3)", "23,47,", 8},
	} {
		tr, err := base.ApplySpec(tc.spec)
		if tc.spec == "idle-per-l3" {
			// This synthetic machine has no l3 level.
			if err == nil || !strings.Contains(err.Error(), "no l3 level") {
				t.Errorf("%s: err %v, want no l3 level", tc.spec, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if tr.PathString() != tc.path || len(tr.Idle()) != tc.idle || !strings.HasPrefix(list(tr.Idle()), tc.idlePrefix) {
			t.Errorf("%s: path %s, idle %d %s; want %s, %d %s...", tc.spec, tr.PathString(), len(tr.Idle()), list(tr.Idle()), tc.path, tc.idle, tc.idlePrefix)
		}
		if len(tr.Active())+len(tr.Idle()) != 192 {
			t.Errorf("%s: active %d + idle %d", tc.spec, len(tr.Active()), len(tr.Idle()))
		}
	}
}

// TestSnapshots reads the shipped sysfs snapshots of multi-node machines.
func TestSnapshots(t *testing.T) {
	kp := snapshot(t, "linux-arm64-kunpeng-920-4n")
	if got, want := levelsString(kp), "machine×1 package×2 numa/l3×4 l2/core/thread×192"; got != want {
		t.Errorf("kunpeng levels %s, want %s", got, want)
	}
	for spec, idle := range map[string]string{"idle-per-node": "47,95,143,191", "idle-per-l3": "47,95,143,191", "fast-numa": "48-95,144-191"} {
		tr, err := kp.ApplySpec(spec)
		if err != nil {
			t.Errorf("kunpeng %s: %v", spec, err)
		} else if list(tr.Idle()) != idle {
			t.Errorf("kunpeng %s: idle %s, want %s", spec, list(tr.Idle()), idle)
		}
	}
	if _, err := kp.ApplySpec("idle-per-l2"); err == nil || !strings.Contains(err.Error(), "each l2 here holds one core") {
		t.Errorf("kunpeng idle-per-l2: %v", err)
	}
	cs := Configs([]*Tree{kp}, Limits{Heads: 16, KVHeads: 8})
	var got []string
	for _, c := range cs.Configs {
		got = append(got, fmt.Sprintf("%s:%d×%d[%s]", c.Kind, c.Processes, c.PUsMin, c.NodesString()))
	}
	if want := "machine:1×192[0,1,2,3] package:2×96[0,1 2,3] numa/l3:4×48[0 1 2 3]"; strings.Join(got, " ") != want {
		t.Errorf("kunpeng configs %v, want %s", got, want)
	}

	xe := snapshot(t, "linux-amd64-xeon-gold-6248-2s")
	t.Logf("xeon levels: %s", levelsString(xe))
	tr, err := xe.ApplySpec("idle-per-node")
	if err != nil {
		t.Fatalf("xeon idle-per-node: %v", err)
	}
	// One core (both of its threads) per node.
	if n := len(tr.Idle()); n != 4 {
		t.Errorf("xeon idle-per-node: idle %s", list(tr.Idle()))
	}
}

func TestErrors(t *testing.T) {
	base := synth(t, sandwichKunpeng)
	for spec, want := range map[string]string{
		"foo(1,2)":           `unknown transform "foo(1,2)" (allowed: group(n,t,d), remove(n,d), idle-per-l2`,
		"shuffle":            `unknown transform "shuffle"`,
		"group(5,1,core)":    "group(5,1,3): each node at depth 2 (numa) has 24 children; allowed (n,t): n=2 t∈{1,2,3,4,6,12}",
		"remove(24,core)":    "remove(24,3): each node at depth 2 (numa) has 24 children; n must be 1..23",
		"remove(1,9)":        "remove(1,9): depth 9 out of range (allowed: 1..3",
		"remove(1,socket)":   `depth "socket": not a number nor a level of this tree (levels: 0 machine, 1 package, 2 numa, 3 core/thread)`,
		"remove(1)":          "remove takes 2 arguments, got 1",
		"group(2,x,core)":    `"x" is not an integer`,
		"sc-rm:0":            `"0" is not a count ≥ 1`,
		"sc-rm:5":            "group(5,1,3)",
		"remove(1,core":      "unbalanced '('",
		"":                   "is empty",
		"idle-per-l2":        "no l2 level",
		"remove(1,0)":        "depth 0 out of range",
		"group(2,1,package)": "",
	} {
		_, err := base.ApplySpec(spec)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", spec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want it to contain %q", spec, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error has several lines", spec)
		}
	}
	if _, err := Synthetic("core=0"); err == nil {
		t.Error("core=0 accepted")
	}
	if _, err := Synthetic("numa=2,package=2,core=2"); err == nil {
		t.Error("out-of-order shape accepted")
	}
	if _, err := Synthetic("package=2"); err == nil {
		t.Error("shape without cores accepted")
	}
	if _, err := Synthetic("package=1000,core=1000"); err == nil {
		t.Error("huge shape accepted")
	}
}

// TestHashEquivalence: different transform paths to the same tree have the
// same hash (§5.2), and different trees differ.
func TestHashEquivalence(t *testing.T) {
	base := synth(t, sandwichKunpeng)
	apply := func(spec string) *Tree {
		tr, err := base.ApplySpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	same := [][2]string{
		{"remove(1,core) remove(1,core)", "remove(2,core)"},
		// 24 cores → 4 groups of 6 → pairs within: the same as pairs first,
		// then the pairs in threes.
		{"group(6,1,3) group(2,1,4)", "group(2,1,3) group(3,1,3)"},
		{"group(2,1,package) remove(1,numa)", "remove(1,numa) group(2,1,package)"},
	}
	for _, p := range same {
		if a, b := apply(p[0]), apply(p[1]); a.Hash() != b.Hash() {
			t.Errorf("%s and %s hash differently", p[0], p[1])
		}
	}
	if apply("group(2,1,core)").Hash() == apply("group(2,2,core)").Hash() {
		t.Error("stride 1 and 2 groups hash the same")
	}
	if apply("remove(2,core)").Hash() == base.Hash() {
		t.Error("a remove does not change the hash")
	}
	// Apply leaves its input alone.
	h := base.Hash()
	apply("sc-rm")
	if base.Hash() != h || len(base.Active()) != 192 {
		t.Error("ApplySpec changed the base tree")
	}
}

// TestEnumerateSmall checks the enumeration on a 4-core machine by hand.
func TestEnumerateSmall(t *testing.T) {
	base := synth(t, "package=1,numa=1,core=4")
	e := Enumerate(base, EnumOptions{})
	var grouped, removed []string
	for _, tr := range e.Grouped {
		grouped = append(grouped, tr.PathString())
	}
	for _, tr := range e.Removed {
		removed = append(removed, tr.PathString()+"="+list(tr.Active()))
	}
	if want := []string{"base", "group(2,1,1)", "group(2,2,1)"}; !slices.Equal(grouped, want) {
		t.Errorf("grouped %v, want %v", grouped, want)
	}
	want := []string{"remove(1,1)=0-2", "remove(2,1)=0-1", "remove(3,1)=0",
		"group(2,1,1) remove(1,1)=0-1", "group(2,1,1) remove(1,2)=0,2",
		"group(2,2,1) remove(1,1)=0,2", "group(2,2,1) remove(1,2)=0-1"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	cs := Configs(append(e.Grouped, e.Removed...), Limits{})
	var got []string
	for _, c := range cs.Configs {
		var g []string
		for _, cp := range c.CPUs {
			g = append(g, list(cp))
		}
		got = append(got, c.Phase[:1]+":"+strings.Join(g, "|"))
	}
	wantC := []string{"p:0-3", "p:0|1|2|3", "p:0-1|2-3", "p:0,2|1,3",
		"d:0-2", "d:0|1|2", "d:0-1", "d:0|1", "d:0",
		"d:0,2", "d:0|2"}
	if !slices.Equal(got, wantC) {
		t.Errorf("configs %v, want %v", got, wantC)
	}
	if cs.Duplicates == 0 || e.Duplicates != 0 {
		t.Errorf("config duplicates %d, tree duplicates %d", cs.Duplicates, e.Duplicates)
	}
}

// TestEnumerateKunpeng bounds the search on the 192-core machine and
// checks the pruning hook and MaxTrees.
func TestEnumerateKunpeng(t *testing.T) {
	base := synth(t, sandwichKunpeng)
	e := Enumerate(base, EnumOptions{})
	// Groups on 4 packages: n=2, t∈{1,2}; on 24 cores: 21 (n,t) pairs.
	if len(e.Grouped) != 1+2+21 {
		t.Errorf("%d grouped trees, want 24", len(e.Grouped))
	}
	for _, tr := range e.Removed {
		if len(tr.Path) == 0 || tr.Path[len(tr.Path)-1].Op != "remove" || len(tr.Idle()) == 0 {
			t.Fatalf("removed tree %s has no remove or no idle PU", tr.PathString())
		}
	}
	var fig5 bool
	for _, tr := range e.Removed {
		fig5 = fig5 || tr.PathString() == "group(4,1,3) remove(1,4)"
	}
	if !fig5 {
		t.Error("the Fig. 5 tree group(4,1,3) remove(1,4) is not enumerated")
	}
	two := Enumerate(base, EnumOptions{MaxRemoves: 2, Keep: func(p, c *Tree) bool { return len(c.Idle()) <= 8 }})
	if two.Pruned == 0 || two.Duplicates == 0 {
		t.Errorf("pruned %d, duplicates %d", two.Pruned, two.Duplicates)
	}
	small := Enumerate(base, EnumOptions{MaxTrees: 10})
	if !small.Truncated || len(small.Grouped)+len(small.Removed) != 10 {
		t.Errorf("MaxTrees 10: truncated %v, %d trees", small.Truncated, len(small.Grouped)+len(small.Removed))
	}
}

func TestRestrict(t *testing.T) {
	base := synth(t, sandwichKunpeng)
	tr, err := base.Restrict([]int{0, 1, 2, 3, 24, 25, 26, 27})
	if err != nil {
		t.Fatal(err)
	}
	// One package left: machine/package merged; two nodes of 4 cores.
	if got, want := levelsString(tr), "machine/package×1 numa×2 core/thread×8"; got != want {
		t.Errorf("levels %s, want %s", got, want)
	}
	if len(tr.Idle()) != 0 || list(tr.Active()) != "0-3,24-27" {
		t.Errorf("active %s idle %s", list(tr.Active()), list(tr.Idle()))
	}
	if _, err := base.Restrict([]int{0, 191, 192, 200, 201}); err == nil || err.Error() != "topotree: CPUs 192,200-201 are outside the allowed set 0-191" {
		t.Errorf("outside: %v", err)
	}
	if _, err := base.Restrict(nil); err == nil {
		t.Error("empty set accepted")
	}
	// An asymmetric cut: transforms on the uneven level say so.
	tr, err = base.Restrict([]int{0, 1, 2, 24})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ApplySpec("remove(1,core)"); err == nil || !strings.Contains(err.Error(), "have 3 and 1 children; transforms need a symmetric level") {
		t.Errorf("asymmetric remove: %v", err)
	}
}

// TestFig3b: Sandwich Fig. 3(b) compares TP 2, 4, 8 and 16 on a 2-socket
// EPYC 7H11 (64 cores and 16 LLCs of 4 cores per socket, one node per
// socket); each is a cross-section of the tree once the LLCs are grouped
// (TP 8: groups of 4 LLCs), with every core active (prefill trees).
func TestFig3b(t *testing.T) {
	base := synth(t, "package=2,numa=1,l3=16,core=4")
	if got, want := levelsString(base), "machine×1 package/numa×2 l3×32 core/thread×128"; got != want {
		t.Fatalf("levels %s, want %s", got, want)
	}
	e := Enumerate(base, EnumOptions{})
	cs := Configs(e.Grouped, Limits{})
	byTP := map[int]Config{}
	for _, c := range cs.Configs {
		if _, ok := byTP[c.TP]; !ok {
			byTP[c.TP] = c
		}
	}
	for tp, want := range map[int]string{2: "base", 4: "group(8,1,2)", 8: "group(4,1,2)", 16: "group(2,1,2)"} {
		c, ok := byTP[tp]
		if !ok || c.Tree != want || c.PUsMin != 128/tp || c.Idle != 0 {
			t.Errorf("TP %d: %+v, want tree %s with %d PUs each", tp, c, want, 128/tp)
		}
	}
	// Llama-3-8B's 32 query and 8 KV heads rule out TP 16 (and 32, ...):
	// the operator limit of §5.3.
	for _, c := range Configs(e.Grouped, Limits{Heads: 32, KVHeads: 8}).Configs {
		if c.TP > 8 {
			t.Errorf("TP %d kept although 8 KV heads forbid it", c.TP)
		}
	}
}

// TestIdlePerCluster: one idle core per shared-L2 cluster, and per L3 on a
// machine whose nodes hold several L3s.
func TestIdlePerCluster(t *testing.T) {
	tr, err := synth(t, "package=1,l2=4,core=4").ApplySpec("idle-per-l2")
	if err != nil || list(tr.Idle()) != "3,7,11,15" {
		t.Errorf("idle-per-l2: %v, idle %v", err, tr)
	}
	amd := synth(t, "package=1,numa=2,l3=4,core=8,thread=2")
	tr, err = amd.ApplySpec("idle-per-l3")
	if err != nil || len(tr.Idle()) != 16 || !strings.HasPrefix(list(tr.Idle()), "14-15,30-31,") {
		t.Errorf("idle-per-l3: %v, idle %s", err, list(tr.Idle()))
	}
	if _, err := amd.ApplySpec("idle-per-node"); err == nil || !strings.Contains(err.Error(), "the children of the numa nodes are l3, not cores") {
		t.Errorf("idle-per-node on several L3s per node: %v", err)
	}
}
