//go:build !(amd64 || 386)

package topology

import "github.com/cpubench/bench/results"

// liveCPUID does nothing without cpuid: cpuinfo already said what it knows.
func liveCPUID(*results.Machine) {}

// cpuidFreqs does nothing without cpuid.
func cpuidFreqs(*results.Machine) {}

// cpuidCacheSizes reports nothing without cpuid.
func cpuidCacheSizes() (cacheSizes, bool) { return cacheSizes{}, false }
