package noise

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cpubench/bench/results"
)

// Judge sets n.Noisy and n.Why from results' thresholds: noisy when the
// threads got less than results.NoiseMinCPUFraction of their CPUs (only
// where cpuOK: the CPU time was read) or the cv exceeds
// results.NoiseMaxCV, or a DRAM read roof re-measured beside it
// (DRAMNowGBps) differs from the profile's by more than
// results.NoiseMaxRoofDrift, or the attained GEMM rate re-measured beside
// it moved as far (GEMMRatio, or GEMMRowsRatio at a long prefill's
// rows), or the host moved its CPUs (Moved: a
// core-to-core round trip results.NoisePlacementRatio or more from the
// reference's, RecordPlacement); steal above 1% is named among the
// reasons of a noisy figure but is not one by itself.
func Judge(n *results.Noise, cpuOK bool) {
	var why []string
	if cpuOK && n.CPUFraction < results.NoiseMinCPUFraction {
		why = append(why, fmt.Sprintf("threads got %.0f%% of their CPUs (< %.0f%%)", 100*n.CPUFraction, 100*results.NoiseMinCPUFraction))
	}
	if n.CV > results.NoiseMaxCV {
		why = append(why, fmt.Sprintf("cv %.1f%% > %.0f%%", 100*n.CV, 100*results.NoiseMaxCV))
	}
	drift := n.DRAMNowGBps > 0 && n.DRAMProfileGBps > 0 && math.Abs(n.DRAMNowGBps/n.DRAMProfileGBps-1) > results.NoiseMaxRoofDrift
	if drift {
		why = append(why, fmt.Sprintf("DRAM read roof now %.1f GB/s, the profile's %.1f (%+.0f%%, > ±%.0f%%)",
			n.DRAMNowGBps, n.DRAMProfileGBps, 100*(n.DRAMNowGBps/n.DRAMProfileGBps-1), 100*results.NoiseMaxRoofDrift))
	}
	gemmDrift := n.GEMMRatio > 0 && math.Abs(n.GEMMRatio-1) > results.NoiseMaxRoofDrift
	if gemmDrift {
		why = append(why, fmt.Sprintf("attained GEMM (%s) now %.2f× the profile's (> ±%.0f%%)", n.GEMMBackend, n.GEMMRatio, 100*results.NoiseMaxRoofDrift))
	}
	rowsDrift := n.GEMMRowsRatio > 0 && math.Abs(n.GEMMRowsRatio-1) > results.NoiseMaxRoofDrift
	if rowsDrift {
		why = append(why, fmt.Sprintf("attained GEMM (%s) at the prefill's rows (%s) now %.2f× the profile's (> ±%.0f%%)", n.GEMMBackend, n.GEMMRowsShape, n.GEMMRowsRatio, 100*results.NoiseMaxRoofDrift))
	}
	moved := Moved(*n)
	if moved {
		why = append(why, movedWhy(*n))
	}
	if n.StealFraction > 0.01 {
		why = append(why, fmt.Sprintf("steal %.1f%%", 100*n.StealFraction))
	}
	n.Noisy = len(why) > 0 && (drift || gemmDrift || rowsDrift || moved || n.CV > results.NoiseMaxCV || (cpuOK && n.CPUFraction < results.NoiseMinCPUFraction))
	n.Why = ""
	if n.Noisy {
		n.Why = strings.Join(why, ", ")
	}
}

// Meter records the noise of timed spans run by a process whose threads
// workers are pinned to cpus (an engine's worker pool): the process's CPU
// time over the spans' wall time × threads, and the steal time of cpus
// from the first Start to the last Stop. Not safe for concurrent use.
type Meter struct {
	cpus    []int
	threads int

	running        bool
	start          time.Time
	cpuStart       float64
	cpuOK, started bool
	cpu, wall      float64
	t0             Ticks
	ticksOK        bool
	ticks          Ticks // from the first Start to the last Stop
}

// Ticks are /proc/stat ticks (USER_HZ, 1/100 s) of a set of CPUs, summed:
// Steal (the hypervisor's), Idle (idle and iowait) and Total (user …
// steal).
type Ticks struct{ Steal, Idle, Total uint64 }

// userHZ is /proc/stat's tick rate (USER_HZ: 100 on every Linux ABI Go
// supports).
const userHZ = 100

// minTicks is the fewest ticks over which the others' share of the CPUs
// is judged (1 s of one CPU); over fewer, tick sampling is too coarse and
// the process's own CPU share is used.
const minTicks = userHZ

// NewMeter returns a Meter for threads workers on cpus (threads < 1 is
// taken as len(cpus), at least 1).
func NewMeter(cpus []int, threads int) *Meter {
	if threads < 1 {
		threads = max(len(cpus), 1)
	}
	return &Meter{cpus: append([]int(nil), cpus...), threads: threads, cpuOK: true}
}

// Start begins a timed span (a second Start without Stop is ignored).
func (m *Meter) Start() {
	if m.running {
		return
	}
	if !m.started {
		m.started = true
		m.t0, m.ticksOK = CPUTimes(m.cpus)
	}
	m.running = true
	var ok bool
	m.cpuStart, ok = ProcessCPU()
	m.cpuOK = m.cpuOK && ok
	m.start = time.Now()
}

// Stop ends the span Start began (without one it does nothing).
func (m *Meter) Stop() {
	if !m.running {
		return
	}
	m.wall += time.Since(m.start).Seconds()
	c, ok := ProcessCPU()
	m.cpuOK = m.cpuOK && ok
	m.cpu += c - m.cpuStart
	m.running = false
	if m.ticksOK {
		if t, ok := CPUTimes(m.cpus); ok && t.Total >= m.t0.Total && t.Idle >= m.t0.Idle && t.Steal >= m.t0.Steal {
			m.ticks = Ticks{Steal: t.Steal - m.t0.Steal, Idle: t.Idle - m.t0.Idle, Total: t.Total - m.t0.Total}
		}
	}
}

// Noise is the record of the spans so far, with cv (the caller's spread
// of its repetitions, e.g. SuccessiveCV of its steps), judged (Judge):
// StealFraction from /proc/stat, LoadAvg1 now, Attempts 1 (an engine run
// is not repeated), and CPUFraction the share of the CPUs' time that was
// not taken from this process: 1 − (ticks busy outside this process +
// steal) / all ticks of the CPUs, from /proc/stat over the spans (this
// process's busy ticks being its CPU seconds × USER_HZ). An engine run
// leaves CPUs idle by itself (a sweep's replay schedules requests on one
// thread; decode has serial stretches), which is not contention, so its
// own CPU over wall × threads would mark a quiet run noisy. Over fewer
// than minTicks, or without /proc/stat, CPUFraction is the process's CPU
// seconds over wall seconds × threads (it may slightly exceed 1: the Go
// runtime's own threads count too; 0 where the clock cannot be read,
// which then marks nothing).
func (m *Meter) Noise(cv float64) results.Noise {
	n := results.Noise{CV: cv, LoadAvg1: LoadAvg1(), Attempts: 1}
	cpuOK := m.cpuOK && m.started && m.wall > 0
	if cpuOK {
		n.CPUFraction = cpuShare(m.cpu, m.wall, m.threads, m.ticks)
	}
	if t := m.ticks; t.Total > 0 {
		n.StealFraction = float64(t.Steal) / float64(t.Total)
	}
	Judge(&n, cpuOK)
	return n
}

// cpuShare is Noise's CPUFraction for cpu seconds of this process over
// wall seconds of spans on threads workers, the CPUs' ticks t over them.
func cpuShare(cpu, wall float64, threads int, t Ticks) float64 {
	if t.Total < minTicks || t.Idle+t.Steal > t.Total {
		return cpu / (wall * float64(threads))
	}
	others := float64(t.Total-t.Idle-t.Steal) - cpu*userHZ
	return 1 - (max(others, 0)+float64(t.Steal))/float64(t.Total)
}

// SuccessiveCV is the coefficient of variation of a series whose level
// drifts (a decode step's time grows with its context), from successive
// differences (von Neumann's mean square successive difference): over
// each pair of consecutive values with the same key (keys nil: one key;
// else len(keys) == len(xs), e.g. the step's batch size), the difference
// relative to the pair's mean, d, and cv = sqrt(Σd² / (2·pairs)). For
// independent repetitions around a constant level it estimates the
// ordinary cv; a slow drift adds little. It returns 0 and the count with
// fewer than 2 pairs.
func SuccessiveCV(xs []float64, keys []int) (cv float64, pairs int) {
	var ss float64
	for i := 1; i < len(xs); i++ {
		if keys != nil && keys[i] != keys[i-1] {
			continue
		}
		mean := (xs[i] + xs[i-1]) / 2
		if !(mean > 0) || math.IsInf(mean, 0) {
			continue
		}
		d := (xs[i] - xs[i-1]) / mean
		ss += d * d
		pairs++
	}
	if pairs < 2 {
		return 0, pairs
	}
	return math.Sqrt(ss / (2 * float64(pairs))), pairs
}
