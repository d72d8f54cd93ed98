// Package memlimit says how many more bytes this process may allocate, and
// counts bytes without overflow, so that every size that comes from a flag,
// a config or a file is refused with one clear line before anything is
// allocated for it.
//
// It owns:
//
//   - Size: a byte count built from int factors (Mul, Size.Times,
//     Size.Plus, Size.TimesFloat) with overflow checks (math/bits); a
//     product past 2^64 stays marked as overflowed and still prints its
//     approximate value ("36 EB").
//   - Limit, Available and Sources.Read: the headroom this process has,
//     the smallest of
//     (1) each cgroup level's memory limit minus its working set, from the
//     process's cgroup in /proc/self/cgroup, the mount in
//     /proc/self/mountinfo, and, up to the mount's root, cgroup v2
//     memory.max ("max": none), memory.current and memory.stat
//     inactive_file, or cgroup v1 memory.limit_in_bytes (≥ 2^62: none),
//     memory.usage_in_bytes and memory.stat total_inactive_file (the
//     working set is usage minus inactive file pages, as the kubelet and
//     docker stats count it);
//     (2) RLIMIT_AS minus VmSize and RLIMIT_DATA minus VmData
//     (/proc/self/status), the Go heap's free and released spans added
//     back (the heap reuses them without new mappings);
//     (3) MemAvailable of /proc/meminfo.
//     Every path is read under Sources.Root, so tests point it at a fake
//     /proc and /sys tree.
//   - Check and Limit.Check: need against 0.9 of the headroom (the margin
//     keeps room for the runtime, stacks and page tables), as one error
//     line (*Error): "<what> need 36 GB, more than the 1.9 GB this process
//     may use (…)". Check, on the live sources, collects the Go heap's
//     garbage and reads again before it refuses.
//   - SetGoLimit: the Go runtime's soft memory limit (debug.SetMemoryLimit)
//     set from the hard limits (cgroup, rlimits) unless GOMEMLIMIT is set,
//     so the garbage collector works harder instead of the kernel killing
//     the process.
//
// Only Linux has these files; elsewhere no limit is known and Check
// refuses only sizes that overflow or exceed any address space.
//
// This package imports no other package of bench.
package memlimit
