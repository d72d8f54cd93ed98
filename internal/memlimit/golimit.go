package memlimit

import (
	"math"
	"os"
	"runtime/debug"
)

// SetGoLimit sets the Go runtime's soft memory limit (debug.SetMemoryLimit)
// to Margin of the smallest hard limit on this process (a cgroup memory
// limit, RLIMIT_AS or RLIMIT_DATA; Sources.HardLimit), so that the garbage
// collector runs harder near it instead of the heap growing to twice the
// live data past it and the kernel killing the process. It does nothing
// when GOMEMLIMIT is set (the user's choice stands) or when there is no
// hard limit, and returns the limit set (0: none) and its source.
func SetGoLimit() (int64, string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, ""
	}
	b, src, ok := Live().HardLimit()
	if !ok {
		return 0, ""
	}
	l := int64(min(float64(b)*Margin, math.MaxInt64/2))
	debug.SetMemoryLimit(l)
	return l, src
}
