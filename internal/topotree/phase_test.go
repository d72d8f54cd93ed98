package topotree

import (
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/topology"
)

func TestResolveConfig(t *testing.T) {
	tr := synth(t, "numa=2,core=4")
	for _, c := range []struct{ spec, cpus, tree string }{
		{"all", "0-7", "base"},
		{"cpus=1-2,5", "1-2,5", "base"},
		{"cpus=5,1", "1,5", "base"},
		{"remove(1,core)", "0-2,4-6", "remove(1,2)"},
		{"idle-per-node", "0-2,4-6", "remove(1,2)"},
		{"fast-numa", "0-3", "remove(1,1)"},
		{"config=1", "0-7", "base"},
	} {
		p, err := ResolveConfig(tr, c.spec, Limits{})
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if got := topology.FormatCPUList(p.CPUs); got != c.cpus || p.Tree != c.tree {
			t.Errorf("%s: CPUs %s tree %s, want %s %s (label %q)", c.spec, got, p.Tree, c.cpus, c.tree, p.Label)
		}
	}
}

// TestResolveConfigBad: each bad configuration is one error line naming
// the value and what is allowed.
func TestResolveConfigBad(t *testing.T) {
	tr := synth(t, "numa=2,core=4")
	for _, c := range []struct{ spec, want string }{
		{"", "empty"},
		{"cpus=0-9", `configuration "cpus=0-9": CPUs 8-9 are outside the allowed set 0-7`},
		{"cpus=x", `"x" is not a CPU list`},
		{"spread(1,core)", `unknown transform "spread(1,core)"`},
		{"idle-per-l3", `configuration "idle-per-l3": idle-per-l3: this tree has no l3 level`},
		{"remove(1,l2)", `configuration "remove(1,l2)"`},
		{"config=0", `"0" is not a configuration number ≥ 1`},
		{"config=99", "configurations (config=1 to config="},
		{"config=2", "needs the tensor-parallel engine, --numa tp"},
		{"threads=2", `unknown key "threads"`},
	} {
		_, err := ResolveConfig(tr, c.spec, Limits{})
		if err == nil {
			t.Errorf("%q: no error", c.spec)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "topotree: configuration") {
			t.Errorf("%q: error %q, want one line with %q", c.spec, msg, c.want)
		}
	}
}

func TestCandidates(t *testing.T) {
	tr := synth(t, "numa=2,core=4")
	cs, err := Candidates(tr, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cs {
		k := topology.FormatCPUList(c.CPUs)
		if seen[k] {
			t.Errorf("CPU set %s listed twice", k)
		}
		seen[k] = true
		if p, err := ResolveConfig(tr, c.Spec, Limits{}); err != nil || topology.FormatCPUList(p.CPUs) != k {
			t.Errorf("%s: resolves to %v, %v; want CPUs %s", c.Spec, p.CPUs, err, k)
		}
	}
	if !seen["0-7"] || len(cs) < 2 {
		t.Errorf("candidates %v: want every CPU and at least one with idle PUs", cs)
	}
}

// TestLocations: the Fig. 3(a) presets on the 4-node Kunpeng-920 snapshot
// and on a one-node tree without L3 groups, those that do not apply
// saying why.
func TestLocations(t *testing.T) {
	ls := Locations(synth(t, "numa=2,core=4"))
	if len(ls) != 1+len(LocationPresets) || ls[0].Name != "all cores" || topology.FormatCPUList(ls[0].CPUs) != "0-7" {
		t.Fatalf("locations %+v", ls)
	}
	by := map[string]Location{}
	for _, l := range ls {
		by[l.Name] = l
	}
	if l := by["idle-per-node"]; topology.FormatCPUList(l.CPUs) != "0-2,4-6" || topology.FormatCPUList(l.Idle) != "3,7" {
		t.Errorf("idle-per-node: %+v", l)
	}
	if l := by["idle-per-l3"]; !strings.Contains(l.NotApplicable, "no l3 level") {
		t.Errorf("idle-per-l3 on a tree without L3: %+v", l)
	}
	if l := by["fast-numa"]; topology.FormatCPUList(l.CPUs) != "0-3" {
		t.Errorf("fast-numa: %+v", l)
	}
	kp := snapshot(t, "linux-arm64-kunpeng-920-4n")
	for _, l := range Locations(kp) {
		if l.NotApplicable == "" && (len(l.CPUs) == 0 || l.Name != "all cores" && len(l.Idle) == 0) {
			t.Errorf("Kunpeng %s: %+v", l.Name, l)
		}
		if l.Name == "idle-per-node" && l.NotApplicable != "" {
			t.Errorf("Kunpeng idle-per-node not applicable: %s", l.NotApplicable)
		}
	}
	one := Locations(synth(t, "core=2"))
	for _, l := range one[1:] {
		if l.Name != "numa-rm" && l.NotApplicable == "" {
			t.Errorf("one-node 2-core tree: %s applies (%+v)", l.Name, l)
		}
	}
}
