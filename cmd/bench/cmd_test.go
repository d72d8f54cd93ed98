package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/probes"
	"github.com/cpubench/bench/results"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := run(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"probe", "compare", "bandwidth"} {
		if !strings.Contains(out, c) {
			t.Errorf("--help lacks %q:\n%s", c, out)
		}
	}
	code, out, _ = run(t, "probe", "--help")
	if code != 0 || !strings.Contains(out, "--only") || !strings.Contains(out, "--quick") || !strings.Contains(out, "--json") {
		t.Fatalf("probe --help (exit %d):\n%s", code, out)
	}
}

func TestProbeFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"probe", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"probe", "--only", "memory,cpuz"}, `unknown section "cpuz"`},
		{[]string{"probe", "--threads", "0"}, "--threads 0"},
		{[]string{"probe", "--threads", "x"}, "--threads"},
		{[]string{"probe", "--threads", strconv.Itoa(runtime.NumCPU() + 1), "--only", "memory", "--json", "-"}, "must be between 1 and"},
		{[]string{"probe", "--reps", "2"}, "--reps 2"},
		{[]string{"probe", "--wait-placement", "-5s"}, "probe: --wait-placement -5s: must be ≥ 0"},
		{[]string{"probe", "--max-ws", "lots"}, `--max-ws "lots"`},
		{[]string{"probe", "--isa", "mmx", "--only", "memory", "--json", "-"}, "--isa mmx"},
		{[]string{"probe", "extra"}, "unknown command"},
		{[]string{"nonsense"}, "unknown command"},
		{[]string{"compare", "one.json"}, "need at least two"},
		{[]string{"bandwidth", "--kernel", "scale"}, `unknown memory kernel "scale"`},
		{[]string{"bandwidth", "--ws", "1XB"}, "--ws"},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q, want it to contain %q", c.args, code, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: error is not one line: %q", c.args, errs)
		}
	}
}

func TestProbeJSONStdout(t *testing.T) {
	code, out, errs := run(t, "probe", "--only", "machine,topology", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p, err := results.ParseProfile([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if p.Machine == nil || p.Topology == nil || p.Memory != nil {
		t.Fatalf("sections: machine %v topology %v memory %v", p.Machine != nil, p.Topology != nil, p.Memory != nil)
	}
	if p.Topology.Threads != runtime.NumCPU() {
		t.Errorf("threads %d, NumCPU %d", p.Topology.Threads, runtime.NumCPU())
	}
}

func TestProbeWritesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, _, errs := run(t, "probe", "--quick", "--only", "machine,topology,memory,numa", "--max-ws", "256KiB", "--rep-ms", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{"profile.json", "profile.md", "report.html", "bandwidth-vs-working-set-1t.png", "bandwidth-vs-threads.png", "numa-read-bandwidth.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "profile.md"))
	for _, s := range []string{"## Machine", "## Topology", "## Memory bandwidth", "## NUMA", "![Bandwidth vs threads](bandwidth-vs-threads.png)"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("profile.md lacks %q", s)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.HasPrefix(e.Name(), ".write-test") {
			t.Errorf("stray temporary file %s", e.Name())
		}
	}
	// compare the profile with itself
	pj := filepath.Join(dir, "profile.json")
	code, out, errs := run(t, "compare", pj, pj)
	if code != 0 || !strings.Contains(out, "DRAM read GB/s") || !strings.Contains(out, "1.00") {
		t.Fatalf("compare exit %d: %s\n%s", code, errs, out)
	}
}

func TestProbeUnwritableOut(t *testing.T) {
	// Root can write anywhere, so use a path under a regular file.
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, []byte("x"), 0o644)
	code, _, errs := run(t, "probe", "--only", "machine", "--out", filepath.Join(f, "sub"))
	if code == 0 || !strings.Contains(errs, "--out") || !strings.Contains(errs, "not a directory") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestProbeInterruptedLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := &ProbeOptions{IO: IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Out: dir, Only: []string{"memory"}, MaxWS: "256KiB", RootSys: "/sys", RootPrc: "/proc", Now: time.Now}
	err := probeRun(ctx, opts)
	if err == nil {
		t.Fatal("no error from a cancelled run")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("output directory left behind: %v", err)
	}
}

func TestCompareBadProfile(t *testing.T) {
	d := t.TempDir()
	a := filepath.Join(d, "a.json")
	b := filepath.Join(d, "b.json")
	os.WriteFile(a, []byte(`{"schema":"bench.profile/v1","host":"h"}`), 0o644)
	os.WriteFile(b, []byte(`not json`), 0o644)
	code, _, errs := run(t, "compare", a, b)
	if code == 0 || !strings.Contains(errs, "a.json") || !strings.Contains(errs, "created_at") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestBandwidthJSON(t *testing.T) {
	code, out, errs := run(t, "bandwidth", "--kernel", "read,triad", "--ws", "64KiB", "--threads", "1", "--rep-ms", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got %q", out)
	}
	var b results.Bandwidth
	if err := json.Unmarshal([]byte(lines[1]), &b); err != nil || b.Kernel != "triad" || b.GBps.N < 5 {
		t.Fatalf("%v %+v", err, b)
	}
}

func TestProbeList(t *testing.T) {
	code, out, errs := run(t, "probe", "--list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"memory", "compute", "nonlinear", "go", "available"} {
		if !strings.Contains(out, s) {
			t.Errorf("--list lacks %q:\n%s", s, out)
		}
	}
	for _, k := range probes.Kernels() {
		if !strings.Contains(out, k.Name) || !strings.Contains(out, k.Status) {
			t.Errorf("--list lacks %s (%s):\n%s", k.Name, k.Status, out)
		}
	}
}
