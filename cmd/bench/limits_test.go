package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/memlimit"
)

// twoGiB is what a process in a 2 GiB cgroup with nothing else in it may
// use, as memlimit reads it.
var twoGiB = memlimit.Limit{Bytes: 2 << 30, Known: true, Source: "cgroup v2 memory.max of /sys/fs/cgroup/test: 2.15 GB, 0 B in use"}

// TestLimits: sizes and counts from flags that overflow or do not fit in
// the memory this process may use (a 2 GiB cgroup, faked) are refused with
// one error line naming the flag and the value, before anything is
// allocated for them (each of these panicked, died with a runtime trace
// or printed nonsense before).
func TestLimits(t *testing.T) {
	defer memlimit.Fake(twoGiB)()
	dir := t.TempDir()
	probeOut := filepath.Join(dir, "probe-out")
	const may = "more than the 1.93 GB this process may use (0.9 of the 2.15 GB left: cgroup v2 memory.max of /sys/fs/cgroup/test"
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"gemm", "--n", "3000000000", "--k", "3000000000"},
			[]string{"bench gemm: --n 3000000000 × --k 3000000000 fp32 weights (as drawn and packed) with --m 1,16,128,512,2048 activations need 72 EB, " + may}},
		{[]string{"gemm", "--n", "1000000", "--k", "1000000", "--m", "1"},
			[]string{"bench gemm: --n 1000000 × --k 1000000 fp32 weights (as drawn and packed) with --m 1 activations need 8 TB, " + may}},
		{[]string{"gemm", "--n", "40000", "--k", "40000", "--dtype", "bf16,q4_0", "--m", "1"},
			[]string{"bench gemm: --n 40000 × --k 40000 bf16 weights (as drawn and packed) with --m 1 activations need 6.41 GB, " + may}},
		{[]string{"gemm", "--shapes", "4096x4096,3000000x4096", "--dtype", "q4_0", "--m", "1"},
			[]string{"bench gemm: --shapes 3000000×4096: q4_0 weights (as drawn and packed) with --m 1 activations need 7.36 GB, " + may}},
		{[]string{"gemm", "--m", "1000000000", "--n", "64", "--k", "64"},
			[]string{"--m 1000000000 activations need 512 GB"}},
		{[]string{"run", "--weights", stories, "--batch", "1000000000", "--profile", "none"},
			[]string{"bench run: --batch 1000000000 × (--prompt-tokens 128 + --gen-tokens 32) KV caches need 205 TB, " + may}},
		{[]string{"run", "--model", "qwen3-0.6b", "--profile", "none"},
			[]string{"bench run: --model qwen3-0.6b: 28 layers' synthetic fp32 weights and packed copies need", may, "pass --layers N to instantiate fewer"}},
		{[]string{"run", "--weights", stories, "--batch", "4000", "--prompt-tokens", "500", "--gen-tokens", "12", "--profile", "none"},
			[]string{"bench run: --batch 4000 × (--prompt-tokens 500 + --gen-tokens 12) KV caches need 2.62 GB, " + may}},
		{[]string{"workloads", "--requests", "1000000000"},
			[]string{"bench workloads: --requests 1000000000: 4 traces' requests (80 bytes each) need 320 GB, " + may}},
		{[]string{"workloads", "gsm8k", "--requests", "100000000"},
			[]string{"bench workloads: --requests 100000000: a trace's requests (80 bytes each) need 8 GB, " + may}},
		{[]string{"sweep", "--requests", "1000000000", "--dry-run"},
			[]string{"bench sweep: --requests 1000000000: a trace's requests (80 bytes each) need 80 GB, " + may}},
		{[]string{"roofline", "--profile", "m4-pro", "--model", "qwen3-0.6b", "--batch", "4611686018427387904"},
			[]string{"bench roofline: --batch 4611686018427387904 × --tokens 1: B·T·(heads + kv heads)·head dim of model qwen3-0.6b overflows a 64-bit count (4611686018427387904·1·24·128)"}},
		{[]string{"roofline", "--profile", "m4-pro", "--model", "qwen3-0.6b", "--sweep", "batch=1..4611686018427387904"},
			[]string{"bench roofline: --sweep batch=1..4611686018427387904 (batch 4611686018427387904) × --tokens 1: B·T·(heads + kv heads)·head dim"}},
		{[]string{"roofline", "--profile", "m4-pro", "--model", "qwen3-0.6b", "--sweep", "batch=1..9007199254740993k"},
			[]string{`bench roofline: --sweep: sweep "batch=1..9007199254740993k": 9007199254740993k: more than an int holds`}},
		{[]string{"probe", "--only", "memory", "--max-ws", "64GiB", "--out", probeOut},
			[]string{"bench probe: --max-ws 64 GiB: 1 working set(s) of that size at once need 68.7 GB, " + may}},
		{[]string{"probe", "--max-ws", "1.5GiB", "--out", probeOut},
			[]string{"bench probe: --max-ws 1.5 GiB: 2 working set(s) of that size at once (the mixed and matrix sections) need 3.22 GB, " + may}},
		{[]string{"probe", "--max-ws", "8EiB", "--out", probeOut},
			[]string{"bench probe: --max-ws 9223372036854775808: more than an int64 of bytes"}},
		{[]string{"bandwidth", "--ws", "100GB"},
			[]string{"bench bandwidth: --ws 93 GiB: the working set's arrays need 100 GB, " + may}},
		{[]string{"bandwidth", "--ws", "10EiB"},
			[]string{"bench bandwidth: --ws 10EiB: more than an int64 of bytes"}},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("bench %v: exit %d, stderr %q: want one error line", c.args, code, errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("bench %v: stderr\n%s\nwant it to contain\n%s", c.args, errs, w)
			}
		}
	}
	if _, err := os.Stat(probeOut); !os.IsNotExist(err) {
		t.Errorf("a refused probe left %s (%v)", probeOut, err)
	}
}

// TestLimitsGGUF: the GGUF path checks its resident bytes against the same
// limit before reading tensor data, and --layers lowers them.
func TestLimitsGGUF(t *testing.T) {
	gguf := "../../engine/testdata/stories260K/stories260K-f16.gguf"
	restore := memlimit.Fake(memlimit.Limit{Bytes: 1 << 20, Known: true, Source: "a 1 MiB test limit"})
	code, _, errs := run(t, "run", "--weights", gguf, "--profile", "none", "--prompt-tokens", "4", "--gen-tokens", "1")
	restore()
	want := "bench run: ../../engine/testdata/stories260K/stories260K-f16.gguf: 5 layers' weights as stored, float matrices with their packed copies need"
	if code == 0 || !strings.HasPrefix(errs, want) || !strings.Contains(errs, "this process may use (0.9 of the 1.05 MB left: a 1 MiB test limit): pass --layers N") {
		t.Errorf("exit %d, stderr %q, want %q…", code, errs, want)
	}
	defer memlimit.Fake(twoGiB)()
	if code, out, errs := run(t, "run", "--weights", gguf, "--layers", "1", "--profile", "none", "--prompt-tokens", "4", "--gen-tokens", "1", "--json"); code != 0 ||
		!strings.Contains(out, `"layers":1`) {
		t.Errorf("--layers 1 under 2 GiB: exit %d: %s%s", code, out, errs)
	}
}
