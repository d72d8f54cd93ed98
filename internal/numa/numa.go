package numa

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrNoNUMA is wrapped by errors from AllocOnNode, PageNodes and Available
// when this kernel or OS offers no NUMA memory policy (mbind missing, denied
// by seccomp, or not implemented on GOOS) or when the requested node does not
// exist or has no memory.
var ErrNoNUMA = errors.New("numa: NUMA memory policy unavailable")

// Float64s returns b viewed as float64s (no copy): len = len(b)/8, and writes
// through either slice are visible through the other. b must be 8-byte aligned
// (buffers from Alloc and AllocOnNode are page-aligned); Float64s panics
// otherwise. Float64s(nil) is nil.
func Float64s(b []byte) []float64 {
	if len(b) < 8 {
		return nil
	}
	checkAligned("Float64s", b)
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// Uint64s returns b viewed as uint64s (no copy), like Float64s.
func Uint64s(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	checkAligned("Uint64s", b)
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

func checkAligned(fn string, b []byte) {
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%8 != 0 {
		panic(fmt.Sprintf("numa: %s: buffer at %#x is not 8-byte aligned", fn, p))
	}
}

func checkSize(size int) error {
	if size <= 0 {
		return fmt.Errorf("numa: alloc %d bytes: size must be positive", size)
	}
	return nil
}
