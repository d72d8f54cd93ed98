package memlimit

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (path → content, paths absolute as on a live system)
// under a temporary root and returns the root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		name := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	meminfo24G = "MemTotal:       24683620 kB\nMemFree:         1000000 kB\nMemAvailable:   24000000 kB\n"
	mountsV2   = "25 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	mountsV1   = "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
		"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)

func TestReadSources(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name    string
		files   map[string]string
		rlimit  map[string]uint64
		goFree  uint64
		bytes   uint64 // want; 0 with known false: none
		known   bool
		source  string // substring of Source
		wantErr string // substring of the error
	}{
		{
			name: "v2 leaf limit minus its working set",
			files: map[string]string{
				"/proc/self/cgroup":    "0::/user.slice/bench.scope\n",
				"/proc/self/mountinfo": mountsV2,
				"/proc/meminfo":        meminfo24G,
				"/sys/fs/cgroup/user.slice/bench.scope/memory.max":     "2147483648\n",
				"/sys/fs/cgroup/user.slice/bench.scope/memory.current": "536870912\n",
				"/sys/fs/cgroup/user.slice/bench.scope/memory.stat":    "anon 100\nfile 300\ninactive_file 134217728\nactive_file 5\n",
				"/sys/fs/cgroup/user.slice/memory.max":                 "max\n",
			},
			bytes: 2*gib - (512<<20 - 128<<20), known: true,
			source: "cgroup v2 memory.max of /sys/fs/cgroup/user.slice/bench.scope: 2.15 GB, 403 MB in use",
		},
		{
			name: "v2 parent binds",
			files: map[string]string{
				"/proc/self/cgroup":                 "0::/a/b\n",
				"/proc/self/mountinfo":              mountsV2,
				"/proc/meminfo":                     meminfo24G,
				"/sys/fs/cgroup/a/b/memory.max":     "max\n",
				"/sys/fs/cgroup/a/b/memory.current": "1000\n",
				"/sys/fs/cgroup/a/memory.max":       "1073741824\n",
				"/sys/fs/cgroup/a/memory.current":   "73741824\n",
				"/sys/fs/cgroup/memory.stat":        "inactive_file 0\n",
			},
			bytes: 1<<30 - 73741824, known: true, source: "cgroup v2 memory.max of /sys/fs/cgroup/a:",
		},
		{
			name: "v2 no limit anywhere: MemAvailable",
			files: map[string]string{
				"/proc/self/cgroup":               "0::/a\n",
				"/proc/self/mountinfo":            mountsV2,
				"/proc/meminfo":                   meminfo24G,
				"/sys/fs/cgroup/a/memory.max":     "max\n",
				"/sys/fs/cgroup/a/memory.current": "1000\n",
			},
			bytes: 24000000 << 10, known: true, source: "MemAvailable of /proc/meminfo",
		},
		{
			name: "v1 hybrid: memory controller's hierarchy, unlimited leaf, limited parent",
			files: map[string]string{
				"/proc/self/cgroup":    "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n",
				"/proc/self/mountinfo": mountsV1,
				"/proc/meminfo":        meminfo24G,
				"/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "9223372036854771712\n",
				"/sys/fs/cgroup/memory/process_api/abc/memory.usage_in_bytes": "4960256\n",
				"/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     "536870912\n",
				"/sys/fs/cgroup/memory/process_api/memory.usage_in_bytes":     "36870912\n",
				"/sys/fs/cgroup/memory/process_api/memory.stat":               "cache 10\ninactive_file 999\ntotal_inactive_file 870912\n",
				"/sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
			},
			bytes: 536870912 - (36870912 - 870912), known: true,
			source: "cgroup v1 memory.limit_in_bytes of /sys/fs/cgroup/memory/process_api: 537 MB, 36 MB in use",
		},
		{
			name: "container: the mount's root is the process's cgroup",
			files: map[string]string{
				"/proc/self/cgroup":             "0::/docker/abc\n",
				"/proc/self/mountinfo":          "25 30 0:22 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n",
				"/sys/fs/cgroup/memory.max":     "268435456\n",
				"/sys/fs/cgroup/memory.current": "0\n",
			},
			bytes: 256 << 20, known: true, source: "of /sys/fs/cgroup:",
		},
		{
			name: "cgroup namespace: path outside the mount's root is the mount point",
			files: map[string]string{
				"/proc/self/cgroup":             "0::/../../other\n",
				"/proc/self/mountinfo":          "25 30 0:22 /ns /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"/sys/fs/cgroup/memory.max":     "268435456\n",
				"/sys/fs/cgroup/memory.current": "268435456\n",
				"/sys/fs/cgroup/memory.stat":    "inactive_file 68435456\n",
			},
			bytes: 68435456, known: true, source: "of /sys/fs/cgroup:",
		},
		{
			name: "escaped mount point, no /proc/meminfo",
			files: map[string]string{
				"/proc/self/cgroup":       "0::/x\n",
				"/proc/self/mountinfo":    `25 30 0:22 / /mnt/cg\040v2 rw - cgroup2 cgroup2 rw` + "\n",
				"/mnt/cg v2/x/memory.max": "1000000\n",
			},
			bytes: 1000000, known: true, source: "of /mnt/cg v2/x: 1 MB, 0 B in use",
		},
		{
			name: "no mountinfo: /sys/fs/cgroup",
			files: map[string]string{
				"/proc/self/cgroup":         "0::/\n",
				"/sys/fs/cgroup/memory.max": "4096\n",
			},
			bytes: 4096, known: true,
		},
		{
			name: "RLIMIT_AS minus VmSize is the smallest",
			files: map[string]string{
				"/proc/meminfo":     meminfo24G,
				"/proc/self/status": "Name:\tbench\nVmPeak:\t 2000000 kB\nVmSize:\t 1000000 kB\nVmData:\t  500000 kB\n",
			},
			rlimit: map[string]uint64{"RLIMIT_AS": 3 * gib, "RLIMIT_DATA": 8 * gib},
			bytes:  3*gib - 1000000<<10, known: true, source: "RLIMIT_AS (ulimit -v) 3.22 GB, VmSize 1.02 GB",
		},
		{
			name: "RLIMIT_AS: the Go heap's free spans count as headroom",
			files: map[string]string{
				"/proc/self/status": "VmSize:\t 2000000 kB\nVmData:\t  500000 kB\n",
			},
			rlimit: map[string]uint64{"RLIMIT_AS": 3 * gib},
			goFree: 1 << 30,
			bytes:  3*gib - (2000000<<10 - 1<<30), known: true, source: "RLIMIT_AS (ulimit -v) 3.22 GB, VmSize 2.05 GB of which 1.07 GB free in the Go heap",
		},
		{
			name: "RLIMIT_DATA below what is used: no headroom",
			files: map[string]string{
				"/proc/meminfo":     meminfo24G,
				"/proc/self/status": "VmSize:\t 1000000 kB\nVmData:\t  500000 kB\n",
			},
			rlimit: map[string]uint64{"RLIMIT_DATA": 1 << 20},
			bytes:  0, known: true, source: "RLIMIT_DATA (ulimit -d)",
		},
		{
			name:  "nothing known",
			files: map[string]string{"/proc/version": "Linux\n"},
		},
		{
			name: "a memory.max that does not parse is reported and left out",
			files: map[string]string{
				"/proc/self/cgroup":           "0::/a\n",
				"/proc/self/mountinfo":        mountsV2,
				"/proc/meminfo":               meminfo24G,
				"/sys/fs/cgroup/a/memory.max": "lots\n",
			},
			bytes: 24000000 << 10, known: true, source: "MemAvailable",
			wantErr: `/sys/fs/cgroup/a/memory.max: "lots": want "max" or a count of bytes`,
		},
		{
			name: "a meminfo line that does not parse",
			files: map[string]string{
				"/proc/meminfo": "MemAvailable:   12 MB\n",
			},
			wantErr: `/proc/meminfo: line "MemAvailable:   12 MB"`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Sources{Root: tree(t, c.files), Rlimit: func(r string) (uint64, bool, error) {
				v, ok := c.rlimit[r]
				return v, ok, nil
			}, GoFree: func() uint64 { return c.goFree }}
			l, err := s.Read()
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, c.wantErr)
			}
			if l.Known != c.known || l.Bytes != c.bytes {
				t.Errorf("Read = %d (known %v), want %d (known %v); source %q", l.Bytes, l.Known, c.bytes, c.known, l.Source)
			}
			if !strings.Contains(l.Source, c.source) {
				t.Errorf("source %q, want it to contain %q", l.Source, c.source)
			}
		})
	}
}

func TestHardLimit(t *testing.T) {
	root := tree(t, map[string]string{
		"/proc/self/cgroup":               "0::/a\n",
		"/proc/self/mountinfo":            mountsV2,
		"/proc/meminfo":                   "MemAvailable: 1000 kB\n",
		"/sys/fs/cgroup/a/memory.max":     "2147483648\n",
		"/sys/fs/cgroup/memory.max":       "4294967296\n",
		"/sys/fs/cgroup/a/memory.current": "1000\n",
	})
	s := Sources{Root: root}
	b, src, ok := s.HardLimit()
	if !ok || b != 2147483648 || !strings.Contains(src, "/sys/fs/cgroup/a:") {
		t.Errorf("HardLimit = %d, %q, %v; want the leaf's 2147483648 (MemAvailable is no hard limit)", b, src, ok)
	}
	if _, _, ok := (Sources{Root: tree(t, map[string]string{"/proc/meminfo": meminfo24G})}).HardLimit(); ok {
		t.Error("HardLimit with only MemAvailable: ok, want none")
	}
}

func TestCheck(t *testing.T) {
	two := Limit{Bytes: 2 << 30, Known: true, Source: "cgroup v2 memory.max of /sys/fs/cgroup/a: 2.15 GB, 0 B in use"}
	if err := two.Check("small", Mul(1<<20)); err != nil {
		t.Errorf("1 MiB under 2 GiB: %v", err)
	}
	err := two.Check("--n 3000000000 × --k 3000000000 fp32 weights", Mul(3000000000, 3000000000, 4))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v, want an *Error", err)
	}
	want := "--n 3000000000 × --k 3000000000 fp32 weights need 36 EB, more than the 1.93 GB this process may use (0.9 of the 2.15 GB left: cgroup v2 memory.max of /sys/fs/cgroup/a: 2.15 GB, 0 B in use)"
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	// The margin: 95% of the headroom is refused.
	if err := two.Check("x", Of(two.Bytes/100*95)); err == nil {
		t.Error("95% of the headroom accepted, want refused (margin 0.9)")
	}
	none := Limit{Source: "no cgroup memory limit, rlimit or MemAvailable found"}
	if err := none.Check("x", Mul(1<<40)); err != nil {
		t.Errorf("1 TiB with no limit known: %v", err)
	}
	if err := none.Check("x", Mul(1<<50)); err == nil || !strings.Contains(err.Error(), "x need 1.13 PB, more than any address space") {
		t.Errorf("1 PiB with no limit known: %v", err)
	}
	if err := none.Check("x", Mul(1<<40, 1<<40)); err == nil || !strings.Contains(err.Error(), "more than a 64-bit byte count holds") {
		t.Errorf("2^80 with no limit known: %v", err)
	}
}

func TestFake(t *testing.T) {
	restore := Fake(Limit{Bytes: 1000, Known: true, Source: "fake"})
	if l, err := Available(); err != nil || l.Bytes != 1000 || l.Source != "fake" {
		t.Errorf("Available under Fake = %+v, %v", l, err)
	}
	if err := Check("x", Of(950)); err == nil {
		t.Error("Check(950) under a fake 1000 with margin 0.9: nil, want an error")
	}
	restore()
	if l, _ := Available(); l.Source == "fake" {
		t.Error("Fake not restored")
	}
}

func TestSize(t *testing.T) {
	cases := []struct {
		s    Size
		n    uint64
		ok   bool
		text string
	}{
		{Mul(), 1, true, "1 B"},
		{Mul(3072, 3072, 4), 37748736, true, "37.7 MB"},
		{Mul(1000000, 1000000, 4), 4e12, true, "4 TB"},
		{Mul(3000000000, 3000000000, 4), 0, false, "36 EB"},
		{Mul(1<<32, 1<<32), 0, false, "18.4 EB"},
		{Mul(1<<32, 1<<31), 1 << 63, true, "9.22 EB"},
		{Mul(-1, 4), 0, false, "a negative size"},
		{Of(math.MaxUint64).Plus(Of(1)), 0, false, "18.4 EB"},
		{Of(999).Plus(Of(1)), 1000, true, "1 kB"},
		{Mul(1000, 1000).TimesFloat(0.5625), 562500, true, "562 kB"},
		{Mul(3, 1).TimesFloat(0.5), 2, true, "2 B"}, // rounded up
		{Of(math.MaxUint64).TimesFloat(2), 0, false, "36.9 EB"},
		{Mul(1<<40, 1<<40, 1<<40), 0, false, "1.33e+36 B"},
		{Of(0), 0, true, "0 B"},
	}
	for i, c := range cases {
		n, ok := c.s.Bytes()
		if ok != c.ok || ok && n != c.n || c.s.String() != c.text {
			t.Errorf("case %d: %d, %v, %q; want %d, %v, %q", i, n, ok, c.s.String(), c.n, c.ok, c.text)
		}
	}
	if m := Mul(4).Max(Mul(1<<40, 1<<40)); m.String() != "1.21e+24 B" && m.String() != "1.21 YB" {
		t.Errorf("Max with an overflowed size = %v", m)
	}
	if m := Mul(4).Max(Mul(8)); m.String() != "8 B" {
		t.Errorf("Max(4, 8) = %v", m)
	}
	if _, ok := Mul(1<<40, 1<<30).Int(); ok {
		t.Error("2^70 fits in an int")
	}
}
