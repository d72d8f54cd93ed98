package hugepage

import (
	"testing"
	"unsafe"
)

func bytesOf[T any](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// Make returns n zeroed elements, small and large.
func TestMakeZeroed(t *testing.T) {
	for _, n := range []int{0, 1, 1000, Min/4 + 3} {
		s := Make[float32](n)
		if len(s) != n {
			t.Fatalf("Make(%d): len %d", n, len(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Make(%d)[%d] = %v", n, i, v)
			}
		}
	}
}
