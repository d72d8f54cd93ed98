package perfcount

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Counts are the counters of one phase summed over the threads of the
// process, each thread's value scaled for multiplexing (Scale).
type Counts struct {
	// Values are the scaled sums by event name; an event whose group never
	// ran on the PMU is absent and listed in NotCounted.
	Values map[string]float64 `json:"values"`
	// Raw are the unscaled sums.
	Raw map[string]uint64 `json:"raw"`
	// RunningFraction is, per event, the fraction of the enabled time it
	// counted (1: not multiplexed).
	RunningFraction map[string]float64 `json:"running_fraction"`
	NotCounted      []string           `json:"not_counted,omitempty"`
	// Threads is the number of threads counted.
	Threads int `json:"threads"`
}

// Metric is a ratio derived from the counts.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Def says how it is computed.
	Def string `json:"def"`
}

// metricDefs are the derived metrics, in the order Sandwich Fig. 1 and
// perf stat name them.
var metricDefs = []struct {
	name, num, den, def string
	scale               float64
}{
	{"IPC", "instructions", "cycles", "instructions / cycles", 1},
	{"LLC loads PKI", "LLC-loads", "instructions", "LLC loads per 1000 instructions (Sandwich L3LPKI)", 1000},
	{"LLC miss ratio", "LLC-load-misses", "LLC-loads", "LLC load misses / LLC loads", 1},
	{"dTLB miss ratio", "dTLB-load-misses", "dTLB-loads", "dTLB load misses / dTLB loads (Sandwich DTLBMiss)", 1},
	{"bus cycles PKI", "bus-cycles", "instructions", "bus cycles per 1000 instructions (Sandwich BUSPKI)", 1000},
	{"backend stall fraction", "stalled-cycles-backend", "cycles", "stalled-cycles-backend / cycles (memory-bound stalls and others)", 1},
}

// MetricNames lists the derived metrics in order.
func MetricNames() []string {
	var s []string
	for _, d := range metricDefs {
		s = append(s, d.name)
	}
	return s
}

// Metrics derives the ratios the counts allow (a metric whose events are
// missing or whose denominator is 0 is left out).
func (c Counts) Metrics() []Metric {
	var out []Metric
	for _, d := range metricDefs {
		n, okn := c.Values[d.num]
		q, okq := c.Values[d.den]
		if !okn || !okq || q == 0 {
			continue
		}
		out = append(out, Metric{Name: d.name, Value: d.scale * n / q, Def: d.def})
	}
	return out
}

// Phase is the counts of one phase of a run.
type Phase struct {
	Name    string   `json:"name"`
	Counts  Counts   `json:"counts"`
	Metrics []Metric `json:"metrics"`
}

// Report is what a run's counters came to: the phases, or why there are
// none.
type Report struct {
	// Unavailable is "unavailable: <why>" when no counter could be read;
	// the phases are then empty.
	Unavailable string `json:"unavailable,omitempty"`
	// Unsupported are events this PMU or kernel refused, with why.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	Phases      []Phase           `json:"phases,omitempty"`
	// Scope says what was counted.
	Scope string `json:"scope,omitempty"`
}

// WriteText writes the report as lines: one per phase and metric, or the
// unavailable line.
func (r *Report) WriteText(w io.Writer) error {
	if r == nil {
		return nil
	}
	if r.Unavailable != "" {
		_, err := fmt.Fprintf(w, "hardware counters: %s\n", r.Unavailable)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hardware counters (%s):\n", r.Scope)
	names := MetricNames()
	fmt.Fprintf(&b, "  %-24s", "phase")
	for _, p := range r.Phases {
		fmt.Fprintf(&b, " %14s", p.Name)
	}
	b.WriteString("\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-24s", n)
		for _, p := range r.Phases {
			i := slices.IndexFunc(p.Metrics, func(m Metric) bool { return m.Name == n })
			if i < 0 {
				fmt.Fprintf(&b, " %14s", "-")
			} else {
				fmt.Fprintf(&b, " %14.4g", p.Metrics[i].Value)
			}
		}
		b.WriteString("\n")
	}
	var evs []string
	for _, p := range r.Phases {
		for e := range p.Counts.Values {
			if !slices.Contains(evs, e) {
				evs = append(evs, e)
			}
		}
	}
	slices.Sort(evs)
	for _, e := range evs {
		fmt.Fprintf(&b, "  %-24s", e)
		for _, p := range r.Phases {
			v, ok := p.Counts.Values[e]
			switch {
			case !ok:
				fmt.Fprintf(&b, " %14s", "-")
			case p.Counts.RunningFraction[e] < 1:
				fmt.Fprintf(&b, " %13.4g*", v)
			default:
				fmt.Fprintf(&b, " %14.4g", v)
			}
		}
		b.WriteString("\n")
	}
	if len(r.Unsupported) > 0 {
		var s []string
		for e, why := range r.Unsupported {
			s = append(s, e+" ("+why+")")
		}
		slices.Sort(s)
		fmt.Fprintf(&b, "  not supported here: %s\n", strings.Join(s, ", "))
	}
	b.WriteString("  * scaled for multiplexing (counted part of the time)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// finite reports whether v is a number to plot.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
