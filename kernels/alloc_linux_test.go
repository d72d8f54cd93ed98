//go:build linux

package kernels

import (
	"testing"

	"golang.org/x/sys/unix"
)

// benchAlloc returns bytes of zeroed memory, 2 MiB aligned and advised
// MADV_HUGEPAGE, unmapped when tb's test ends. Transparent huge pages matter
// for DRAM-sized buffers: with THP in "madvise" mode (the Debian default) the
// Go heap gets 4 KiB pages, and on the Zen 4 KVM guest single-thread Read at
// 256 MiB measured 20 GB/s on 4 KiB pages and 31 GB/s on huge pages
// (likwid-bench load_avx: 24-29 GB/s).
func benchAlloc(tb testing.TB, bytes int) []byte {
	const huge = 2 << 20
	mem, err := unix.Mmap(-1, 0, bytes+huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatalf("mmap %d bytes: %v", bytes+huge, err)
	}
	tb.Cleanup(func() { unix.Munmap(mem) })
	off := 0
	for uintptrOfByte(mem, off)%huge != 0 {
		off += 4096
	}
	buf := mem[off : off+bytes : off+bytes]
	_ = unix.Madvise(buf, unix.MADV_HUGEPAGE) // best effort: THP may be off
	return buf
}
