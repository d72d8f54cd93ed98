// Package topology reads what a Linux machine is made of: the "machine" and
// "topology" sections of `bench probe` (results.Machine, results.Topology).
//
// Every read of /sys and /proc goes through a Roots value (the
// jaypipes/ghw linuxpath style), so tests point it at snapshots of real or
// realistic machines under testdata/ (linux-<arch>-<cpu>/{sys,proc}); a
// snapshot is only data and takes no special code path. The synthetic
// snapshots are written by testdata/gen.go (`cd testdata && go run gen.go`),
// the snapshot of a live machine by `go run gen.go -live DIR`.
//
// The topology tree is the base TopoTree of Sandwich §5.1: machine →
// package → NUMA node → L3 domain → L2 → core → hardware thread. Each level
// is a partition of the online CPUs. The levels are ordered coarsest first
// (fewest groups; ties keep that canonical order) and a level is kept only if
// each of its groups lies within one group of the level above, so:
//   - a level the machine lacks (no L3, no L2) is left out;
//   - an L3 that spans several NUMA nodes (Intel SNC) sits above them
//     (package → l3 → numa → l2 ...), a NUMA node that spans several L3s
//     (AMD NPS1/NPS2, Kunpeng dies) sits above them, and a node spanning both
//     packages of a machine (node interleaving) sits above the packages;
//   - a level that crosses the boundaries of the level above without
//     containing it is dropped from the tree (its data stays in Caches).
//
// Sandwich's group and remove transforms of this tree (§5.2) and the
// service configurations read from it (§5.3) are in internal/topotree.
//
// Linux only: on other systems ReadTopology and ReadMachine return
// "topology: not implemented on <GOOS>". Machine facts that only the running
// machine can give (cpuid, HWCAP, perf_event_open) are taken only when the
// roots are LiveRoots().
//
// This package imports results and internal/cpu; it must not import probes,
// reports, kernels or any command package.
package topology
