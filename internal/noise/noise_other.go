//go:build !linux

package noise

// ThreadCPU is unavailable off Linux.
func ThreadCPU() (float64, bool) { return 0, false }

// ProcessCPU is unavailable off Linux.
func ProcessCPU() (float64, bool) { return 0, false }

// CPUTicks is unavailable off Linux.
func CPUTicks(cpus []int) (steal, total uint64, ok bool) { return 0, 0, false }

// CPUTimes is CPUTicks with the idle ticks: unknown here.
func CPUTimes(cpus []int) (t Ticks, ok bool) { return Ticks{}, false }

// LoadAvg1 is unavailable off Linux (0).
func LoadAvg1() float64 { return 0 }
