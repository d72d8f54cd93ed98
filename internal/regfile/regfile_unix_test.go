//go:build unix

package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A named pipe without a writer and /dev/zero are refused at once, not
// read (the test would hang or run out of memory otherwise).
func TestNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for path, want := range map[string]string{fifo: "not a regular file (a named pipe)", "/dev/zero": "not a regular file (a character device)"} {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		_, err := ReadFile(path, 1<<20)
		if !errors.Is(err, ErrNotRegular) || err.Error() != "open "+path+": "+want {
			t.Errorf("ReadFile(%s): %v, want %q", path, err, want)
		}
		if f, err := Open(path); err == nil || !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(%s): %v", path, err)
			if f != nil {
				f.Close()
			}
		}
	}
}
