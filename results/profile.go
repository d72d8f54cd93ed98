package results

import "time"

// SchemaV1 is the value of Profile.Schema for this version of the format.
// Keys documented in docs/profile-schema.md are stable within v1: new keys
// may be added, none is renamed or removed.
const SchemaV1 = "bench.profile/v1"

// Section names accepted by `bench probe --only`.
const (
	SectionMachine  = "machine"
	SectionTopology = "topology"
	SectionMemory   = "memory"
	SectionLatency  = "latency"
	SectionShared   = "shared"
	SectionNUMA     = "numa"
	// Compute ceilings, two backends concurrently, and non-linear kernels
	// (issue: bench probe part 2).
	SectionCompute   = "compute"
	SectionMixed     = "mixed"
	SectionNonlinear = "nonlinear"
	// Attained GEMM/GEMV throughput (issue: kernel library).
	SectionMatrix = "matrix"
	// Per-call fixed costs of the engine's worker pool (issue #16 part 1).
	SectionDispatch = "dispatch"
)

// Profile is one run of `bench probe` on one machine. Sections that were not
// selected are nil and omitted from the JSON.
type Profile struct {
	Schema    string    `json:"schema"`
	CreatedAt time.Time `json:"created_at"`
	Host      string    `json:"host"`
	Tool      Tool      `json:"tool"`
	Options   Options   `json:"options"`

	Machine  *Machine         `json:"machine,omitempty"`
	Topology *Topology        `json:"topology,omitempty"`
	Memory   *Memory          `json:"memory,omitempty"`
	Latency  *Latency         `json:"latency,omitempty"`
	Shared   *SharedBandwidth `json:"shared,omitempty"`
	NUMA     *NUMA            `json:"numa,omitempty"`

	Compute   *Compute   `json:"compute,omitempty"`
	Mixed     *Mixed     `json:"mixed,omitempty"`
	Nonlinear *Nonlinear `json:"nonlinear,omitempty"`
	Matrix    *Matrix    `json:"matrix,omitempty"`
	Dispatch  *Dispatch  `json:"dispatch,omitempty"`

	// Placement is where the host put the probe's CPUs when it began, as
	// core-to-core round trips show it: the reference its figures on more
	// than one CPU, and the runs predicted from it, are checked against
	// (Noise.RoundTripNs). Absent with fewer than 2 CPUs.
	Placement *Placement `json:"placement,omitempty"`

	// Calibration is written by `bench calibrate` (issue #16 part 2):
	// per-operator-class efficiency factors and fixed costs the roofline
	// applies to its predictions (roofline.FromProfile).
	Calibration *Calibration `json:"calibration,omitempty"`

	// Notes are free-text remarks on the whole run (e.g. "machine is a VM").
	Notes []string `json:"notes,omitempty"`
}

// Tool identifies the program that wrote the profile.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

// Options records the parameters of the probe run.
type Options struct {
	Quick    bool     `json:"quick"`
	Sections []string `json:"sections"`
	// Threads is the list of thread counts swept (1..all usable CPUs by default).
	Threads []int `json:"threads"`
	// Reps is the number of timed repetitions per figure (after one warm-up).
	Reps int `json:"reps"`
	// MinRepSeconds is the minimum duration of one timed repetition.
	MinRepSeconds float64 `json:"min_rep_seconds"`
	// MaxWorkingSetBytes is the largest working set of the memory sweep.
	MaxWorkingSetBytes int64 `json:"max_working_set_bytes"`
	// ISA is the kernel implementation used for the memory section
	// ("avx512", "avx2", "neon", "go").
	ISA string `json:"isa"`
}

// Stat summarizes repeated timed runs of one figure. The unit is given by the
// field that holds the Stat (e.g. GBps: GB/s = 1e9 bytes/s; NS: nanoseconds).
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// CV is the coefficient of variation: sample standard deviation / mean.
	CV float64 `json:"cv"`
	// N is the number of timed repetitions (warm-up excluded).
	N int `json:"n"`
	// Samples are the N timed repetitions in the Stat's unit, in the order
	// measured, so that two figures can be compared with a rank test
	// (bench compare). Absent in profiles written before they were kept.
	Samples []float64 `json:"samples,omitempty"`
	// Noise is what the machine did while the figure was measured; nil
	// where the figure was not checked (profiles from before the check, or
	// figures derived from others).
	Noise *Noise `json:"noise,omitempty"`
}

// Noisy reports whether the figure was marked noisy (see Noise).
func (st Stat) Noisy() bool { return st.Noise != nil && st.Noise.Noisy }

// Noise thresholds: a figure is marked noisy when its measuring threads got
// less than NoiseMinCPUFraction of their CPUs (thread CPU time over wall
// time, summed over threads and repetitions) or its repetitions' coefficient
// of variation exceeds NoiseMaxCV.
const (
	NoiseMinCPUFraction = 0.90
	NoiseMaxCV          = 0.10
	// NoiseMaxRoofDrift is the largest relative difference between the
	// DRAM read roof (or the attained GEMM rate) re-measured beside an
	// engine run and the profile's that still compares the run with the
	// profile's predictions: a host's memory bandwidth and compute rate
	// move with its other guests, which the guest sees neither as steal
	// nor as spread within the run.
	NoiseMaxRoofDrift = 0.10
	// NoiseMaxCanary is the largest slowdown of a reference loop timed on
	// a figure's CPUs beside it, over the loop's best time on those CPUs
	// in the same run (Noise.Canary), that still counts the figure: the
	// host of the 2-core KVM guest ran single-thread compute at half speed
	// for seconds at a time, with no steal time and no spread within a
	// figure (its calibration timed RoPE of 4×1024 at 221 ns, then 507 ns,
	// cv 0.4% and 4.6%).
	NoiseMaxCanary = 1.20
	// NoisePlacementRatio is the ratio (either way) between a core-to-core
	// round trip measured beside a figure on more than one CPU and the
	// reference's (the probe's start; a run's profile) from which the host
	// has moved the CPUs and the figure is noisy. The 2-vCPU KVM guest of
	// this project alternates every 10 s to minutes between two
	// placements: medians of 71–165 ns with a 2-thread DRAM read roof of
	// 50–58 GB/s (both vCPUs on one host die: one L3, one link to
	// memory), and 342–475 ns with 82–108 GB/s (two dies; the attained
	// 2-thread GEMM 0.88–0.98 of the first's, the 1-thread roof 42–44 in
	// both). Within a placement medians move by up to 2.3×, between the
	// two by 2.1–6.7×: at 2.5 no move within a placement is taken for one
	// between, and a move this misses from a reference at the top of its
	// placement's range still shows in the DRAM roof check.
	NoisePlacementRatio = 2.5
)

// Noise records the conditions under which one figure was measured (issue
// #16 part 3). A guest VM cannot see a host's contention directly: where the
// hypervisor reports no steal time, descheduled vCPUs show only as spread,
// which is why the coefficient of variation is one of the two tests.
type Noise struct {
	// CPUFraction is the measuring threads' CPU time over their wall time,
	// summed over threads and timed repetitions (1 = every thread ran the
	// whole time). Absent (0) where not measured: figures timed on
	// kernels/pool (GEMM, quantized GEMV), whose workers park between calls
	// (not the up-convert loops of quant_ebw: one worker's thread, timed on
	// that thread's clock), and OSes without a per-thread CPU clock.
	CPUFraction float64 `json:"cpu_fraction,omitempty"`
	// StealFraction is the share of the measuring CPUs' time the hypervisor
	// reported as stolen (/proc/stat steal column) during the figure.
	StealFraction float64 `json:"steal_fraction"`
	// LoadAvg1 is the one-minute load average (/proc/loadavg) at the end.
	LoadAvg1 float64 `json:"load_avg_1"`
	// CV is the largest coefficient of variation over the figure's thread
	// groups (the Stat's own CV for one group).
	CV float64 `json:"cv"`
	// Attempts is how many times the figure was measured: a noisy
	// measurement is repeated (bounded), and the least noisy attempt kept.
	Attempts int `json:"attempts"`
	// Noisy is true when the kept attempt still fails a threshold; Why says
	// which, with the values.
	Noisy bool   `json:"noisy"`
	Why   string `json:"why,omitempty"`
	// DRAMNowGBps and DRAMProfileGBps (engine runs with a profile: bench
	// run) are the DRAM read roof at the run's threads re-measured right
	// after its timed phases (probes.CheckDRAMRoof: the profile's kernel
	// and pages, GB/s = 1e9 B/s) and the profile's; a run whose two differ
	// by more than NoiseMaxRoofDrift is noisy. Absent where not checked.
	DRAMNowGBps     float64 `json:"dram_now_gbps,omitempty"`
	DRAMProfileGBps float64 `json:"dram_profile_gbps,omitempty"`
	// GEMMRatio (engine runs with a profile) is the attained GEMM rate
	// re-measured right after the timed phases over the profile's, at the
	// run's backend and threads (probes.CheckGEMM: the median ratio over
	// up to 3 points of matrix.gemm_shapes); a run whose ratio is more
	// than NoiseMaxRoofDrift from 1 is noisy. GEMMBackend names the
	// backend checked. Absent where not checked.
	GEMMRatio   float64 `json:"gemm_ratio,omitempty"`
	GEMMBackend string  `json:"gemm_backend,omitempty"`
	// GEMMRowsRatio and GEMMRowsShape (engine runs with a profile whose
	// prefill is longer than the GEMM check's points) are the same ratio
	// at the table point of the run's prefill rows (probes.GEMMCheck.Rows,
	// M×N×K): a long prefill's GEMM keeps its operands in the last-level
	// cache, whose share the host's other guests move; more than
	// NoiseMaxRoofDrift from 1 marks the run noisy. Absent where not
	// checked.
	GEMMRowsRatio float64 `json:"gemm_rows_ratio,omitempty"`
	GEMMRowsShape string  `json:"gemm_rows_shape,omitempty"`
	// Canary (bench calibrate's shapes) is the slowest time of a fixed
	// reference loop (opbench.Canary) on the figure's CPUs, measured right
	// before and after it, over the loop's best time on the same CPU in the
	// run (1: as fast as ever); above NoiseMaxCanary the figure is noisy.
	// Absent where not checked.
	Canary float64 `json:"canary,omitempty"`
	// RoundTripNs and RoundTripRefNs (figures and runs on more than one
	// CPU, with a reference: the profile's Placement) are the
	// core-to-core round trip, in ns, between the CPUs RoundTripCPUs
	// measured beside the figure (before and after it; the one further
	// from the reference is kept) and the reference's, for the pair that
	// moved most; a ratio of NoisePlacementRatio or more either way marks
	// the figure noisy: the host moved the CPUs (a VM's vCPUs between the
	// host's dies), which changes what threads on more than one CPU share
	// (an L3, a die's link to memory). Absent where not checked.
	RoundTripNs    float64 `json:"round_trip_ns,omitempty"`
	RoundTripRefNs float64 `json:"round_trip_ref_ns,omitempty"`
	RoundTripCPUs  []int   `json:"round_trip_cpus,omitempty"`
}

// Placement records where the host put a set of CPUs, as the guest can
// measure it (issue #16 part 3): the core-to-core round trip from the
// first CPU to each other one (internal/noise.MeasurePlacement).
type Placement struct {
	// Method says how the round trips were timed.
	Method     string      `json:"method"`
	RoundTrips []RoundTrip `json:"round_trips"`
}

// RoundTrip is the core-to-core round trip between CPUs A and B: a thread
// pinned to A writes a cache line, one pinned to B sees it and writes it
// back, and A sees that (two one-way core-to-core latencies). NS is in
// nanoseconds per round trip, one sample per burst of round trips.
type RoundTrip struct {
	A  int  `json:"cpu_a"`
	B  int  `json:"cpu_b"`
	NS Stat `json:"ns"`
}

// Machine is the "machine" section: what the CPU and OS are. Values that
// could not be read are the string "unknown".
type Machine struct {
	Arch       string `json:"arch"` // GOARCH: amd64, arm64
	Vendor     string `json:"vendor"`
	CPUModel   string `json:"cpu_model"`
	Family     int    `json:"family,omitempty"`
	Model      int    `json:"model,omitempty"`
	Stepping   int    `json:"stepping,omitempty"`
	Hypervisor string `json:"hypervisor,omitempty"`
	// LogicalCPUs is the number of online hardware threads.
	LogicalCPUs int `json:"logical_cpus"`
	// Features are the ISA features, sorted, in cpuid/v2 spelling on x86
	// (e.g. "AVX512F") and HWCAP spelling upper-cased on arm64 (e.g. "SME").
	Features []string `json:"features"`
	// ISAs are the vector/matrix instruction sets bench has kernels for and
	// the CPU supports (e.g. "avx2", "avx512", "amx", "neon", "sve", "sme").
	ISAs []string `json:"isas"`
	// BaseHz and MaxHz from cpufreq or cpuid, 0 when unknown.
	BaseHz float64 `json:"base_hz,omitempty"`
	MaxHz  float64 `json:"max_hz,omitempty"`
	// TSCHz is the invariant TSC frequency where known (x86).
	TSCHz float64 `json:"tsc_hz,omitempty"`

	OS                   string `json:"os"`
	Kernel               string `json:"kernel"`
	GoVersion            string `json:"go_version"`
	Governor             string `json:"governor"`              // e.g. "performance", or "unknown"
	Boost                string `json:"boost"`                 // "enabled", "disabled" or "unknown"
	PerfCounters         string `json:"perf_counters"`         // "usable" or "unavailable: why"
	TransparentHugePages string `json:"transparent_hugepages"` // e.g. "always", "madvise", "unknown"
}

// Cache describes one cache (one kind of instance) of the machine.
type Cache struct {
	Level     int    `json:"level"`
	Type      string `json:"type"` // "Data", "Instruction", "Unified"
	SizeBytes int64  `json:"size_bytes"`
	LineBytes int    `json:"line_bytes"`
	Ways      int    `json:"ways,omitempty"`
	// Instances is the number of distinct copies (distinct shared_cpu_list).
	Instances int `json:"instances"`
	// SharedBy is the number of logical CPUs sharing one instance.
	SharedBy int `json:"shared_by"`
	// Source is "cpuid" when sysfs had no cache information and the entry
	// comes from CPUID (sharing assumed, see Topology.CacheNote); "measured
	// knee" for a level neither reports, found from the read bandwidth
	// curves (Topology.CacheKnees); empty for sysfs.
	Source string `json:"source,omitempty"`
}

// CacheKnee is one knee of the read bandwidth vs working set curve at one
// thread count: the bandwidth stays on a plateau above DRAM's up to
// SizeBytes, and falls below ThresholdGBps from FirstBelowBytes (bytes are
// whole working sets over all threads; GB/s = 1e9 bytes/s).
type CacheKnee struct {
	Threads int `json:"threads"`
	// SizeBytes is the largest working set still on the level.
	SizeBytes int64 `json:"size_bytes"`
	// FirstBelowBytes is the first working set below the threshold.
	FirstBelowBytes int64 `json:"first_below_bytes"`
	// AboveBytes is the capacity of the last level known at these
	// threads (the search starts past twice it).
	AboveBytes int64 `json:"above_bytes"`
	// PlateauGBps is the highest read bandwidth past AboveBytes, DRAMGBps
	// the median at the largest working sets, ThresholdGBps their mean.
	PlateauGBps   float64 `json:"plateau_gbps"`
	DRAMGBps      float64 `json:"dram_gbps"`
	ThresholdGBps float64 `json:"threshold_gbps"`
}

// NUMANode is one NUMA node of the topology section.
type NUMANode struct {
	ID int `json:"id"`
	// CPUList is the node's cpulist in kernel syntax ("0-47,96-143").
	CPUList  string `json:"cpulist"`
	CPUs     []int  `json:"cpus"`
	MemBytes int64  `json:"mem_bytes,omitempty"`
}

// TopoNode is a node of the topology tree (the base TopoTree of Sandwich §5.1).
// Kind is one of "machine", "package", "numa", "l3", "l2", "core", "thread".
type TopoNode struct {
	Kind string `json:"kind"`
	ID   int    `json:"id"`
	// CPUList is the set of logical CPUs under this node, kernel syntax.
	CPUList string `json:"cpulist"`
	// CacheBytes is the size of the cache this node stands for (l3, l2 nodes).
	CacheBytes int64       `json:"cache_bytes,omitempty"`
	Children   []*TopoNode `json:"children,omitempty"`
}

// Topology is the "topology" section.
type Topology struct {
	Packages  int `json:"packages"`
	NUMANodes int `json:"numa_nodes"`
	Cores     int `json:"cores"`
	Threads   int `json:"threads"`
	// OnlineCPUs lists the online logical CPUs.
	OnlineCPUs []int   `json:"online_cpus"`
	Caches     []Cache `json:"caches"`
	// LLCBytes is the size of one instance of the last-level cache; the
	// memory sweep extends to at least 4x this times the number of instances.
	LLCBytes  int64 `json:"llc_bytes"`
	LineBytes int   `json:"line_bytes"`
	// CacheNote says where the cache figures came from when not from
	// sysfs, and what is unknown; empty when sysfs described the caches.
	CacheNote string `json:"cache_note,omitempty"`
	// CacheKnees are the knees of the read bandwidth curves a cache level
	// was found from where CPUID and sysfs report none (a cache entry of
	// source "measured knee"), one per thread count with a knee, and
	// KneeRule the rule that found them (probes.DetectKnee); absent
	// otherwise.
	CacheKnees []CacheKnee `json:"cache_knees,omitempty"`
	KneeRule   string      `json:"knee_rule,omitempty"`
	Nodes      []NUMANode  `json:"nodes"`
	// Distances is the NUMA distance matrix (ACPI SLIT units, 10 = local),
	// Distances[i][j] from node Nodes[i] to node Nodes[j].
	Distances [][]int   `json:"distances"`
	Tree      *TopoNode `json:"tree"`
	// CoreCPUs lists one logical CPU per physical core (the first sibling),
	// in the order threads are placed by the probes.
	CoreCPUs []int `json:"core_cpus"`
}

// Bandwidth is one measured bandwidth figure.
type Bandwidth struct {
	// Kernel is "read", "write", "write_nt", "copy" or "triad".
	Kernel string `json:"kernel"`
	// ISA is the implementation: "avx512", "avx2", "neon" or "go".
	ISA string `json:"isa"`
	// WorkingSetBytes is the total bytes of all arrays of all threads.
	WorkingSetBytes int64 `json:"working_set_bytes"`
	Threads         int   `json:"threads"`
	CPUs            []int `json:"cpus"`
	Pinned          bool  `json:"pinned"`
	// GBps: counted bytes / seconds / 1e9, per repetition.
	GBps Stat `json:"gbps"`
	// Checksum is the kernel's checksum of the last repetition; the probe
	// verifies it against the expected value before recording the figure.
	Checksum float64 `json:"checksum"`
}

// LevelBandwidth is the summary roof for one level of the memory hierarchy.
type LevelBandwidth struct {
	Level           string `json:"level"` // "L1", "L2", "L3", "DRAM"
	Kernel          string `json:"kernel"`
	Threads         int    `json:"threads"`
	WorkingSetBytes int64  `json:"working_set_bytes"`
	GBps            Stat   `json:"gbps"`
}

// DRAMRoof is how the DRAM read roof of one thread count was measured
// (issue #16 part 1): the read kernel at several DRAM-sized working sets,
// each measured several times apart in time, on buffers with the pages
// stated; GBps summarizes every point's median (its samples are those
// medians), so its min and max are the spread over working sets and times.
type DRAMRoof struct {
	Threads int `json:"threads"`
	// Kernel is the read kernel that gave the best figure ("read" or
	// "read_pf": with software prefetch), Pages "huge (MADV_HUGEPAGE)" or
	// "4 KiB" (what the buffers were advised; the kernel may still decline).
	Kernel string `json:"kernel"`
	Pages  string `json:"pages"`
	// WorkingSets are the total working sets measured, in bytes.
	WorkingSets []int64 `json:"working_sets_bytes"`
	// Rounds is how many times each working set was measured, apart in time.
	Rounds int  `json:"rounds"`
	GBps   Stat `json:"gbps"`
	// Candidates are the medians per kernel and pages tried (e.g.
	// "read 4 KiB": 23.1), so the gain of each choice is visible.
	Candidates map[string]float64 `json:"candidates_gbps,omitempty"`
}

// Memory is the "memory" section.
type Memory struct {
	// ByteCounting states how bytes are counted.
	ByteCounting string `json:"byte_counting"`
	ISA          string `json:"isa"`
	// WorkingSet is the sweep over working-set sizes (at 1 thread and at all threads).
	WorkingSet []Bandwidth `json:"working_set"`
	// Threads is the sweep over thread counts at a DRAM-sized working set.
	Threads []Bandwidth `json:"threads"`
	// Levels are per-cache-level read roofs, picked from the sweeps; the
	// DRAM level comes from DRAM (when measured) rather than the sweep.
	Levels []LevelBandwidth `json:"levels"`
	// DRAM records how each thread count's DRAM read roof was measured
	// (absent in profiles written before it: their DRAM level is the
	// sweep's largest working set).
	DRAM []DRAMRoof `json:"dram,omitempty"`
}

// LatencyPoint is the load-to-use latency at one working set.
type LatencyPoint struct {
	WorkingSetBytes int64 `json:"working_set_bytes"`
	CPU             int   `json:"cpu"`
	// NS is nanoseconds per dependent load.
	NS Stat `json:"ns"`
	// Checksum is the final index of the chase, checked against a replay.
	Checksum uint64 `json:"checksum"`
}

// Latency is the "latency" section: a dependent pointer chase over a random
// cyclic permutation of cache lines.
type Latency struct {
	Method string         `json:"method"`
	Points []LatencyPoint `json:"points"`
}

// GroupRun is one thread group's bandwidth in a shared-bandwidth experiment.
type GroupRun struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel"`
	CPUs   []int  `json:"cpus"`
	// WorkingSetBytes is this group's total working set.
	WorkingSetBytes int64 `json:"working_set_bytes"`
	Alone           Stat  `json:"alone_gbps"`
	Together        Stat  `json:"together_gbps"`
}

// SharedExperiment runs two pinned thread groups alone and concurrently.
type SharedExperiment struct {
	Groups []GroupRun `json:"groups"`
	// TogetherGBps is the sum of the groups' medians when run concurrently.
	TogetherGBps float64 `json:"together_gbps"`
	// SumAloneGBps is the sum of the groups' medians when run alone.
	SumAloneGBps float64 `json:"sum_alone_gbps"`
	// Additivity = TogetherGBps / SumAloneGBps (1 = perfectly additive).
	Additivity float64 `json:"additivity"`
}

// SharedBandwidth is the "shared" section (SMEPilot §3.1).
type SharedBandwidth struct {
	Unavailable string             `json:"unavailable,omitempty"`
	Experiments []SharedExperiment `json:"experiments,omitempty"`
}

// NUMAPair is one cell of the node-to-node matrix.
type NUMAPair struct {
	CPUNode int   `json:"cpu_node"`
	MemNode int   `json:"mem_node"`
	CPUs    []int `json:"cpus"`
	// ReadGBps is the read bandwidth of all of the CPU node's cores.
	ReadGBps Stat `json:"read_gbps"`
	// LatencyNS is the pointer-chase latency from one core of the CPU node.
	LatencyNS Stat `json:"latency_ns"`
	// PagesOnNode is the fraction of sampled pages that get_mempolicy /
	// move_pages found on MemNode.
	PagesOnNode float64 `json:"pages_on_node"`
	Verified    bool    `json:"verified"`
}

// NUMA is the "numa" section: ArcLight Table 1.
type NUMA struct {
	Unavailable     string     `json:"unavailable,omitempty"`
	Nodes           []int      `json:"nodes"`
	WorkingSetBytes int64      `json:"working_set_bytes"`
	Pairs           []NUMAPair `json:"pairs"`
	Note            string     `json:"note,omitempty"`
}

// Unavailable names a kernel the probe did not run and why, e.g.
// {"amx_bf16", "unavailable: CPU lacks AMX-TILE"}.
type Unavailable struct {
	Kernel string `json:"kernel"`
	Why    string `json:"why"`
}

// ComputePeak is one compute ceiling: a register-resident loop of one
// instruction with enough independent accumulators to cover latency x issue
// ports, at one thread count.
type ComputePeak struct {
	// Kernel names the loop, e.g. "avx512_fma_fp32", "avx512_bf16_dp", "amx_int8".
	Kernel      string `json:"kernel"`
	ISA         string `json:"isa"`         // "sse", "avx2", "avx512", "amx", "neon", "sve", "sme"
	Instruction string `json:"instruction"` // mnemonic, e.g. "VFMADD231PS zmm"
	// Precision of the inputs: "fp64", "fp32", "fp16", "bf16", "int8".
	Precision string `json:"precision"`
	// Unit is "GFLOP/s" for floating point, "GOP/s" for integers (one
	// multiply-add = 2 ops).
	Unit         string `json:"unit"`
	Threads      int    `json:"threads"`
	CPUs         []int  `json:"cpus"`
	Pinned       bool   `json:"pinned"`
	Accumulators int    `json:"accumulators"`
	// OpsPerInstruction = lanes x 2 for a multiply-add (per instruction).
	OpsPerInstruction int `json:"ops_per_instruction"`
	// Rate is the measured throughput in Unit.
	Rate Stat `json:"rate"`
	// TheoreticalRate = ops per instruction x instructions per cycle x
	// frequency x threads, in Unit; 0 when not derivable.
	TheoreticalRate float64 `json:"theoretical_rate,omitempty"`
	// IPC is the instructions per cycle per core assumed for the theoretical rate.
	IPC float64 `json:"ipc,omitempty"`
	// AchievedFraction = Rate.Median / TheoreticalRate.
	AchievedFraction float64 `json:"achieved_fraction,omitempty"`
	Checksum         float64 `json:"checksum"`
}

// Compute is the "compute" section: the compute ceilings per ISA and precision.
type Compute struct {
	// FrequencyHz is the core clock used for theoretical peaks and
	// FrequencySource says where it came from (e.g. "dependent-add chain
	// timed against the OS clock, 1 thread").
	FrequencyHz     float64       `json:"frequency_hz"`
	FrequencySource string        `json:"frequency_source"`
	Peaks           []ComputePeak `json:"peaks"`
	Unavailable     []Unavailable `json:"unavailable,omitempty"`
}

// MixedGroup is one backend of a mixed experiment on its own pinned threads.
type MixedGroup struct {
	Name     string `json:"name"`   // e.g. "amx_bf16", "avx512_fma_fp32"
	Kernel   string `json:"kernel"` // compute kernel or "read"
	CPUs     []int  `json:"cpus"`
	Unit     string `json:"unit"` // "GFLOP/s", "GOP/s" or "GB/s"
	Alone    Stat   `json:"alone"`
	Together Stat   `json:"together"`
}

// MixedExperiment runs two backends alone and concurrently (SMEPilot Fig. 3).
type MixedExperiment struct {
	// Kind is "compute" or "read_bandwidth".
	Kind   string       `json:"kind"`
	Groups []MixedGroup `json:"groups"`
	// Together is the sum of the groups' medians run concurrently, SumAlone
	// the sum run alone, Additivity = Together / SumAlone. When the units
	// differ (e.g. GFLOP/s and GOP/s) the sums are of fractions of each
	// group's alone median and Unit is "fraction".
	Unit       string  `json:"unit"`
	Together   float64 `json:"together"`
	SumAlone   float64 `json:"sum_alone"`
	Additivity float64 `json:"additivity"`
}

// Mixed is the "mixed" section: the roofline's mixed ceiling and shared roof.
type Mixed struct {
	Unavailable string            `json:"unavailable,omitempty"`
	Experiments []MixedExperiment `json:"experiments,omitempty"`
}

// NonlinearPoint is the throughput of one non-linear kernel on one backend.
type NonlinearPoint struct {
	// Kernel: "exp", "fastexp", "softmax", "rmsnorm", "silu", "gelu_tanh", "rope".
	Kernel  string `json:"kernel"`
	Backend string `json:"backend"` // "go", "avx2", "avx512", "neon", "sve", "sme"
	// RowElems is the row length (softmax, rmsnorm, rope head dim x heads).
	RowElems int `json:"row_elems,omitempty"`
	// Elems is the elements processed per call (the working set / 4 bytes).
	Elems   int `json:"elems"`
	Threads int `json:"threads"`
	CPU     int `json:"cpu"`
	// GElemsPerSec is 1e9 elements per second; NSPerElem its inverse (median).
	GElemsPerSec Stat    `json:"gelems_per_sec"`
	NSPerElem    float64 `json:"ns_per_elem"`
	Checksum     float64 `json:"checksum"`
}

// Nonlinear is the "nonlinear" section.
type Nonlinear struct {
	// Method says how the figures were measured (buffers, threads, checksum).
	Method string `json:"method,omitempty"`
	// FastExpMaxULP is the largest error of the fast exp against math.Exp
	// measured over FastExpDomain, in float32 ULPs.
	FastExpMaxULP float64          `json:"fastexp_max_ulp"`
	FastExpDomain string           `json:"fastexp_domain"`
	Points        []NonlinearPoint `json:"points"`
	Unavailable   []Unavailable    `json:"unavailable,omitempty"`
}

// GEMMResult is the attained throughput of Y[M×N] = X[M×K] · Wᵀ (W stored
// N×K, packed once) on one backend and thread count.
type GEMMResult struct {
	Backend string `json:"backend"` // e.g. "avx2-fp32", "avx512-bf16"
	DType   string `json:"dtype"`   // weight precision: "fp32", "bf16", "int8"
	M       int    `json:"m"`
	N       int    `json:"n"`
	K       int    `json:"k"`
	Threads int    `json:"threads"`
	CPUs    []int  `json:"cpus"`
	Pinned  bool   `json:"pinned"`
	// GFLOPS: 2·M·N·K / seconds / 1e9 per repetition.
	GFLOPS Stat `json:"gflops"`
	// WeightGBps is the median weight traffic, N·K·bytes(dtype) / seconds / 1e9.
	WeightGBps float64 `json:"weight_gbps"`
	// Fraction of the reference named by FractionOf (the compute ceiling for
	// large M, the DRAM read roof for GEMV).
	Fraction   float64 `json:"fraction,omitempty"`
	FractionOf string  `json:"fraction_of,omitempty"`
	// RoofNowGBps (a DRAM-sized GEMV of matrix.gemv; added within v1) is
	// the DRAM read roof at the GEMV's threads measured right before and
	// right after it (the memory section's kernel and pages, one working
	// set; mean of the two medians, recorded only where they agree within
	// NoiseMaxRoofDrift: else the GEMV is measured again, at most 3 times,
	// and kept marked noisy), GB/s: Fraction is then of this roof,
	// and the roofline takes the GEMV's bandwidth as that fraction of the
	// profile's roof (the host's bandwidth moves within a probe by tens of
	// percent on a VM; the kernel's fraction of it much less). Absent:
	// not measured.
	RoofNowGBps float64 `json:"roof_now_gbps,omitempty"`
	// OutputBytes (the attained-GEMM table, matrix.gemm_shapes; added
	// within v1) is the size of the ring of M×N outputs the calls wrote in
	// turn, one per call, at least 4× the last-level cache: each call's
	// output comes from memory, as a forward pass's does (its buffers are
	// reused once per layer, and the layer's weights stream through the
	// cache between uses). Absent: one output, hot in the caches.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// PackSeconds is the one-time cost of packing W (never on the per-call path).
	PackSeconds float64 `json:"pack_seconds"`
	Checksum    float64 `json:"checksum"`
}

// MatrixSplit is one GEMM partitioned at tile granularity between two thread
// groups running different backends (SMEPilot §4.1, Eq. 1).
type MatrixSplit struct {
	BackendA string `json:"backend_a"`
	BackendB string `json:"backend_b"`
	CPUsA    []int  `json:"cpus_a"`
	CPUsB    []int  `json:"cpus_b"`
	M        int    `json:"m"`
	N        int    `json:"n"`
	K        int    `json:"k"`
	// Dim is the split dimension ("M" or "N"); AlphaIdeal = P_a/(P_a+P_b)
	// from the groups' measured rates, AlphaChosen after tile rounding.
	Dim         string  `json:"dim"`
	AlphaIdeal  float64 `json:"alpha_ideal"`
	AlphaChosen float64 `json:"alpha_chosen"`
	SecondsA    Stat    `json:"seconds_a"`
	SecondsB    Stat    `json:"seconds_b"`
	Makespan    Stat    `json:"makespan_seconds"`
	// RateAGFLOPS and RateBGFLOPS are the groups' rates while both run
	// (co-running: each region's FLOPs over the group's median seconds in
	// the timed repetitions); the Alone rates were measured with the other
	// group idle.
	RateAGFLOPS      float64 `json:"rate_a_gflops,omitempty"`
	RateBGFLOPS      float64 `json:"rate_b_gflops,omitempty"`
	RateAAloneGFLOPS float64 `json:"rate_a_alone_gflops,omitempty"`
	RateBAloneGFLOPS float64 `json:"rate_b_alone_gflops,omitempty"`
	// IdealSeconds = total work / (rate A + rate B), co-running rates;
	// Ratio = Makespan.Median / IdealSeconds (≥ 1; 1: balanced). IdealAloneSeconds
	// and RatioAlone use the alone rates (1: the groups add up perfectly).
	IdealSeconds      float64 `json:"ideal_seconds"`
	Ratio             float64 `json:"ratio"`
	IdealAloneSeconds float64 `json:"ideal_alone_seconds,omitempty"`
	RatioAlone        float64 `json:"ratio_alone,omitempty"`
	GFLOPS            Stat    `json:"gflops"`
	Note              string  `json:"note,omitempty"`
	// Targets says what ran each group, generated from the backends the
	// probe chose as the engine's placements do: "A = cores: avx2-fp32
	// (fp32 weights) on the cores; B = matrix: avx2-bf16 (bf16 weights)
	// on the cores, no matrix unit" (B on "the matrix unit (sme)" where
	// the CPU has one).
	Targets string `json:"targets,omitempty"`
}

// Matrix is the "matrix" section: attained GEMM throughput per backend and
// precision at large LLM shapes (the roofline's attainable compute ceiling),
// GEMV attained bandwidth, and partitioned mixed execution.
type Matrix struct {
	Method string       `json:"method,omitempty"`
	GEMM   []GEMMResult `json:"gemm"`
	GEMV   []GEMMResult `json:"gemv"`
	// GEMMShapes is the attained GEMM at several shapes per backend and
	// thread count: M in {2, 4, 8, 16, 64, 256, 512, 2048} × the (N, K) classes of
	// the shipped models' linears (the table the roofline interpolates a
	// linear operator's compute term from, roofline.AttainedGEMM; issue
	// #16). Added within v1: absent from older profiles.
	GEMMShapes  []GEMMResult  `json:"gemm_shapes,omitempty"`
	Mixed       []MatrixSplit `json:"mixed,omitempty"`
	Unavailable []Unavailable `json:"unavailable,omitempty"`
	// QuantEBW is the effective-bandwidth roofline of each quantized
	// weight format's GEMV kernel (low-bit GEMV paper §III-F, Eqs. 1–3).
	QuantEBW []QuantEBW `json:"quant_ebw,omitempty"`
}

// QuantEBW is the low-bit GEMV paper's effective-bandwidth model (§III-F)
// of one block-quantized format's GEMV kernel on this machine: the
// up-convert-and-compute sequence is timed (1 thread, activations
// quantized once outside the loop) on two cache-resident one-tile weight
// panels of the same rows, K and 4·K (8 and 32 KiB of packed quants), and
// γ, the cycles per B = 32 bytes (one 256-bit vector) of packed weights,
// is the marginal cost between them (Eq. 1's steady state: the call, the
// tile's setup and its horizontal sums cost both panels the same and fall
// into PerCallNs); then per thread count ebw = min(β, B/γ) (Eq. 3) per
// core, with β the DRAM read roof at that thread count divided by the
// threads, in bytes per cycle.
//
// Profiles written before MarginalGBps existed (issue #13 part 3) took γ
// from UpconvertGBps, one call on the small panel, per-call costs
// included: a larger γ, so a lower ebw (int1 GEMVs then ran above it).
// GammaMethod says which; it is absent in those profiles.
type QuantEBW struct {
	Format  string `json:"format"`  // "q8_0", "q4_0", "int2", "int1", ...
	Backend string `json:"backend"` // e.g. "avx512vnni-q8_0"
	// BytesPerWeight is the format's packed size per weight, scales
	// included (1.0625, 0.5625, 0.3125, 0.1875): the bytes every GB/s here
	// counts.
	BytesPerWeight float64 `json:"bytes_per_weight,omitempty"`
	// UpconvertGBps is the whole-call throughput on the smaller
	// (L1-resident) panel, packed weight bytes per second (GB/s = 1e9
	// B/s), 1 thread, per-call costs included.
	UpconvertGBps Stat `json:"upconvert_gbps"`
	// MarginalGBps is the up-convert-and-compute loop's steady-state
	// throughput, Δbytes / Δseconds between the two panels (probes.
	// MarginalCost), GB/s: B/γ in bytes per second. The two panels are
	// timed alternately and their repetitions paired by rank (fastest with
	// fastest), so Samples are in that order, and a pair whose larger panel
	// was not slower is left out (N < the repetitions; the noise record
	// says so). Its Noise also has the timing thread's CPU fraction. Nil
	// in profiles from before it was measured.
	MarginalGBps *Stat `json:"marginal_gbps,omitempty"`
	// PerCallNs is the same fit's intercept, nanoseconds per call on one
	// tile: the call, the tile's setup and horizontal sums, the epilogue
	// (within noise it can come out ≤ 0). Nil where MarginalGBps is.
	PerCallNs *Stat `json:"per_call_ns,omitempty"`
	// PanelBytes are the two panels' packed weight bytes (quants and
	// scales), smaller first.
	PanelBytes []int64 `json:"panel_bytes,omitempty"`
	// GammaMethod says how γ was measured, e.g. "marginal: Δtime/Δbytes
	// between one-tile panels of 8704 and 34816 B ..."; for a format held
	// in another's layout (tq2_0, tq1_0: int2's kernels) it names that
	// format, whose measurement the record copies. Empty in profiles from
	// before: γ from UpconvertGBps.
	GammaMethod string `json:"gamma_method,omitempty"`
	// ClockHz converts seconds to cycles (the compute section's frequency);
	// ClockSource says where it came from.
	ClockHz     float64 `json:"clock_hz"`
	ClockSource string  `json:"clock_source"`
	// GammaCycles is γ: cycles per 32 bytes of packed weights, 32 ·
	// ClockHz / (MarginalGBps.Median · 1e9) (older profiles:
	// UpconvertGBps.Median in place of MarginalGBps's).
	GammaCycles float64         `json:"gamma_cycles"`
	Points      []QuantEBWPoint `json:"points"`
}

// The two limits of the effective-bandwidth model (low-bit GEMV paper
// §III-F, Eq. 3, ebw = min(β, B/γ)): QuantEBWPoint.Limit, and the
// roofline's regime "up-convert-bound" (roofline.UpConvertBound) is
// LimitUpConvert + "-bound", so the name is the same in every package.
const (
	// LimitMemory: β ≤ B/γ, the core draws all the bandwidth it is given.
	LimitMemory = "memory"
	// LimitUpConvert: B/γ < β, the up-convert-and-compute sequence, not
	// DRAM, limits the GEMV.
	LimitUpConvert = "up-convert"
)

// QuantEBWPoint is Eq. 3 at one thread count.
type QuantEBWPoint struct {
	Threads int `json:"threads"`
	// BetaBytesPerCycle is β per core: the memory section's DRAM read roof
	// at Threads, / Threads / ClockHz.
	BetaBytesPerCycle float64 `json:"beta_bytes_per_cycle"`
	// EBWBytesPerCycle is min(β, 32/γ) per core; Limit says which term
	// (LimitMemory "memory" or LimitUpConvert "up-convert").
	EBWBytesPerCycle float64 `json:"ebw_bytes_per_cycle"`
	Limit            string  `json:"limit"`
	// EBWGBps is the modeled total: Threads · ebw · ClockHz / 1e9.
	EBWGBps float64 `json:"ebw_gbps"`
	// MeasuredGBps is the matrix section's GEMV weight GB/s of this format
	// at Threads (0 if not measured); Ratio = MeasuredGBps / EBWGBps.
	MeasuredGBps float64 `json:"measured_gbps,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"`
}

// Dispatch is the "dispatch" section (issue #16 part 1): the fixed cost of
// one parallel call on kernels/pool, the engine's worker pool, per thread
// count. The roofline model adds it to every operator that runs on the
// pool (roofline.FromProfile).
type Dispatch struct {
	Method string `json:"method"`
	// SpinSeconds is how long an idle worker spins before it parks
	// (kernels/pool DefaultSpin): a call later than that pays WakeSeconds.
	SpinSeconds float64         `json:"spin_seconds"`
	Points      []DispatchPoint `json:"points"`
	// ColdVector is the time of one small vector call whose data the
	// caches no longer hold (absent in older profiles).
	ColdVector *ColdVector `json:"cold_vector,omitempty"`
	// CoreToCore is the read rate of data another worker just wrote
	// (absent in older profiles and on one core).
	CoreToCore *CoreToCore `json:"core_to_core,omitempty"`
}

// CoreToCore is the core-to-core read rate of the pool's workers: each of
// Threads pinned workers writes Bytes of its own buffer, then every worker
// reads the buffer its neighbour (the next worker, cyclically) just wrote,
// all at once — an operator reading activations that the previous one
// split differently over the workers (a GEMM's output columns read by
// rows, a serial operator's output read by every worker). Where the cores
// share the cache level that holds the lines, the lines move at about
// that level's rate; where they do not (cores on different chiplets, or a
// VM's vCPUs on them), at about the DRAM's (measured on this project's
// 2-vCPU Zen 5 guest: 25–37 GB/s for one reader of the other core's 64
// KiB–4 MiB, against 94–117 for its own).
type CoreToCore struct {
	Method  string `json:"method"`
	Threads int    `json:"threads"`
	CPUs    []int  `json:"cpus"`
	// Bytes is each worker's buffer.
	Bytes int64 `json:"bytes"`
	// GBps is Threads·Bytes over the time of the reads of the
	// neighbours' buffers (all workers together, the pool's fork-join
	// subtracted), GB/s; LocalGBps the same with each worker reading the
	// buffer it wrote itself.
	GBps      Stat `json:"gbps"`
	LocalGBps Stat `json:"local_gbps"`
}

// ColdVector is one decode-sized vector call on data evicted since its
// last use, as in a decode step, where every GEMV streams weights larger
// than the last-level cache between two small operators: a residual add
// (acc += v) of Elems fp32 elements on one thread, each sample after a
// read of EvictBytes of other memory. Such a call is bound by the latency
// of its few cold lines, not by a bandwidth roof.
type ColdVector struct {
	Method string `json:"method"`
	Elems  int    `json:"elems"`
	// Bytes are the bytes the call moves as the roofline counts them
	// (two inputs and one output of Elems floats).
	Bytes      int64 `json:"bytes"`
	EvictBytes int64 `json:"evict_bytes"`
	// Seconds is one call's time (median of the samples).
	Seconds Stat `json:"seconds"`
	// SecondsPerLine is Seconds' median over Bytes/64: the cost of one
	// 64-byte line moved cold.
	SecondsPerLine float64 `json:"seconds_per_line"`
	// Points is the same call after reads of other sizes, EvictBytes'
	// among them, in ascending order (absent in older profiles): the
	// more a decode step streams between two calls of an operator (one
	// layer's weights, or the LM head's before the first layer), the
	// colder the call (measured here: 0.2–0.3 µs after 8 MiB, 1.1–1.2
	// after 64, 2.7–2.8 after 512, 2.9–3.0 after 1 GiB).
	Points []ColdVectorPoint `json:"points,omitempty"`
}

// ColdVectorPoint is one eviction size of ColdVector.
type ColdVectorPoint struct {
	EvictBytes int64 `json:"evict_bytes"`
	Seconds    Stat  `json:"seconds"`
}

// DispatchPoint is the fixed cost of one parallel call at one thread count.
type DispatchPoint struct {
	Threads int   `json:"threads"`
	CPUs    []int `json:"cpus"`
	Pinned  bool  `json:"pinned"`
	// CallSeconds is one fork-join of an empty task over Threads workers
	// that are spinning (back-to-back calls: the dispatch and the barrier),
	// in seconds; each sample is the mean of a batch of calls.
	CallSeconds Stat `json:"call_seconds"`
	// WakeSeconds is one Pool.Do with one such fork-join after every worker
	// parked (an idle gap longer than SpinSeconds), in seconds: what the
	// first parallel operator of a forward call pays after the caller ran
	// alone (sampling between decode steps).
	WakeSeconds Stat `json:"wake_seconds"`
}
