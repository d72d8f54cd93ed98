//go:build ignore

// gen writes the synthetic /sys + /proc snapshots under testdata/, holding
// only the files package topology reads:
//
//	cd internal/topology/testdata && go run gen.go
//
// With -live DIR it instead copies those files from the running machine's
// /sys and /proc into DIR/{sys,proc} (how linux-amd64-epyc-kvm-2c was made):
//
//	go run gen.go -live linux-amd64-<cpu>
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	live := flag.String("live", "", "copy the live machine's files into `DIR` instead")
	flag.Parse()
	if *live != "" {
		copyLive(*live)
		return
	}
	xeon("linux-amd64-xeon-gold-6248-2s")
	kunpeng("linux-arm64-kunpeng-920-4n")
}

// tree accumulates files relative to a snapshot root.
type tree map[string]string

func (t tree) put(path, format string, args ...any) { t[path] = fmt.Sprintf(format, args...) + "\n" }

func (t tree) write(dir string) {
	if err := os.RemoveAll(dir); err != nil {
		log.Fatal(err)
	}
	for p, s := range t {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("%s: %d files", dir, len(t))
}

// cpuList formats CPU numbers as the kernel does ("0-19,40-59").
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

type cacheSpec struct {
	level      int
	typ, size  string
	line, ways int
	shared     func(cpu int) []int
}

type machine struct {
	ncpu      int
	pkg, core func(cpu int) int
	siblings  func(cpu int) []int
	caches    []cacheSpec
	nodes     [][]int // CPUs of each node
	dist      [][]int
	nodeMemKB []int64
}

func (m machine) sysfs(t tree) {
	all := make([]int, m.ncpu)
	for i := range all {
		all[i] = i
	}
	t.put("sys/devices/system/cpu/online", "%s", cpuList(all))
	for c := 0; c < m.ncpu; c++ {
		d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/", c)
		t.put(d+"topology/physical_package_id", "%d", m.pkg(c))
		t.put(d+"topology/core_id", "%d", m.core(c))
		t.put(d+"topology/core_cpus_list", "%s", cpuList(m.siblings(c)))
		for i, cs := range m.caches {
			x := fmt.Sprintf("%scache/index%d/", d, i)
			t.put(x+"level", "%d", cs.level)
			t.put(x+"type", "%s", cs.typ)
			t.put(x+"size", "%s", cs.size)
			t.put(x+"coherency_line_size", "%d", cs.line)
			t.put(x+"ways_of_associativity", "%d", cs.ways)
			t.put(x+"shared_cpu_list", "%s", cpuList(cs.shared(c)))
		}
	}
	for n, cpus := range m.nodes {
		d := fmt.Sprintf("sys/devices/system/node/node%d/", n)
		t.put(d+"cpulist", "%s", cpuList(cpus))
		ds := make([]string, len(m.dist[n]))
		for j, v := range m.dist[n] {
			ds[j] = strconv.Itoa(v)
		}
		t.put(d+"distance", "%s", strings.Join(ds, " "))
		total := m.nodeMemKB[n]
		free := total * 9 / 10
		t.put(d+"meminfo", "Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d MemUsed:        %d kB",
			n, total, n, free, n, total-free)
	}
	var total int64
	for _, kb := range m.nodeMemKB {
		total += kb
	}
	t.put("proc/meminfo", "MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB", total, total*9/10, total*9/10)
}

// xeon is a 2-socket Xeon Gold 6248 (Cascade Lake, 20 cores and 40 threads
// per socket, SMT siblings numbered +40, core ids with the holes of the
// SKX/CLX mesh), 2 NUMA nodes, intel_pstate.
func xeon(dir string) {
	coreIDs := []int{0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 16, 17, 18, 19, 20, 24, 25, 26, 27, 28}
	sock := func(c int) int { return c % 40 / 20 }
	core := func(c int) []int { return []int{c % 40, c%40 + 40} }
	var nodes [2][]int
	for c := 0; c < 80; c++ {
		nodes[sock(c)] = append(nodes[sock(c)], c)
	}
	m := machine{
		ncpu:     80,
		pkg:      sock,
		core:     func(c int) int { return coreIDs[c%20] },
		siblings: core,
		caches: []cacheSpec{
			{1, "Data", "32K", 64, 8, core},
			{1, "Instruction", "32K", 64, 8, core},
			{2, "Unified", "1024K", 64, 16, core},
			{3, "Unified", "28160K", 64, 11, func(c int) []int { return nodes[sock(c)] }},
		},
		nodes:     nodes[:],
		dist:      [][]int{{10, 21}, {21, 10}},
		nodeMemKB: []int64{195989640, 198152940},
	}
	t := tree{}
	m.sysfs(t)
	// Only the first online CPU's cpufreq is read.
	t.put("sys/devices/system/cpu/cpu0/cpufreq/base_frequency", "2500000")
	t.put("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3900000")
	t.put("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave")
	t.put("sys/devices/system/cpu/intel_pstate/no_turbo", "0")
	t.put("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never")
	t.put("proc/sys/kernel/osrelease", "4.18.0-513.5.1.el8_9.x86_64")
	const flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm cqm mpx rdt_a avx512f avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts pku ospke avx512_vnni md_clear flush_l1d arch_capabilities"
	var b strings.Builder
	for c := 0; c < 80; c++ {
		fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"+
			"model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nstepping\t: 7\nmicrocode\t: 0x5003604\n"+
			"cpu MHz\t\t: 2500.000\ncache size\t: 28160 KB\nphysical id\t: %d\nsiblings\t: 40\ncore id\t\t: %d\n"+
			"cpu cores\t: 20\napicid\t\t: %d\ninitial apicid\t: %d\nfpu\t\t: yes\nfpu_exception\t: yes\n"+
			"cpuid level\t: 22\nwp\t\t: yes\nflags\t\t: %s\nbogomips\t: 5000.00\nclflush size\t: 64\n"+
			"cache_alignment\t: 64\naddress sizes\t: 46 bits physical, 48 bits virtual\npower management:\n\n",
			c, sock(c), m.core(c), sock(c)*64+m.core(c)*2+c/40, sock(c)*64+m.core(c)*2+c/40, flags)
	}
	t["proc/cpuinfo"] = b.String()
	t.write(dir)
}

// kunpeng is a 2-socket Kunpeng 920 server like ArcLight's test machine:
// 192 cores, no SMT, 4 NUMA nodes (one per die) of 48 cores each sharing a
// 48 MiB L3, private 64K L1d/L1i and 512K L2, ACPI SLIT 10/12/20/22/24.
func kunpeng(dir string) {
	self := func(c int) []int { return []int{c} }
	var nodes [4][]int
	for c := 0; c < 192; c++ {
		nodes[c/48] = append(nodes[c/48], c)
	}
	m := machine{
		ncpu:     192,
		pkg:      func(c int) int { return c / 96 },
		core:     func(c int) int { return c },
		siblings: self,
		caches: []cacheSpec{
			{1, "Data", "64K", 64, 4, self},
			{1, "Instruction", "64K", 64, 4, self},
			{2, "Unified", "512K", 64, 8, self},
			{3, "Unified", "49152K", 128, 16, func(c int) []int { return nodes[c/48] }},
		},
		nodes: nodes[:],
		dist: [][]int{
			{10, 12, 20, 22},
			{12, 10, 22, 24},
			{20, 22, 10, 12},
			{22, 24, 12, 10},
		},
		nodeMemKB: []int64{130546152, 132084348, 132084348, 132070908},
	}
	t := tree{}
	m.sysfs(t)
	t.put("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "2600000")
	t.put("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance")
	t.put("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never")
	t.put("proc/sys/kernel/osrelease", "5.15.0-91-generic")
	var b strings.Builder
	for c := 0; c < 192; c++ {
		fmt.Fprintf(&b, "processor\t: %d\nBogoMIPS\t: 200.00\n"+
			"Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma dcpop asimddp asimdfhm ssbs\n"+
			"CPU implementer\t: 0x48\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd01\nCPU revision\t: 0\n\n", c)
	}
	t["proc/cpuinfo"] = b.String()
	t.write(dir)
}

// copyLive copies the files package topology reads from /sys and /proc.
func copyLive(dir string) {
	t := tree{}
	add := func(path string) {
		b, err := os.ReadFile("/" + path)
		if err == nil {
			t[path] = string(b)
		}
	}
	for _, p := range []string{
		"sys/devices/system/cpu/online",
		"sys/devices/system/cpu/cpufreq/boost",
		"sys/devices/system/cpu/intel_pstate/no_turbo",
		"sys/kernel/mm/transparent_hugepage/enabled",
		"proc/cpuinfo", "proc/meminfo", "proc/sys/kernel/osrelease",
	} {
		add(p)
	}
	cpus, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*")
	for _, c := range cpus {
		c = strings.TrimPrefix(c, "/")
		for _, f := range []string{"physical_package_id", "core_id", "core_cpus_list", "thread_siblings_list"} {
			add(c + "/topology/" + f)
		}
		for _, f := range []string{"base_frequency", "cpuinfo_max_freq", "scaling_governor"} {
			add(c + "/cpufreq/" + f)
		}
		idx, _ := filepath.Glob("/" + c + "/cache/index[0-9]*")
		for _, x := range idx {
			x = strings.TrimPrefix(x, "/")
			for _, f := range []string{"level", "type", "size", "coherency_line_size", "ways_of_associativity", "shared_cpu_list"} {
				add(x + "/" + f)
			}
		}
	}
	nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	for _, n := range nodes {
		n = strings.TrimPrefix(n, "/")
		for _, f := range []string{"cpulist", "distance", "meminfo"} {
			add(n + "/" + f)
		}
	}
	t.write(dir)
}
