// Package roofline is the multi-ceiling roofline model of SMEPilot §3.2
// (one memory system, several execution targets with their own compute
// ceilings), the LLM operator catalog (FLOPs and bytes of every operator of
// a decoder layer for a request shape), the placement rules of SMEPilot
// §3.2–3.3 and §4.4 (including the Eq. 1 tile-rounded split), the time
// model of tiled attention as SMEPilot §4.2's two stages, serial and
// pipelined (attention.go: PredictAttention, Fig. 6), the work a tiled
// prefill attention kernel does beyond the causal count (tiled.go:
// TiledWork, under a Machine's AttnPlan), and the other
// analytic models of the seed papers: the low-bit paper's effective-bandwidth
// roofline and Amdahl bound (Eq. 1–4) and PIM-SHERPA's Table 2 latency model
// with its machine form, crossover length and per-policy weight capacity
// (sherpa.go), and the per-call terms that make a prediction account for
// what the engine runs (calls.go, issue #16): the worker pool's fixed cost
// per parallel call and wake-up, the roof of the memory level that holds an
// operator's bytes, and the thread count that runs it; and the per-class
// calibration of a profile (calibration.go, issue #16 part 2: an efficiency
// and a fixed cost per operator class, ClassOf, fitted by package
// calibrate and applied to every prediction of that class), and the measured attained
// GEMM table (gemmtable.go: a linear operator's compute term interpolated
// over a profile's matrix.gemm_shapes, AttainedGEMMRule, and a GEMV's DRAM
// weights at matrix.gemv's weight bandwidth). It owns the vocabulary of what it models, typed: the
// request phases (Phase) and the operator names with their kinds and
// breakdown groups (ops.go: LookupOp, Group, Kind), which the engine's
// timers, the sweep and the reports use.
//
// It is pure math on plain structs: no I/O, no measurement, no clocks. It
// imports results only for the profile types and internal/split for the
// Eq. 1 split (shared with kernels/pool), and parses JSON only from bytes
// handed to it. It must not import probes, kernels or engine.
//
// Units everywhere: FLOPs, bytes, seconds; rates in GFLOP/s and GB/s
// (1 GB/s = 1e9 bytes/s); arithmetic intensity in FLOP/byte. Matrices are
// row-major; a linear layer is X[M×K] · Wᵀ with W stored [N×K] as in
// HuggingFace checkpoints, producing Y[M×N].
package roofline
