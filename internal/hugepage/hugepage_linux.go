package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageBytes is the base page size madvise's range is aligned to.
const pageBytes = 4096

// Advise gives madvise(MADV_HUGEPAGE) for the whole base pages inside b
// (best effort: the error is dropped). Pages touched before the advice
// stay 4 KiB until khugepaged collapses them.
func Advise(b []byte) {
	if lo, hi, ok := interior(b); ok {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_HUGEPAGE)
	}
}

// interior is the range of whole base pages inside b.
func interior(b []byte) (lo, hi uintptr, ok bool) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo = (start + pageBytes - 1) &^ (pageBytes - 1)
	hi = (start + uintptr(len(b))) &^ (pageBytes - 1)
	return lo, hi, hi > lo
}

// Allowed reports whether transparent huge pages may back an advised
// buffer: /sys/kernel/mm/transparent_hugepage/enabled is "[always]" or
// "[madvise]".
func Allowed() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "[always]") || strings.Contains(s, "[madvise]")
}

// Advised reads the mappings of /proc/self/smaps over the whole base
// pages inside b: whether every one carries the "hg" VmFlag (advised
// MADV_HUGEPAGE), and their AnonHugePages in bytes, counted in proportion
// to each mapping's overlap with b. Errors: smaps unreadable, no whole
// page inside b, or no VmFlags line over it (an old kernel).
func Advised(b []byte) (advised bool, hugeBytes int64, err error) {
	lo, hi, ok := interior(b)
	if !ok {
		return false, 0, fmt.Errorf("hugepage: %d bytes hold no whole page", len(b))
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, 0, fmt.Errorf("hugepage: %w", err)
	}
	defer f.Close()
	var vlo, vhi uintptr
	seen := false
	advised = true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 0 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			a, z, _ := strings.Cut(fs[0], "-")
			x, err1 := strconv.ParseUint(a, 16, 64)
			y, err2 := strconv.ParseUint(z, 16, 64)
			if err1 == nil && err2 == nil {
				vlo, vhi = uintptr(x), uintptr(y)
			}
			continue
		}
		if vhi <= lo || vlo >= hi || len(fs) < 1 {
			continue
		}
		switch fs[0] {
		case "AnonHugePages:":
			if len(fs) >= 2 {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				olo, ohi := max(lo, vlo), min(hi, vhi)
				hugeBytes += kb << 10 * int64(ohi-olo) / int64(vhi-vlo)
			}
		case "VmFlags:":
			seen = true
			if !slices.Contains(fs[1:], "hg") {
				advised = false
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, 0, fmt.Errorf("hugepage: smaps: %w", err)
	}
	if !seen {
		return false, 0, fmt.Errorf("hugepage: smaps has no VmFlags over the buffer")
	}
	return advised, hugeBytes, nil
}
