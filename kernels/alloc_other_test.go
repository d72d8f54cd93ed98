//go:build !linux

package kernels

import "testing"

// benchAlloc returns bytes of zeroed, 8-byte aligned memory (no huge-page
// advice off Linux).
func benchAlloc(tb testing.TB, bytes int) []byte {
	u := make([]uint64, (bytes+7)/8)
	return unsafeBytes(u)[:bytes]
}
