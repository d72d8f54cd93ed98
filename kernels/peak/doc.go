// Package peak owns the compute-ceiling loops of bench: register-resident
// loops of one arithmetic instruction (FMA, dot product, tile multiply) over
// enough independent accumulators to cover latency x issue rate, so their
// throughput is the core's peak for that instruction, plus a dependent-add
// chain that measures the core clock.
//
// Kernels lists every loop compiled in for GOARCH, registered by name and
// ISA in a kernels/registry Registry (the ISA order every kernel family
// shares), with availability evaluated from internal/cpu at call time (so
// cpu.Disable... and BENCH_CPU_DISABLE take effect) and, for each, the
// pure-Go model of its
// checksum: every loop starts from seeded accumulators and adds products of
// exactly representable sources, so the checksum of iters iterations is
// known exactly and Model computes it with the same arithmetic.
//
// Layout:
//
//	peak.go           Kernel, its registry (Kernels, KernelByName), the data
//	                  layouts and the Go models
//	ipc.go            issue rates per microarchitecture (theoretical peaks)
//	peak_amd64.go/.s  SSE/AVX2/AVX-512/AVX-VNNI/AMX loops; the .s is generated
//	                  by the avo program in ../_asm/peak (go generate)
//	amx_amd64.go      the AMX tile-data permission, internal/amx.Permit
//	peak_arm64.go/.s  NEON loops, hand-written (WORDs commented)
//	peak_generic.go   no assembly (tag purego or another GOARCH): no kernels
//
// This package imports only internal/cpu, internal/amx and kernels/registry
// of bench (and cpuid/x/sys); it must not import probes, engine, reports or
// roofline.
package peak

//go:generate sh -c "cd ../_asm && GOWORK=off go run ./peak -out ../peak/peak_amd64.s"
