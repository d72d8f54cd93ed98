//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// openNonblock opens path read-only with O_NONBLOCK, so that a named pipe
// swapped in after the Stat does not block the open (O_NONBLOCK does not
// change reads of a regular file).
func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
