// Package kernels owns the hot loops of bench, shared by the probes (which
// measure the machine with them) and the engine (which computes with them):
// today the memory-bandwidth kernels (Read, Write, WriteNT, Copy, Triad) and
// the pointer chase for load-to-use latency; GEMM and non-linear kernels join
// later. Callers pick an implementation through MemImpls, BestMem or
// MemImplByISA and never call assembly directly.
//
// Layout (klauspost/compress style), per kernel family:
//
//	mem.go           MemImpl, the registry (MemImpls, BestMem, MemImplByISA)
//	memgo.go         the "go" implementation: each kernel's specification loop
//	mem_amd64.go/.s  AVX2 and AVX-512 stubs and dispatch; the .s is generated
//	                 by the avo program in _asm (go generate; scripts/gen-asm.sh)
//	mem_arm64.go/.s  NEON stubs and hand-written assembly (WORDs commented)
//	mem_generic.go   no assembly: build tag purego, or another GOARCH
//	chase.go         pointer chase (pure Go: a dependent chain of loads)
//
// The doc comment of each assembly kernel is its specification written as a
// Go loop, and the "go" implementation is exactly that loop. Build with
// -tags=purego to leave out all assembly. Availability is evaluated from
// internal/cpu each time MemImpls is called, so cpu.Disable... and
// BENCH_CPU_DISABLE take effect.
//
// This package imports only internal/cpu of bench; it must not import
// probes, engine, reports or roofline.
package kernels

//go:generate sh -c "cd _asm && GOWORK=off go run . -out ../mem_amd64.s"
