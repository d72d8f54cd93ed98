//go:build unix

package memlimit

import (
	"fmt"
	"syscall"
)

// getrlimit returns the soft limit of RLIMIT_AS or RLIMIT_DATA and whether
// it is finite.
func getrlimit(resource string) (uint64, bool, error) {
	var r int
	switch resource {
	case "RLIMIT_AS":
		r = syscall.RLIMIT_AS
	case "RLIMIT_DATA":
		r = syscall.RLIMIT_DATA
	default:
		return 0, false, fmt.Errorf("unknown resource %q", resource)
	}
	var l syscall.Rlimit
	if err := syscall.Getrlimit(r, &l); err != nil {
		return 0, false, err
	}
	if uint64(l.Cur) >= 1<<62 { // RLIM_INFINITY: all ones on Linux, 2^63−1 on Darwin
		return 0, false, nil
	}
	return uint64(l.Cur), true, nil
}
