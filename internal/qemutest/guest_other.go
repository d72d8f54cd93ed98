//go:build !linux

package qemutest

import (
	"fmt"
	"os"
	"testing"
)

// guestMain is unreachable off Linux (the guest binary is always
// linux/amd64): IsGuest is never true with a PID 1 test binary here.
func guestMain(m *testing.M) {
	fmt.Printf("%s the qemu guest is linux/amd64 only\n", guestMark)
	os.Exit(1)
}
