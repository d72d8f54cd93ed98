//go:build linux

package noise

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the calling OS thread's CPU time in seconds
// (CLOCK_THREAD_CPUTIME_ID), and false where it cannot be read.
func ThreadCPU() (float64, bool) { return clock(unix.CLOCK_THREAD_CPUTIME_ID) }

// ProcessCPU returns the CPU time of every thread of this process in
// seconds (CLOCK_PROCESS_CPUTIME_ID), and false where it cannot be read.
func ProcessCPU() (float64, bool) { return clock(unix.CLOCK_PROCESS_CPUTIME_ID) }

func clock(id int32) (float64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0, false
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9, true
}

// CPUTicks reads /proc/stat's per-CPU lines: for each CPU in cpus, its
// steal ticks and its total ticks (user … steal), summed. ok is false when
// the file cannot be read or lacks a CPU.
func CPUTicks(cpus []int) (steal, total uint64, ok bool) {
	t, ok := CPUTimes(cpus)
	return t.Steal, t.Total, ok
}

// CPUTimes is CPUTicks with the idle ticks (idle and iowait) too.
func CPUTimes(cpus []int) (t Ticks, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Ticks{}, false
	}
	want := make(map[string]bool, len(cpus))
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !want[f[0]] {
			continue
		}
		found++
		// user nice system idle iowait irq softirq steal [guest guest_nice]:
		// guest time is already inside user, so it is not added again.
		for i := 1; i <= 8; i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return Ticks{}, false
			}
			t.Total += v
			switch i {
			case 4, 5:
				t.Idle += v
			case 8:
				t.Steal += v
			}
		}
	}
	return t, found == len(cpus)
}

// LoadAvg1 is the one-minute load average, 0 when unreadable.
func LoadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
