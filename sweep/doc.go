// Package sweep runs `bench sweep`: the request traces of package
// workloads replayed on the engine over a grid of models × weight formats
// × workloads × batch sizes × thread counts × placements × ablations,
// with per-cell results recorded as bench.sweep/v1 (package results).
//
// It owns:
//
//   - Options (the command's settings, flag by flag), their validation
//     and the grid they make (Options.Validate, Options.Cells).
//   - The grid loop (Run): resumable from cells.jsonl, locked while it
//     writes (sweep.lock), stopped within a forward pass by its context,
//     files written atomically; --dry-run's listing; --emit-jobs slurm's
//     job array (slurm.go).
//   - The engine↔replay adapter (engine.go): one engine.Model and
//     engine.Batch per cell as a workloads.Executor (CellEngine,
//     NewCellEngine), its weights cached across the cells of one model.
//   - Weight resolution for bench run and the sweep (ResolveWeights,
//     CheckMemory): synthetic, llama2.c or GGUF weights, quantized as
//     asked, checked against the memory this process may use.
//   - Per-phase service configurations (phase.go; Sandwich §3.2–3.3):
//     --prefill-config/--decode-config resolved per cell (the command's
//     ResolveConfig) into the engine's per-phase CPUs, each phase
//     predicted at its threads (PredictPhases); --configs auto ranks the
//     TP-1 candidates by the roofline (RankConfigs) and measures the best
//     few (AutoConfigs.Measure) — for bench run too.
//   - The measured/predicted join (Predict, CellEngine.Ops) and the speed
//     checks (RoofCheck, StandaloneChecks); the record of what ran each
//     placement target (Targets, TargetsLine, CheckBackends).
//
// The command (cmd/bench) parses flags into Options and calls Run once;
// it also resolves the default profile (Options.ResolveProfile) and
// loads it (Options.LoadMachine), which read the results directory.
//
// It imports engine, workloads, results, roofline, models, reports (the
// dry-run table), kernels/gemm and kernels/quant (backend and format
// names), internal/affinity, internal/topology, internal/memlimit and
// internal/noise (each cell's noise record);
// never probes (it measures through the engine only) or a command.
package sweep
