//go:build !linux

package engine

// threadCPUSeconds: no per-thread CPU clock read outside Linux.
func threadCPUSeconds() (sec float64, ok bool) { return 0, false }
