package perfcount

// perf_event_attr type and config values (linux/perf_event.h), kept here
// so the events, the parser and the metrics build on every system.
const (
	typeHardware = 0 // PERF_TYPE_HARDWARE
	typeHWCache  = 3 // PERF_TYPE_HW_CACHE

	hwCPUCycles            = 0 // PERF_COUNT_HW_CPU_CYCLES
	hwInstructions         = 1 // PERF_COUNT_HW_INSTRUCTIONS
	hwBusCycles            = 6 // PERF_COUNT_HW_BUS_CYCLES
	hwStalledCyclesBackend = 8 // PERF_COUNT_HW_STALLED_CYCLES_BACKEND

	cacheLL   = 2 // PERF_COUNT_HW_CACHE_LL
	cacheDTLB = 3 // PERF_COUNT_HW_CACHE_DTLB
	opRead    = 0 // PERF_COUNT_HW_CACHE_OP_READ
	resAccess = 0 // PERF_COUNT_HW_CACHE_RESULT_ACCESS
	resMiss   = 1 // PERF_COUNT_HW_CACHE_RESULT_MISS
)

// hwCache is the config of a PERF_TYPE_HW_CACHE event:
// id | (op << 8) | (result << 16).
func hwCache(id, op, res uint64) uint64 { return id | op<<8 | res<<16 }

// Event is one counter: a perf_event_attr type and config, under perf's
// name for it.
type Event struct {
	Name   string
	Type   uint32
	Config uint64
}

// The events of Sandwich Fig. 1 that the kernel's generic events cover.
var (
	Cycles         = Event{"cycles", typeHardware, hwCPUCycles}
	Instructions   = Event{"instructions", typeHardware, hwInstructions}
	StalledBackend = Event{"stalled-cycles-backend", typeHardware, hwStalledCyclesBackend}
	BusCycles      = Event{"bus-cycles", typeHardware, hwBusCycles}
	LLCLoads       = Event{"LLC-loads", typeHWCache, hwCache(cacheLL, opRead, resAccess)}
	LLCLoadMisses  = Event{"LLC-load-misses", typeHWCache, hwCache(cacheLL, opRead, resMiss)}
	DTLBLoads      = Event{"dTLB-loads", typeHWCache, hwCache(cacheDTLB, opRead, resAccess)}
	DTLBLoadMisses = Event{"dTLB-load-misses", typeHWCache, hwCache(cacheDTLB, opRead, resMiss)}
)

// DefaultGroups are the groups opened per thread. A group is scheduled on
// the PMU as a unit, so each is small enough for the general-purpose
// counters of current cores (4 or more); the kernel multiplexes the two
// groups when they do not fit together, and Scale corrects for it.
// Events a PMU lacks (stalled-cycles-backend on many Intel cores, bus-cycles
// on some) are left out of their group and named in the report.
var DefaultGroups = [][]Event{
	{Cycles, Instructions, StalledBackend, BusCycles},
	{LLCLoads, LLCLoadMisses, DTLBLoads, DTLBLoadMisses},
}
