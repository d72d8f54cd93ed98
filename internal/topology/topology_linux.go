//go:build linux

package topology

import "github.com/cpubench/bench/results"

// ReadTopology reads the topology section from the sysfs tree under r.Sys
// (and /proc/meminfo under r.Proc when the kernel has no NUMA nodes): CPU,
// core, package and NUMA node counts, caches (sizes in bytes), the NUMA
// distance matrix, the topology tree and one CPU per core.
//
//   - Only online CPUs count; every cpulist is intersected with them.
//   - Without node directories there is one node 0 with every online CPU,
//     MemBytes = /proc/meminfo MemTotal and Distances [[10]]. Memory-only
//     nodes (empty cpulist) are kept in Nodes and Distances.
//   - Caches has one entry per (level, type), or per (level, type, size) on
//     hybrid CPUs; SharedBy is the largest instance. LLCBytes is one
//     instance of the highest-level Data/Unified cache; LineBytes is the L1d
//     line size. When sysfs has no cache information (some hypervisors
//     expose no cpu*/cache directories) and the roots are live on x86, the
//     sizes come from CPUID instead (each entry's Source is "cpuid"; L1 and
//     L2 are taken to be per core, and an L3 that CPUID does not report is
//     left out), and CacheNote says so; otherwise both are 0.
//   - Tree node IDs: package = physical_package_id, numa = node number,
//     l3/l2 = 0, 1, ... in order of lowest CPU, core = core_id (unique only
//     within a package), thread = CPU number; children are ordered by ID.
//     See the package doc for how levels nest.
//   - CoreCPUs holds the lowest online CPU of each core, ordered by
//     package, NUMA node, core_id (then CPU number).
//
// Errors name the file and what was wrong, e.g.
// `topology: /sys/devices/system/cpu/cpu3/cache/index2/size: parse "abc": invalid syntax`.
// A missing optional file (cache size, ways, cpufreq) is not an error.
func ReadTopology(r Roots) (*results.Topology, error) { return readTopology(r) }

// ReadMachine reads the machine section: CPU identity, features, frequencies
// (Hz), kernel and OS settings. Facts that only the running machine can give
// (cpuid, HWCAP features, TSC frequency, perf_event_open) are used only when
// r == LiveRoots(); for a snapshot, identity and features come from its
// /proc/cpuinfo (flags upper-cased, e.g. "AVX2", "ASIMD"), Arch is inferred
// from cpuinfo, OS is "linux" and PerfCounters is "unknown". Hypervisor is
// "" on bare metal, the cpuid hypervisor vendor on live x86 (e.g. "KVM"),
// "unknown" for a snapshot whose cpuinfo flags say "hypervisor" (and ""
// on live arm64, which cannot tell). TSCHz comes from CPUID leaf 0x15 or
// hypervisor leaf 0x40000010, live amd64 only (0 under -tags purego).
// BaseHz/MaxHz come from the first online CPU's cpufreq (kHz × 1000), else
// on live x86 from cpuid. Anything the
// files do not say is "unknown" (strings) or 0 (numbers). Errors name the
// file: a corrupt file is an error, a missing one is not.
func ReadMachine(r Roots) (*results.Machine, error) { return readMachine(r) }
