// Package layouts runs PIM-SHERPA's experiments (§3.2–3.3, §4, Table 2,
// Figs. 4, 9, 10 and 11) on bench's engine and writes their tables and
// figures: `bench layout` is one call to Run.
//
// It owns:
//
//   - Table 2 at any FLOP/B (roofline.OWRTable) as Markdown.
//   - Resident weight bytes per layout policy for each shipped model
//     config (roofline.LayoutCapacityOf; Figs. 4 and 9).
//   - TTFT against input length per policy, measured by the engine
//     (engine.Options.WeightLayout duplicate, owr, ddb), with Table 2's
//     model in seconds for this machine beside it (roofline.LayoutModel:
//     the GEMM rate and copy bandwidth measured in the same run, the
//     weight read bandwidth from the probe profile), SUM for owr, MAX for
//     ddb, and the model's crossover length (Fig. 10).
//   - A per-thread timeline of one prefill from the engine's timers
//     (engine.Model.LayoutTrace; Fig. 11).
//
// Linux user space cannot map memory non-cacheable (no uncached mmap
// without a driver; PAT attributes are the kernel's), so the engine's
// rearrangement always reads cacheable memory; the paper's non-cacheable
// source is modelled from the probe's non-temporal (write_nt) DRAM
// bandwidth where the profile has one.
//
// It imports engine, models, roofline, reports, results and
// internal/memlimit (the synthetic weights are checked against what the
// process may use before they are drawn); it must not import probes or
// cmd (internal/deps checks).
package layouts
