package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
)

// Limit is how many more bytes this process may allocate.
type Limit struct {
	// Bytes is the headroom: the smallest over the sources of their
	// limit minus what is in use (see the package doc). Meaningful only
	// when Known.
	Bytes uint64
	// Known is false when no source gave a limit (not Linux, no /proc).
	Known bool
	// Source says which limit binds and how it was counted, e.g.
	// "cgroup v2 memory.max of /sys/fs/cgroup/a: 2.15 GB, 12.3 MB in use".
	Source string
}

// Margin is the fraction of the headroom a check lets one request take:
// the rest is for the runtime, goroutine stacks, page tables and garbage
// not yet collected.
const Margin = 0.9

// Usable is the bytes a check allows: Margin of the headroom.
func (l Limit) Usable() uint64 { return uint64(float64(l.Bytes) * Margin) }

// maxAddressable is 2^48 bytes (256 TiB), the user address space of
// x86-64 and arm64 with 4-level page tables: where no limit is known, a
// larger request cannot be met anywhere.
const maxAddressable = 1 << 48

// Error is a request that does not fit: What needs Need bytes, more than
// Limit allows.
type Error struct {
	What  string
	Need  Size
	Limit Limit
}

func (e *Error) Error() string {
	n, ok := e.Need.Bytes()
	switch {
	case e.Limit.Known:
		return fmt.Sprintf("%s need %s, more than the %s this process may use (%.1f of the %s left: %s)",
			e.What, e.Need, Of(e.Limit.Usable()), Margin, Of(e.Limit.Bytes), e.Limit.Source)
	case !ok:
		return fmt.Sprintf("%s need %s, more than a 64-bit byte count holds", e.What, e.Need)
	default:
		return fmt.Sprintf("%s need %s, more than any address space (%s; no memory limit known: %s)",
			e.What, Of(n), Of(maxAddressable), e.Limit.Source)
	}
}

// Check returns nil when need fits in l.Usable(), else an *Error naming
// what (a plural subject that reads before "need", e.g. "--n 3000000000 ×
// --k 3000000000 fp32 weights"). Where no limit is known only an
// overflowed need or one beyond any address space is refused.
func (l Limit) Check(what string, need Size) error {
	n, ok := need.Bytes()
	switch {
	case !ok:
	case l.Known && n <= l.Usable():
		return nil
	case !l.Known && n <= maxAddressable:
		return nil
	}
	return &Error{What: what, Need: need, Limit: l}
}

// Check is Available().Check(what, need): need against what this
// process may use now. A source that cannot be read is left out. Before
// it refuses, it collects the Go heap's garbage and returns the freed
// memory to the system (debug.FreeOSMemory), which the cgroup's usage and
// MemAvailable count until then, and reads the limit again.
func Check(what string, need Size) error {
	l, _ := Available()
	err := l.Check(what, need)
	if err == nil {
		return nil
	}
	if _, ok := need.Bytes(); !ok || !l.Known {
		return err
	}
	debug.FreeOSMemory()
	l, _ = Available()
	return l.Check(what, need)
}

// fake, when set, is what Available returns (Fake).
var fake atomic.Pointer[Limit]

// Fake makes Available return l until restore is called: for tests of the
// packages that check memory, so that they do not depend on the machine.
// Not for parallel tests.
func Fake(l Limit) (restore func()) {
	old := fake.Swap(&l)
	return func() { fake.Store(old) }
}

// Available is the headroom of this process now: Live().Read(), or the
// limit set with Fake. The error reports sources that exist but could not
// be read; the Limit is then from the others.
func Available() (Limit, error) {
	if l := fake.Load(); l != nil {
		return *l, nil
	}
	return Live().Read()
}

// Sources say where the limits are read from.
type Sources struct {
	// Root is prefixed to every path: "/" for the running system, a fake
	// tree with proc/ and sys/ in tests.
	Root string
	// Rlimit returns the soft limit of a resource (RLIMIT_AS,
	// RLIMIT_DATA) and whether it is finite; nil: no rlimits.
	Rlimit func(resource string) (uint64, bool, error)
	// GoFree returns the bytes of address space the Go heap has mapped
	// but does not use (free and released spans): the heap reuses them
	// without new mappings, so they add to the rlimits' headroom; nil: 0.
	GoFree func() uint64
}

// Live are the running system's sources: the files under /,
// getrlimit(2) and the Go runtime's heap metrics.
func Live() Sources { return Sources{Root: "/", Rlimit: getrlimit, GoFree: goFree} }

// goFree is the Go heap's mapped but unused bytes (runtime/metrics
// /memory/classes/heap/free and /released).
func goFree() uint64 {
	ms := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(ms)
	var n uint64
	for _, m := range ms {
		if m.Value.Kind() == metrics.KindUint64 {
			n += m.Value.Uint64()
		}
	}
	return n
}

// candidate is one source's headroom.
type candidate struct {
	headroom uint64
	limit    uint64 // the hard limit the headroom is under (0: MemAvailable, which has none)
	source   string
}

// Read returns the smallest headroom of the sources (see the package doc).
// A file that exists but does not parse is reported in the error, which
// names it, and the source is left out; a missing file is no limit.
func (s Sources) Read() (Limit, error) {
	cs, err := s.candidates()
	l := Limit{Source: "no cgroup memory limit, rlimit or MemAvailable found"}
	for _, c := range cs {
		if !l.Known || c.headroom < l.Bytes {
			l = Limit{Bytes: c.headroom, Known: true, Source: c.source}
		}
	}
	return l, err
}

// HardLimit is the smallest hard limit on this process's memory (cgroup
// memory limits, RLIMIT_AS, RLIMIT_DATA; not MemAvailable, which moves),
// with its source; ok false when there is none.
func (s Sources) HardLimit() (bytes uint64, source string, ok bool) {
	cs, _ := s.candidates()
	for _, c := range cs {
		if c.limit > 0 && (!ok || c.limit < bytes) {
			bytes, source, ok = c.limit, c.source, true
		}
	}
	return bytes, source, ok
}

func (s Sources) candidates() ([]candidate, error) {
	var cs []candidate
	var errs []error
	add := func(c []candidate, err error) {
		cs = append(cs, c...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(s.cgroups())
	add(s.rlimits())
	add(s.memAvailable())
	return cs, errors.Join(errs...)
}

// file is path p (absolute on the live system) under the root.
func (s Sources) file(p string) string {
	root := s.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, filepath.FromSlash(p))
}

// readOpt reads a small file, trimmed; a missing one gives ok false.
func readOpt(name string) (string, bool, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("memlimit: %w", err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// kv returns the value of the first "key value [unit]" line of a file
// such as memory.stat, /proc/meminfo or /proc/self/status, scaled by 1024
// when the unit is kB; ok false when the file or the key is missing.
func kv(name, key string) (uint64, bool, error) {
	s, ok, err := readOpt(name)
	if err != nil || !ok {
		return 0, false, err
	}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.TrimSuffix(f[0], ":") != key {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || len(f) > 3 || len(f) == 3 && f[2] != "kB" {
			return 0, false, fmt.Errorf("memlimit: %s: line %q: want %q and a count of bytes or kB", name, line, key)
		}
		if len(f) == 3 {
			if v > 1<<54 {
				return 0, false, fmt.Errorf("memlimit: %s: line %q: more kB than a 64-bit byte count holds", name, line)
			}
			v <<= 10
		}
		return v, true, nil
	}
	return 0, false, nil
}

// readUint reads a file holding one count of bytes; missing gives 0.
func readUint(name string) (uint64, error) {
	txt, ok, err := readOpt(name)
	if err != nil || !ok {
		return 0, err
	}
	v, err := strconv.ParseUint(txt, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memlimit: %s: %q: want a count of bytes", name, txt)
	}
	return v, nil
}

// memAvailable is MemAvailable of /proc/meminfo.
func (s Sources) memAvailable() ([]candidate, error) {
	v, ok, err := kv(s.file("/proc/meminfo"), "MemAvailable")
	if err != nil || !ok {
		return nil, err
	}
	return []candidate{{headroom: v, source: "MemAvailable of /proc/meminfo"}}, nil
}

// rlimits are RLIMIT_AS against VmSize and RLIMIT_DATA against VmData.
func (s Sources) rlimits() ([]candidate, error) {
	if s.Rlimit == nil {
		return nil, nil
	}
	var cs []candidate
	var errs []error
	for _, r := range []struct{ res, flag, used string }{{"RLIMIT_AS", "ulimit -v", "VmSize"}, {"RLIMIT_DATA", "ulimit -d", "VmData"}} {
		lim, finite, err := s.Rlimit(r.res)
		if err != nil {
			errs = append(errs, fmt.Errorf("memlimit: %s: %w", r.res, err))
			continue
		}
		if !finite {
			continue
		}
		used, _, err := kv(s.file("/proc/self/status"), r.used)
		if err != nil {
			errs = append(errs, err)
		}
		var free uint64
		if s.GoFree != nil {
			free = min(s.GoFree(), used)
		}
		src := fmt.Sprintf("%s (%s) %s, %s %s", r.res, r.flag, Of(lim), r.used, Of(used))
		if free > 0 {
			src += fmt.Sprintf(" of which %s free in the Go heap", Of(free))
		}
		cs = append(cs, candidate{headroom: lim - min(used-free, lim), limit: lim, source: src})
	}
	return cs, errors.Join(errs...)
}

// mount is a cgroup file system mount: where it is and which cgroup is
// its root.
type mount struct {
	point, root string
}

// cgroupMounts reads /proc/self/mountinfo for the cgroup2 mount and the
// cgroup v1 mount holding the memory controller; without mountinfo they
// are taken to be /sys/fs/cgroup and /sys/fs/cgroup/memory.
func (s Sources) cgroupMounts() (v2, v1 *mount, err error) {
	name := s.file("/proc/self/mountinfo")
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return &mount{"/sys/fs/cgroup", "/"}, &mount{"/sys/fs/cgroup/memory", "/"}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("memlimit: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		m := &mount{point: unescape(a[4]), root: unescape(a[3])}
		switch {
		case b[0] == "cgroup2" && v2 == nil:
			v2 = m
		case b[0] == "cgroup" && v1 == nil && hasOption(b[2], "memory"):
			v1 = m
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("memlimit: %s: %w", name, err)
	}
	return v2, v1, nil
}

func hasOption(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupPaths reads /proc/self/cgroup: the v2 path ("0::/path") and the
// path in the v1 hierarchy with the memory controller, "" where absent.
func (s Sources) cgroupPaths() (v2, v1 string, err error) {
	txt, ok, err := readOpt(s.file("/proc/self/cgroup"))
	if err != nil || !ok {
		return "", "", err
	}
	for _, line := range strings.Split(txt, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case hasOption(f[1], "memory"):
			v1 = f[2]
		}
	}
	return v2, v1, nil
}

// cgroupFiles are the file names of one cgroup version.
type cgroupFiles struct {
	version          string
	limit, usage     string
	inactive         string // memory.stat key of the inactive file pages
	unlimitedAtLeast uint64 // a limit this large means none (v1: LONG_MAX rounded down to a page)
}

var (
	cgroupV2 = cgroupFiles{"cgroup v2", "memory.max", "memory.current", "inactive_file", 0}
	cgroupV1 = cgroupFiles{"cgroup v1", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file", 1 << 62}
)

// cgroups returns the headroom of every cgroup level with a memory limit,
// from the process's cgroup up to the root of its mount.
func (s Sources) cgroups() ([]candidate, error) {
	p2, p1, err := s.cgroupPaths()
	if err != nil || p2 == "" && p1 == "" {
		return nil, err
	}
	m2, m1, err := s.cgroupMounts()
	if err != nil {
		return nil, err
	}
	var cs []candidate
	var errs []error
	for _, h := range []struct {
		path  string
		m     *mount
		files cgroupFiles
	}{{p2, m2, cgroupV2}, {p1, m1, cgroupV1}} {
		if h.path == "" || h.m == nil {
			continue
		}
		// The cgroup's directory: its path relative to the mount's root
		// (a cgroup namespace or a bind mount of a sub-tree), else the
		// mount point itself.
		p, root, rel := path.Clean(h.path), path.Clean(h.m.root), ""
		switch {
		case root == "/":
			rel = p
		case strings.HasPrefix(p, root+"/"):
			rel = p[len(root):]
		}
		top := path.Clean(h.m.point)
		for dir := path.Join(top, rel); ; dir = path.Dir(dir) {
			c, err := s.cgroupLevel(dir, h.files)
			if err != nil {
				errs = append(errs, err)
			} else if c != nil {
				cs = append(cs, *c)
			}
			if dir == top || dir == "/" || dir == "." {
				break
			}
		}
	}
	return cs, errors.Join(errs...)
}

// cgroupLevel is the headroom under one cgroup directory's limit; nil
// when it has none.
func (s Sources) cgroupLevel(dir string, f cgroupFiles) (*candidate, error) {
	limName := s.file(path.Join(dir, f.limit))
	txt, ok, err := readOpt(limName)
	if err != nil || !ok || txt == "max" {
		return nil, err
	}
	lim, err := strconv.ParseUint(txt, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("memlimit: %s: %q: want \"max\" or a count of bytes", limName, txt)
	}
	if f.unlimitedAtLeast > 0 && lim >= f.unlimitedAtLeast {
		return nil, nil
	}
	usage, err := readUint(s.file(path.Join(dir, f.usage)))
	if err != nil {
		return nil, err
	}
	inactive, _, err := kv(s.file(path.Join(dir, "memory.stat")), f.inactive)
	if err != nil {
		return nil, err
	}
	ws := usage - min(inactive, usage)
	return &candidate{headroom: lim - min(ws, lim), limit: lim,
		source: fmt.Sprintf("%s %s of %s: %s, %s in use", f.version, f.limit, dir, Of(lim), Of(ws))}, nil
}
