// Package numabench runs ArcLight's experiments (§4, Figs. 9–13) on bench's
// engine and writes their tables and figures: `bench numa` is one call to
// Run.
//
// It owns:
//
//   - Decode and prefill throughput against thread count per NUMA policy
//     (engine.Options.NUMA os, interleave, local, tp; Figs. 10–13) and, for
//     tp, per synchronization mode (Sync A vs Sync B; Fig. 9), each the
//     median of repetitions with its min–max, on the CPUs and NUMA nodes
//     the engine's pool actually ran on (internal/topology maps CPUs to
//     nodes).
//   - The roofline's prediction beside each measurement: on one node the
//     engine's per-operator model at the thread count that ran
//     (sweep.Predict on roofline.Machine.AtThreads; the policies cannot
//     differ there), on several nodes roofline.NUMAPredict from the
//     profile's NUMA matrix.
//
// A policy that cannot run a configuration (tp with fewer threads than its
// degree, a policy this build or kernel refuses) is recorded as "not run:
// why" in the table, not dropped.
//
// The engine's pool takes the first n CPUs this process may run on:
// restrict them (taskset, numactl --cpunodebind) to spread the threads
// over nodes as ArcLight Fig. 11 does.
//
// It imports engine, internal/affinity, internal/topology,
// reports, results, roofline and sweep; it must not import probes or cmd
// (internal/deps checks).
package numabench
