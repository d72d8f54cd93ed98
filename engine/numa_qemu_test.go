//go:build linux

package engine

// The NUMA policies on real 2- and 4-node machines (issue #14 part 1's CI
// requirement). TestQEMUNUMA2Nodes and TestQEMUNUMA4Nodes (host) boot this
// package's test binary as /init of a qemu-system-x86_64 (TCG) guest of
// internal/qemutest with 2 or 4 nodes of one CPU each, where TestMain runs
// only TestQEMUGuestNUMA: the small model of numaConfig (2 layers) on one
// worker per node under every policy of numaGuestPolicies, each policy's
// logits checked against os's within the fp32 tolerance and its page
// placement per tensor class checked as the policy's row says. They run
// only with BENCH_REQUIRE_QEMU=1, as scripts/numa-qemu-test.sh sets it
// (about 30 s each on 2 cores, the build included), where a host that
// cannot boot the guest (see internal/qemutest) is a failure.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/qemutest"
)

func TestMain(m *testing.M) { os.Exit(qemutest.Main(m)) }

func TestQEMUNUMA2Nodes(t *testing.T) { numaBootGuest(t, 2) }
func TestQEMUNUMA4Nodes(t *testing.T) { numaBootGuest(t, 4) }

func numaBootGuest(t *testing.T, nodes int) {
	// Two guests of this package's large test binary take about a minute
	// on 2 cores: run them where asked for (scripts/numa-qemu-test.sh, once
	// per CI run), not in every go test ./... of a machine with a kernel.
	if os.Getenv(qemutest.RequireEnv) != "1" {
		t.Skipf("the engine's NUMA guests run with %s=1 (scripts/numa-qemu-test.sh)", qemutest.RequireEnv)
	}
	res := qemutest.Boot(t, qemutest.Options{Test: "TestQEMUGuestNUMA", Nodes: nodes})
	want := fmt.Sprintf("NUMA policies on %d nodes", nodes)
	if res != nil && !slices.ContainsFunc(res.Log, func(l string) bool { return strings.Contains(l, want) }) {
		t.Errorf("the guest's log lacks %q", want)
	}
}

// numaGuestPolicies is what the guest runs, os first (the reference): each
// policy's options on n workers, one per node, and the check of its page
// placement (nil: logits only), given the Model's TP groups under tp. A
// new policy is a new row. tp (one group per node) reports its groups'
// weight panels per operator and each group's KV caches and activations
// on their own rows, all bound to the group's node (tp.go).
var numaGuestPolicies = []struct {
	policy NUMAPolicy
	opts   Options
	check  func(t *testing.T, nodes []int, pl []NUMAPlacement, tp *TPInfo)
}{
	{NUMAOS, Options{}, nil},
	{NUMAInterleave, Options{NUMA: NUMAInterleave}, numaCheckInterleave},
	{NUMALocal, Options{NUMA: NUMALocal}, numaCheckLocal},
	{NUMATP, Options{NUMA: NUMATP}, numaCheckTP},
}

// TestQEMUGuestNUMA is the guest half of TestQEMUNUMA2Nodes and
// TestQEMUNUMA4Nodes.
func TestQEMUGuestNUMA(t *testing.T) {
	qemutest.RequireGuest(t)
	dirs, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	var nodes []int
	for _, d := range dirs {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(d), "node%d", &n); err == nil {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	if len(nodes) < 2 || len(allowedCPUs(t)) != len(nodes) {
		t.Fatalf("nodes %v, CPUs %v: want ≥ 2 nodes of one CPU each", nodes, allowedCPUs(t))
	}
	t.Logf("NUMA policies on %d nodes", len(nodes))
	w, err := Synthetic(numaConfig(), 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	var ref []float32
	for _, p := range numaGuestPolicies {
		o := p.opts
		o.Threads = len(nodes)
		logits, pl, tp := numaRun(t, w, o)
		if p.policy == NUMAOS {
			ref = logits
		} else {
			numaCheckLogits(t, string(p.policy), logits, ref)
		}
		for _, c := range pl {
			t.Logf("%s: %-11s %2d %-46s %3d pages sampled, %3d on intended, per node %v", p.policy, c.Tensor, c.TPGroup, c.Intended, c.Sampled, c.OnIntended, c.PagesPerNode)
		}
		if p.check != nil {
			if len(pl) == 0 {
				t.Errorf("%s: no placement report", p.policy)
			}
			p.check(t, nodes, pl, tp)
		}
	}
}

// numaCheckSpread checks that class c has sampled pages on every node.
func numaCheckSpread(t *testing.T, p NUMAPolicy, nodes []int, c NUMAPlacement) {
	t.Helper()
	for _, n := range nodes {
		if c.PagesPerNode[n] == 0 {
			t.Errorf("%s: %s: no sampled page on node %d (pages per node %v)", p, c.Tensor, n, c.PagesPerNode)
		}
	}
}

// numaCheckInterleave: every sampled page on one of the nodes, and the
// weights and KV caches spread over every node.
func numaCheckInterleave(t *testing.T, nodes []int, pl []NUMAPlacement, _ *TPInfo) {
	for _, c := range pl {
		if c.Fraction < 1 {
			t.Errorf("interleave: %s: %d of %d sampled pages on the nodes (%v)", c.Tensor, c.OnIntended, c.Sampled, c.PagesPerNode)
		}
		if c.Tensor != numaAct { // a few pages each: not every buffer spans every node
			numaCheckSpread(t, NUMAInterleave, nodes, c)
		}
	}
}

// numaCheckTP: the groups one per node; every weight class reported, ≥
// 90% of its sampled pages on the node of the group that owns them, and
// every node holding some; each group's KV caches and activations
// reported on rows of their own, bound to the group's node, with every
// sampled page there (numaCheckTPGroups), after the prefills and decodes
// of numaRun.
func numaCheckTP(t *testing.T, nodes []int, pl []NUMAPlacement, tp *TPInfo) {
	if tp == nil || len(tp.Groups) != len(nodes) {
		t.Fatalf("tp: groups %+v, want one per node of %v", tp, nodes)
	}
	var gnodes []int
	for _, g := range tp.Groups {
		gnodes = append(gnodes, g.Node)
	}
	if slices.Sort(gnodes); !slices.Equal(gnodes, nodes) {
		t.Errorf("tp: groups on nodes %v, want one on each of %v", gnodes, nodes)
	}
	numaCheckTPGroups(t, "tp", tp, pl)
	weights := 0
	for _, c := range pl {
		if c.TPGroup >= 0 {
			continue // numaCheckTPGroups
		}
		weights++
		if c.Fraction < 0.9 {
			t.Errorf("tp: %s: %d of %d sampled pages on their group's node (%.0f%% < 90%%; %v)", c.Tensor, c.OnIntended, c.Sampled, 100*c.Fraction, c.PagesPerNode)
		}
		numaCheckSpread(t, NUMATP, nodes, c)
	}
	if weights != 7 {
		t.Errorf("tp: %d weight classes reported, want the 7 partitioned matrices", weights)
	}
}

// numaCheckLocal: ≥ 90% of each class's sampled pages on the node meant
// for them; every matrix's shares, and the KV caches, on every node.
func numaCheckLocal(t *testing.T, nodes []int, pl []NUMAPlacement, _ *TPInfo) {
	for _, c := range pl {
		if c.Fraction < 0.9 {
			t.Errorf("local: %s: %d of %d sampled pages on their intended node (%.0f%% < 90%%; %v)", c.Tensor, c.OnIntended, c.Sampled, 100*c.Fraction, c.PagesPerNode)
		}
		if c.Tensor != numaAct {
			numaCheckSpread(t, NUMALocal, nodes, c)
		}
	}
}
