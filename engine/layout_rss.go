package engine

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// ResidentSetBytes is this process's resident set size now: VmRSS of
// /proc/self/status (Linux), in bytes. It counts every page the process
// touched and still holds (weights, buffers, the Go heap, code), so the
// weight layout policies' difference shows in it only next to the same
// run's other memory. Errors: no /proc (not Linux) or no VmRSS line.
func ResidentSetBytes() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("engine: resident set: %w", err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			break
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			break
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("engine: resident set: no VmRSS line in kB in /proc/self/status")
}
