//go:build !linux

package probes

func threadCPU() (float64, bool)                         { return 0, false }
func cpuTicks(cpus []int) (steal, total uint64, ok bool) { return 0, 0, false }
func loadAvg1() float64                                  { return 0 }
