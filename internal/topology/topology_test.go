package topology

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

const (
	epyc    = "linux-amd64-epyc-kvm-2c"
	xeon    = "linux-amd64-xeon-gold-6248-2s"
	kunpeng = "linux-arm64-kunpeng-920-4n"
)

func fixture(name string) Roots {
	return Roots{Sys: filepath.Join("testdata", name, "sys"), Proc: filepath.Join("testdata", name, "proc")}
}

// copies holds one scratch copy of each snapshot per test binary (the
// test machine's filesystem is slow at creating files). Tests mutate a copy
// only through write and removeAll, which undo themselves at cleanup; tests
// that mutate do not run in parallel.
var copies = map[string]string{}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range copies {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// mutable returns the roots of the scratch copy of a snapshot.
func mutable(t *testing.T, name string) Roots {
	t.Helper()
	dst, ok := copies[name]
	if !ok {
		var err error
		if dst, err = os.MkdirTemp("", "topology-"+name+"-"); err != nil {
			t.Fatal(err)
		}
		copies[name] = dst
		src := filepath.Join("testdata", name)
		err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			if os.Link(p, filepath.Join(dst, rel)) == nil { // write never edits in place
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return Roots{Sys: filepath.Join(dst, "sys"), Proc: filepath.Join(dst, "proc")}
}

// write replaces (or creates) a file of a scratch copy until the test ends.
func write(t *testing.T, path, s string) {
	t.Helper()
	orig, err := os.ReadFile(path)
	existed := err == nil
	created := "" // the outermost directory write creates
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		created = d
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put([]byte(s + "\n"))
	t.Cleanup(func() {
		switch {
		case existed:
			put(orig)
		case created != "":
			if err := os.RemoveAll(created); err != nil {
				t.Error(err)
			}
		default:
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
		}
	})
}

// removeAll moves the files or directories matching pattern out of a
// scratch copy until the test ends.
func removeAll(t *testing.T, pattern string) {
	t.Helper()
	ms, err := filepath.Glob(pattern)
	if err != nil || len(ms) == 0 {
		t.Fatalf("glob %s: %v matches, %v", pattern, len(ms), err)
	}
	trash := t.TempDir()
	for i, m := range ms {
		to := filepath.Join(trash, strconv.Itoa(i))
		if err := os.Rename(m, to); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.Rename(to, m); err != nil {
				t.Error(err)
			}
		})
	}
}

// rename renames a file of a scratch copy until the test ends.
func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Rename(to, from); err != nil {
			t.Error(err)
		}
	})
}

// checkTree checks that every node's children partition its CPUs, that
// cache levels carry their size and that leaves are threads, and returns
// the kinds along the first path and the number of nodes of each kind.
func checkTree(t *testing.T, root *results.TopoNode) (path []string, count map[string]int) {
	t.Helper()
	count = map[string]int{}
	var walk func(n *results.TopoNode)
	walk = func(n *results.TopoNode) {
		count[n.Kind]++
		if (n.Kind == "l2" || n.Kind == "l3") != (n.CacheBytes > 0) {
			t.Errorf("%s %d: cache_bytes %d", n.Kind, n.ID, n.CacheBytes)
		}
		if len(n.Children) == 0 {
			if n.Kind != "thread" {
				t.Errorf("leaf %s %d is not a thread", n.Kind, n.ID)
			}
			return
		}
		var union []int
		for _, c := range n.Children {
			cpus, err := ParseCPUList(c.CPUList)
			if err != nil {
				t.Fatal(err)
			}
			union = append(union, cpus...)
			walk(c)
		}
		slices.Sort(union)
		if got := FormatCPUList(union); got != n.CPUList || len(slices.Compact(union)) != len(union) {
			t.Errorf("%s %d (%s): children cover %s (overlapping: %v)", n.Kind, n.ID, n.CPUList, got, len(slices.Compact(slices.Clone(union))) != len(union))
		}
	}
	walk(root)
	for n := root; n != nil; {
		path = append(path, n.Kind)
		if len(n.Children) == 0 {
			break
		}
		n = n.Children[0]
	}
	return path, count
}

func TestFixtures(t *testing.T) {
	kinds := []string{"machine", "package", "numa", "l3", "l2", "core", "thread"}
	for _, tc := range []struct {
		name                            string
		packages, nodes, cores, threads int
		caches                          []results.Cache
		llc                             int64
		line                            int
		nodeLists                       []string
		nodeMem                         []int64
		dist                            [][]int
		path                            []string
		count                           map[string]int
		coreCPUs                        []int
		firstPkgCoreIDs                 []int
	}{
		{
			name: epyc, packages: 1, nodes: 1, cores: 2, threads: 2,
			caches: []results.Cache{
				{Level: 1, Type: "Data", SizeBytes: 32 << 10, LineBytes: 64, Ways: 8, Instances: 2, SharedBy: 1},
				{Level: 1, Type: "Instruction", SizeBytes: 32 << 10, LineBytes: 64, Ways: 8, Instances: 2, SharedBy: 1},
				{Level: 2, Type: "Unified", SizeBytes: 1 << 20, LineBytes: 64, Ways: 8, Instances: 2, SharedBy: 1},
				{Level: 3, Type: "Unified", SizeBytes: 32 << 20, LineBytes: 64, Ways: 16, Instances: 1, SharedBy: 2},
			},
			llc: 32 << 20, line: 64,
			nodeLists: []string{"0-1"}, nodeMem: []int64{5728472 << 10},
			dist: [][]int{{10}},
			path: kinds, count: map[string]int{"machine": 1, "package": 1, "numa": 1, "l3": 1, "l2": 2, "core": 2, "thread": 2},
			coreCPUs: []int{0, 1}, firstPkgCoreIDs: []int{0, 1},
		},
		{
			name: xeon, packages: 2, nodes: 2, cores: 40, threads: 80,
			caches: []results.Cache{
				{Level: 1, Type: "Data", SizeBytes: 32 << 10, LineBytes: 64, Ways: 8, Instances: 40, SharedBy: 2},
				{Level: 1, Type: "Instruction", SizeBytes: 32 << 10, LineBytes: 64, Ways: 8, Instances: 40, SharedBy: 2},
				{Level: 2, Type: "Unified", SizeBytes: 1 << 20, LineBytes: 64, Ways: 16, Instances: 40, SharedBy: 2},
				{Level: 3, Type: "Unified", SizeBytes: 28160 << 10, LineBytes: 64, Ways: 11, Instances: 2, SharedBy: 40},
			},
			llc: 27.5 * (1 << 20), line: 64,
			nodeLists: []string{"0-19,40-59", "20-39,60-79"}, nodeMem: []int64{195989640 << 10, 198152940 << 10},
			dist: [][]int{{10, 21}, {21, 10}},
			path: kinds, count: map[string]int{"machine": 1, "package": 2, "numa": 2, "l3": 2, "l2": 40, "core": 40, "thread": 80},
			coreCPUs:        seq(0, 39),
			firstPkgCoreIDs: []int{0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 16, 17, 18, 19, 20, 24, 25, 26, 27, 28},
		},
		{
			name: kunpeng, packages: 2, nodes: 4, cores: 192, threads: 192,
			caches: []results.Cache{
				{Level: 1, Type: "Data", SizeBytes: 64 << 10, LineBytes: 64, Ways: 4, Instances: 192, SharedBy: 1},
				{Level: 1, Type: "Instruction", SizeBytes: 64 << 10, LineBytes: 64, Ways: 4, Instances: 192, SharedBy: 1},
				{Level: 2, Type: "Unified", SizeBytes: 512 << 10, LineBytes: 64, Ways: 8, Instances: 192, SharedBy: 1},
				{Level: 3, Type: "Unified", SizeBytes: 48 << 20, LineBytes: 128, Ways: 16, Instances: 4, SharedBy: 48},
			},
			llc: 48 << 20, line: 64,
			nodeLists: []string{"0-47", "48-95", "96-143", "144-191"},
			nodeMem:   []int64{130546152 << 10, 132084348 << 10, 132084348 << 10, 132070908 << 10},
			dist:      [][]int{{10, 12, 20, 22}, {12, 10, 22, 24}, {20, 22, 10, 12}, {22, 24, 12, 10}},
			path:      kinds, count: map[string]int{"machine": 1, "package": 2, "numa": 4, "l3": 4, "l2": 192, "core": 192, "thread": 192},
			coreCPUs:        seq(0, 191),
			firstPkgCoreIDs: seq(0, 95),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := readTopology(fixture(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if topo.Packages != tc.packages || topo.NUMANodes != tc.nodes || topo.Cores != tc.cores || topo.Threads != tc.threads {
				t.Errorf("packages/nodes/cores/threads = %d/%d/%d/%d, want %d/%d/%d/%d",
					topo.Packages, topo.NUMANodes, topo.Cores, topo.Threads, tc.packages, tc.nodes, tc.cores, tc.threads)
			}
			if !slices.Equal(topo.OnlineCPUs, seq(0, tc.threads-1)) {
				t.Errorf("OnlineCPUs = %v", topo.OnlineCPUs)
			}
			if !reflect.DeepEqual(topo.Caches, tc.caches) {
				t.Errorf("Caches =\n%+v\nwant\n%+v", topo.Caches, tc.caches)
			}
			if topo.LLCBytes != tc.llc || topo.LineBytes != tc.line {
				t.Errorf("LLCBytes, LineBytes = %d, %d; want %d, %d", topo.LLCBytes, topo.LineBytes, tc.llc, tc.line)
			}
			var lists []string
			var mems []int64
			for i, n := range topo.Nodes {
				if n.ID != i || FormatCPUList(n.CPUs) != n.CPUList {
					t.Errorf("node %d: id %d, cpus %v vs cpulist %s", i, n.ID, n.CPUs, n.CPUList)
				}
				lists, mems = append(lists, n.CPUList), append(mems, n.MemBytes)
			}
			if !slices.Equal(lists, tc.nodeLists) || !slices.Equal(mems, tc.nodeMem) {
				t.Errorf("node cpulists %q mem %v, want %q %v", lists, mems, tc.nodeLists, tc.nodeMem)
			}
			if !reflect.DeepEqual(topo.Distances, tc.dist) {
				t.Errorf("Distances = %v, want %v", topo.Distances, tc.dist)
			}
			path, count := checkTree(t, topo.Tree)
			if !slices.Equal(path, tc.path) || !reflect.DeepEqual(count, tc.count) {
				t.Errorf("tree path %v counts %v, want %v %v", path, count, tc.path, tc.count)
			}
			if !slices.Equal(topo.CoreCPUs, tc.coreCPUs) {
				t.Errorf("CoreCPUs = %v, want %v", topo.CoreCPUs, tc.coreCPUs)
			}
			var ids []int
			var walk func(n *results.TopoNode)
			walk = func(n *results.TopoNode) {
				if n.Kind == "core" {
					ids = append(ids, n.ID)
					return
				}
				for _, c := range n.Children {
					walk(c)
				}
			}
			walk(topo.Tree.Children[0])
			if !slices.Equal(ids, tc.firstPkgCoreIDs) {
				t.Errorf("core ids of package 0 = %v, want %v", ids, tc.firstPkgCoreIDs)
			}
		})
	}
}

// TestXeonTreeDetail pins the shape of one branch of the 2-socket tree.
func TestXeonTreeDetail(t *testing.T) {
	topo, err := readTopology(fixture(xeon))
	if err != nil {
		t.Fatal(err)
	}
	p1 := topo.Tree.Children[1]
	numa := p1.Children[0]
	l3 := numa.Children[0]
	l2 := l3.Children[0]
	core := l2.Children[0]
	got := fmt.Sprintf("%s %d %s | %s %d %s | %s %d %s %d | %s %d %s %d | %s %d %s | %s %s",
		p1.Kind, p1.ID, p1.CPUList, numa.Kind, numa.ID, numa.CPUList, l3.Kind, l3.ID, l3.CPUList, l3.CacheBytes,
		l2.Kind, l2.ID, l2.CPUList, l2.CacheBytes, core.Kind, core.ID, core.CPUList, core.Children[0].CPUList, core.Children[1].CPUList)
	want := "package 1 20-39,60-79 | numa 1 20-39,60-79 | l3 1 20-39,60-79 28835840 | l2 20 20,60 1048576 | core 0 20,60 | 20 60"
	if got != want {
		t.Errorf("package 1 branch:\n got %s\nwant %s", got, want)
	}
}

func TestNoNodeDirectory(t *testing.T) {
	r := mutable(t, epyc)
	removeAll(t, filepath.Join(r.Sys, "devices/system/node"))
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []results.NUMANode{{ID: 0, CPUList: "0-1", CPUs: []int{0, 1}, MemBytes: 24684096 << 10}}
	if !reflect.DeepEqual(topo.Nodes, want) || !reflect.DeepEqual(topo.Distances, [][]int{{10}}) || topo.NUMANodes != 1 {
		t.Errorf("Nodes = %+v, Distances = %v; want %+v, [[10]]", topo.Nodes, topo.Distances, want)
	}
	if path, _ := checkTree(t, topo.Tree); !slices.Contains(path, "numa") {
		t.Errorf("tree path %v has no numa level", path)
	}
}

func TestNoL3(t *testing.T) {
	r := mutable(t, kunpeng)
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/cpu*/cache/index3"))
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	path, count := checkTree(t, topo.Tree)
	if want := []string{"machine", "package", "numa", "l2", "core", "thread"}; !slices.Equal(path, want) || count["numa"] != 4 {
		t.Errorf("tree path %v counts %v, want %v", path, count, want)
	}
	if topo.LLCBytes != 512<<10 || len(topo.Caches) != 3 {
		t.Errorf("LLCBytes = %d, %d caches; want 512 KiB, 3", topo.LLCBytes, len(topo.Caches))
	}
}

func TestNoCacheInfo(t *testing.T) {
	r := mutable(t, epyc)
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/cpu*/cache"))
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := checkTree(t, topo.Tree)
	if want := []string{"machine", "package", "numa", "core", "thread"}; !slices.Equal(path, want) {
		t.Errorf("tree path %v, want %v", path, want)
	}
	if topo.LLCBytes != 0 || topo.LineBytes != 0 || topo.Caches == nil || len(topo.Caches) != 0 {
		t.Errorf("LLCBytes %d LineBytes %d Caches %#v", topo.LLCBytes, topo.LineBytes, topo.Caches)
	}
}

func TestOfflineCPU(t *testing.T) {
	r := mutable(t, xeon)
	// The kernel removes an offline CPU's topology and cache directories;
	// the other files of this snapshot still name cpu39.
	write(t, filepath.Join(r.Sys, "devices/system/cpu/online"), "0-38,40-79")
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/cpu39/topology"))
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/cpu39/cache"))
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	if topo.Threads != 79 || topo.Cores != 40 || len(topo.OnlineCPUs) != 79 || slices.Contains(topo.OnlineCPUs, 39) {
		t.Errorf("threads %d cores %d online %v", topo.Threads, topo.Cores, topo.OnlineCPUs)
	}
	if topo.Nodes[1].CPUList != "20-38,60-79" {
		t.Errorf("node 1 cpulist %s", topo.Nodes[1].CPUList)
	}
	if want := append(seq(0, 38), 79); !slices.Equal(topo.CoreCPUs, want) {
		t.Errorf("CoreCPUs = %v, want %v", topo.CoreCPUs, want)
	}
	if c := topo.Caches[3]; c.Level != 3 || c.SharedBy != 40 || c.Instances != 2 {
		t.Errorf("L3 = %+v", c)
	}
	if c := topo.Caches[2]; c.Instances != 40 {
		t.Errorf("L2 = %+v", c)
	}
	checkTree(t, topo.Tree)
}

// TestL3SpansNodes is Intel sub-NUMA clustering: each socket's L3 spans two
// NUMA nodes, so the L3 level goes above the NUMA level.
func TestL3SpansNodes(t *testing.T) {
	r := mutable(t, xeon)
	node := filepath.Join(r.Sys, "devices/system/node")
	for i, list := range []string{"0-9,40-49", "10-19,50-59", "20-29,60-69", "30-39,70-79"} {
		d := fmt.Sprintf("%s/node%d/", node, i)
		write(t, d+"cpulist", list)
		write(t, d+"distance", [...]string{"10 11 21 21", "11 10 21 21", "21 21 10 11", "21 21 11 10"}[i])
		write(t, d+"meminfo", fmt.Sprintf("Node %d MemTotal: 1024 kB", i))
	}
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	path, count := checkTree(t, topo.Tree)
	if want := []string{"machine", "package", "l3", "numa", "l2", "core", "thread"}; !slices.Equal(path, want) || count["numa"] != 4 || count["l3"] != 2 {
		t.Errorf("tree path %v counts %v, want %v", path, count, want)
	}
	if topo.NUMANodes != 4 || topo.Distances[0][1] != 11 {
		t.Errorf("nodes %d distances %v", topo.NUMANodes, topo.Distances)
	}
	// CoreCPUs: by package, then node, then core id.
	if want := seq(0, 39); !slices.Equal(topo.CoreCPUs, want) {
		t.Errorf("CoreCPUs = %v", topo.CoreCPUs)
	}
}

// TestNodeSpansPackages is node interleaving: one NUMA node over two sockets.
func TestNodeSpansPackages(t *testing.T) {
	r := mutable(t, xeon)
	node := filepath.Join(r.Sys, "devices/system/node")
	removeAll(t, node+"/node1")
	write(t, node+"/node0/cpulist", "0-79")
	write(t, node+"/node0/distance", "10")
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	path, count := checkTree(t, topo.Tree)
	if want := []string{"machine", "numa", "package", "l3", "l2", "core", "thread"}; !slices.Equal(path, want) || count["package"] != 2 {
		t.Errorf("tree path %v counts %v, want %v", path, count, want)
	}
}

func TestThreadSiblingsFallback(t *testing.T) {
	r := mutable(t, xeon)
	ms, _ := filepath.Glob(filepath.Join(r.Sys, "devices/system/cpu/cpu*/topology/core_cpus_list"))
	for _, m := range ms {
		rename(t, m, filepath.Join(filepath.Dir(m), "thread_siblings_list"))
	}
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	if topo.Cores != 40 || !slices.Equal(topo.CoreCPUs, seq(0, 39)) {
		t.Errorf("cores %d CoreCPUs %v", topo.Cores, topo.CoreCPUs)
	}
}

func TestCorruptFixture(t *testing.T) {
	for _, tc := range []struct {
		file, content string
		remove        bool
		want          string // %s is the file's path
	}{
		{file: "devices/system/cpu/cpu3/cache/index2/size", content: "abc", want: `topology: %s: parse "abc": invalid syntax`},
		{file: "devices/system/cpu/cpu3/cache/index2/size", content: "-1K", want: `topology: %s: parse "-1K": negative size`},
		{file: "devices/system/cpu/cpu3/cache/index2/level", remove: true, want: `topology: %s: missing`},
		{file: "devices/system/cpu/cpu3/cache/index2/level", content: "two", want: `topology: %s: parse "two": invalid syntax`},
		{file: "devices/system/cpu/cpu3/cache/index1/type", content: "Victim", want: `topology: %s: unknown cache type "Victim" (want Data, Instruction or Unified)`},
		{file: "devices/system/cpu/cpu3/cache/index3/shared_cpu_list", content: "0-x", want: `topology: %s: parse "0-x": bad entry "0-x"`},
		{file: "devices/system/cpu/cpu7/topology/core_id", content: "", want: `topology: %s: parse "": invalid syntax`},
		{file: "devices/system/cpu/online", content: "0-79-", want: `topology: %s: parse "0-79-": bad entry "0-79-"`},
		{file: "devices/system/node/node1/distance", content: "21 10 10", want: `topology: %s: 3 distances for 2 nodes`},
		{file: "devices/system/node/node1/distance", content: "21 ten", want: `topology: %s: parse "21 ten": invalid syntax`},
		{file: "devices/system/node/node1/cpulist", remove: true, want: `topology: %s: missing`},
		{file: "devices/system/node/node1/cpulist", content: "0-39", want: `topology: %s: cpu0 is in node0 and node1`},
		{file: "devices/system/node/node1/meminfo", content: "Node 1 MemTotal: lots kB", want: `topology: %s: parse "Node 1 MemTotal: lots kB": invalid syntax`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := mutable(t, xeon)
			path := filepath.Join(r.Sys, tc.file)
			if tc.remove {
				removeAll(t, path)
			} else {
				write(t, path, tc.content)
			}
			want := fmt.Sprintf(tc.want, path)
			if strings.HasSuffix(tc.file, "cpulist") && !tc.remove {
				want = fmt.Sprintf(tc.want, filepath.Join(r.Sys, "devices/system/node"))
			}
			if _, err := readTopology(r); err == nil || err.Error() != want {
				t.Errorf("%s = %q: error\n %v\nwant\n %s", tc.file, tc.content, err, want)
			}
		})
	}
	r := mutable(t, xeon)
	write(t, filepath.Join(r.Sys, "devices/system/node/node1/cpulist"), "20-38,60-79")
	if _, err := readTopology(r); err == nil || !strings.Contains(err.Error(), "cpu39 is online but in no cpulist under") {
		t.Errorf("cpu in no node: error %v", err)
	}
}

// Without sysfs cache directories, CPUID's sizes stand in: L1 and L2 per
// core, an L3 shared by all, and a note that says what is assumed or unknown.
func TestCachesFromCPUID(t *testing.T) {
	r := mutable(t, epyc)
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/cpu*/cache"))
	topo, err := readTopology(r)
	if err != nil {
		t.Fatal(err)
	}
	var cpus []*cpuTopo
	for _, c := range topo.OnlineCPUs {
		ct, err := readCPU(r, c, map[int]bool{c: true})
		if err != nil {
			t.Fatal(err)
		}
		ct.core = []int{c}
		cpus = append(cpus, ct)
	}
	for _, tc := range []struct {
		l3      int64
		n       int
		noteHas string
	}{{32 << 20, 4, "L3 shared by all"}, {0, 3, "reports no L3"}} {
		caches, llc, line, note := cachesFromCPUID(cacheSizes{l1d: 48 << 10, l1i: 32 << 10, l2: 1 << 20, l3: tc.l3, line: 64}, cpus)
		if len(caches) != tc.n || line != 64 || !strings.Contains(note, tc.noteHas) {
			t.Fatalf("l3 %d: %d caches, line %d, note %q", tc.l3, len(caches), line, note)
		}
		wantLLC := tc.l3
		if wantLLC == 0 {
			wantLLC = 1 << 20
		}
		if llc != wantLLC {
			t.Errorf("l3 %d: llc %d, want %d", tc.l3, llc, wantLLC)
		}
		for _, c := range caches {
			if c.Source != "cpuid" || c.Instances < 1 || c.SharedBy < 1 {
				t.Errorf("cache %+v", c)
			}
			if c.Level < 3 && (c.Instances != len(cpus) || c.SharedBy != 1) {
				t.Errorf("per-core cache %+v: want %d instances of 1 CPU", c, len(cpus))
			}
		}
	}
}
