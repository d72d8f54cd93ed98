package quant

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageBytes is the base page size madvise's range is aligned to.
const pageBytes = 4096

// adviseHuge gives madvise(MADV_HUGEPAGE) for the whole base pages inside
// the n bytes at p (best effort: with THP "never", or on an old kernel,
// the buffer keeps 4 KiB pages; the error is dropped). Pages touched
// before the advice stay 4 KiB until khugepaged collapses them.
func adviseHuge(p unsafe.Pointer, n int) {
	start := uintptr(p)
	lo := (start + pageBytes - 1) &^ (pageBytes - 1)
	hi := (start + uintptr(n)) &^ (pageBytes - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo), unix.MADV_HUGEPAGE)
}
