// Package engine is bench's transformer inference engine: a Llama-family
// decoder-only forward pass computed on bench's own kernels, so that the
// roofline's predicted operator times (package roofline) can be checked
// against measured ones.
//
// It owns:
//
//   - Config: the model's shape and numerics (dimensions, RoPE, norms),
//     independent of the file format, built from a llama2.c header or from
//     HuggingFace config.json keys (FromHF, FromModel).
//   - Weights loading: the llama2.c checkpoint format (ReadLlama2C,
//     LoadLlama2C) into plain row-major float32 tensors (Weights).
//   - GGUF files (ReadGGUF, LoadGGUF), llama.cpp's format: architectures
//     llama, qwen3 and qwen3moe, F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K,
//     TQ2_0 and TQ1_0 tensors, the metadata mapped to Config (gguf.go;
//     the header, metadata and tensor table are package gguf's). Quantized linear weight matrices
//     stay block-quantized
//     (kernels/quant Matrix, the Weights' Q fields); the rest is
//     dequantized to float32.
//   - Quantized weights (quant.go): Weights.Quantize and SyntheticAs make
//     q8_0, q4_0, int2, int1, q4_k, q6_k, tq2_0 or tq1_0 linears from float32; the Model runs them on the cores
//     with kernels/quant (activations quantized to int8 per 32-element
//     block once per call, the output columns split over the workers).
//   - Model: the weights packed once, at load time, into kernels/gemm's
//     panel layout for the backends its Placement needs (SMEPilot §4.3; the
//     packing time is recorded apart, Model.PackSeconds), and a pinned
//     kernels/pool of worker threads that runs every operator. Placements
//     (model.go) run on two targets whose backends gemm.ChoosePair picks
//     by what executes them, never by registration order: cores (the
//     cores' fp32 vector backend), matrix (the matrix unit's backend, e.g.
//     sme-fp32; on a CPU without one a second backend on the cores, the
//     best bf16 one, which Model.Notes says), mixed (SMEPilot
//     §4.1/§4.4 Eq. 1 split across two thread groups with feedback: the
//     rates start from each group's rate measured alone at load and follow
//     the groups' co-running rates, re-planned after every call per weight
//     shape and M bucket) and auto (the roofline plan per operator shape,
//     plan.go); the ablations NoPartition, PackPerCall, KVPackPerCall and NoPipeline
//     (SMEPilot §5.4), named by Ablation (ablation.go, with which
//     placements and weight formats each combines). Batch.Use counts the linear calls each target's
//     backend ran (targets.go).
//   - Weight layout policies (layout.go; PIM-SHERPA §3.2–3.3, §4):
//     Options.WeightLayout duplicate (row-major decode layout and gemm
//     panels both resident), owr (only the decode layout; each prefill
//     GEMM's weight rearranged into one buffer first) and ddb (only the
//     decode layout; Options.CopyThreads copy threads rearrange the next
//     group of matrices into one of two buffers, each the largest
//     matrix, while the current group computes), with their
//     resident bytes, copy and wait timings (Model.Layout), a per-thread
//     trace of the last prefill (Model.LayoutTrace) and the process's
//     resident set (ResidentSetBytes).
//   - NUMA policies (numa.go, numa_mem.go; ArcLight §2.3–2.4):
//     Options.NUMA interleave and local put the packed weight panels, the
//     KV caches and the activation buffers in mmap'ed memory from one
//     allocator (internal/numa), interleaved over the nodes of the
//     Model's CPUs, or under local each worker's decode share of every
//     matrix bound to its node (KV caches interleaved: attention's jobs
//     have no static owner); Model.NUMAPlacement samples where the pages
//     went per tensor class. os leaves memory to first touch.
//   - Batch: slots of sequences, each with its own KV cache; Prefill of one
//     slot's T tokens (GEMMs with M = T) and batched Decode of one token for
//     each of several slots (M = the number of slots). Session is a Batch of
//     one. The KV cache is written by its producer (the RoPE step) in the
//     panel layout of the attention's gemm backend (kvcache.go; SMEPilot
//     §4.3, Fig. 7), in fp32 or, with Options.KVDType "bf16", bfloat16
//     (half the bytes; prefill attention converts each tile it reads to
//     fp32, decode reads the bf16 panels in place where AVX-512 runs
//     kernels.AxpyPanelsBF16), and attention is a tiled, online-softmax
//     (flash-style)
//     causal GQA kernel with mask-aware tiles (causal and
//     Config.SlidingWindow) whose QKᵀ and P·V tiles run gemm.PanelBlock on
//     those panels in place (the matrix placement's backend where it
//     computes fp32, e.g. sme-fp32, else the cores' fp32 backend: the
//     cache is packed for it), or kernels.AxpyPanels for the few query
//     rows of decode (all query rows of a KV head per panel row read; the
//     kv-packing ablation's row-major cache keeps DotRows/AxpyRows per
//     row) (attention.go), in jobs of (query rows, KV
//     head) whose rows and KV tile a tile planner picks (attnPlanRows,
//     attnPlanTile: whole MR slivers, the working set in half of L2); prefill runs SMEPilot §4.2's phase-aware pipeline (Fig. 6) on
//     pairs of workers, a matrix worker's QKᵀ and P·V overlapping a vector
//     worker's softmax and rescale (attention_pipeline.go;
//     Options.NoPipeline, the pipeline ablation, runs them serially, with
//     bit-identical outputs), and decode runs each job serially on the
//     worker that claims it; Qwen3-MoE layers route each token to
//     its top-k experts and run each expert's GEMMs on the rows routed to
//     it (moe.go).
//   - NUMA policy tp (tp.go, tp_batch.go; ArcLight §3.2–3.4, Figs. 4, 8,
//     9): the decoder layers partitioned over TPDegree thread groups (one
//     per NUMA node of the Model's CPUs by default; the nodes read from
//     sysfs with internal/topology's CPU-list parser): W_q, W_k, W_v,
//     W_gate, W_up by output rows, W_o and W_down by input columns,
//     attention and the KV cache by heads, each group with its own
//     activations and copy of the hidden state; Scatter, the Gathers
//     (attn_gather, ffn_gather: the partial sums added into the residual
//     by every group, in parallel) with double-buffered partials, and Sync
//     A (a global barrier per operator) or Sync B (group barriers, global
//     only at the Gathers); Model.TP describes the groups. Each group's
//     packed weights, KV caches and activations live in memory bound to
//     its node (numa_mem.go's allocator, mbind; Model.NUMAPlacement
//     reports them per group); the embedding, the LM head and its
//     buffers, the norm weights and the attention scratch stay on the Go
//     heap (first touch).
//   - Per-phase service configurations (phase.go; Sandwich §3.2–3.3):
//     Options.PrefillCPUs and DecodeCPUs run prefill and decode on the
//     workers of their own CPUs, views of one pool spanning the union
//     (no thread created when the phase switches); PhaseThreads and
//     PhaseCPUs say what ran each phase.
//   - Per-operator timers (Batch.Timings), accumulated per layer and per
//     phase under the operator names of roofline's catalog (attn_norm,
//     q_proj, ..., lm_head; attention and experts fuse several catalog
//     operators, see Predict and EngineOp), so measured and predicted times
//     can be joined.
//   - Sampling: greedy (Argmax) and temperature/top-p with a seeded PRNG
//     (Sampler), run inside the forward call on the worker pool
//     (Batch.DecodeNext, PrefillNext: the vocabulary-wide passes split
//     over the workers, the ids those of the serial Sampler), and
//     Model.Hold, which runs a caller's decode loop on worker 0 with the
//     pool held, so that no worker parks between decode steps (issue
//     #16).
//   - Predictions at what ran (plan.go): Model.PredictionPrecision gives
//     the weight, activation and KV-cache dtypes, the ceilings and the
//     roofline target of the backends the placement ran (Precision), and
//     PredictOpsAs times the engine's operators with it.
//   - AttentionBench (attention_bench.go): the attention kernel alone, in
//     its work units, on synthetic KV caches in the packed or row-major
//     layout, one fp32 backend per worker, with a float64 output check;
//     what `bench attention` (package opbench) times.
//
// The forward pass follows llama2.c's run.c (see
// testdata/stories260K/SOURCE.md), generalized to half-split RoPE, Llama 3
// RoPE scaling, untied LM heads, Qwen3's per-head QK-norm and Qwen3-MoE's
// sparse FFN (transformers' Qwen3MoeSparseMoeBlock).
//
// Options.Context stops New's packing and every forward call between
// layers, so a command stops within about one layer's time of Ctrl-C.
//
// The engine calls kernels (the non-linear kernels) and kernels/gemm, never
// assembly directly; it reads configs through models, GGUF headers
// through gguf, and shares operator names and phases with roofline (tp's
// Gathers excepted, tpOps); weight files are opened with
// internal/regfile (a named pipe or device is refused); node-placed memory
// (mmap, mbind, move_pages) is internal/numa's. Sizes from configs
// and files are counted with internal/memlimit's overflow-checked Size
// (Config.ParamCount, Config.KVBytes), and NewBatch checks its KV caches
// against what this process may use (memlimit.Check) before allocating
// them. It must not import probes, reports or cmd (internal/deps's test
// checks).
package engine
