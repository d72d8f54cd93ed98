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

// Phase is the counts of one phase of a run, or of one operator class
// within a phase (Report.Operators: Name the class, Phase the phase).
type Phase struct {
	Name    string   `json:"name"`
	Phase   string   `json:"phase,omitempty"`
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
	// Operators are the counts per operator class within each phase
	// (Recorder.Mark; engine operator kinds: linear, attention, nonlinear,
	// elementwise, and BetweenOperators), when the run marked them.
	Operators []Phase `json:"operators,omitempty"`
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
	r.writeOperators(&b)
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

// writeOperators writes the per-operator-class rows: per phase and class,
// the share of the phase's cycles and the metrics.
func (r *Report) writeOperators(b *strings.Builder) {
	if len(r.Operators) == 0 {
		return
	}
	names := MetricNames()
	b.WriteString("  per operator class (counts from the previous operator's end to this one's end, every thread, the reads included):\n")
	fmt.Fprintf(b, "  %-8s %-18s %9s", "phase", "class", "cycles %")
	for _, n := range names {
		fmt.Fprintf(b, " %14s", n)
	}
	b.WriteString("\n")
	for _, o := range r.Operators {
		share := "-"
		for _, p := range r.Phases {
			if tot := p.Counts.Values["cycles"]; p.Name == o.Phase && tot > 0 {
				share = fmt.Sprintf("%.1f", 100*o.Counts.Values["cycles"]/tot)
			}
		}
		fmt.Fprintf(b, "  %-8s %-18s %9s", o.Phase, o.Name, share)
		for _, n := range names {
			i := slices.IndexFunc(o.Metrics, func(m Metric) bool { return m.Name == n })
			if i < 0 {
				fmt.Fprintf(b, " %14s", "-")
			} else {
				fmt.Fprintf(b, " %14.4g", o.Metrics[i].Value)
			}
		}
		b.WriteString("\n")
	}
}

// Sub is c − prev per event (Values and Raw; a counter that did not move
// stays at 0). RunningFraction and NotCounted are c's: the fractions of
// the phase so far. Threads is c's.
func (c Counts) Sub(prev Counts) Counts {
	d := Counts{Values: map[string]float64{}, Raw: map[string]uint64{}, RunningFraction: map[string]float64{},
		NotCounted: c.NotCounted, Threads: c.Threads}
	for k, v := range c.Values {
		d.Values[k] = v - prev.Values[k]
	}
	for k, v := range c.Raw {
		if p := prev.Raw[k]; p <= v {
			d.Raw[k] = v - p
		}
	}
	for k, v := range c.RunningFraction {
		d.RunningFraction[k] = v
	}
	return d
}

// Add is c + d per event (Values and Raw); RunningFraction and NotCounted
// are d's (the later), Threads the larger.
func (c Counts) Add(d Counts) Counts {
	s := Counts{Values: map[string]float64{}, Raw: map[string]uint64{}, RunningFraction: map[string]float64{},
		NotCounted: d.NotCounted, Threads: max(c.Threads, d.Threads)}
	for _, x := range []Counts{c, d} {
		for k, v := range x.Values {
			s.Values[k] += v
		}
		for k, v := range x.Raw {
			s.Raw[k] += v
		}
	}
	for k, v := range d.RunningFraction {
		s.RunningFraction[k] = v
	}
	return s
}

// any reports whether some event counted more than nothing.
func (c Counts) any() bool {
	for _, v := range c.Values {
		if v > 0 {
			return true
		}
	}
	return false
}

// finite reports whether v is a number to plot.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
