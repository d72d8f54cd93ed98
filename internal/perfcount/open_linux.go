//go:build linux

package perfcount

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readFormat is the read_format every leader is opened with.
const readFormat = FormatGroup | FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID

// threadGroup is one counter group on one thread.
type threadGroup struct {
	tid    int
	leader int
	fds    []int
	names  map[uint64]string // PERF_FORMAT_ID → event name
}

// Set is the counter groups open on every thread of the process.
type Set struct {
	groups      []*threadGroup
	unsupported map[string]string
	buf         []byte
}

func attr(e Event, leader bool) *unix.PerfEventAttr {
	a := &unix.PerfEventAttr{Type: e.Type, Config: e.Config, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Read_format: readFormat, Bits: unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
	if leader {
		a.Bits |= unix.PerfBitDisabled
	}
	return a
}

// paranoid is the value of /proc/sys/kernel/perf_event_paranoid, or "unknown".
func paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// why explains an open error.
func why(e Event, err error) string {
	s := fmt.Sprintf("perf_event_open %s: %v", e.Name, err)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.EOPNOTSUPP):
		s += " (no hardware PMU event: a VM without a virtual PMU, or a PMU without this event)"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		s += " (not permitted: user-space counting of one's own threads needs perf_event_paranoid ≤ 2 or CAP_PERFMON)"
	}
	return s + ", perf_event_paranoid=" + paranoid()
}

// Open opens the groups (DefaultGroups when nil) on every thread of the
// process, disabled, user space only. Events the kernel refuses on the
// calling thread are left out and reported by Unsupported; when it
// refuses them all the error is an *UnavailableError saying why. Threads
// started after Open are not counted.
func Open(groups [][]Event) (*Set, error) {
	if groups == nil {
		groups = DefaultGroups
	}
	s := &Set{unsupported: map[string]string{}, buf: make([]byte, 8*(3+2*16))}
	var usable [][]Event
	var first string
	for _, g := range groups {
		var ok []Event
		for _, e := range g {
			fd, err := unix.PerfEventOpen(attr(e, true), 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				s.unsupported[e.Name] = why(e, err)
				if first == "" {
					first = s.unsupported[e.Name]
				}
				continue
			}
			unix.Close(fd)
			ok = append(ok, e)
		}
		if len(ok) > 0 {
			usable = append(usable, ok)
		}
	}
	if len(usable) == 0 {
		return nil, &UnavailableError{Why: first}
	}
	tids, err := threads()
	if err != nil {
		return nil, &UnavailableError{Why: err.Error()}
	}
	for _, tid := range tids {
		for _, g := range usable {
			tg, err := s.openGroup(tid, g)
			if errors.Is(err, unix.ESRCH) {
				break // the thread has exited
			}
			if err != nil {
				s.Close()
				return nil, &UnavailableError{Why: fmt.Sprintf("thread %d: %v", tid, err)}
			}
			s.groups = append(s.groups, tg)
		}
	}
	if len(s.groups) == 0 {
		return nil, &UnavailableError{Why: "no thread of the process could be counted"}
	}
	return s, nil
}

func (s *Set) openGroup(tid int, g []Event) (*threadGroup, error) {
	tg := &threadGroup{tid: tid, leader: -1, names: map[uint64]string{}}
	for i, e := range g {
		fd, err := unix.PerfEventOpen(attr(e, i == 0), tid, -1, tg.leader, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			s.unsupported[e.Name] = why(e, err) + " (in a group)"
			continue
		}
		if i == 0 {
			tg.leader = fd
		}
		tg.fds = append(tg.fds, fd)
		var id uint64
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.PERF_EVENT_IOC_ID), uintptr(unsafe.Pointer(&id))); errno != 0 {
			tg.close()
			return nil, fmt.Errorf("PERF_EVENT_IOC_ID: %w", errno)
		}
		tg.names[id] = e.Name
	}
	return tg, nil
}

func (tg *threadGroup) close() {
	for _, fd := range tg.fds {
		unix.Close(fd)
	}
	tg.fds = nil
}

// threads lists the thread IDs of the process (/proc/self/task).
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}

// Unsupported are the events left out, with why.
func (s *Set) Unsupported() map[string]string { return s.unsupported }

// Threads is the number of threads counted.
func (s *Set) Threads() int {
	seen := map[int]bool{}
	for _, g := range s.groups {
		seen[g.tid] = true
	}
	return len(seen)
}

func (s *Set) ioctlAll(req uint) error {
	for _, g := range s.groups {
		if err := unix.IoctlSetInt(g.leader, req, unix.PERF_IOC_FLAG_GROUP); err != nil {
			return fmt.Errorf("perfcount: ioctl on thread %d: %w", g.tid, err)
		}
	}
	return nil
}

// Start zeroes and enables every group.
func (s *Set) Start() error {
	if err := s.ioctlAll(unix.PERF_EVENT_IOC_RESET); err != nil {
		return err
	}
	return s.ioctlAll(unix.PERF_EVENT_IOC_ENABLE)
}

// Stop disables every group and reads the counts since Start.
func (s *Set) Stop() (Counts, error) {
	if err := s.ioctlAll(unix.PERF_EVENT_IOC_DISABLE); err != nil {
		return Counts{}, err
	}
	return s.Read()
}

// Read reads the counts since Start without stopping the counters: one
// read(2) per thread and group.
func (s *Set) Read() (Counts, error) {
	var reads []groupRead
	for _, g := range s.groups {
		n, err := unix.Read(g.leader, s.buf)
		if err != nil {
			return Counts{}, fmt.Errorf("perfcount: read thread %d: %w", g.tid, err)
		}
		r, err := ParseRead(s.buf[:n], readFormat)
		if err != nil {
			return Counts{}, err
		}
		reads = append(reads, groupRead{read: r, names: g.names})
	}
	c := sum(reads)
	c.Threads = s.Threads()
	return c, nil
}

// Close closes every counter.
func (s *Set) Close() {
	for _, g := range s.groups {
		g.close()
	}
	s.groups = nil
}
