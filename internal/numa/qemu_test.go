//go:build linux

package numa_test

// The 2-node placement test. TestQEMUTwoNodes (host) builds this package's
// test binary statically for linux/amd64, packs it as /init in a newc
// initramfs and boots it under qemu-system-x86_64 (TCG) on a machine with two
// NUMA nodes: node0 = CPU 0 + 512 MiB, node1 = CPU 1 + 512 MiB, distance 20.
// In the guest, TestMain sees PID 1 and BENCH_NUMA_GUEST=1 (from the kernel
// command line), mounts proc and sysfs, runs only TestQEMUGuest, prints
// "BENCH_NUMA_QEMU_RESULT=PASS" or "=FAIL" and powers off. The host parses the
// serial console.
//
// Skipped (with the reason) when qemu-system-x86_64, the go command or a kernel
// is missing, or with -short; BENCH_REQUIRE_QEMU=1 turns those skips into
// failures. The kernel is $BENCH_QEMU_KERNEL or
// ${XDG_CACHE_HOME:-$HOME/.cache}/bench/vmlinuz (scripts/numa-qemu-test.sh
// fetches Debian's). BENCH_QEMU_TIMEOUT (a Go duration, default 60s) bounds
// the boot and run.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/numa"
)

const (
	guestEnv     = "BENCH_NUMA_GUEST"
	resultPrefix = "BENCH_NUMA_QEMU_RESULT="
)

func TestMain(m *testing.M) {
	if os.Getpid() == 1 && os.Getenv(guestEnv) == "1" {
		guestMain(m)
	}
	os.Exit(m.Run())
}

// guestMain runs as /init in the guest: it never returns.
func guestMain(m *testing.M) {
	code := 1
	if err := guestMount(); err != nil {
		fmt.Printf("guest: %v\n", err)
	} else {
		flag.Set("test.run", "^TestQEMUGuest$")
		flag.Set("test.v", "true")
		flag.Set("test.timeout", "50s")
		code = m.Run()
		if code == 0 && !guestRan {
			fmt.Println("guest: TestQEMUGuest did not run")
			code = 1
		}
	}
	result := "PASS"
	if code != 0 {
		result = "FAIL"
	}
	fmt.Printf("\n%s%s\n", resultPrefix, result)
	unix.IoctlSetInt(1, unix.TCSBRK, 1) // tcdrain: let the UART send it all
	unix.Sync()
	err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	fmt.Printf("guest: power off: %v\n", err)
	os.Exit(code) // PID 1 exiting panics the kernel; panic=-1 and -no-reboot end qemu
}

func guestMount() error {
	for _, m := range []struct{ fstype, dir string }{{"proc", "/proc"}, {"sysfs", "/sys"}} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fstype, m.dir, m.fstype, 0, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dir, err)
		}
	}
	return nil
}

// guestRan records that TestQEMUGuest ran, so that a guest where it was
// skipped or filtered out does not report PASS.
var guestRan bool

// TestQEMUGuest is the guest half; it runs only as /init under TestQEMUTwoNodes.
func TestQEMUGuest(t *testing.T) {
	if os.Getpid() != 1 || os.Getenv(guestEnv) != "1" {
		t.Skip("runs only as /init in the qemu guest booted by TestQEMUTwoNodes")
	}
	guestRan = true
	const dir = "/sys/devices/system/node"
	nodes, err := filepath.Glob(dir + "/node[0-9]*")
	if err != nil || !slices.Equal(nodes, []string{dir + "/node0", dir + "/node1"}) {
		t.Fatalf("nodes in %s = %v, %v; want node0 and node1", dir, nodes, err)
	}
	for node, want := range []string{"10 20", "20 10"} {
		b, err := os.ReadFile(fmt.Sprintf("%s/node%d/distance", dir, node))
		if got := strings.TrimSpace(string(b)); err != nil || got != want {
			t.Errorf("node%d/distance = %q, %v; want %q", node, got, err, want)
		}
	}
	if err := numa.Available(); err != nil {
		t.Fatalf("Available() = %v", err)
	}
	nb, _ := os.ReadFile("/proc/sys/kernel/numa_balancing")
	t.Logf("kernel.numa_balancing = %s", strings.TrimSpace(string(nb)))
	if cpus, err := affinity.Allowed(); err != nil || !slices.Equal(cpus, []int{0, 1}) {
		t.Errorf("Allowed() = %v, %v; want [0 1]", cpus, err)
	}

	runtime.LockOSThread() // never unlocked: the thread dies with this test
	if err := affinity.Pin(1); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for range 100 {
		if cpu, _ = affinity.Current(); cpu == 1 {
			break
		}
		runtime.Gosched()
	}
	if cpu != 1 {
		t.Fatalf("after Pin(1), Current() = %d", cpu)
	}

	const size, samples = 32 << 20, 64
	// Bound to the remote node and to the local one, from CPU 1.
	for _, node := range []int{1, 0} {
		b, err := numa.AllocOnNode(size, node)
		if err != nil {
			t.Fatal(err)
		}
		got, err := numa.PageNodes(b, samples)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("AllocOnNode(32 MiB, %d) from CPU 1: pages per node %v", node, got)
		if len(got) != 1 || got[node] != samples {
			t.Errorf("AllocOnNode(32 MiB, %d): pages per node %v, want map[%d:%d]", node, got, node, samples)
		}
		if err := numa.Free(b); err != nil {
			t.Error(err)
		}
	}
	// Default policy: first touch from CPU 1 places on node 1. With
	// kernel.numa_balancing=1 (as here) a thread that keeps running gets its
	// pages marked for NUMA hinting faults, which move_pages reports as
	// -ENOENT or -EFAULT before Linux 6.5: spin for 3 s so that happens, to
	// check PageNodes' way around it.
	b, err := numa.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	for t0 := time.Now(); time.Since(t0) < 3*time.Second; {
	}
	if got, err := numa.PageNodes(b, samples); err != nil || len(got) != 1 || got[1] != samples {
		t.Errorf("Alloc + first touch on CPU 1: pages per node %v, %v; want map[1:%d]", got, err, samples)
	}
	numa.Free(b)

	if _, err := numa.AllocOnNode(size, 2); !errors.Is(err, numa.ErrNoNUMA) {
		t.Errorf("AllocOnNode(32 MiB, 2) error = %v, want one wrapping ErrNoNUMA", err)
	}
}

func TestQEMUTwoNodes(t *testing.T) {
	required := os.Getenv("BENCH_REQUIRE_QEMU") == "1"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf("BENCH_REQUIRE_QEMU=1 but "+format, args...)
		}
		t.Skipf(format+" (scripts/numa-qemu-test.sh sets it up)", args...)
	}
	if testing.Short() {
		unavailable("-short: booting a qemu guest takes about 10 s")
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		unavailable("no qemu-system-x86_64: %v", err)
	}
	kernel := os.Getenv("BENCH_QEMU_KERNEL")
	if kernel == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			unavailable("no BENCH_QEMU_KERNEL and no cache dir: %v", err)
		}
		kernel = filepath.Join(cache, "bench", "vmlinuz")
	}
	if _, err := os.Stat(kernel); err != nil {
		unavailable("no kernel image: %v", err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		unavailable("no go command to build the guest: %v", err)
	}
	timeout := 60 * time.Second
	if s := os.Getenv("BENCH_QEMU_TIMEOUT"); s != "" {
		if timeout, err = time.ParseDuration(s); err != nil {
			t.Fatalf("BENCH_QEMU_TIMEOUT=%q: %v", s, err)
		}
	}

	dir := t.TempDir()
	initPath := filepath.Join(dir, "init")
	build := exec.Command(goTool, "test", "-c", "-race=false", "-o", initPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest /init: %v\n%s", err, out)
	}
	initBin, err := os.ReadFile(initPath)
	if err != nil {
		t.Fatal(err)
	}
	var initramfs bytes.Buffer
	if err := writeCPIO(&initramfs, []cpioEntry{
		{name: "dev", mode: cpioDir | 0o755},
		{name: "dev/console", mode: cpioChar | 0o600, rdevMajor: 5, rdevMinor: 1},
		{name: "proc", mode: cpioDir | 0o755},
		{name: "sys", mode: cpioDir | 0o755},
		{name: "init", mode: cpioFile | 0o755, data: initBin},
	}); err != nil {
		t.Fatal(err)
	}
	cpioPath := filepath.Join(dir, "initramfs.cpio")
	if err := os.WriteFile(cpioPath, initramfs.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu,
		"-accel", "tcg", "-cpu", "max", "-smp", "2", "-m", "1G",
		"-object", "memory-backend-ram,id=m0,size=512M",
		"-object", "memory-backend-ram,id=m1,size=512M",
		"-numa", "node,nodeid=0,cpus=0,memdev=m0",
		"-numa", "node,nodeid=1,cpus=1,memdev=m1",
		"-numa", "dist,src=0,dst=1,val=20",
		"-kernel", kernel, "-initrd", cpioPath,
		"-append", "console=ttyS0 quiet panic=-1 "+guestEnv+"=1",
		"-nographic", "-no-reboot")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("qemu ran %v", time.Since(start).Round(100*time.Millisecond))

	result, guestLog := parseSerial(&out)
	for _, l := range guestLog {
		t.Log("guest: " + l)
	}
	switch {
	case result == "PASS":
	case result == "FAIL":
		t.Fatalf("guest test failed (log above)")
	case ctx.Err() != nil:
		t.Fatalf("no %s line within %v; serial output:\n%s", resultPrefix, timeout, out.String())
	default:
		t.Fatalf("no %s line; qemu: %v; serial output:\n%s", resultPrefix, runErr, out.String())
	}
}

// parseSerial returns the guest's result (PASS, FAIL or "") and its test
// output lines (those from "=== RUN" or "guest:" on).
func parseSerial(r io.Reader) (result string, log []string) {
	sc := bufio.NewScanner(r)
	started := false
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if res, ok := strings.CutPrefix(l, resultPrefix); ok {
			result = res
			break
		}
		// The first line follows the console's reset escape sequences.
		for _, mark := range []string{"=== RUN", "guest:"} {
			if i := strings.Index(l, mark); !started && i >= 0 {
				l, started = l[i:], true
			}
		}
		if started && l != "" {
			log = append(log, l)
		}
	}
	return result, log
}

// A minimal writer of the "newc" cpio format the kernel unpacks as initramfs.
const (
	cpioDir  = 0o040000
	cpioChar = 0o020000
	cpioFile = 0o100000
)

type cpioEntry struct {
	name                 string
	mode                 uint32
	rdevMajor, rdevMinor uint32
	data                 []byte
}

func writeCPIO(w io.Writer, entries []cpioEntry) error {
	pad := func(n int) []byte { return make([]byte, (4-n%4)%4) }
	for i, e := range append(entries, cpioEntry{name: "TRAILER!!!"}) {
		nlink := 1
		if e.mode&cpioDir != 0 {
			nlink = 2
		}
		hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			i+1, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, e.rdevMajor, e.rdevMinor, len(e.name)+1, 0)
		var b bytes.Buffer
		b.WriteString(hdr)
		b.WriteString(e.name)
		b.WriteByte(0)
		b.Write(pad(b.Len()))
		b.Write(e.data)
		b.Write(pad(len(e.data)))
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
