package probes

// The end-to-end test of the numa section on a real 2-node machine.
// TestQEMUProbeNUMA (host) boots this package's test binary as /init of the
// qemu-system-x86_64 (TCG) guest of internal/qemutest: node 0 = CPU 0 +
// 512 MiB, node 1 = CPU 1 + 512 MiB, distance 20. There TestMain runs only
// TestQEMUGuestProbeNUMA, which runs the topology and numa sections as
// `bench probe --sections topology,numa --quick` would, with a small working
// set, and checks the 2 x 2 matrix's structure and page placement. Bandwidth
// and latency under TCG are meaningless: only that they were measured is
// checked.
//
// Skipped (with the reason) off linux/amd64, with -short, and when
// qemu-system-x86_64, the go command or a kernel is missing;
// BENCH_REQUIRE_QEMU=1 turns those skips into failures
// (scripts/numa-qemu-test.sh sets everything up).

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cpubench/bench/internal/qemutest"
	"github.com/cpubench/bench/results"
)

// TestMain is the package's only TestMain: in the qemu guest it runs the
// guest test and powers off; elsewhere it runs the tests as usual.
func TestMain(m *testing.M) { os.Exit(qemutest.Main(m)) }

func TestQEMUProbeNUMA(t *testing.T) {
	qemutest.Boot(t, qemutest.Options{Test: "TestQEMUGuestProbeNUMA"})
}

// TestQEMUGuestProbeNUMA is the guest half of TestQEMUProbeNUMA.
func TestQEMUGuestProbeNUMA(t *testing.T) {
	qemutest.RequireGuest(t)
	const reps, ws = 5, 16 << 20
	p, err := Run(context.Background(), Config{
		Sections:      []string{results.SectionTopology, results.SectionNUMA},
		Quick:         true,
		MaxWorkingSet: ws,
		RepDuration:   2 * time.Millisecond,
		Reps:          reps,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	topo := p.Topology
	if topo == nil {
		t.Fatal("no topology section")
	}
	if topo.NUMANodes != 2 || len(topo.Nodes) != 2 {
		t.Fatalf("topology: numa_nodes %d, nodes %+v; want 2 nodes", topo.NUMANodes, topo.Nodes)
	}
	if want := [][]int{{10, 20}, {20, 10}}; !slices.EqualFunc(topo.Distances, want, slices.Equal) {
		t.Errorf("topology: distances %v, want %v", topo.Distances, want)
	}
	for i, n := range topo.Nodes {
		// The guest's node i holds CPU i.
		if n.ID != i || !slices.Equal(n.CPUs, []int{i}) {
			t.Errorf("topology: node %d = {id %d, cpus %v}, want {id %d, cpus [%d]}", i, n.ID, n.CPUs, i, i)
		}
	}

	n := p.NUMA
	if n == nil {
		t.Fatal("no numa section")
	}
	if n.Unavailable != "" {
		t.Fatalf("numa section unavailable: %s", n.Unavailable)
	}
	if !slices.Equal(n.Nodes, []int{0, 1}) || n.WorkingSetBytes != ws {
		t.Errorf("numa: nodes %v, working set %d; want [0 1], %d", n.Nodes, n.WorkingSetBytes, ws)
	}
	if len(n.Pairs) != 4 {
		t.Fatalf("numa: %d pairs, want 4 (2 cpu nodes x 2 memory nodes): %+v", len(n.Pairs), n.Pairs)
	}
	for k, pr := range n.Pairs {
		t.Logf("cpu node %d (cpus %v) -> mem node %d: read %.3g GB/s (n=%d), latency %.3g ns (n=%d), pages on node %.2f, verified %v",
			pr.CPUNode, pr.CPUs, pr.MemNode, pr.ReadGBps.Median, pr.ReadGBps.N, pr.LatencyNS.Median, pr.LatencyNS.N, pr.PagesOnNode, pr.Verified)
		i, j := k/2, k%2
		if pr.CPUNode != i || pr.MemNode != j {
			t.Errorf("pair %d is cpu node %d x mem node %d, want %d x %d", k, pr.CPUNode, pr.MemNode, i, j)
			continue
		}
		if !slices.Equal(pr.CPUs, topo.Nodes[i].CPUs) {
			t.Errorf("pair (%d, %d): cpus %v, want node %d's %v", i, j, pr.CPUs, i, topo.Nodes[i].CPUs)
		}
		if !pr.Verified || pr.PagesOnNode != 1 {
			t.Errorf("pair (%d, %d): verified %v, pages on node %v; want true, 1", i, j, pr.Verified, pr.PagesOnNode)
		}
		for _, s := range []struct {
			name string
			st   results.Stat
		}{{"read_gbps", pr.ReadGBps}, {"latency_ns", pr.LatencyNS}} {
			if s.st.N != reps || !(s.st.Median > 0) {
				t.Errorf("pair (%d, %d): %s n %d, median %v; want n %d and a positive median", i, j, s.name, s.st.N, s.st.Median, reps)
			}
		}
	}
}
