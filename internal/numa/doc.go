// Package numa allocates benchmark buffers outside the Go heap (mmap) and,
// on Linux, binds them to a NUMA node (mbind with MPOL_BIND) and reports which
// node each page landed on (move_pages, or get_mempolicy as a fallback).
//
// A part of an existing buffer can be given a policy of its own: Bind
// (MPOL_BIND to one node) and Interleave (MPOL_INTERLEAVE over a node set,
// page by page, as numactl --interleave) take any page-aligned sub-slice,
// moving pages already placed (MPOL_MF_MOVE). Where the shares of the
// threads that read a buffer are not page-aligned (the NR-row panels of a
// packed weight matrix split among workers), PageOwners gives each page to
// the node whose share covers most of its bytes and BindPages binds the runs
// of pages so assigned. SamplePages reports the node of each sampled page,
// so that a caller can check it against the node meant for it; CPUNode reads
// a CPU's node from sysfs.
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
