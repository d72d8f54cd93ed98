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
//     llama, qwen3 and qwen3moe, F32, F16, BF16 and Q8_0 tensors
//     dequantized into the same float32 Weights, the metadata mapped to
//     Config; our own header reader (gguf.go says why).
//   - Model: the weights packed once, at load time, into kernels/gemm's
//     panel layout (SMEPilot §4.3); the packing time is recorded apart
//     (Model.PackSeconds).
//   - Session: one sequence's KV cache and working buffers; Prefill of T
//     tokens (GEMMs with M = T) and Decode of one token (M = 1), giving
//     logits.
//   - Per-operator timers (Session.Timings), accumulated per layer and per
//     phase under the operator names of roofline's catalog (attn_norm,
//     q_proj, ..., lm_head), so measured and predicted times can be joined.
//   - Sampling: greedy (Argmax) and temperature/top-p with a seeded PRNG
//     (Sampler).
//
// The forward pass follows llama2.c's run.c (see
// testdata/stories260K/SOURCE.md), generalized to half-split RoPE, Llama 3
// RoPE scaling, untied LM heads and Qwen3's per-head QK-norm. Attention is a
// straightforward causal kernel (scores, kernels.Softmax, weighted sum of V);
// a tiled online-softmax version is a later step. Everything runs on the
// calling goroutine for now (a kernels/pool group is a later step).
//
// The engine calls kernels (the non-linear kernels) and kernels/gemm, never
// assembly directly; it reads configs through models and shares operator
// names and phases with roofline. It must not import probes, reports or cmd
// (imports_test.go checks).
package engine
