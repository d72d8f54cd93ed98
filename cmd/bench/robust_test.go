package main

// Issue 17 §1 (inputs that never end), §2 (concurrent runs) and §4
// (results that cannot mislead).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/sweep/sweeptest"
	"github.com/cpubench/bench/workloads"
)

// runDeadline is run with a deadline: a command that blocks (reading a
// named pipe) fails the test instead of hanging it.
func runDeadline(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type res struct {
		code     int
		out, err string
	}
	ch := make(chan res, 1)
	go func() {
		var out, errb bytes.Buffer
		c := Execute(args, strings.NewReader(""), &out, &errb)
		ch <- res{c, out.String(), errb.String()}
	}()
	select {
	case r := <-ch:
		return r.code, r.out, r.err
	case <-time.After(d):
		t.Fatalf("bench %v: still running after %v", args, d)
		return 0, "", ""
	}
}

// oneLine fails unless s is one non-empty line.
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if s = strings.TrimSpace(s); s == "" || strings.Contains(s, "\n") {
		t.Errorf("%s: want one error line, got %q", what, s)
	}
}

// §1: a named pipe or a device as an input file is refused at once with
// one line, never read (a pipe without a writer blocked the open; /dev/zero
// was read until memory ran out).
func TestInputsNotRegular(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	fifoDir := filepath.Join(tmp, "sweep")
	os.MkdirAll(fifoDir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(fifoDir, cellsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	good := writeCells(t, filepath.Join(tmp, "good"), []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "w", "cores", 1, 1)})
	pj := "../../results/testdata/profile-amd-epyc-2core-all-sections.json"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"compare", pj, "/dev/zero"}, "/dev/zero: not a regular file (a character device)"},
		{[]string{"compare", fifo, pj}, fifo + ": not a regular file (a named pipe)"},
		{[]string{"report", fifoDir, "--out", filepath.Join(tmp, "out1")}, "not a regular file (a named pipe)"},
		{[]string{"report", filepath.Dir(good), "--out", filepath.Join(tmp, "out2"), "--baseline", fifo}, "--baseline " + fifo + ": not a regular file (a named pipe)"},
		{[]string{"report", filepath.Dir(good), "--out", filepath.Join(tmp, "out3"), "--profile", "/dev/zero"}, "--profile /dev/zero: not a regular file (a character device)"},
		{[]string{"run", "--model", fifo, "--profile", "none"}, "not a regular file (a named pipe)"},
		{[]string{"run", "--weights", "/dev/zero", "--profile", "none"}, "--weights /dev/zero: not a regular file (a character device)"},
		{[]string{"roofline", "--profile", fifo, "--model", "qwen3-0.6b"}, "--profile " + fifo + ": not a regular file (a named pipe)"},
	}
	for _, c := range cases {
		code, _, errs := runDeadline(t, 10*time.Second, c.args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q, want it to contain %q", c.args, code, errs, c.want)
		}
		oneLine(t, fmt.Sprint(c.args), errs)
	}
	for _, d := range []string{"out1", "out2", "out3"} {
		if _, err := os.Stat(filepath.Join(tmp, d)); err == nil {
			t.Errorf("a failed report created %s", d)
		}
	}
}

// §2: probes started in the same second get a directory each (they all
// wrote results/<host>-<stamp>, and one profile survived).
func TestProbeSameSecond(t *testing.T) {
	host, _ := os.Hostname()
	if host == "" {
		t.Skip("no hostname")
	}
	t.Chdir(t.TempDir())
	stamp := time.Date(2026, 11, 21, 10, 15, 0, 0, time.Local)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			opts := &ProbeOptions{IO: IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Only: []string{"machine"},
				RootSys: "/sys", RootPrc: "/proc", Now: func() time.Time { return stamp }}
			errs[i] = probeRun(context.Background(), opts)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join("results", host+"-20261121-101500*", "profile.json"))
	if len(dirs) != n {
		t.Fatalf("%d probes wrote %d profiles: %v", n, len(dirs), dirs)
	}
	// The newest of them is the highest suffix.
	dirs = probeDirs("results", host)
	if len(dirs) != n || filepath.Base(dirs[0]) != host+"-20261121-101500-6" {
		t.Errorf("probe directories newest first: %v", dirs)
	}
}

// §2: a sweep directory is locked while a sweep writes it: a second sweep
// on it fails at once with one line naming the holder's pid, and runs no
// cell.
func TestSweepLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	os.MkdirAll(dir, 0o755)
	ran := 0
	withCellEngine(t, func(c workloads.Cell, _ *sweep.Options) (sweep.CellEngine, error) {
		ran++
		return &sweeptest.FakeCellEngine{Cell: c}, nil
	})
	args := []string{"sweep", "--workloads", "gsm8k", "--batch", "1,2", "--threads", "1", "--placement", "cores", "--requests", "2",
		"--max-gen-tokens", "2", "--profile", "none", "--out", dir}
	held, err := results.LockDir(dir, sweep.LockFile) // another sweep, as far as the lock can tell
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, args...)
	want := fmt.Sprintf("sweep: --out %s: another bench sweep (pid %d) is writing it", dir, os.Getpid())
	if code != 1 || !strings.Contains(errs, want) || ran != 0 {
		t.Fatalf("second sweep: exit %d, %d cells run, stderr %q; want exit 1, none run, %q", code, ran, errs, want)
	}
	oneLine(t, "locked sweep", errs)
	held.Unlock()
	code, _, errs = run(t, args...)
	if code != 0 || ran != 2 {
		t.Fatalf("after the lock was released: exit %d, %d cells: %s", code, ran, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, sweep.LockFile)); err == nil {
		t.Error("the finished sweep left its lock file")
	}
}

// §2, across processes: while a sweep runs, a second one on its --out
// fails naming the first one's pid.
func TestSweepLockedByProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	p := startBench(t, dir, "sweep", "--models", tinyConfigFile(t, dir), "--workloads", "longwriter", "--requests", "64",
		"--max-gen-tokens", "0", "--max-prompt-tokens", "0", "--batch", "1", "--threads", "1", "--placement", "cores", "--profile", "none", "--out", "sw")
	defer func() {
		p.cmd.Process.Signal(syscall.SIGINT)
		p.wait(t, exitDeadline, "the first sweep")
	}()
	lock := filepath.Join(dir, "sw", sweep.LockFile)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(lock); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(p.cmd.Process.Pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lock file naming pid %d", p.cmd.Process.Pid)
		}
	}
	code, _, errs := run(t, "sweep", "--models", tinyConfigFile(t, dir), "--workloads", "gsm8k", "--requests", "1", "--batch", "1", "--threads", "1",
		"--placement", "cores", "--profile", "none", "--out", filepath.Join(dir, "sw"))
	if code != 1 || !strings.Contains(errs, fmt.Sprintf("another bench sweep (pid %d) is writing it", p.cmd.Process.Pid)) {
		t.Errorf("second sweep: exit %d, stderr %q", code, errs)
	}
	oneLine(t, "second sweep", errs)
}

// §2: report refuses a results file holding one key twice (two sweeps
// that wrote one directory) unless --merge chooses, and says how.
func TestReportDuplicateInOneFile(t *testing.T) {
	tmp := t.TempDir()
	in := filepath.Join(tmp, "sw")
	writeCells(t, in, []results.SweepCell{
		reportCell("k", "h", "2026-03-01T10:00:00Z", "gsm8k", "cores", 1, 2),
		reportCell("k2", "h", "2026-03-01T10:00:01Z", "gsm8k", "mixed", 1, 2),
		reportCell("k", "h", "2026-03-01T10:00:05Z", "gsm8k", "cores", 1, 3),
	})
	out := filepath.Join(tmp, "out")
	code, _, errs := run(t, "report", in, "--out", out)
	if code != 1 || !strings.Contains(errs, `key "k" appears more than once`) || !strings.Contains(errs, "--merge") {
		t.Errorf("duplicate keys: exit %d, stderr %q", code, errs)
	}
	oneLine(t, "duplicate keys", errs)
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused report created --out")
	}
	code, _, errs = run(t, "report", "--merge", in, "--out", out)
	if code != 0 || !strings.Contains(errs, `key "k": kept`) || !strings.Contains(errs, "(date 2026-03-01T10:00:05Z)") || !strings.Contains(errs, "later date wins") {
		t.Errorf("--merge: exit %d, stderr %q", code, errs)
	}
}

// §4: the default profile is the newest complete one, and a bad --model
// is reported as such, not as the profile's missing memory section.
func TestRunDefaultProfileComplete(t *testing.T) {
	host, _ := os.Hostname()
	if host == "" {
		t.Skip("no hostname")
	}
	tmp := t.TempDir()
	cfg := tinyConfigFile(t, tmp)
	t.Chdir(tmp)
	complete, err := os.ReadFile(filepath.Join(origWD, "../../results/testdata/profile-amd-epyc-2core-all-sections.json"))
	if err != nil {
		t.Fatal(err)
	}
	older := filepath.Join("results", host+"-20260101-120000")
	newer := filepath.Join("results", host+"-20260102-120000")
	os.MkdirAll(older, 0o755)
	os.MkdirAll(newer, 0o755)
	os.WriteFile(filepath.Join(older, "profile.json"), complete, 0o644)
	// bench probe --only machine --out <newer>
	if code, _, errs := run(t, "probe", "--only", "machine", "--out", newer); code != 0 {
		t.Fatalf("probe --only machine: exit %d: %s", code, errs)
	}
	code, _, errs := run(t, "run", "--model", "nosuch")
	if code != 1 || !strings.Contains(errs, `--model: model "nosuch": not a shipped config`) || strings.Contains(errs, "memory") {
		t.Errorf("run --model nosuch: exit %d, stderr %q", code, errs)
	}
	oneLine(t, "run --model nosuch", errs)
	code, out, errs := run(t, "run", "--model", cfg, "--prompt-tokens", "4", "--gen-tokens", "1", "--threads", "1")
	if code != 0 {
		t.Fatalf("run with the default profile: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "predictions from the newest complete probe profile of this host, "+filepath.Join(older, "profile.json")) ||
		!strings.Contains(errs, "skipped newer incomplete profile(s): "+filepath.Join(newer, "profile.json")) || !strings.Contains(out, "predicted: roofline of") {
		t.Errorf("run with the default profile: stderr %q\nstdout:\n%s", errs, out)
	}
}

// origWD is the package directory, where the tests start.
var origWD, _ = os.Getwd()

// §4: --json PATH is checked before anything is measured or created (a
// finished probe was lost at the rename, and its directory left empty).
func TestProbeJSONCheckedFirst(t *testing.T) {
	host, _ := os.Hostname()
	t.Chdir(t.TempDir())
	for _, c := range []struct{ json, want string }{
		{filepath.Join("no", "such", "p.json"), "--json no/such/p.json: directory no/such: no such file or directory"},
		{".", "--json .: is a directory"},
	} {
		code, _, errs := run(t, "probe", "--only", "machine,memory", "--max-ws", "64KiB", "--json", c.json)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("probe --json %s: exit %d, stderr %q, want %q", c.json, code, errs, c.want)
		}
		oneLine(t, "probe --json", errs)
		if ents, _ := filepath.Glob(filepath.Join("results", host+"-*")); len(ents) > 0 {
			t.Errorf("probe --json %s left %v", c.json, ents)
		}
	}
}

// §4: a table written to a full stdout exits non-zero with one line.
func TestStdoutFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("/dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{
		{"roofline", "--profile", "m4-pro", "--model", "qwen3-0.6b"},
		{"probe", "--list"},
		{"workloads", "gsm8k", "--requests", "3"},
		{"--help"},
	} {
		var errb bytes.Buffer
		code := Execute(args, strings.NewReader(""), full, &errb)
		if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("bench %v > /dev/full: exit %d, stderr %q", args, code, errb.String())
		}
		oneLine(t, fmt.Sprint(args), errb.String())
	}
}

// §4: failures leave no empty or half-made directory: a sweep whose first
// cell fails (it left DIR with sweep.json), a report whose --profile
// cannot be read after --merge (it left OUT with cells.jsonl).
func TestFailuresLeaveNoDirectory(t *testing.T) {
	tmp := t.TempDir()
	withCellEngine(t, func(c workloads.Cell, _ *sweep.Options) (sweep.CellEngine, error) {
		return nil, errors.New("the engine broke")
	})
	sw := filepath.Join(tmp, "new", "sw")
	code, _, errs := run(t, "sweep", "--workloads", "gsm8k", "--batch", "1", "--threads", "1", "--placement", "cores", "--profile", "none", "--out", sw)
	if code != 1 || !strings.Contains(errs, "the engine broke") {
		t.Errorf("sweep: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(tmp, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed sweep left %s: %v", filepath.Join(tmp, "new"), tree(t, filepath.Join(tmp, "new")))
	}

	in := writeCells(t, filepath.Join(tmp, "in", "cells", "0"), []results.SweepCell{reportCell("a", "h", "2026-03-01T00:00:00Z", "w", "cores", 1, 1)})
	_ = in
	out := filepath.Join(tmp, "rep", "out")
	code, _, errs = run(t, "report", "--merge", filepath.Join(tmp, "in"), "--out", out, "--profile", filepath.Join(tmp, "missing.json"))
	if code != 1 || !strings.Contains(errs, "missing.json") {
		t.Errorf("report: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(tmp, "rep")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed report left %v", tree(t, filepath.Join(tmp, "rep")))
	}
}
