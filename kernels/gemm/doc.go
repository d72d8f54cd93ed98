// Package gemm is the matrix multiplication of bench: Y = X·Wᵀ for a Linear
// layer (X is M×K activations, W is N×K weights, Y is M×N, all row-major),
// with fp32, bf16 and int8 weights, on packed weights (packed once, at load
// time: SMEPilot §4.3) and a BLIS loop nest around register-tiled
// microkernels. Callers pick a Backend (Backends, Best, BackendByName),
// pack the weights (PackFP32, PackBF16, PackInt8), and compute output
// blocks with Weights.Block, which is single-threaded and safe to call
// concurrently on disjoint blocks: the thread pool partitions Y into
// blocks (SMEPilot §4.1: output tiles only, no reduction across workers).
// BlockUnpacked is the "pack on every call" ablation (SMEPilot §5.4).
//
// Layout (klauspost/compress style):
//
//	gemm.go            Backend, the registry, Blocking, Flops, WeightBytes
//	pack.go            Weights, the panel layouts, QuantizeRows
//	block.go           Block, BlockUnpacked, Scratch: the loop nest
//	kernels_go.go      the microkernels' specification loops (the "go"
//	                   backends, and the only ones on arm64 and with purego)
//	kernels_amd64.go/.s  AVX2 and AVX-512 microkernels; the .s is generated
//	                   by the avo program in kernels/_asm/gemm
//	kernels_generic.go no assembly: build tag purego, or another GOARCH
//	openblas/          a cgo harness (build tag openblas) comparing with
//	                   OpenBLAS sgemm: scripts/compare-openblas.sh
//
// Accuracy, tested for every backend against a float64 reference in
// gemm_test.go: fp32 and bf16 (exact bf16 weights, fp32 activations and
// accumulation) |y - ref| ≤ 2·K·2^-24·Σ_k|x_k·w_k| + 2^-126; int8 is exact
// in int32 on the quantized values (QuantizeRows), then two float32
// multiplies: |y - ref(quantized)| ≤ 2^-22·|ref|.
//
// This package imports only internal/cpu of bench.
package gemm

//go:generate sh -c "cd ../_asm && GOWORK=off go run ./gemm -out ../gemm/kernels_amd64.s"
