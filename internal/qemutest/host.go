package qemutest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// Environment variables read on the host.
const (
	// RequireEnv=1 turns every skip of Boot into a failure.
	RequireEnv = "BENCH_REQUIRE_QEMU"
	// KernelEnv is the kernel image to boot.
	KernelEnv = "BENCH_QEMU_KERNEL"
	// TimeoutEnv bounds the boot and the guest run (a Go duration).
	TimeoutEnv = "BENCH_QEMU_TIMEOUT"
)

// DefaultTimeout bounds the boot and the guest run when BENCH_QEMU_TIMEOUT
// is unset. A boot takes about 8 s under TCG on an idle 2-core machine; two
// packages' guests may run at once under go test ./....
const DefaultTimeout = 2 * time.Minute

// QEMUArgs is the guest machine, before -kernel: TCG, 2 CPUs, 1 GiB in two
// NUMA nodes (CPU 0 + 512 MiB, CPU 1 + 512 MiB) at distance 20, no network,
// the serial console on stdio. MachineArgs(n) is the n-node machine.
var QEMUArgs = MachineArgs(2)

// MaxNodes is the most NUMA nodes Options.Nodes may ask for.
const MaxNodes = 8

// MachineArgs is the guest machine of n NUMA nodes (2 ≤ n ≤ MaxNodes),
// before -kernel: TCG, n CPUs, 1 GiB split evenly, node i = CPU i + 1/n
// GiB, every pair of nodes at distance 20, no network, the serial console
// on stdio.
func MachineArgs(n int) []string {
	mib := 1024 / n
	args := []string{"-accel", "tcg", "-cpu", "max", "-smp", fmt.Sprint(n), "-m", fmt.Sprintf("%dM", mib*n)}
	for i := range n {
		args = append(args, "-object", fmt.Sprintf("memory-backend-ram,id=m%d,size=%dM", i, mib))
	}
	for i := range n {
		args = append(args, "-numa", fmt.Sprintf("node,nodeid=%d,cpus=%d,memdev=m%d", i, i, i))
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			args = append(args, "-numa", fmt.Sprintf("dist,src=%d,dst=%d,val=20", i, j))
		}
	}
	return append(args, "-nic", "none", "-nographic", "-no-reboot")
}

// Options say what Boot runs.
type Options struct {
	// Test is the guest-side test to run in the guest (a top-level test
	// name such as "TestQEMUGuest", which must call RequireGuest).
	Test string
	// Dir is the package to build, as a directory; "" means ".", the
	// package under test (go test runs tests in its directory).
	Dir string
	// Nodes is the guest's NUMA nodes, one CPU each (MachineArgs; 0: 2,
	// the machine of QEMUArgs).
	Nodes int
}

// Result is what a guest run printed.
type Result struct {
	// Log holds the guest's test output lines (-test.v), without the
	// console's escape sequences and "\r".
	Log []string
	// Elapsed is the time from starting qemu to the result line.
	Elapsed time.Duration
	// Result is the guest's result line's value ("PASS", "FAIL"; "" when
	// none came).
	Result string
}

// host is what Boot needs from the host machine.
type host struct {
	qemu, kernel, goTool string
	timeout              time.Duration
}

// findHost returns the host's qemu, kernel and go command and the timeout,
// or why they are unusable (skip) or wrong (err).
func findHost() (h host, skip string, err error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return h, fmt.Sprintf("host is %s/%s: the qemu harness runs on linux/amd64 hosts only", runtime.GOOS, runtime.GOARCH), nil
	}
	if testing.Short() {
		return h, "-short: booting a qemu guest takes about 10 s", nil
	}
	if h.qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
		return h, fmt.Sprintf("no qemu-system-x86_64: %v", err), nil
	}
	h.kernel = os.Getenv(KernelEnv)
	if h.kernel == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return h, fmt.Sprintf("no %s and no cache dir: %v", KernelEnv, err), nil
		}
		h.kernel = filepath.Join(cache, "bench", "vmlinuz")
	}
	if fi, err := os.Stat(h.kernel); err != nil {
		return h, fmt.Sprintf("no kernel image: %v", err), nil
	} else if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return h, fmt.Sprintf("kernel image %s: not a non-empty regular file", h.kernel), nil
	}
	// go test puts its GOROOT/bin first on the test's PATH.
	if h.goTool, err = exec.LookPath("go"); err != nil {
		return h, fmt.Sprintf("no go command to build the guest: %v", err), nil
	}
	h.timeout = DefaultTimeout
	if s := os.Getenv(TimeoutEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return h, "", fmt.Errorf("%s=%q: must be a positive Go duration such as 90s", TimeoutEnv, s)
		}
		h.timeout = d
	}
	return h, "", nil
}

// Boot builds the test binary of opts.Dir for linux/amd64, boots it as /init
// of the guest of opts.Nodes nodes (MachineArgs; QEMUArgs for 2), runs opts.Test there and streams the
// guest's test output to t.Log. It fails t if the guest test failed or did
// not run, if no result came within the timeout, and for bad options; it
// skips t, with the reason, if the host cannot run the guest (see the package
// comment; BENCH_REQUIRE_QEMU=1 makes that a failure).
func Boot(t testing.TB, opts Options) *Result {
	t.Helper()
	if IsGuest() {
		t.Fatal("qemutest.Boot called inside the guest")
	}
	if opts.Test == "" || strings.ContainsAny(opts.Test, " \t\n/\"") {
		t.Fatalf("qemutest.Boot: Options.Test %q: must name one top-level test", opts.Test)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.Nodes < 2 || opts.Nodes > MaxNodes {
		t.Fatalf("qemutest.Boot: Options.Nodes %d: must be between 2 and %d", opts.Nodes, MaxNodes)
	}
	h, skip, err := findHost()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but %s", RequireEnv, skip)
		}
		t.Skipf("%s (scripts/numa-qemu-test.sh sets it up; %s=1 makes this a failure)", skip, RequireEnv)
	}

	dir := t.TempDir()
	initBin, err := buildGuest(h.goTool, opts.Dir, filepath.Join(dir, "init"))
	if err != nil {
		t.Fatal(err)
	}
	cpio, err := initramfs(initBin)
	if err != nil {
		t.Fatal(err)
	}
	cpioPath := filepath.Join(dir, "initramfs.cpio")
	if err := os.WriteFile(cpioPath, cpio, 0o644); err != nil {
		t.Fatal(err)
	}

	// The guest gets most of the time; booting takes a few seconds.
	guestTO := max(h.timeout-h.timeout/4, h.timeout-15*time.Second)
	args := append(MachineArgs(opts.Nodes),
		"-kernel", h.kernel, "-initrd", cpioPath,
		"-append", fmt.Sprintf("console=ttyS0 quiet panic=-1 %s=%s %s=%s", GuestEnv, opts.Test, guestTimeoutEnv, guestTO))
	res, err := runQEMU(t, h.qemu, args, h.timeout)
	if err != nil && res != nil && len(res.Log) == 0 && res.Result == "" {
		// The guest printed nothing of its own: the emulated machine
		// stalled before the kernel ran /init (seen once in many boots
		// of the 4-node machine on a loaded host). Boot it once more;
		// a guest that ran and failed is not retried.
		t.Logf("the guest never started (%v); booting it once more", firstLine(err))
		res, err = runQEMU(t, h.qemu, args, h.timeout)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// buildGuest builds the test binary of the package in dir as out: static,
// linux/amd64, without -race, with the running binary's build tags.
func buildGuest(goTool, dir, out string) ([]byte, error) {
	if dir == "" {
		dir = "."
	}
	args := []string{"test", "-c", "-race=false", "-o", out}
	if tags := buildTags(); tags != "" {
		args = append(args, "-tags="+tags)
	}
	args = append(args, dir)
	cmd := exec.Command(goTool, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the guest /init (CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go %s): %v\n%s",
			strings.Join(args, " "), err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("building the guest /init: %w", err)
	}
	return b, nil
}

// buildTags returns the -tags the running test binary was built with, so the
// guest runs the same code paths (e.g. purego).
func buildTags() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			return s.Value
		}
	}
	return ""
}

// runQEMU runs qemu with args, streaming its serial console to t.Log from the
// guest's first test line on, until the result line or the timeout. After the
// result line the guest powers off; qemu gets 10 s more to exit.
func runQEMU(t testing.TB, qemu string, args []string, timeout time.Duration) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", qemu, err)
	}
	waitErr := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waitErr <- err
	}()

	var all bytes.Buffer // everything, for the failure message
	var p serialParser
	var elapsed time.Duration
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		all.Write(sc.Bytes())
		all.WriteByte('\n')
		show, done := p.line(sc.Text())
		if show != "" {
			if !strings.HasPrefix(show, guestMark) {
				show = guestMark + " " + show
			}
			t.Log(show)
		}
		if done {
			elapsed = time.Since(start)
			// Let qemu exit on power off; end it if it does not.
			stop := time.AfterFunc(10*time.Second, cancel)
			defer stop.Stop()
			io.Copy(io.Discard, pr)
			break
		}
	}
	if err := sc.Err(); err != nil {
		io.Copy(io.Discard, pr)
	}
	runErr := <-waitErr
	if elapsed == 0 {
		elapsed = time.Since(start)
	}
	t.Logf("qemu ran %v (result after %v)", time.Since(start).Round(100*time.Millisecond), elapsed.Round(100*time.Millisecond))
	res := &Result{Log: p.log, Elapsed: elapsed, Result: p.result}
	switch {
	case p.result == "PASS":
		return res, nil
	case p.result != "":
		return res, fmt.Errorf("guest test failed (%s%s; log above)", ResultPrefix, p.result)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return res, fmt.Errorf("no %s line within %v (%s); serial output:\n%s", ResultPrefix, timeout, TimeoutEnv, all.String())
	default:
		return res, fmt.Errorf("no %s line; qemu: %v; serial output:\n%s", ResultPrefix, runErr, all.String())
	}
}
