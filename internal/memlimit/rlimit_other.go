//go:build !unix

package memlimit

// getrlimit: no rlimits outside Unix.
func getrlimit(string) (uint64, bool, error) { return 0, false, nil }
