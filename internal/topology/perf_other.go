//go:build !linux

package topology

// perfCounters: perf_event_open is Linux-only.
func perfCounters(Roots) string { return "unavailable: perf_event_open is Linux-only" }
