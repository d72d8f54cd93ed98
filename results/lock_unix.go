//go:build unix

package results

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// flockExclusive tries flock(LOCK_EX|LOCK_NB) on f: held reports that
// another open file description holds a lock on it.
func flockExclusive(f *os.File) (held bool, err error) {
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
