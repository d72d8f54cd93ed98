package probes

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel for transparent huge pages on b
// (madvise(MADV_HUGEPAGE)); best effort: with THP "never" or an old kernel
// the buffer keeps 4 KiB pages.
func adviseHuge(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
}

// hugePagesAllowed reports whether transparent huge pages may back an
// advised buffer: /sys/kernel/mm/transparent_hugepage/enabled is
// "[always]" or "[madvise]".
func hugePagesAllowed() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "[always]") || strings.Contains(s, "[madvise]")
}
