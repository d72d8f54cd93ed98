//go:build !unix

package numa

import (
	"fmt"
	"runtime"
)

var errOS = fmt.Errorf("not implemented on %s: %w", runtime.GOOS, ErrNoNUMA)

// Alloc is implemented only on Unix systems; here it returns an error naming GOOS.
func Alloc(size int) ([]byte, error) {
	return nil, fmt.Errorf("numa: alloc %d bytes: %w", size, errOS)
}

// Free is implemented only on Unix systems; here it returns an error naming GOOS.
func Free(b []byte) error { return fmt.Errorf("numa: free: %w", errOS) }

// AllocOnNode is implemented only on Linux; here it returns an error wrapping ErrNoNUMA.
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
