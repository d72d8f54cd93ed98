package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cpubench/bench/results"
)

// cpuTopo is what sysfs says about one online CPU.
type cpuTopo struct {
	cpu    int
	pkg    int   // physical_package_id (-1 read as 0)
	coreID int   // core_id
	core   []int // online CPUs of its core, itself included
	node   int
	caches []cacheRec
}

// cacheRec is one cpu*/cache/index* directory.
type cacheRec struct {
	level  int
	typ    string // "Data", "Instruction", "Unified"
	size   int64  // bytes, 0 if the kernel does not say
	line   int    // bytes
	ways   int
	shared []int // online CPUs sharing this instance
}

// readTopology is ReadTopology for any roots.
func readTopology(r Roots) (*results.Topology, error) {
	online, err := readOnline(r)
	if err != nil {
		return nil, err
	}
	isOnline := make(map[int]bool, len(online))
	for _, c := range online {
		isOnline[c] = true
	}
	cpus := make([]*cpuTopo, len(online))
	byCPU := make(map[int]*cpuTopo, len(online))
	for i, c := range online {
		t, err := readCPU(r, c, isOnline)
		if err != nil {
			return nil, err
		}
		cpus[i], byCPU[c] = t, t
	}
	nodes, dist, err := readNodes(r, online, isOnline)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		for _, c := range n.CPUs {
			byCPU[c].node = n.ID
		}
	}
	for _, t := range cpus {
		if t.node < 0 {
			return nil, fmt.Errorf("topology: cpu%d is online but in no cpulist under %s", t.cpu, r.sys("devices", "system", "node"))
		}
	}

	topo := &results.Topology{
		Threads:    len(online),
		OnlineCPUs: online,
		Nodes:      nodes,
		NUMANodes:  len(nodes),
		Distances:  dist,
	}
	topo.Caches, topo.LLCBytes, topo.LineBytes = summarizeCaches(cpus)
	if len(topo.Caches) == 0 && r.live() {
		if sz, ok := cpuidCacheSizes(); ok {
			topo.Caches, topo.LLCBytes, topo.LineBytes, topo.CacheNote = cachesFromCPUID(sz, cpus)
		}
	}

	pkg := partition("package", cpus, func(t *cpuTopo) (string, int, int64, bool) {
		return strconv.Itoa(t.pkg), t.pkg, 0, true
	})
	numa := partition("numa", cpus, func(t *cpuTopo) (string, int, int64, bool) {
		return strconv.Itoa(t.node), t.node, 0, true
	})
	core := partition("core", cpus, func(t *cpuTopo) (string, int, int64, bool) {
		return FormatCPUList(t.core), t.coreID, 0, true
	})
	topo.Packages = len(pkg.groups)
	topo.Cores = len(core.groups)

	levels := []*level{pkg, numa}
	for _, lv := range []int{3, 2} {
		if p := cachePartition(lv, cpus); p != nil {
			levels = append(levels, p)
		}
	}
	levels = append(levels, core)
	topo.Tree = buildTree(online, nestLevels(levels))

	// CoreCPUs: the lowest online sibling of each core, by package, node,
	// core_id, then CPU number.
	cores := slices.Clone(core.groups)
	slices.SortFunc(cores, func(a, b *group) int {
		ta, tb := byCPU[a.cpus[0]], byCPU[b.cpus[0]]
		return cmp.Or(cmp.Compare(ta.pkg, tb.pkg), cmp.Compare(ta.node, tb.node),
			cmp.Compare(a.id, b.id), cmp.Compare(a.cpus[0], b.cpus[0]))
	})
	topo.CoreCPUs = make([]int, len(cores))
	for i, g := range cores {
		topo.CoreCPUs[i] = g.cpus[0]
	}
	return topo, nil
}

// readOnline reads /sys/devices/system/cpu/online, or lists the cpu<N>
// directories that have a topology directory where that file is missing.
func readOnline(r Roots) ([]int, error) {
	path := r.cpuDir("online")
	online, ok, err := readCPUListOpt(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		ns, err := numberedDirs(r.cpuDir(), "cpu")
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if _, ok, _ := readOpt(r.cpuDir(fmt.Sprintf("cpu%d", n), "topology", "core_id")); ok {
				online = append(online, n)
			}
		}
	}
	if len(online) == 0 {
		return nil, fileErr(path, errors.New("no online CPUs"))
	}
	return online, nil
}

// readCPU reads cpu<N>/topology and cpu<N>/cache. Missing topology files
// default to package 0, core_id = N and a core of its own (as on kernels
// that do not export topology); missing optional cache files read as 0.
func readCPU(r Roots, c int, isOnline map[int]bool) (*cpuTopo, error) {
	dir := r.cpuDir(fmt.Sprintf("cpu%d", c))
	t := &cpuTopo{cpu: c, coreID: c, node: -1}
	if v, ok, err := readIntOpt(dir + "/topology/physical_package_id"); err != nil {
		return nil, err
	} else if ok && v >= 0 {
		t.pkg = v
	}
	if v, ok, err := readIntOpt(dir + "/topology/core_id"); err != nil {
		return nil, err
	} else if ok {
		t.coreID = v
	}
	sib, ok, err := readCPUListOpt(dir + "/topology/core_cpus_list")
	if err == nil && !ok {
		sib, ok, err = readCPUListOpt(dir + "/topology/thread_siblings_list")
	}
	if err != nil {
		return nil, err
	}
	t.core = onlineWith(sib, isOnline, c)

	idx, err := numberedDirs(dir+"/cache", "index")
	if err != nil {
		return nil, err
	}
	for _, i := range idx {
		cr, err := readCache(fmt.Sprintf("%s/cache/index%d", dir, i), c, isOnline)
		if err != nil {
			return nil, err
		}
		t.caches = append(t.caches, cr)
	}
	return t, nil
}

// onlineWith keeps the online CPUs of list and makes sure self is in it.
func onlineWith(list []int, isOnline map[int]bool, self int) []int {
	out := []int{self}
	for _, c := range list {
		if isOnline[c] && c != self {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func readCache(dir string, cpu int, isOnline map[int]bool) (cacheRec, error) {
	var cr cacheRec
	s, err := readReq(dir + "/level")
	if err != nil {
		return cr, err
	}
	if cr.level, err = strconv.Atoi(s); err != nil || cr.level < 0 {
		if err == nil {
			err = errors.New("negative")
		}
		return cr, parseErr(dir+"/level", s, err)
	}
	if cr.typ, err = readReq(dir + "/type"); err != nil {
		return cr, err
	}
	switch cr.typ {
	case "Data", "Instruction", "Unified":
	default:
		return cr, fileErr(dir+"/type", fmt.Errorf("unknown cache type %q (want Data, Instruction or Unified)", cr.typ))
	}
	if s, ok, err := readOpt(dir + "/size"); err != nil {
		return cr, err
	} else if ok {
		if cr.size, err = parseSize(s); err != nil {
			return cr, parseErr(dir+"/size", s, err)
		}
	}
	if cr.line, _, err = readIntOpt(dir + "/coherency_line_size"); err != nil {
		return cr, err
	}
	if cr.ways, _, err = readIntOpt(dir + "/ways_of_associativity"); err != nil {
		return cr, err
	}
	shared, _, err := readCPUListOpt(dir + "/shared_cpu_list")
	if err != nil {
		return cr, err
	}
	cr.shared = onlineWith(shared, isOnline, cpu)
	return cr, nil
}

// parseSize parses a sysfs cache size: bytes with an optional K, M or G
// suffix in IEC units ("32K" = 32768), as the kernel prints it.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	num := s
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			mult, num = 1<<10, s[:n-1]
		case 'M':
			mult, num = 1<<20, s[:n-1]
		case 'G':
			mult, num = 1<<30, s[:n-1]
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, errors.New("negative size")
	}
	return v * mult, nil
}

// readNodes reads /sys/devices/system/node/node<N>/{cpulist,distance,meminfo}.
// Without node directories (a kernel without NUMA) it returns one node 0
// holding every online CPU, its memory from /proc/meminfo, distance [[10]].
// Memory-only nodes (no CPUs) are kept: they are real memory targets.
func readNodes(r Roots, online []int, isOnline map[int]bool) ([]results.NUMANode, [][]int, error) {
	dir := r.sys("devices", "system", "node")
	ids, err := numberedDirs(dir, "node")
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		mem, err := memTotal(r.proc("meminfo"), "MemTotal:")
		if err != nil {
			return nil, nil, err
		}
		n := results.NUMANode{ID: 0, CPUList: FormatCPUList(online), CPUs: online, MemBytes: mem}
		return []results.NUMANode{n}, [][]int{{10}}, nil
	}
	nodes := make([]results.NUMANode, len(ids))
	dist := make([][]int, len(ids))
	for i, id := range ids {
		nd := fmt.Sprintf("%s/node%d", dir, id)
		list, err := readReq(nd + "/cpulist")
		if err != nil {
			return nil, nil, err
		}
		all, err := parseCPUList(list)
		if err != nil {
			return nil, nil, parseErr(nd+"/cpulist", list, err)
		}
		cpus := []int{}
		for _, c := range all {
			if isOnline[c] {
				cpus = append(cpus, c)
			}
		}
		mem, err := memTotal(nd+"/meminfo", fmt.Sprintf("Node %d MemTotal:", id))
		if err != nil {
			return nil, nil, err
		}
		nodes[i] = results.NUMANode{ID: id, CPUList: FormatCPUList(cpus), CPUs: cpus, MemBytes: mem}

		ds, err := readReq(nd + "/distance")
		if err != nil {
			return nil, nil, err
		}
		f := strings.Fields(ds)
		if len(f) != len(ids) {
			return nil, nil, fileErr(nd+"/distance", fmt.Errorf("%d distances for %d nodes", len(f), len(ids)))
		}
		dist[i] = make([]int, len(f))
		for j, v := range f {
			if dist[i][j], err = strconv.Atoi(v); err != nil {
				return nil, nil, parseErr(nd+"/distance", ds, err)
			}
		}
	}
	// A CPU listed by two nodes would be attributed to the later one; say so instead.
	seen := map[int]int{}
	for _, n := range nodes {
		for _, c := range n.CPUs {
			if prev, dup := seen[c]; dup {
				return nil, nil, fmt.Errorf("topology: %s: cpu%d is in node%d and node%d", dir, c, prev, n.ID)
			}
			seen[c] = n.ID
		}
	}
	return nodes, dist, nil
}

// memTotal reads the "<key> <n> kB" line of a meminfo file and returns
// bytes; a missing file or line gives 0.
func memTotal(path, key string) (int64, error) {
	s, ok, err := readOpt(path)
	if err != nil || !ok {
		return 0, err
	}
	for _, line := range strings.Split(s, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), key)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, parseErr(path, line, errors.New(`want "<n> kB"`))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, parseErr(path, line, err)
		}
		return kb << 10, nil
	}
	return 0, nil
}

// cacheSizes are the cache sizes CPUID reports, in bytes; 0 where it
// reports none.
type cacheSizes struct {
	l1d, l1i, l2, l3 int64
	line             int
}

// cachesFromCPUID turns CPUID's sizes into cache entries for a machine whose
// sysfs has none. CPUID says nothing here about which CPUs share a cache, so
// L1 and L2 are taken to be per core (shared by the core's hardware
// threads) and an L3 to be one instance shared by every online CPU; the
// note says which levels came from CPUID and which are unknown.
func cachesFromCPUID(sz cacheSizes, cpus []*cpuTopo) (caches []results.Cache, llc int64, line int, note string) {
	cores := map[string]bool{}
	perCore := 1
	for _, t := range cpus {
		cores[FormatCPUList(t.core)] = true
		perCore = max(perCore, len(t.core))
	}
	add := func(level int, typ string, size int64, inst, shared int) {
		if size > 0 {
			caches = append(caches, results.Cache{Level: level, Type: typ, SizeBytes: size, LineBytes: sz.line,
				Instances: max(1, inst), SharedBy: max(1, shared), Source: "cpuid"})
		}
	}
	add(1, "Data", sz.l1d, len(cores), perCore)
	add(1, "Instruction", sz.l1i, len(cores), perCore)
	add(2, "Unified", sz.l2, len(cores), perCore)
	add(3, "Unified", sz.l3, 1, len(cpus))
	for _, c := range caches {
		if c.Type != "Instruction" {
			llc = c.SizeBytes
		}
	}
	note = "sysfs has no cache information: sizes from CPUID, L1 and L2 taken to be per core"
	if sz.l3 > 0 {
		note += ", the L3 shared by all online CPUs"
	} else {
		note += "; CPUID reports no L3 size, so the last level listed may not be the last level present"
	}
	return caches, llc, sz.line, note
}

var cacheTypeOrder = map[string]int{"Data": 0, "Instruction": 1, "Unified": 2}

// summarizeCaches makes one results.Cache per (level, type, size): one per
// (level, type) except on hybrid CPUs whose cores have different caches.
// SharedBy is the largest number of online CPUs in one instance. llc is the
// size of the highest-level Data or Unified cache (the largest, if sizes
// differ); line is the line size of the L1 data cache (else of the first
// cache listed), 0 without cache information.
func summarizeCaches(cpus []*cpuTopo) (caches []results.Cache, llc int64, line int) {
	caches = []results.Cache{}
	type key struct {
		level int
		typ   string
		size  int64
	}
	byKey := map[key]*results.Cache{}
	inst := map[key]map[string]bool{}
	var keys []key
	for _, t := range cpus {
		for _, cr := range t.caches {
			k := key{cr.level, cr.typ, cr.size}
			c := byKey[k]
			if c == nil {
				c = &results.Cache{Level: cr.level, Type: cr.typ, SizeBytes: cr.size, LineBytes: cr.line, Ways: cr.ways}
				byKey[k], inst[k] = c, map[string]bool{}
				keys = append(keys, k)
			}
			inst[k][FormatCPUList(cr.shared)] = true
			c.SharedBy = max(c.SharedBy, len(cr.shared))
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(cacheTypeOrder[a.typ], cacheTypeOrder[b.typ]), cmp.Compare(a.size, b.size))
	})
	top := -1
	for _, k := range keys {
		c := byKey[k]
		c.Instances = len(inst[k])
		caches = append(caches, *c)
		if k.typ != "Instruction" && k.level >= top {
			if k.level > top {
				llc = 0
			}
			top, llc = k.level, max(llc, k.size)
		}
	}
	for _, c := range caches {
		if c.Level == 1 && c.Type == "Data" {
			line = c.LineBytes
			break
		}
	}
	if line == 0 && len(caches) > 0 {
		line = caches[0].LineBytes
	}
	return caches, llc, line
}
