// Package pool is the engine's general worker pool: N goroutines, each locked
// to its OS thread and pinned to one CPU (internal/affinity), that execute
// fork-join tasks dispatched per operator per token.
//
// It owns:
//
//   - Pool: the pinned workers and their dispatch. A dispatch posts a job by
//     bumping a per-worker sequence number; an idle worker spins on that
//     number for a bounded time (Options.Spin) and then parks on a channel,
//     and the dispatcher sends a wake-up only to parked workers. The join is
//     one atomic counter that the waiter spins on, then parks. A fork-join
//     on hot workers is a few cache-line transfers, with no channel
//     operation, lock or allocation; a channel per task would cost a
//     goroutine wake-up (tens of µs on a VM whose idle vCPU halts) per
//     worker per operator. See BenchmarkForkJoin.
//   - Pool.Do and Master: the caller's loop runs on worker 0's pinned
//     thread, which takes its own share of every Run inline (OpenMP's master
//     thread, ArcLight's thread 0). This is the fast path when the workers
//     occupy every CPU: a caller outside the pool is then a thread too many,
//     and its waits and wake-ups go through the OS scheduler.
//   - Groups (ArcLight §3, "multi-view thread organization"): views of
//     disjoint subsets of the workers, made and remade (Groups, View) without
//     restarting threads. Group.Run is a fork-join over one group, so its
//     return is the group-local barrier; Pool.RunGroups runs a different
//     function on several groups at once and returns when all are done (the
//     global barrier), with each group's elapsed seconds and the makespan.
//     Inside one task, workers of a group may also meet at a Barrier.
//   - Output partitioning (Blocks, Block): an M×N output region cut into one
//     block per worker, aligned to a kernel's tile (Tile).
//   - Mixed execution (SMEPilot §4.1, §4.4, Eq. 1): PlanSplit divides an
//     operator's output between two groups running different kernels in
//     proportion to their rates, rounded to both kernels' tiles, and RunSplit
//     runs the two parts concurrently.
//
// Kernels enter as plain functions (BlockFunc, func(local, n int) error), so
// the engine wires in kernels/gemm with a closure. This package imports only
// internal/affinity and internal/split (the Eq. 1 split, which
// roofline.SplitEq1 also is) of bench; it must not import roofline, kernels,
// kernels/gemm, probes, engine or reports.
//
// # GOMAXPROCS
//
// A spinning worker holds a Go P. With every P held by spinning workers a
// caller outside the pool cannot run until a worker parks, so New raises
// GOMAXPROCS to Size()+1 when it is lower (Options.KeepGOMAXPROCS opts out).
// The extra P is for the caller, which mostly sleeps while workers compute.
package pool
