// Package qemutest runs a package's own tests inside a small Linux guest:
// qemu-system-x86_64 under TCG with two NUMA nodes (node 0 = CPU 0 + 512 MiB,
// node 1 = CPU 1 + 512 MiB, distance 20), or Options.Nodes nodes of one CPU
// and 1/n GiB each, so that NUMA placement can be tested on a machine with
// one node.
//
// A package opts in with a TestMain and a pair of tests:
//
//	func TestMain(m *testing.M) { os.Exit(qemutest.Main(m)) }
//
//	func TestQEMUThing(t *testing.T) { // host side
//		qemutest.Boot(t, qemutest.Options{Test: "TestQEMUGuestThing"})
//	}
//
//	func TestQEMUGuestThing(t *testing.T) { // guest side
//		qemutest.RequireGuest(t)
//		...
//	}
//
// Boot builds the package's test binary statically (go test -c,
// CGO_ENABLED=0, GOOS=linux, GOARCH=amd64, with the build tags of the running
// test binary), writes it as /init into a newc cpio initramfs, boots the
// guest and streams its serial console. In the guest, Main sees PID 1 and
// BENCH_QEMU_GUEST=<test> (from the kernel command line), mounts proc and
// sysfs, runs only that test with -test.v, prints "BENCH_QEMU_RESULT=PASS"
// or "=FAIL" and powers off. A guest test that did not run (skipped before
// RequireGuest, filtered out) counts as a failure.
//
// Boot skips, with the reason, on hosts other than linux/amd64, with -short,
// and when qemu-system-x86_64, the go command or the kernel image is missing;
// BENCH_REQUIRE_QEMU=1 turns those skips into failures. The kernel is
// $BENCH_QEMU_KERNEL, else ${XDG_CACHE_HOME:-$HOME/.cache}/bench/vmlinuz
// (scripts/numa-qemu-test.sh fetches Debian's). BENCH_QEMU_TIMEOUT (a Go
// duration, default 2m) bounds the boot and the guest run, not the build.
//
// Only test code may import this package. It imports no other package of
// bench.
package qemutest
