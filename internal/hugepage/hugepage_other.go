//go:build !linux

package hugepage

import "errors"

// Advise does nothing off Linux (no transparent huge pages).
func Advise([]byte) {}

// Allowed is false off Linux.
func Allowed() bool { return false }

// Advised has nothing to read off Linux.
func Advised([]byte) (bool, int64, error) {
	return false, 0, errors.New("hugepage: no /proc/self/smaps off Linux")
}
