// Package perfcount reads hardware performance counters with
// perf_event_open(2) for the phases of an inference run: cycles,
// instructions (IPC), last-level-cache loads and misses, data-TLB loads
// and misses, backend stall cycles and bus cycles: the counters behind
// Sandwich Fig. 1 (§3.1: IPC, L3LPKI, DTLBMiss, BUSPKI).
//
// Counters are opened as groups (PERF_FORMAT_GROUP |
// PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
// PERF_FORMAT_ID), one set per thread of the process, user space only
// (exclude_kernel, exclude_hv: what perf_event_paranoid=2 permits), and
// each value is scaled by time_enabled/time_running when the kernel
// multiplexed the PMU. ParseRead decodes the read(2) buffer; it is pure
// and tested on buffers laid out as perf_event_open(2) documents them.
//
// A Recorder counts the phases of a run one after another (Begin, End)
// and, where the caller marks each operator's end (Mark, which reads the
// counters without stopping them), splits each phase per operator class:
// the engine's operator kinds (linear, attention, nonlinear, elementwise)
// and what ran between operators.
//
// Where the kernel refuses (no PMU in a VM, perf_event_paranoid too high,
// not Linux) every output says "unavailable: <why>" — the error of the
// open and the perf_event_paranoid value — instead of figures.
//
// This package imports results (atomic writes); it must not import
// probes, reports, kernels, engine, roofline, models or any command package.
package perfcount
