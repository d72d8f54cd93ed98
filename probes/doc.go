// Package probes runs the sections of `bench probe` and returns a
// results.Profile: machine and topology (through internal/topology), memory
// bandwidth over working sets and thread counts, pointer-chase latency,
// bandwidth shared between two concurrent thread groups (SMEPilot §3.1), and
// the node-to-node NUMA matrix (ArcLight §3.1, Table 1), and the fixed
// cost of one parallel call on kernels/pool, hot and after the workers
// parked (the dispatch section, fixedcost.go; issue #16). Where CPUID and
// sysfs report no L3 (a VM), the last-level cache's size is found from the
// knee of the read bandwidth curves (knee.go: DetectKnee, WithMeasuredLLC,
// KneeRule) and recorded as a cache of source "measured knee" with an L3
// read roof in memory.levels.
//
// Every figure is the median of at least five timed repetitions after a
// warm-up, with min, max and the coefficient of variation, measured on
// threads pinned with sched_setaffinity over buffers mapped with mmap. Bytes
// are counted as STREAM counts them: write-allocate traffic is not counted.
//
// Working sets are sized within the memory this process may use
// (internal/memlimit: cgroup, rlimit or MemAvailable headroom): the default
// largest working set is lowered to fit, and a --max-ws, --ws or GEMM shape
// that does not fit is refused before anything is measured
// (CheckMaxWorkingSet, GEMMBytes).
//
// Every figure's noise record (CPU time over wall time, steal, load
// average, cv and the verdict) is read with internal/noise, which the
// engine's runs share.
//
// probes uses the shared kernel package (kernels) for all hot loops; it must
// not import reports, roofline or engine.
package probes
