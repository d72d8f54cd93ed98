package main

// Signal trials: each command is started as a process (this test binary,
// re-executed as bench by TestMain), sent SIGINT or SIGTERM at a few
// moments, and must exit with 128 + the signal number within a generous
// deadline, leaving no partial or temporary file and no directory it
// created. No timing is asserted beyond the deadline.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"

	"github.com/spf13/cobra"
)

// TestMain runs the test binary as bench when BENCH_TEST_MAIN=1 (the
// signal trials start it so), with a hidden command "test-hang" that
// ignores its context.
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_TEST_MAIN") == "1" {
		if p := os.Getenv("BENCH_TEST_READY"); p != "" {
			onSignalsReady = func() { os.WriteFile(p, nil, 0o644) }
		}
		subcommands = append(subcommands, newTestHangCmd)
		os.Exit(Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// newTestHangCmd is a command that ignores its context for a minute: the
// second signal must kill it.
func newTestHangCmd(IO) *cobra.Command {
	return &cobra.Command{Use: "test-hang", Hidden: true, RunE: func(*cobra.Command, []string) error {
		time.Sleep(time.Minute)
		return nil
	}}
}

// exitDeadline is how long a signalled command may take to exit.
const exitDeadline = 10 * time.Second

// benchProc is bench running as a child process.
type benchProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
}

// startBench starts bench with args in dir and returns once its signal
// handlers are installed.
func startBench(t *testing.T, dir string, args ...string) *benchProc {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	p := &benchProc{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "BENCH_TEST_MAIN=1", "BENCH_TEST_READY="+ready)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	deadline := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(ready); err == nil {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("bench %v exited before it was ready: %v\n%s", args, p.cmd.ProcessState, p.stderr.String())
		case <-deadline:
			p.cmd.Process.Kill()
			t.Fatalf("bench %v: not ready after 2 minutes", args)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// wait waits for the process to exit, at most d, and returns its wait
// status.
func (p *benchProc) wait(t *testing.T, d time.Duration, what string) syscall.WaitStatus {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s: still running %v later; stderr:\n%s", what, d, p.stderr.String())
	}
	return p.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// tree lists the paths under dir.
func tree(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			out[p] = true
		}
		return nil
	})
	return out
}

// checkNoLeftovers fails on a temporary or lock file under dir, or a
// directory created since before (the paths then present) that is empty.
func checkNoLeftovers(t *testing.T, dir string, before map[string]bool) {
	t.Helper()
	for p := range tree(t, dir) {
		base := filepath.Base(p)
		if strings.Contains(base, ".tmp") || strings.HasPrefix(base, ".write-test") || strings.HasPrefix(base, ".report-tmp") || base == sweep.LockFile {
			t.Errorf("left behind: %s", p)
		}
		if before[p] {
			continue
		}
		if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 {
			t.Errorf("left an empty directory: %s", p)
		}
	}
}

// tinyConfig writes a small Llama config.json with many positions: its
// decode steps take microseconds, so a run or sweep of many tokens is
// long without much memory.
func tinyConfigFile(t *testing.T, dir string) string {
	t.Helper()
	cfg := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": 64,
		"intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
		"vocab_size": 512, "max_position_embeddings": 1 << 17, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
		"tie_word_embeddings": true, "hidden_act": "silu"}
	data, _ := json.Marshal(cfg)
	p := filepath.Join(dir, "tiny.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bigCellsDir writes a sweep directory of n cells of 3 hosts: its report
// takes seconds.
func bigCellsDir(t *testing.T, dir string, n int) string {
	t.Helper()
	var cells []results.SweepCell
	places := []string{"cores", "matrix", "mixed", "auto"}
	for i := range n {
		c := reportCell(fmt.Sprintf("k%d", i), fmt.Sprintf("h%d", i%3), "2026-03-01T10:00:00Z", fmt.Sprintf("w%d", i%7), places[i%4], 1+i/28, 1+float64(i%5))
		c.Threads = 1 + (i/4)%3
		c.Requests = nil
		for r := range 20 {
			c.Requests = append(c.Requests, results.SweepRequest{ID: r, TTFTS: 0.1, TPOTS: 0.01, LatencyS: c.Latency.Mean})
		}
		c.Config.Requests, c.Latency.N = 20, 20
		cells = append(cells, c)
	}
	writeCells(t, dir, cells)
	return dir
}

// signalCase is one command of the signal trials: args (given the
// trial's directory) and what must hold after it was stopped.
type signalCase struct {
	name  string
	args  func(t *testing.T, dir string) []string
	check func(t *testing.T, dir string, p *benchProc)
}

// signalWithin bounds the random moment of the later signals of a command
// that may finish sooner than 750 ms (the default): bench workloads ran
// 0.69–0.81 s in all, and a SIGTERM at 642 ms once found it exited.
var signalWithin = map[string]time.Duration{"workloads": 300 * time.Millisecond}

func noPath(rel string) func(*testing.T, string, *benchProc) {
	return func(t *testing.T, dir string, _ *benchProc) {
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			t.Errorf("%s exists after the interrupt", rel)
		}
	}
}

func noStdout(t *testing.T, _ string, p *benchProc) {
	if p.stdout.Len() > 0 {
		t.Errorf("partial output on stdout:\n%.500s", p.stdout.String())
	}
}

var signalCases = []signalCase{
	{"probe", func(t *testing.T, dir string) []string {
		return []string{"probe", "--only", "memory,latency", "--quiet", "--out", "out"}
	}, noPath("out")},
	{"probe-default-dir", func(t *testing.T, dir string) []string {
		return []string{"probe", "--only", "memory", "--quiet"}
	}, noPath("results")},
	{"run", func(t *testing.T, dir string) []string {
		return []string{"run", "--model", tinyConfigFile(t, dir), "--prompt-tokens", "64", "--gen-tokens", "100000", "--threads", "1", "--profile", "none"}
	}, noStdout},
	{"sweep", func(t *testing.T, dir string) []string {
		return []string{"sweep", "--models", tinyConfigFile(t, dir), "--layers", "0", "--workloads", "longwriter", "--requests", "64",
			"--max-gen-tokens", "0", "--max-prompt-tokens", "0", "--batch", "1", "--threads", "1", "--placement", "cores", "--profile", "none", "--out", "sw"}
	}, func(t *testing.T, dir string, _ *benchProc) {
		cells, bad, err := results.ReadSweepCells(filepath.Join(dir, "sw", sweep.CellsFile))
		if err == nil && (len(bad) > 0 || len(cells) > 0) {
			t.Errorf("cells.jsonl after the interrupt: %d cells, bad lines %v", len(cells), bad)
		}
		noPath("sw")(t, dir, nil)
	}},
	{"report", func(t *testing.T, dir string) []string {
		return []string{"report", bigCellsDir(t, filepath.Join(dir, "in"), 1200), "--out", "rep"}
	}, noPath("rep")},
	{"gguf", func(t *testing.T, dir string) []string {
		return []string{"gguf", "--model", "qwen3-0.6b", "--format", "q8_0", "--out", "m.gguf"}
	}, noPath("m.gguf")},
	{"workloads", func(t *testing.T, dir string) []string { return []string{"workloads"} }, noStdout},
	{"bandwidth", func(t *testing.T, dir string) []string {
		return []string{"bandwidth", "--kernel", "read,copy,triad", "--ws", "64KiB", "--threads", "1", "--rep-ms", "300"}
	}, nil},
	{"layout", func(t *testing.T, dir string) []string {
		return []string{"layout", "--capacity-models", "qwen3-0.6b", "--model", tinyConfigFile(t, dir), "--layers", "1", "--inputs", "1024,2048,4096",
			"--reps", "1000", "--threads", "1", "--policies", "owr", "--gantt-policy", "owr", "--profile", "none", "--out", "lay"}
	}, func(t *testing.T, dir string, p *benchProc) {
		noStdout(t, dir, p)
		noPath("lay")(t, dir, p)
	}},
	{"gemm", func(t *testing.T, dir string) []string {
		return []string{"gemm", "--m", "1,2,4,8,16,32,64", "--n", "512", "--k", "512", "--threads", "1"}
	}, noStdout},
}

// TestSignals: every long command stops on SIGINT or SIGTERM, at once
// (just after start-up) and at a random moment later, and exits 130 or
// 143 leaving nothing behind.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("moments seeded %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, c := range signalCases {
		within := signalWithin[c.name]
		if within <= 0 {
			within = 750 * time.Millisecond
		}
		later := func() time.Duration {
			return 50*time.Millisecond + time.Duration(rng.Int64N(int64(within-50*time.Millisecond)))
		}
		moments := []struct {
			sig   syscall.Signal
			delay time.Duration
		}{
			{syscall.SIGINT, 0},
			{syscall.SIGINT, later()},
			{syscall.SIGTERM, later()},
		}
		for _, m := range moments {
			t.Run(fmt.Sprintf("%s/%s@%v", c.name, signalName(m.sig), m.delay), func(t *testing.T) {
				dir := t.TempDir()
				args := c.args(t, dir)
				before := tree(t, dir)
				p := startBench(t, dir, args...)
				time.Sleep(m.delay)
				if err := p.cmd.Process.Signal(m.sig); err != nil {
					t.Fatal(err)
				}
				ws := p.wait(t, exitDeadline, fmt.Sprintf("bench %v after %v", args, m.sig))
				if ws.Signaled() || ws.ExitStatus() != 128+int(m.sig) {
					t.Fatalf("bench %v: %v (exit %d), want exit %d; stderr:\n%s", args, p.cmd.ProcessState, ws.ExitStatus(), 128+int(m.sig), p.stderr.String())
				}
				errs := strings.TrimSpace(p.stderr.String())
				if last := errs[strings.LastIndex(errs, "\n")+1:]; !strings.Contains(last, "interrupted by "+signalName(m.sig)) {
					t.Errorf("last stderr line %q", last)
				}
				checkNoLeftovers(t, dir, before)
				if c.check != nil {
					c.check(t, dir, p)
				}
			})
		}
	}
}

// TestSecondSignalKills: after the first SIGINT a command that does not
// stop is killed by the second at once.
func TestSecondSignalKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	p := startBench(t, t.TempDir(), "test-hang")
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
		t.Fatalf("test-hang exited on the first SIGINT: %v", p.cmd.ProcessState)
	case <-time.After(200 * time.Millisecond):
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	ws := p.wait(t, exitDeadline, "test-hang after a second SIGINT")
	if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Fatalf("after the second SIGINT: %v, want killed by SIGINT", p.cmd.ProcessState)
	}
}
