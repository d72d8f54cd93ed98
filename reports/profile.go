package reports

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cpubench/bench/results"
)

// FormatBytes renders a size with IEC units (KiB, MiB, GiB).
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// FormatStat renders "median (min–max, cv x%)" with prec decimals, and
// " NOISY" after a figure the noise check marked (results.Noise).
func FormatStat(s results.Stat, prec int) string {
	if s.N == 0 {
		return "—"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	out := fmt.Sprintf("%s (%s–%s, cv %.1f%%)", f(s.Median), f(s.Min), f(s.Max), 100*s.CV)
	if s.Noisy() {
		out += " NOISY"
	}
	return out
}

// microseconds is st (seconds) in µs.
func microseconds(st results.Stat) results.Stat {
	st.Median, st.Min, st.Max = st.Median*1e6, st.Min*1e6, st.Max*1e6
	return st
}

// dispatchMarkdown writes the dispatch section (nil: nothing): the worker
// pool's fixed cost per call and thread count, the cold vector call
// after each amount of other data read, in µs, and the core-to-core reads.
func dispatchMarkdown(b *bytes.Buffer, d *results.Dispatch) error {
	if d == nil {
		return nil
	}
	b.WriteString("## Fixed costs per call (the roofline's per-call terms)\n\n")
	fmt.Fprintf(b, "Method: %s.\n\n", d.Method)
	var rows [][]string
	for _, pt := range d.Points {
		rows = append(rows, []string{strconv.Itoa(pt.Threads), cpuList(pt.CPUs), FormatStat(microseconds(pt.CallSeconds), 2), FormatStat(microseconds(pt.WakeSeconds), 1)})
	}
	if err := MarkdownTable(b, []string{"threads", "CPUs", "call µs (workers spinning)", "call µs after the workers parked"}, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	if cv := d.ColdVector; cv != nil {
		fmt.Fprintf(b, "Cold vector call: %s.\n\n", cv.Method)
		pts := cv.Points
		if len(pts) == 0 {
			pts = []results.ColdVectorPoint{{EvictBytes: cv.EvictBytes, Seconds: cv.Seconds}}
		}
		rows = rows[:0]
		for _, pt := range pts {
			main := ""
			if pt.EvictBytes == cv.EvictBytes {
				main = fmt.Sprintf("main figure (%.1f ns a line)", cv.SecondsPerLine*1e9)
			}
			rows = append(rows, []string{FormatBytes(pt.EvictBytes), FormatStat(microseconds(pt.Seconds), 2), main})
		}
		if err := MarkdownTable(b, []string{"read before each call", "call µs", ""}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	if cc := d.CoreToCore; cc != nil {
		fmt.Fprintf(b, "Core-to-core reads: %s.\n\n", cc.Method)
		ratio := ""
		if cc.LocalGBps.Median > 0 {
			ratio = fmt.Sprintf("%.2f", cc.GBps.Median/cc.LocalGBps.Median)
		}
		if err := MarkdownTable(b, []string{"threads", "CPUs", "each worker's buffer", "neighbour's GB/s", "own GB/s", "neighbour/own"},
			[][]string{{strconv.Itoa(cc.Threads), cpuList(cc.CPUs), FormatBytes(cc.Bytes), FormatStat(cc.GBps, 1), FormatStat(cc.LocalGBps, 1), ratio}}); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	return nil
}

// FormatCV renders a figure's coefficient of variation as "x.y%", with
// " NOISY" after a figure the noise check marked (results.Noise).
func FormatCV(s results.Stat) string {
	out := fmt.Sprintf("%.1f%%", 100*s.CV)
	if s.Noisy() {
		out += " NOISY"
	}
	return out
}

// NoisyLegend is the line printed under a table with a NOISY figure.
var NoisyLegend = fmt.Sprintf("NOISY: the figure's threads got less than %.0f%% of their CPUs or its repetitions' cv exceeded %.0f%%, after up to three attempts (results.Noise)",
	100*results.NoiseMinCPUFraction, 100*results.NoiseMaxCV)

func cpuList(c []int) string {
	if len(c) == 0 {
		return ""
	}
	// Compact ranges, kernel cpulist syntax.
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", c[i], c[j])
		} else {
			fmt.Fprintf(&b, "%d", c[i])
		}
		i = j + 1
	}
	return b.String()
}

// ProfileMarkdown writes profile.md: one section per probed section with its
// tables, and the PNG plots (paths relative to the Markdown file) embedded.
func ProfileMarkdown(w io.Writer, p *results.Profile, plots []Plot) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# bench profile: %s\n\n", p.Host)
	fmt.Fprintf(&b, "Schema `%s`, written %s by %s %s (%s). Sections: %s.",
		p.Schema, p.CreatedAt.Format("2006-01-02 15:04:05 MST"), p.Tool.Name, p.Tool.Version, p.Tool.GoVersion,
		strings.Join(p.Options.Sections, ", "))
	if p.Options.Reps > 0 {
		fmt.Fprintf(&b, " Each figure: median of %d timed repetitions of at least %.0f ms after a warm-up, shown as median (min–max, coefficient of variation).",
			p.Options.Reps, p.Options.MinRepSeconds*1e3)
	}
	if p.Options.Quick {
		b.WriteString(" Quick mode.")
	}
	b.WriteString("\n\n")
	if ns := p.Noise(); ns.Checked > 0 {
		fmt.Fprintf(&b, "Noise: %s. A figure is marked NOISY when its threads got less than %.0f%% of their CPUs or its repetitions' cv exceeds %.0f%%, after up to two more attempts.\n\n",
			ns, 100*results.NoiseMinCPUFraction, 100*results.NoiseMaxCV)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "> %s\n\n", n)
	}
	if m := p.Machine; m != nil {
		b.WriteString("## Machine\n\n")
		rows := [][]string{
			{"CPU", m.CPUModel}, {"vendor", m.Vendor}, {"architecture", m.Arch},
			{"family / model / stepping", fmt.Sprintf("%d / %d / %d", m.Family, m.Model, m.Stepping)},
			{"logical CPUs", strconv.Itoa(m.LogicalCPUs)},
			{"ISAs with bench kernels", strings.Join(m.ISAs, ", ")},
			{"base / max frequency", hz(m.BaseHz) + " / " + hz(m.MaxHz)},
			{"TSC frequency", hz(m.TSCHz)},
			{"hypervisor", orUnknown(m.Hypervisor, "none")},
			{"OS / kernel", m.OS + " / " + m.Kernel},
			{"Go", m.GoVersion},
			{"governor", m.Governor}, {"turbo/boost", m.Boost},
			{"transparent huge pages", m.TransparentHugePages},
			{"hardware counters (perf_event_open)", m.PerfCounters},
		}
		if err := MarkdownTable(&b, []string{"property", "value"}, rows); err != nil {
			return err
		}
		fmt.Fprintf(&b, "\nFeatures: %s\n\n", strings.Join(m.Features, " "))
	}
	if t := p.Topology; t != nil {
		b.WriteString("## Topology\n\n")
		fmt.Fprintf(&b, "%d package(s), %d NUMA node(s), %d core(s), %d hardware thread(s); last-level cache %s per instance, %d-byte lines.\n\n",
			t.Packages, t.NUMANodes, t.Cores, t.Threads, FormatBytes(t.LLCBytes), t.LineBytes)
		if t.CacheNote != "" {
			fmt.Fprintf(&b, "Caches: %s.\n\n", t.CacheNote)
		}
		var rows [][]string
		for _, c := range t.Caches {
			rows = append(rows, []string{fmt.Sprintf("L%d %s", c.Level, c.Type), FormatBytes(c.SizeBytes), strconv.Itoa(c.LineBytes), strconv.Itoa(c.Ways), strconv.Itoa(c.Instances), strconv.Itoa(c.SharedBy)})
		}
		if err := MarkdownTable(&b, []string{"cache", "size", "line (B)", "ways", "instances", "CPUs per instance"}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
		rows = nil
		for i, n := range t.Nodes {
			d := ""
			if i < len(t.Distances) {
				d = intsJoin(t.Distances[i])
			}
			rows = append(rows, []string{strconv.Itoa(n.ID), n.CPUList, FormatBytes(n.MemBytes), d})
		}
		if err := MarkdownTable(&b, []string{"NUMA node", "cpulist", "memory", "distances"}, rows); err != nil {
			return err
		}
		b.WriteString("\nTopology tree (TopoTree, Sandwich §5.1):\n\n```\n")
		writeTree(&b, t.Tree, 0)
		b.WriteString("```\n\n")
	}
	if pl := p.Placement; pl != nil && len(pl.RoundTrips) > 0 {
		b.WriteString("## Placement: core-to-core round trips\n\n")
		fmt.Fprintf(&b, "Where the host put the CPUs as the probe began; every figure on more than one CPU is checked against it (a ratio of %.1f× either way marks it noisy: the host moved the CPUs). Method: %s.\n\n", results.NoisePlacementRatio, pl.Method)
		var rows [][]string
		for _, rt := range pl.RoundTrips {
			rows = append(rows, []string{strconv.Itoa(rt.A), strconv.Itoa(rt.B), FormatStat(rt.NS, 0)})
		}
		if err := MarkdownTable(&b, []string{"CPU", "CPU", "round trip (ns)"}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	if m := p.Memory; m != nil {
		b.WriteString("## Memory bandwidth\n\n")
		fmt.Fprintf(&b, "Kernels in %s. Bytes: %s.\n\n", m.ISA, m.ByteCounting)
		if len(m.Levels) > 0 {
			var rows [][]string
			for _, l := range m.Levels {
				rows = append(rows, []string{l.Level, strconv.Itoa(l.Threads), FormatBytes(l.WorkingSetBytes), FormatStat(l.GBps, 1)})
			}
			b.WriteString("Read roofs per level (the roofline's memory roofs):\n\n")
			if err := MarkdownTable(&b, []string{"level", "threads", "working set", "read GB/s"}, rows); err != nil {
				return err
			}
			b.WriteString("\n")
		}
		if err := bandwidthTable(&b, "Bandwidth vs working set", m.WorkingSet); err != nil {
			return err
		}
		if err := bandwidthTable(&b, "Bandwidth vs threads", m.Threads); err != nil {
			return err
		}
	}
	if l := p.Latency; l != nil {
		b.WriteString("## Latency\n\n")
		fmt.Fprintf(&b, "Method: %s.\n\n", l.Method)
		var rows [][]string
		for _, pt := range l.Points {
			rows = append(rows, []string{FormatBytes(pt.WorkingSetBytes), strconv.Itoa(pt.CPU), FormatStat(pt.NS, 1)})
		}
		if err := MarkdownTable(&b, []string{"working set", "CPU", "ns per load"}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	if err := dispatchMarkdown(&b, p.Dispatch); err != nil {
		return err
	}
	if s := p.Shared; s != nil {
		b.WriteString("## Shared bandwidth (SMEPilot §3.1)\n\n")
		if s.Unavailable != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Unavailable)
		} else {
			b.WriteString("Two pinned thread groups run the same kernel alone and together; additivity = together / (alone A + alone B).\n\n")
			var rows [][]string
			for _, e := range s.Experiments {
				for _, g := range e.Groups {
					rows = append(rows, []string{g.Name, g.Kernel, cpuList(g.CPUs), FormatBytes(g.WorkingSetBytes), FormatStat(g.Alone, 1), FormatStat(g.Together, 1), ""})
				}
				rows = append(rows, []string{"sum", "", "", "", fmt.Sprintf("%.1f", e.SumAloneGBps), fmt.Sprintf("%.1f", e.TogetherGBps), fmt.Sprintf("%.2f", e.Additivity)})
			}
			if err := MarkdownTable(&b, []string{"group", "kernel", "CPUs", "working set", "alone GB/s", "together GB/s", "additivity"}, rows); err != nil {
				return err
			}
			b.WriteString("\n")
		}
	}
	if n := p.NUMA; n != nil {
		b.WriteString("## NUMA node-to-node matrix (ArcLight Table 1)\n\n")
		if n.Unavailable != "" {
			fmt.Fprintf(&b, "%s\n\n", n.Unavailable)
		} else {
			if n.Note != "" {
				fmt.Fprintf(&b, "%s.\n\n", n.Note)
			}
			fmt.Fprintf(&b, "Read bandwidth of all cores of the CPU node over %s bound to the memory node with mbind; latency from one core. Placement verified by sampling pages.\n\n", FormatBytes(n.WorkingSetBytes))
			var rows [][]string
			for _, pr := range n.Pairs {
				rows = append(rows, []string{strconv.Itoa(pr.CPUNode), strconv.Itoa(pr.MemNode), FormatStat(pr.ReadGBps, 1), FormatStat(pr.LatencyNS, 1), fmt.Sprintf("%.0f%%", 100*pr.PagesOnNode), strconv.FormatBool(pr.Verified)})
			}
			if err := MarkdownTable(&b, []string{"CPU node", "memory node", "read GB/s", "latency ns", "pages on node", "verified"}, rows); err != nil {
				return err
			}
			b.WriteString("\n")
		}
	}
	if err := computeMarkdown(&b, p); err != nil {
		return err
	}
	if len(plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, pl := range plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", pl.Title, pl.File)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func bandwidthTable(b *bytes.Buffer, title string, pts []results.Bandwidth) error {
	if len(pts) == 0 {
		return nil
	}
	fmt.Fprintf(b, "%s:\n\n", title)
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Kernel, p.ISA, FormatBytes(p.WorkingSetBytes), strconv.Itoa(p.Threads), cpuList(p.CPUs), strconv.FormatBool(p.Pinned), FormatStat(p.GBps, 1)})
	}
	if err := MarkdownTable(b, []string{"kernel", "ISA", "working set", "threads", "CPUs", "pinned", "GB/s"}, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

func writeTree(b *bytes.Buffer, n *results.TopoNode, depth int) {
	if n == nil {
		return
	}
	fmt.Fprintf(b, "%s%s %d", strings.Repeat("  ", depth), n.Kind, n.ID)
	if n.CacheBytes > 0 {
		fmt.Fprintf(b, " (%s)", FormatBytes(n.CacheBytes))
	}
	fmt.Fprintf(b, " cpus %s\n", n.CPUList)
	// Collapse long runs of leaves (e.g. 48 identical cores) to keep it short.
	for i, c := range n.Children {
		if len(n.Children) > 8 && i == 4 {
			fmt.Fprintf(b, "%s... %d more %s nodes\n", strings.Repeat("  ", depth+1), len(n.Children)-6, c.Kind)
		}
		if len(n.Children) > 8 && i >= 4 && i < len(n.Children)-2 {
			continue
		}
		writeTree(b, c, depth+1)
	}
}

func hz(v float64) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f GHz", v/1e9)
}

func orUnknown(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

func intsJoin(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}
