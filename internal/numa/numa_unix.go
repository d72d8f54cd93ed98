//go:build unix && !linux

package numa

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

var errOS = fmt.Errorf("not implemented on %s: %w", runtime.GOOS, ErrNoNUMA)

// Alloc maps size bytes of private anonymous read-write memory with mmap
// (page-aligned, not on the Go heap; release with Free). size <= 0 is an error.
func Alloc(size int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return nil, err
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("numa: alloc %d bytes: mmap: %w", size, err)
	}
	return b, nil
}

// Free unmaps a buffer returned by Alloc. Free(nil) does nothing.
func Free(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	if err := unix.Munmap(b[:cap(b)]); err != nil {
		return fmt.Errorf("numa: free %d bytes at %p: munmap: %w (not from Alloc?)", cap(b), unsafe.SliceData(b), err)
	}
	return nil
}

// AllocOnNode is implemented only on Linux; here it returns an error wrapping
// ErrNoNUMA. Use Alloc.
func AllocOnNode(size int, node int) ([]byte, error) {
	return nil, fmt.Errorf("numa: alloc %d bytes on node %d: %w", size, node, errOS)
}

// PageNodes is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
func PageNodes(b []byte, samples int) (map[int]int, error) {
	return nil, fmt.Errorf("numa: page nodes: %w", errOS)
}

// Available reports why NUMA placement is unavailable: it is implemented only on Linux.
func Available() error { return fmt.Errorf("numa: %w", errOS) }

// Bind is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
func Bind(b []byte, node int) error { return fmt.Errorf("numa: bind: %w", errOS) }

// Interleave is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
func Interleave(b []byte, nodes []int) error { return fmt.Errorf("numa: interleave: %w", errOS) }

// BindPages is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
func BindPages(b []byte, owners []int) error { return fmt.Errorf("numa: bind pages: %w", errOS) }

// SamplePages is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
func SamplePages(b []byte, samples int) (pages, nodes []int, err error) {
	return nil, nil, fmt.Errorf("numa: sample pages: %w", errOS)
}

// CPUNode is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
func CPUNode(cpu int) (int, error) { return 0, fmt.Errorf("numa: node of CPU %d: %w", cpu, errOS) }
