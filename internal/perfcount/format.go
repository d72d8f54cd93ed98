package perfcount

import (
	"encoding/binary"
	"fmt"
)

// read_format bits of perf_event_attr (linux/perf_event.h).
const (
	FormatTotalTimeEnabled = 1 << 0
	FormatTotalTimeRunning = 1 << 1
	FormatID               = 1 << 2
	FormatGroup            = 1 << 3
	FormatLost             = 1 << 4
)

// ReadValue is one counter of a read(2) buffer.
type ReadValue struct {
	Value uint64
	ID    uint64 // with FormatID
	Lost  uint64 // with FormatLost
}

// Read is a decoded read(2) buffer of a perf event fd.
type Read struct {
	// Enabled and Running are the event's (or group leader's) total time
	// enabled and time actually counting on the PMU, in ns; Running <
	// Enabled means the kernel multiplexed it with other events.
	Enabled uint64
	Running uint64
	Values  []ReadValue
}

// maxGroup bounds nr in a buffer (the kernel's limit on a group is far
// lower; a corrupt buffer must not allocate without bound).
const maxGroup = 1 << 12

// ParseRead decodes the buffer read(2) returns for a perf event fd opened
// with read_format format, in the host's byte order, as perf_event_open(2)
// lays it out:
//
//	with FormatGroup:   u64 nr; [u64 time_enabled]; [u64 time_running];
//	                    { u64 value; [u64 id]; [u64 lost] } × nr
//	without:            u64 value; [u64 time_enabled]; [u64 time_running];
//	                    [u64 id]; [u64 lost]
//
// Errors say what does not fit: a buffer not a whole number of u64s, one
// shorter or longer than its header says, nr = 0 or implausibly large.
func ParseRead(buf []byte, format uint64) (Read, error) {
	if len(buf)%8 != 0 {
		return Read{}, fmt.Errorf("perfcount: read buffer of %d bytes is not a whole number of u64", len(buf))
	}
	w := make([]uint64, len(buf)/8)
	for i := range w {
		w[i] = binary.NativeEndian.Uint64(buf[8*i:])
	}
	var r Read
	per := 1
	if format&FormatID != 0 {
		per++
	}
	if format&FormatLost != 0 {
		per++
	}
	if format&FormatGroup == 0 {
		want := per
		for _, f := range []uint64{FormatTotalTimeEnabled, FormatTotalTimeRunning} {
			if format&f != 0 {
				want++
			}
		}
		if len(w) != want {
			return Read{}, fmt.Errorf("perfcount: read buffer of %d u64, want %d for read_format %#x", len(w), want, format)
		}
		v := ReadValue{Value: w[0]}
		i := 1
		if format&FormatTotalTimeEnabled != 0 {
			r.Enabled, i = w[i], i+1
		}
		if format&FormatTotalTimeRunning != 0 {
			r.Running, i = w[i], i+1
		}
		if format&FormatID != 0 {
			v.ID, i = w[i], i+1
		}
		if format&FormatLost != 0 {
			v.Lost = w[i]
		}
		r.Values = []ReadValue{v}
		return r, nil
	}
	if len(w) < 1 {
		return Read{}, fmt.Errorf("perfcount: empty group read buffer")
	}
	nr := w[0]
	if nr == 0 || nr > maxGroup {
		return Read{}, fmt.Errorf("perfcount: group read buffer says nr = %d events (want 1..%d)", nr, maxGroup)
	}
	i := 1
	if format&FormatTotalTimeEnabled != 0 {
		if i >= len(w) {
			return Read{}, fmt.Errorf("perfcount: group read buffer of %d u64 ends before time_enabled", len(w))
		}
		r.Enabled, i = w[i], i+1
	}
	if format&FormatTotalTimeRunning != 0 {
		if i >= len(w) {
			return Read{}, fmt.Errorf("perfcount: group read buffer of %d u64 ends before time_running", len(w))
		}
		r.Running, i = w[i], i+1
	}
	if want := i + int(nr)*per; len(w) != want {
		return Read{}, fmt.Errorf("perfcount: group read buffer of %d u64, want %d for nr = %d and read_format %#x", len(w), want, nr, format)
	}
	for range nr {
		v := ReadValue{Value: w[i]}
		i++
		if format&FormatID != 0 {
			v.ID, i = w[i], i+1
		}
		if format&FormatLost != 0 {
			v.Lost, i = w[i], i+1
		}
		r.Values = append(r.Values, v)
	}
	return r, nil
}

// Scale estimates the count over the whole enabled time from a count
// taken while the event ran (perf's scaling for multiplexed events):
// value × enabled / running. ok is false when the event never ran
// (running = 0), and the estimate is then 0. Without multiplexing
// (running = enabled) it is the value itself.
func Scale(value, enabled, running uint64) (est float64, ok bool) {
	if running == 0 {
		return 0, false
	}
	if running >= enabled {
		return float64(value), true
	}
	return float64(value) * (float64(enabled) / float64(running)), true
}

// AppendRead encodes r as read(2) would return it for read_format format
// (the inverse of ParseRead; for building test buffers and fixtures).
func AppendRead(b []byte, r Read, format uint64) []byte {
	put := func(v uint64) { b = binary.NativeEndian.AppendUint64(b, v) }
	if format&FormatGroup == 0 {
		v := ReadValue{}
		if len(r.Values) > 0 {
			v = r.Values[0]
		}
		put(v.Value)
		if format&FormatTotalTimeEnabled != 0 {
			put(r.Enabled)
		}
		if format&FormatTotalTimeRunning != 0 {
			put(r.Running)
		}
		if format&FormatID != 0 {
			put(v.ID)
		}
		if format&FormatLost != 0 {
			put(v.Lost)
		}
		return b
	}
	put(uint64(len(r.Values)))
	if format&FormatTotalTimeEnabled != 0 {
		put(r.Enabled)
	}
	if format&FormatTotalTimeRunning != 0 {
		put(r.Running)
	}
	for _, v := range r.Values {
		put(v.Value)
		if format&FormatID != 0 {
			put(v.ID)
		}
		if format&FormatLost != 0 {
			put(v.Lost)
		}
	}
	return b
}
