package topology

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Roots are the directories that stand for /sys and /proc. Every file this
// package reads is found under one of them, so a snapshot of another machine
// (testdata/linux-*/{sys,proc}) reads exactly like the live one.
type Roots struct {
	Sys  string // "/sys" on a live system
	Proc string // "/proc" on a live system
}

// LiveRoots returns the roots of the running system: {Sys: "/sys", Proc: "/proc"}.
func LiveRoots() Roots { return Roots{Sys: "/sys", Proc: "/proc"} }

// live reports whether r are the roots of the running system, whose facts
// beyond /sys and /proc (cpuid, HWCAP, perf_event_open) may be used.
func (r Roots) live() bool { return r == LiveRoots() }

func (r Roots) sys(rel ...string) string {
	return filepath.Join(append([]string{r.Sys}, rel...)...)
}

func (r Roots) proc(rel ...string) string {
	return filepath.Join(append([]string{r.Proc}, rel...)...)
}

// cpuDir is /sys/devices/system/cpu.
func (r Roots) cpuDir(rel ...string) string {
	return r.sys(append([]string{"devices", "system", "cpu"}, rel...)...)
}

// fileErr names the file and says what was wrong with it.
func fileErr(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("topology: %s: %v", path, err)
}

// parseErr names the file, the value and why it does not parse.
func parseErr(path, val string, err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		err = ne.Err
	}
	return fmt.Errorf("topology: %s: parse %q: %v", path, val, err)
}

// readOpt reads a small file and trims it. A file that does not exist gives
// ok == false and no error; any other failure is an error naming the file.
func readOpt(path string) (s string, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fileErr(path, err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// readReq is readOpt for a file that must exist.
func readReq(path string) (string, error) {
	s, ok, err := readOpt(path)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fileErr(path, errors.New("missing"))
	}
	return s, nil
}

// readIntOpt reads a file holding one decimal integer; missing gives ok == false.
func readIntOpt(path string) (v int, ok bool, err error) {
	s, ok, err := readOpt(path)
	if err != nil || !ok {
		return 0, ok, err
	}
	v, err = strconv.Atoi(s)
	if err != nil {
		return 0, false, parseErr(path, s, err)
	}
	return v, true, nil
}

// readCPUListOpt reads a file in kernel cpulist syntax; missing gives ok == false.
func readCPUListOpt(path string) (cpus []int, ok bool, err error) {
	s, ok, err := readOpt(path)
	if err != nil || !ok {
		return nil, ok, err
	}
	cpus, err = parseCPUList(s)
	if err != nil {
		return nil, false, parseErr(path, s, err)
	}
	return cpus, true, nil
}

// numberedDirs lists the entries of dir named prefix<N> (cpu3, node1,
// index2), sorted by N. A missing dir gives nil and no error.
func numberedDirs(dir, prefix string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fileErr(dir, err)
	}
	var ns []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			continue
		}
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns, nil
}
