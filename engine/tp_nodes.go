package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cpubench/bench/internal/topology"
)

// sysNodeDir is where Linux lists the NUMA nodes (node<N>/cpulist).
const sysNodeDir = "/sys/devices/system/node"

// cpuNodes reads the NUMA node of every CPU from dir's node<N>/cpulist
// files (sysfs). Errors: dir unreadable, no node directory, or a cpulist
// that does not parse (naming the file).
func cpuNodes(dir string) (map[int]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[int]int{}
	found := false
	for _, e := range ents {
		id, ok := strings.CutPrefix(e.Name(), "node")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(id)
		if err != nil {
			continue
		}
		path := filepath.Join(dir, e.Name(), "cpulist")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cpus, err := topology.ParseCPUList(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, c := range cpus {
			out[c] = n
		}
		found = true
	}
	if !found {
		return nil, fmt.Errorf("%s: no node directories", dir)
	}
	return out, nil
}
