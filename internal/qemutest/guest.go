package qemutest

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// Kernel command-line parameters of the form NAME=value, which the kernel
// passes to /init as environment variables.
const (
	// GuestEnv names the guest-side test that /init runs.
	GuestEnv = "BENCH_QEMU_GUEST"
	// guestTimeoutEnv is the guest's -test.timeout (a Go duration).
	guestTimeoutEnv = "BENCH_QEMU_GUEST_TIMEOUT"
)

// IsGuest reports whether this process is /init of a guest booted by Boot:
// PID 1 with BENCH_QEMU_GUEST set.
func IsGuest() bool {
	return os.Getpid() == 1 && os.Getenv(GuestEnv) != ""
}

// guestRan records that the guest test called RequireGuest, so that a guest
// where it was skipped or filtered out does not report PASS.
var guestRan atomic.Bool

// RequireGuest skips t unless it runs in the guest as the test Boot named;
// guest-side tests call it first.
func RequireGuest(t testing.TB) {
	t.Helper()
	if !IsGuest() || os.Getenv(GuestEnv) != t.Name() {
		t.Skipf("runs only as /init in a qemu guest booted by qemutest.Boot with Test %q", t.Name())
	}
	guestRan.Store(true)
}

// Main is the body of TestMain for a package with qemu tests:
//
//	func TestMain(m *testing.M) { os.Exit(qemutest.Main(m)) }
//
// On the host it returns m.Run(). In the guest (IsGuest) it mounts proc and
// sysfs, runs only the test named by BENCH_QEMU_GUEST, prints the result line
// and powers the guest off; it does not return.
func Main(m *testing.M) int {
	if !IsGuest() {
		return m.Run()
	}
	guestMain(m)
	panic("unreachable")
}

// guestTimeout is the guest's -test.timeout: from the kernel command line,
// else 1 minute.
func guestTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(guestTimeoutEnv)); err == nil && d > 0 {
		return d
	}
	return time.Minute
}
