//go:build linux

package affinity

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxCPU bounds CPU numbers (Linux's CONFIG_NR_CPUS is at most 8192) so a
// wild number cannot make a huge mask.
const maxCPU = 1 << 16

// Pin binds the calling OS thread to cpu (a logical CPU number as in
// /sys/devices/system/cpu/cpuN) with sched_setaffinity. The caller must hold
// runtime.LockOSThread, or the goroutine may move to an unpinned thread.
// Errors name the CPU and wrap the errno: "affinity: pin to CPU 4096: invalid
// argument (no such CPU online in this process's cpuset)".
func Pin(cpu int) error {
	if cpu < 0 || cpu >= maxCPU {
		return fmt.Errorf("affinity: pin to CPU %d: out of range [0, %d)", cpu, maxCPU)
	}
	if err := setaffinity([]int{cpu}); err != nil {
		return fmt.Errorf("affinity: pin to CPU %d: %w", cpu, err)
	}
	return nil
}

// PinSet binds the calling OS thread to the CPUs in cpus, like Pin. The kernel
// ignores CPUs that do not exist as long as one does; an empty set, a CPU out
// of [0, 65536) or a set with no usable CPU is an error naming the set.
func PinSet(cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("affinity: pin to CPUs []: empty set")
	}
	for _, c := range cpus {
		if c < 0 || c >= maxCPU {
			return fmt.Errorf("affinity: pin to CPUs %v: CPU %d out of range [0, %d)", cpus, c, maxCPU)
		}
	}
	if err := setaffinity(cpus); err != nil {
		return fmt.Errorf("affinity: pin to CPUs %v: %w", cpus, err)
	}
	return nil
}

func setaffinity(cpus []int) error {
	set := unix.NewCPUSet(slices.Max(cpus) + 1)
	for _, c := range cpus {
		set.Set(c)
	}
	err := unix.SchedSetaffinityDynamic(0, set)
	if err == unix.EINVAL {
		return fmt.Errorf("%w (no such CPU online in this process's cpuset)", err)
	}
	return err
}

// initial is the affinity mask the process started with, read at package
// initialisation, before any thread of this process can have been pinned.
var initial = sync.OnceValues(func() ([]int, error) { return getaffinity() })

func init() { initial() }

// Allowed returns the CPUs in the calling process's affinity mask, sorted
// ascending: the mask the process started with (as set by taskset, cgroups
// cpusets or the container runtime), read once at start so that threads pinned
// since then do not narrow it. The slice is a fresh copy.
func Allowed() ([]int, error) {
	cpus, err := initial()
	return slices.Clone(cpus), err
}

// getaffinity reads the calling thread's mask, growing the buffer while the
// kernel's mask is larger than it (EINVAL).
func getaffinity() ([]int, error) {
	for n := 1024; ; n *= 2 {
		set := unix.NewCPUSet(n)
		err := unix.SchedGetaffinityDynamic(0, set)
		if err == unix.EINVAL && n < 1<<20 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("affinity: sched_getaffinity: %w", err)
		}
		var cpus []int
		for c := range n {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
		return cpus, nil
	}
}

// Current returns the CPU the calling thread is running on (getcpu(2)). The
// answer can be stale as soon as it returns unless the thread is pinned; it
// is meant for tests.
func Current() (int, error) {
	var cpu, node uint32
	_, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0)
	if e != 0 {
		return -1, fmt.Errorf("affinity: getcpu: %w", e)
	}
	return int(cpu), nil
}
