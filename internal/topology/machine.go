package topology

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/results"
)

const unknown = "unknown"

// readMachine is ReadMachine for any roots. Facts that only the running
// machine can give are filled in when r.live().
func readMachine(r Roots) (*results.Machine, error) {
	live := r.live()
	m := &results.Machine{
		Arch: unknown, Vendor: unknown, CPUModel: unknown, OS: "linux", Kernel: unknown,
		GoVersion: runtime.Version(), Governor: unknown, Boost: unknown,
		PerfCounters: unknown, TransparentHugePages: unknown,
	}
	if live {
		m.Arch, m.OS = runtime.GOARCH, runtime.GOOS
	}

	online, err := readOnline(r)
	if err != nil {
		return nil, err
	}
	m.LogicalCPUs = len(online)

	info, err := readCPUInfo(r.proc("cpuinfo"))
	if err != nil {
		return nil, err
	}
	flags := info.fill(m)
	if live {
		m.Features = slices.Clone(cpu.RawFeatures)
		m.ISAs = cpu.ISAs()
		liveCPUID(m) // x86: vendor, model, hypervisor, fallback frequencies
		m.TSCHz = tscHz()
		m.PerfCounters = perfCounters(r)
	} else {
		m.Features = flags
		m.ISAs = isasFromFlags(flags)
	}
	if m.Features == nil {
		m.Features = []string{}
	}

	if s, ok, err := readOpt(r.proc("sys", "kernel", "osrelease")); err != nil {
		return nil, err
	} else if ok && s != "" {
		m.Kernel = s
	}

	freq := r.cpuDir(fmt.Sprintf("cpu%d", online[0]), "cpufreq")
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"base_frequency", &m.BaseHz}, {"cpuinfo_max_freq", &m.MaxHz}} {
		khz, ok, err := readIntOpt(freq + "/" + f.name)
		if err != nil {
			return nil, err
		}
		if ok && khz > 0 {
			*f.dst = float64(khz) * 1e3
		}
	}
	if live {
		cpuidFreqs(m)
	}
	if s, ok, err := readOpt(freq + "/scaling_governor"); err != nil {
		return nil, err
	} else if ok && s != "" {
		m.Governor = s
	}

	if m.Boost, err = readBoost(r); err != nil {
		return nil, err
	}
	thp := r.sys("kernel", "mm", "transparent_hugepage", "enabled")
	if s, ok, err := readOpt(thp); err != nil {
		return nil, err
	} else if ok {
		m.TransparentHugePages = bracketed(s)
		if m.TransparentHugePages == "" {
			return nil, parseErr(thp, s, fmt.Errorf("no [selected] word"))
		}
	}
	return m, nil
}

// readBoost reads cpufreq/boost (1 = enabled) or intel_pstate/no_turbo
// (1 = disabled).
func readBoost(r Roots) (string, error) {
	for _, f := range []struct {
		path     string
		enabled1 bool
	}{{r.cpuDir("cpufreq", "boost"), true}, {r.cpuDir("intel_pstate", "no_turbo"), false}} {
		v, ok, err := readIntOpt(f.path)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if (v != 0) == f.enabled1 {
			return "enabled", nil
		}
		return "disabled", nil
	}
	return unknown, nil
}

// bracketed returns the [selected] word of a sysfs choice file
// ("always [madvise] never" → "madvise"), or "".
func bracketed(s string) string {
	_, rest, ok := strings.Cut(s, "[")
	if !ok {
		return ""
	}
	w, _, ok := strings.Cut(rest, "]")
	if !ok {
		return ""
	}
	return w
}

// cpuInfo is the first processor block of /proc/cpuinfo.
type cpuInfo map[string]string

// readCPUInfo reads the first block of /proc/cpuinfo; a missing file gives
// an empty cpuInfo.
func readCPUInfo(path string) (cpuInfo, error) {
	s, ok, err := readOpt(path)
	if err != nil || !ok {
		return cpuInfo{}, err
	}
	info := cpuInfo{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) == "" && len(info) > 0 {
				break
			}
			continue
		}
		k = strings.TrimSpace(k)
		if _, dup := info[k]; dup {
			break // a second block without a blank line in between
		}
		info[k] = strings.TrimSpace(v)
	}
	return info, nil
}

func (c cpuInfo) int(key string) (int, bool) {
	v, ok := c[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 0, 64) // arm64 prints "0x48"
	return int(n), err == nil
}

var x86Vendors = map[string]string{
	"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon",
	"CentaurHauls": "VIA", "Shanghai": "Zhaoxin",
}

// fill sets Arch (for snapshots), Vendor, CPUModel, Family, Model,
// Stepping and Hypervisor from cpuinfo, and returns its feature flags
// upper-cased and sorted.
func (c cpuInfo) fill(m *results.Machine) []string {
	var flags string
	if v, ok := c["vendor_id"]; ok { // x86
		if m.Arch == unknown {
			m.Arch = "amd64"
		}
		m.Vendor = v
		if name, ok := x86Vendors[v]; ok {
			m.Vendor = name
		}
		if s := c["model name"]; s != "" {
			m.CPUModel = s
		}
		m.Family, _ = c.int("cpu family")
		m.Model, _ = c.int("model")
		m.Stepping, _ = c.int("stepping")
		flags = c["flags"]
		if slices.Contains(strings.Fields(flags), "hypervisor") {
			m.Hypervisor = unknown
		}
	} else if impl, ok := c.int("CPU implementer"); ok { // arm64
		if m.Arch == unknown {
			m.Arch = "arm64"
		}
		part, _ := c.int("CPU part")
		m.Vendor, m.CPUModel = armName(impl, part)
		m.Family, _ = c.int("CPU architecture")
		m.Model = part
		m.Stepping, _ = c.int("CPU revision")
		flags = c["Features"]
	}
	var out []string
	for _, f := range strings.Fields(flags) {
		out = append(out, strings.ToUpper(f))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var armImplementers = map[int]string{
	0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
	0x4e: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm", 0x61: "Apple", 0x6d: "Microsoft", 0xc0: "Ampere",
}

var armParts = map[[2]int]string{
	{0x41, 0xd08}: "Cortex-A72",
	{0x41, 0xd0b}: "Cortex-A76",
	{0x41, 0xd0c}: "Neoverse-N1",
	{0x41, 0xd40}: "Neoverse-V1",
	{0x41, 0xd49}: "Neoverse-N2",
	{0x41, 0xd4f}: "Neoverse-V2",
	{0x41, 0xd84}: "Neoverse-V3",
	{0x41, 0xd8e}: "Neoverse-N3",
	{0x48, 0xd01}: "Kunpeng-920 (TaiShan v110)",
	{0xc0, 0xac3}: "AmpereOne",
}

// armName names an arm64 CPU from its MIDR implementer and part numbers.
func armName(impl, part int) (vendor, model string) {
	vendor = armImplementers[impl]
	if vendor == "" {
		vendor = fmt.Sprintf("implementer 0x%02x", impl)
	}
	model = armParts[[2]int{impl, part}]
	if model == "" {
		model = fmt.Sprintf("%s part 0x%03x", vendor, part)
	}
	return vendor, model
}

// isasFromFlags is cpu.ISAs for a snapshot, from its cpuinfo flags.
func isasFromFlags(flags []string) []string {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := slices.BinarySearch(flags, n); !ok {
				return false
			}
		}
		return true
	}
	out := []string{"go"}
	for _, isa := range []struct {
		name  string
		flags []string
	}{
		{"avx2", []string{"AVX2", "FMA"}},
		{"avx512", []string{"AVX512F", "AVX512BW", "AVX512DQ", "AVX512VL"}},
		{"amx", []string{"AMX_TILE"}},
		{"neon", []string{"ASIMD"}},
		{"sve", []string{"SVE"}},
		{"sme", []string{"SME"}},
	} {
		if has(isa.flags...) {
			out = append(out, isa.name)
		}
	}
	return out
}
