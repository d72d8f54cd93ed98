//go:build linux

package numa_test

// The 2-node placement test. TestQEMUTwoNodes (host) boots this package's
// test binary as /init of a qemu-system-x86_64 (TCG) guest with two NUMA
// nodes: node0 = CPU 0 + 512 MiB, node1 = CPU 1 + 512 MiB, distance 20 (see
// internal/qemutest), where TestMain runs only TestQEMUGuest.
//
// Skipped (with the reason) when qemu-system-x86_64, the go command or a kernel
// is missing, or with -short; BENCH_REQUIRE_QEMU=1 turns those skips into
// failures. The kernel is $BENCH_QEMU_KERNEL or
// ${XDG_CACHE_HOME:-$HOME/.cache}/bench/vmlinuz (scripts/numa-qemu-test.sh
// fetches Debian's). BENCH_QEMU_TIMEOUT (a Go duration) bounds the boot and
// run.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/internal/qemutest"
)

func TestMain(m *testing.M) { os.Exit(qemutest.Main(m)) }

// TestQEMUGuest is the guest half; it runs only as /init under TestQEMUTwoNodes.
func TestQEMUGuest(t *testing.T) {
	qemutest.RequireGuest(t)
	const dir = "/sys/devices/system/node"
	nodes, err := filepath.Glob(dir + "/node[0-9]*")
	if err != nil || !slices.Equal(nodes, []string{dir + "/node0", dir + "/node1"}) {
		t.Fatalf("nodes in %s = %v, %v; want node0 and node1", dir, nodes, err)
	}
	for node, want := range []string{"10 20", "20 10"} {
		b, err := os.ReadFile(fmt.Sprintf("%s/node%d/distance", dir, node))
		if got := strings.TrimSpace(string(b)); err != nil || got != want {
			t.Errorf("node%d/distance = %q, %v; want %q", node, got, err, want)
		}
	}
	if err := numa.Available(); err != nil {
		t.Fatalf("Available() = %v", err)
	}
	nb, _ := os.ReadFile("/proc/sys/kernel/numa_balancing")
	t.Logf("kernel.numa_balancing = %s", strings.TrimSpace(string(nb)))
	if cpus, err := affinity.Allowed(); err != nil || !slices.Equal(cpus, []int{0, 1}) {
		t.Errorf("Allowed() = %v, %v; want [0 1]", cpus, err)
	}

	runtime.LockOSThread() // never unlocked: the thread dies with this test
	if err := affinity.Pin(1); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for range 100 {
		if cpu, _ = affinity.Current(); cpu == 1 {
			break
		}
		runtime.Gosched()
	}
	if cpu != 1 {
		t.Fatalf("after Pin(1), Current() = %d", cpu)
	}

	const size, samples = 32 << 20, 64
	// Bound to the remote node and to the local one, from CPU 1.
	for _, node := range []int{1, 0} {
		b, err := numa.AllocOnNode(size, node)
		if err != nil {
			t.Fatal(err)
		}
		got, err := numa.PageNodes(b, samples)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("AllocOnNode(32 MiB, %d) from CPU 1: pages per node %v", node, got)
		if len(got) != 1 || got[node] != samples {
			t.Errorf("AllocOnNode(32 MiB, %d): pages per node %v, want map[%d:%d]", node, got, node, samples)
		}
		if err := numa.Free(b); err != nil {
			t.Error(err)
		}
	}
	// Default policy: first touch from CPU 1 places on node 1. With
	// kernel.numa_balancing=1 (as here) a thread that keeps running gets its
	// pages marked for NUMA hinting faults, which move_pages reports as
	// -ENOENT or -EFAULT before Linux 6.5: keep running over the buffer
	// (a fixed number of passes, seconds in the guest) so that happens, to
	// check PageNodes' way around it.
	b, err := numa.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	var sum byte
	for range 2000 {
		for i := 0; i < len(b); i += os.Getpagesize() {
			sum += b[i]
		}
	}
	t.Logf("%d passes over the buffer (sum %d)", 2000, sum)
	if got, err := numa.PageNodes(b, samples); err != nil || len(got) != 1 || got[1] != samples {
		t.Errorf("Alloc + first touch on CPU 1: pages per node %v, %v; want map[1:%d]", got, err, samples)
	}
	numa.Free(b)

	if _, err := numa.AllocOnNode(size, 2); !errors.Is(err, numa.ErrNoNUMA) {
		t.Errorf("AllocOnNode(32 MiB, 2) error = %v, want one wrapping ErrNoNUMA", err)
	}
	guestPolicies(t)
}

// guestPolicies checks Interleave, BindPages (from PageOwners) and CPUNode
// on the guest's two nodes, from CPU 1.
func guestPolicies(t *testing.T) {
	for cpu, want := range []int{0, 1} {
		if n, err := numa.CPUNode(cpu); err != nil || n != want {
			t.Errorf("CPUNode(%d) = %d, %v; want %d", cpu, n, err, want)
		}
	}
	ps := os.Getpagesize()
	const pages = 256
	b, err := numa.Alloc(pages * ps)
	if err != nil {
		t.Fatal(err)
	}
	defer numa.Free(b)
	// Interleaved: consecutive pages alternate between the nodes.
	if err := numa.Interleave(b, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += ps {
		b[i] = 1
	}
	idx, nodes, err := numa.SamplePages(b, pages)
	if err != nil || len(nodes) != pages {
		t.Fatalf("SamplePages(interleaved) = %d pages, %v", len(nodes), err)
	}
	count := map[int]int{}
	for i, n := range nodes {
		count[n]++
		if i > 0 && n == nodes[i-1] {
			t.Errorf("Interleave: pages %d and %d both on node %d", idx[i-1], idx[i], n)
			break
		}
	}
	t.Logf("Interleave(1 MiB, [0 1]) from CPU 1: pages per node %v", count)
	if count[0] != pages/2 || count[1] != pages/2 {
		t.Errorf("Interleave(1 MiB, [0 1]): pages per node %v, want %d on each", count, pages/2)
	}
	// Re-bound (MPOL_MF_MOVE moves the touched pages): two shares whose
	// boundary is not page-aligned; each page to the node reading more of it.
	cut := 100*ps + ps/3
	owners, err := numa.PageOwners(len(b), []numa.Span{{Off: 0, End: cut, Node: 1}, {Off: cut, End: len(b), Node: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if err := numa.BindPages(b, owners); err != nil {
		t.Fatal(err)
	}
	_, nodes, err = numa.SamplePages(b, pages)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if want := owners[i]; n != want {
			t.Errorf("BindPages: page %d on node %d, want %d (owners %v...)", i, n, want, owners[98:102])
			break
		}
	}
	if owners[99] != 1 || owners[100] != 0 {
		t.Errorf("PageOwners: pages 99, 100 owned by %d, %d; want 1, 0", owners[99], owners[100])
	}
}

func TestQEMUTwoNodes(t *testing.T) {
	qemutest.Boot(t, qemutest.Options{Test: "TestQEMUGuest"})
}
