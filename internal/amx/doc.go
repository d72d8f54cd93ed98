// Package amx holds what every user of Intel AMX tiles in bench shares:
// the Linux permission request for the tile data state (Permit), asked for
// once per process, and the statement of how far the AMX code of this
// module has been verified (Verified).
//
// Linux keeps AMX tile data (XFEATURE_XTILEDATA, XSAVE state component
// 18) off until a process asks for it with arch_prctl(ARCH_REQ_XCOMP_PERM,
// 18); a thread that executes a tile instruction before that gets SIGILL.
// The permission is process-wide and granted for every thread, present
// and future. kernels/peak (the AMX compute ceilings) and kernels/gemm
// (the amx-bf16 and amx-int8 backends) both ask through Permit.
//
// This package imports no other package of bench (golang.org/x/sys/unix
// for the system call).
package amx

// Verified is the mark `bench probe --list` puts beside every AMX kernel:
// how far the AMX code has run on hardware. CI cannot run it: the
// machines CI runs on lack AMX, and the emulators of Debian 12's packages
// do not emulate it (Bochs 2.7 has no AMX; QEMU 7.2's TCG has no AMX, only
// KVM passes it through on AMX hardware). It ran on one kind of AMX
// machine, lent twice: the tests of kernels/gemm (the assembly against the
// Go specification, every backend against the float64 reference), the
// engine's tests and `bench probe` on it. The
// kernels still guard themselves: each checks its result against its Go
// specification on first use (kernels/gemm's amx-bf16 and amx-int8), or
// against a model of its checksum (kernels/peak's amx_bf16 and amx_int8).
const Verified = "not run in CI (Bochs 2.7 and QEMU 7.2 TCG in Debian 12 do not emulate AMX); ran on hardware 2026-11-26 and, with the multi-panel tile kernel, 2026-11-27: Intel Xeon family 6 model 207 (Emerald Rapids), 16 vCPUs under KVM, tests against the Go specification passed"
