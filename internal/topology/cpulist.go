package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseCPUList parses the kernel's cpulist syntax ("0-3,8,10-11"; "" is the
// empty list) into CPU numbers, sorted ascending without duplicates. It
// returns an error naming the list for a malformed entry, a negative number
// or a range whose end is below its start.
func ParseCPUList(s string) ([]int, error) {
	cpus, err := parseCPUList(s)
	if err != nil {
		return nil, fmt.Errorf("topology: parse cpulist %q: %v", s, err)
	}
	return cpus, nil
}

// maxCPUs bounds a single range so a corrupt file cannot allocate without
// limit (the kernel's NR_CPUS is at most 8192 today).
const maxCPUs = 1 << 16

func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []int{}, nil
	}
	var cpus []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad entry %q", f)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < 0 {
				return nil, fmt.Errorf("bad entry %q", f)
			}
			if b < a {
				return nil, fmt.Errorf("bad entry %q: range end below start", f)
			}
		}
		if b >= maxCPUs {
			return nil, fmt.Errorf("bad entry %q: cpu number above %d", f, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// FormatCPUList writes CPU numbers in the kernel's cpulist syntax, as the
// kernel prints it: ascending, runs of two or more as "a-b"
// ([]int{0, 1, 2, 3, 8, 10, 11} → "0-3,8,10-11"). The input need not be
// sorted; duplicates are ignored and the slice is not modified.
func FormatCPUList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}
