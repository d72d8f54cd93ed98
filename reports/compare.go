package reports

import (
	"fmt"
	"io"
	"strconv"

	"golang.org/x/perf/benchmath"

	"github.com/cpubench/bench/results"
)

// compareRow is one line of the side-by-side comparison: a label and, per
// profile, a numeric value (NaN-free; ok=false when the profile lacks it).
type compareRow struct {
	label string
	text  []string
	val   []float64
	ok    []bool
	// stat holds the figure's Stat where the value is one (samples and
	// noise record), for the significance test and the NOISY mark.
	stat []*results.Stat
}

// Compare writes profiles side by side as a Markdown table: machine facts,
// per-level read roofs, peak thread-sweep bandwidth per kernel, latency at
// each working set, shared-bandwidth additivity and NUMA cells. Numeric rows
// end with the ratio of the last profile to the first; where both figures
// kept their repetitions (results.Stat.Samples), a two-sided Mann-Whitney U
// test (golang.org/x/perf/benchmath, as benchstat) gives the p-value, and a
// ratio whose p ≥ 0.05 is shown as "~" (no significant difference), as
// benchstat does. A figure marked noisy by the probe is shown with NOISY.
func Compare(w io.Writer, names []string, ps []*results.Profile) error {
	if len(ps) < 2 {
		return fmt.Errorf("compare: need at least two profiles, got %d", len(ps))
	}
	var rows []*compareRow
	get := func(label string) *compareRow {
		for _, r := range rows {
			if r.label == label {
				return r
			}
		}
		r := &compareRow{label: label, text: make([]string, len(ps)), val: make([]float64, len(ps)), ok: make([]bool, len(ps)), stat: make([]*results.Stat, len(ps))}
		rows = append(rows, r)
		return r
	}
	setText := func(i int, label, v string) { get(label).text[i] = v }
	setNum := func(i int, label string, v float64, prec int) {
		r := get(label)
		r.text[i], r.val[i], r.ok[i] = strconv.FormatFloat(v, 'f', prec, 64), v, true
	}
	setStat := func(i int, label string, st results.Stat, prec int) {
		setNum(i, label, st.Median, prec)
		r := get(label)
		r.stat[i] = &st
		if st.Noisy() {
			r.text[i] += " NOISY"
		}
	}
	for i, p := range ps {
		setText(i, "host", p.Host)
		setText(i, "date", p.CreatedAt.Format("2006-01-02 15:04"))
		if m := p.Machine; m != nil {
			setText(i, "CPU", m.CPUModel)
			setNum(i, "logical CPUs", float64(m.LogicalCPUs), 0)
		}
		if t := p.Topology; t != nil {
			setNum(i, "cores", float64(t.Cores), 0)
			setNum(i, "NUMA nodes", float64(t.NUMANodes), 0)
			setNum(i, "LLC MiB per instance", float64(t.LLCBytes)/(1<<20), 1)
		}
		if m := p.Memory; m != nil {
			setText(i, "memory ISA", m.ISA)
			for _, l := range m.Levels {
				setStat(i, fmt.Sprintf("%s read GB/s, %d thread(s)", l.Level, l.Threads), l.GBps, 1)
			}
			best := map[string]results.Bandwidth{}
			for _, b := range m.Threads {
				if cur, ok := best[b.Kernel]; !ok || b.GBps.Median > cur.GBps.Median {
					best[b.Kernel] = b
				}
			}
			for _, k := range []string{"read", "copy", "triad"} {
				if b, ok := best[k]; ok {
					setStat(i, "DRAM "+k+" GB/s, best thread count", b.GBps, 1)
				}
			}
		}
		if l := p.Latency; l != nil {
			for _, pt := range l.Points {
				setStat(i, "latency ns @ "+FormatBytes(pt.WorkingSetBytes), pt.NS, 1)
			}
		}
		if s := p.Shared; s != nil {
			for _, e := range s.Experiments {
				if len(e.Groups) > 0 {
					name := e.Groups[0].Name
					if j := len(name) - 2; j > 0 {
						name = name[:j]
					}
					setNum(i, "shared additivity "+name, e.Additivity, 2)
				}
			}
		}
		if n := p.NUMA; n != nil {
			for _, pr := range n.Pairs {
				setStat(i, fmt.Sprintf("NUMA read GB/s cpu%d→mem%d", pr.CPUNode, pr.MemNode), pr.ReadGBps, 1)
			}
		}
	}
	header := []string{"figure"}
	header = append(header, names...)
	header = append(header, "ratio last/first", "p (Mann-Whitney U)")
	var out [][]string
	for _, r := range rows {
		line := []string{r.label}
		for i := range ps {
			if r.text[i] == "" {
				line = append(line, "—")
			} else {
				line = append(line, r.text[i])
			}
		}
		ratio, p := "", ""
		n := len(ps) - 1
		if r.ok[0] && r.ok[n] && r.val[0] != 0 {
			ratio = fmt.Sprintf("%.2f", r.val[n]/r.val[0])
		}
		if a, b := r.stat[0], r.stat[n]; a != nil && b != nil && len(a.Samples) > 1 && len(b.Samples) > 1 {
			c := significance(a.Samples, b.Samples)
			p = fmt.Sprintf("%.3f", c.P)
			if c.P >= c.Alpha {
				ratio = "~"
			}
		}
		out = append(out, append(line, ratio, p))
	}
	return MarkdownTable(w, header, out)
}

// significance is the two-sided Mann-Whitney U test of two figures'
// repetitions at α = 0.05 (benchmath.AssumeNothing, benchstat's default).
func significance(a, b []float64) benchmath.Comparison {
	th := benchmath.DefaultThresholds
	return benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th))
}
