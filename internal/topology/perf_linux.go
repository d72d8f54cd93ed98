//go:build linux

package topology

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// perfCounters opens a PERF_COUNT_HW_CPU_CYCLES counter on the calling
// thread (user space only, disabled) and closes it again. It returns
// "usable" or "unavailable: <errno text>, perf_event_paranoid=<value>".
func perfCounters(r Roots) string {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_CPU_CYCLES,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
		return "usable"
	}
	paranoid, ok, rerr := readOpt(r.proc("sys", "kernel", "perf_event_paranoid"))
	if rerr != nil || !ok {
		paranoid = unknown
	}
	return fmt.Sprintf("unavailable: %v, perf_event_paranoid=%s", err, paranoid)
}
