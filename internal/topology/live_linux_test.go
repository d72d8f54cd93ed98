//go:build linux

package topology

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// TestLive reads the running machine through the exported functions.
func TestLive(t *testing.T) {
	topo, err := ReadTopology(LiveRoots())
	if err != nil {
		t.Fatal(err)
	}
	if topo.Threads < 1 || topo.Threads != len(topo.OnlineCPUs) || topo.Cores < 1 || topo.Cores > topo.Threads ||
		topo.Packages < 1 || topo.NUMANodes < 1 || len(topo.CoreCPUs) != topo.Cores {
		t.Errorf("implausible topology %+v", topo)
	}
	if runtime.NumCPU() > topo.Threads {
		t.Errorf("runtime.NumCPU() = %d > %d online CPUs", runtime.NumCPU(), topo.Threads)
	}
	checkTree(t, topo.Tree)

	m, err := ReadMachine(LiveRoots())
	if err != nil {
		t.Fatal(err)
	}
	if m.Arch != runtime.GOARCH || m.OS != "linux" || m.LogicalCPUs != topo.Threads || m.GoVersion != runtime.Version() {
		t.Errorf("machine %+v", m)
	}
	if !slices.Equal(m.Features, cpu.RawFeatures) || !slices.Equal(m.ISAs, cpu.ISAs()) {
		t.Errorf("Features/ISAs %v %v differ from internal/cpu", m.Features, m.ISAs)
	}
	if m.PerfCounters != "usable" && !strings.HasPrefix(m.PerfCounters, "unavailable: ") {
		t.Errorf("PerfCounters = %q", m.PerfCounters)
	}
	if m.TSCHz < 0 || m.BaseHz < 0 || m.MaxHz < 0 {
		t.Errorf("negative frequency in %+v", m)
	}
	t.Logf("perf: %s; TSC %.0f Hz; base %.0f Hz; max %.0f Hz; hypervisor %q", m.PerfCounters, m.TSCHz, m.BaseHz, m.MaxHz, m.Hypervisor)
}
