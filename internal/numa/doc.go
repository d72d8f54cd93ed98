// Package numa allocates benchmark buffers outside the Go heap (mmap) and,
// on Linux, binds them to a NUMA node (mbind with MPOL_BIND) and reports which
// node each page landed on (move_pages, or get_mempolicy as a fallback).
//
// Memory from Alloc and AllocOnNode is released only by Free; the garbage
// collector never sees it. Placement is per page: bind before the first touch,
// then touch from any thread (MPOL_BIND places pages on the bound node whatever
// CPU faults them in). Use mmap'ed buffers, not Go slices, for placement: the
// runtime reuses already-touched heap pages, so a thread's set_mempolicy does
// not decide where a Go slice lives.
//
// golang.org/x/sys/unix has the syscall numbers but no wrappers and no MPOL_*
// constants; this package defines the few it needs. Only Linux has NUMA
// support here: other Unix systems get Alloc and Free and errors wrapping
// ErrNoNUMA from the rest; other systems get errors from everything.
//
// This package imports no other package of bench (its tests import
// internal/affinity and the qemu harness internal/qemutest).
package numa
