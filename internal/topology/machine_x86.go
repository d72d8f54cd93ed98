//go:build amd64 || 386

package topology

import (
	"strings"

	"github.com/cpubench/bench/results"
	"github.com/klauspost/cpuid/v2"
)

// liveCPUID overwrites the cpuinfo-derived identity with cpuid's.
func liveCPUID(m *results.Machine) {
	c := &cpuid.CPU
	if c.VendorID != cpuid.VendorUnknown {
		m.Vendor = c.VendorID.String()
	} else if c.VendorString != "" {
		m.Vendor = c.VendorString
	}
	if s := strings.TrimSpace(c.BrandName); s != "" {
		m.CPUModel = s
	}
	m.Family, m.Model, m.Stepping = c.Family, c.Model, c.Stepping
	m.Hypervisor = ""
	if c.VM() {
		switch {
		case c.HypervisorVendorID != cpuid.VendorUnknown:
			m.Hypervisor = c.HypervisorVendorID.String()
		case strings.TrimSpace(c.HypervisorVendorString) != "":
			m.Hypervisor = strings.TrimSpace(c.HypervisorVendorString)
		default:
			m.Hypervisor = unknown
		}
	}
}

// cpuidFreqs fills BaseHz and MaxHz from cpuid where cpufreq did not.
func cpuidFreqs(m *results.Machine) {
	if m.BaseHz == 0 && cpuid.CPU.Hz > 0 {
		m.BaseHz = float64(cpuid.CPU.Hz)
	}
	if m.MaxHz == 0 && cpuid.CPU.BoostFreq > 0 {
		m.MaxHz = float64(cpuid.CPU.BoostFreq)
	}
}

// cpuidCacheSizes returns the cache sizes cpuid reports; ok is false when it
// reports no L1 data cache.
func cpuidCacheSizes() (cacheSizes, bool) {
	c := cpuid.CPU.Cache
	pos := func(n int) int64 { return int64(max(n, 0)) }
	sz := cacheSizes{l1d: pos(c.L1D), l1i: pos(c.L1I), l2: pos(c.L2), l3: pos(c.L3), line: max(cpuid.CPU.CacheLine, 0)}
	return sz, sz.l1d > 0
}
