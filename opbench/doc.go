// Package opbench runs SMEPilot's operator experiments (§5, Figs. 10 and
// 11) as sweeps: the engine's attention kernel alone against context
// length (prefill) and decode batch (RunAttention, `bench attention`), and
// the FFN GEMMs of a model against prefill length and decode batch
// (RunGEMMSweep, `bench gemm --sweep`), each on the cores, matrix and
// mixed placements where they apply, beside the roofline's prediction
// and the fraction of the probed ceiling or roof (Fractions). Prefill
// attention is measured pipelined (SMEPilot §4.2, Fig. 6) and serially
// (its ablation) side by side, each against roofline.PredictAttention's
// schedule (PipelineLines).
//
// Every figure is the median of the timed repetitions after a warm-up,
// with min, max and the coefficient of variation (results.Stat), on
// pinned workers of a kernels/pool; the attention output is checked
// against a float64 reference (engine.AttentionBench.CheckOutput) and the
// GEMMs' against theirs (probes.GEMMBench).
//
// Each attention figure carries its noise record (Watch: CPU share,
// steal, load, cv, and the core-to-core round trips before and after it
// against the profile's placement), marked noisy where a test fails.
//
// A decode figure's fraction is of the read kernel over the same KV bytes
// measured beside it: repeated as the probe repeats it, or, with
// AttentionConfig.ColdKVBytes (`bench attention --kv-state cold`, the
// command's default), each call of the step and of the DRAM roof's read
// kernels timed alone after the same eviction, as an engine's decode step
// finds its KV.
//
// opbench measures through engine (the attention kernel), probes (the
// GEMM measurement), kernels (the read kernels), kernels/gemm and
// kernels/pool, reads the cache sizes with internal/topology, records
// noise with internal/noise, predicts with roofline and reads profiles
// with results; it must not import reports
// (the commands draw its figures) or cmd.
package opbench
