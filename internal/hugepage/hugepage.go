package hugepage

import "unsafe"

// Min is the smallest buffer Make advises, in bytes: one 2 MiB huge page.
const Min = 2 << 20

// Make returns n zeroed elements of T (a type without pointers: numbers,
// or arrays and structs of them), the buffer advised for transparent huge
// pages (Advise) when it is at least Min bytes. Go hands a large
// allocation fresh pages from the OS, so the advice comes before their
// first touch.
func Make[T any](n int) []T {
	s := make([]T, n)
	var z T
	if nb := n * int(unsafe.Sizeof(z)); nb >= Min {
		Advise(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), nb))
	}
	return s
}
