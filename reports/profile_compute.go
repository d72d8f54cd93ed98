package reports

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/cpubench/bench/results"
)

// computeMarkdown writes the compute, mixed and nonlinear sections of
// profile.md.
func computeMarkdown(b *bytes.Buffer, p *results.Profile) error {
	if c := p.Compute; c != nil {
		b.WriteString("## Compute ceilings\n\n")
		fmt.Fprintf(b, "Core clock %s (%s). Theoretical rate = ops per instruction x instructions per cycle x clock x threads.\n\n", hz(c.FrequencyHz), c.FrequencySource)
		var rows [][]string
		for _, pk := range c.Peaks {
			theo, frac := "—", "—"
			if pk.TheoreticalRate > 0 {
				theo = fmt.Sprintf("%.1f (IPC %.3g)", pk.TheoreticalRate, pk.IPC)
				frac = fmt.Sprintf("%.1f%%", 100*pk.AchievedFraction)
			}
			rows = append(rows, []string{pk.Kernel, pk.Instruction, pk.Precision, strconv.Itoa(pk.Threads), strconv.Itoa(pk.Accumulators), pk.Unit, FormatStat(pk.Rate, 1), theo, frac})
		}
		if err := MarkdownTable(b, []string{"kernel", "instruction", "precision", "threads", "accumulators", "unit", "rate", "theoretical", "achieved"}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
		unavailableList(b, c.Unavailable)
		if fl, in := probeCeilings(p); len(fl) > 0 {
			b.WriteString("Ceilings `bench roofline` predicts with (roofline.FromProfile; roofline.png draws them solid): per precision the attained GEMM of the matrix section where measured, else the FMA peak.\n\n")
			var rows [][]string
			for _, c := range fl {
				if c.used {
					rows = append(rows, []string{c.prec, c.what, fmt.Sprintf("%.1f", c.gflops), c.source})
				}
			}
			if err := MarkdownTable(b, []string{"precision", "ceiling", "GFLOP/s", "from"}, rows); err != nil {
				return err
			}
			if len(in) > 0 {
				fmt.Fprintf(b, "\nInteger ceilings (GOP/s, not on roofline.png's GFLOP/s axis): %s.\n", strings.Join(in, ", "))
			}
			b.WriteString("\n")
		}
	}
	if m := p.Mixed; m != nil {
		b.WriteString("## Mixed execution (SMEPilot Fig. 3)\n\n")
		if m.Unavailable != "" {
			fmt.Fprintf(b, "%s\n\n", m.Unavailable)
		} else {
			b.WriteString("Two backends on disjoint pinned thread groups, each alone and then together; additivity = together / (alone A + alone B).\n\n")
			var rows [][]string
			for _, e := range m.Experiments {
				for _, g := range e.Groups {
					rows = append(rows, []string{e.Kind, g.Name, cpuList(g.CPUs), g.Unit, FormatStat(g.Alone, 1), FormatStat(g.Together, 1), ""})
				}
				rows = append(rows, []string{e.Kind, "sum", "", e.Unit, fmt.Sprintf("%.2f", e.SumAlone), fmt.Sprintf("%.2f", e.Together), fmt.Sprintf("%.2f", e.Additivity)})
			}
			if err := MarkdownTable(b, []string{"experiment", "group", "CPUs", "unit", "alone", "together", "additivity"}, rows); err != nil {
				return err
			}
			b.WriteString("\n")
		}
	}
	if mx := p.Matrix; mx != nil {
		b.WriteString("## Matrix kernels: attained GEMM and GEMV\n\n")
		if mx.Method != "" {
			fmt.Fprintf(b, "%s\n\n", mx.Method)
		}
		b.WriteString("Y[M×N] = X[M×K] · Wᵀ with W packed once (packing time shown separately). GFLOP/s = 2·M·N·K / s / 1e9; weight GB/s = N·K·bytes / s / 1e9.\n\n")
		var rows [][]string
		for _, g := range append(append([]results.GEMMResult{}, mx.GEMM...), mx.GEMV...) {
			frac := "—"
			if g.Fraction > 0 {
				frac = fmt.Sprintf("%.1f%% of %s", 100*g.Fraction, g.FractionOf)
			}
			rows = append(rows, []string{g.Backend, g.DType, fmt.Sprintf("%d×%d×%d", g.M, g.N, g.K), strconv.Itoa(g.Threads), FormatStat(g.GFLOPS, 1), fmt.Sprintf("%.1f", g.WeightGBps), fmt.Sprintf("%.3f", g.PackSeconds), frac})
		}
		if err := MarkdownTable(b, []string{"backend", "dtype", "M×N×K", "threads", "GFLOP/s", "weight GB/s", "pack s", "fraction"}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
		if len(mx.QuantEBW) > 0 {
			b.WriteString("Effective-bandwidth roofline of the quantized GEMV kernels (low-bit GEMV paper §III-F): γ = cycles per 32 bytes of packed weights of the up-convert-and-compute loop, its marginal cost between two cache-resident one-tile panels of the same rows (K and 4·K, 1 thread; the whole call on the smaller panel and the per-call cost, the fit's intercept, beside it); per core ebw = min(β, 32/γ) (Eq. 3) with β the DRAM read roof per thread in bytes per cycle; modeled GB/s = threads · ebw · clock.\n\n")
			rows = nil
			for _, q := range mx.QuantEBW {
				// Profiles from before the marginal measurement took γ
				// from the whole call (no marginal_gbps, per_call_ns).
				marginal, perCall := "— (γ from the whole call)", "—"
				if q.MarginalGBps != nil && q.PerCallNs != nil {
					marginal, perCall = FormatStat(*q.MarginalGBps, 1), FormatStat(*q.PerCallNs, 0)
				}
				for _, pt := range q.Points {
					meas, ratio := "—", "—"
					if pt.MeasuredGBps > 0 {
						meas, ratio = fmt.Sprintf("%.1f", pt.MeasuredGBps), fmt.Sprintf("%.2f", pt.Ratio)
					}
					rows = append(rows, []string{q.Backend, FormatStat(q.UpconvertGBps, 1), marginal, perCall, fmt.Sprintf("%.2f", q.GammaCycles), strconv.Itoa(pt.Threads),
						fmt.Sprintf("%.2f", pt.BetaBytesPerCycle), fmt.Sprintf("%.2f (%s)", pt.EBWBytesPerCycle, pt.Limit), fmt.Sprintf("%.1f", pt.EBWGBps), meas, ratio})
				}
				if len(q.Points) == 0 {
					rows = append(rows, []string{q.Backend, FormatStat(q.UpconvertGBps, 1), marginal, perCall, "—", "—", "—", "— (" + q.ClockSource + ")", "—", "—", "—"})
				}
			}
			if err := MarkdownTable(b, []string{"kernel", "one call, small panel GB/s (1 thread)", "marginal GB/s (32/γ)", "per-call ns", "γ cycles / 32 B", "threads", "β B/cycle per core", "ebw B/cycle per core", "modeled GB/s", "measured GEMV GB/s", "measured / modeled"}, rows); err != nil {
				return err
			}
			b.WriteString("\n")
		}
		if len(mx.Mixed) > 0 {
			b.WriteString("Tile-partitioned GEMM across two thread groups (SMEPilot §4.1, Eq. 1). α starts from the rates each group reaches alone and is re-planned after every call from the rates they reach while both run (co-running); ideal = 2MNK / (rate A + rate B), so makespan / ideal = 1 is a balanced split. The last column uses the rates each group reaches alone: it adds what the groups cost each other (shared cache, memory bandwidth, SMT).\n\n")
			rows = nil
			for _, s := range mx.Mixed {
				rows = append(rows, []string{s.BackendA + " + " + s.BackendB, cpuList(s.CPUsA) + " + " + cpuList(s.CPUsB), fmt.Sprintf("%d×%d×%d", s.M, s.N, s.K), s.Dim,
					fmt.Sprintf("%.3f / %.3f", s.AlphaIdeal, s.AlphaChosen), splitRates(s), FormatStat(s.Makespan.Scale(1e3), 2),
					fmt.Sprintf("%.2f", s.IdealSeconds*1e3), fmt.Sprintf("%.2f", s.Ratio), splitAlone(s)})
			}
			if err := MarkdownTable(b, []string{"backends A + B", "CPUs A + B", "M×N×K", "split", "α ideal / chosen", "GFLOP/s A + B co-running (alone)", "makespan ms", "ideal ms", "makespan / ideal", "makespan / ideal from alone rates"}, rows); err != nil {
				return err
			}
			b.WriteString("\n")
			listed := false
			for _, s := range mx.Mixed {
				if s.Targets != "" {
					fmt.Fprintf(b, "- %s + %s: %s.\n", s.BackendA, s.BackendB, s.Targets)
					listed = true
				}
			}
			if listed {
				b.WriteString("\n")
			}
		}
		unavailableList(b, mx.Unavailable)
	}
	if n := p.Nonlinear; n != nil {
		b.WriteString("## Non-linear kernels\n\n")
		if n.FastExpDomain != "" {
			fmt.Fprintf(b, "Fast exp: maximum error %.2f ULP against math.Exp over %s.\n\n", n.FastExpMaxULP, n.FastExpDomain)
		}
		var rows [][]string
		for _, pt := range n.Points {
			row := ""
			if pt.RowElems > 0 {
				row = strconv.Itoa(pt.RowElems)
			}
			rows = append(rows, []string{pt.Kernel, pt.Backend, row, strconv.Itoa(pt.Elems), strconv.Itoa(pt.Threads), FormatStat(pt.GElemsPerSec, 2), fmt.Sprintf("%.3f", pt.NSPerElem)})
		}
		if err := MarkdownTable(b, []string{"kernel", "backend", "row", "elements", "threads", "Gelem/s", "ns/elem"}, rows); err != nil {
			return err
		}
		b.WriteString("\n")
		unavailableList(b, n.Unavailable)
	}
	return nil
}

func unavailableList(b *bytes.Buffer, u []results.Unavailable) {
	if len(u) == 0 {
		return
	}
	b.WriteString("Not measured on this machine:\n\n")
	for _, x := range u {
		fmt.Fprintf(b, "- %s: %s\n", x.Kernel, x.Why)
	}
	b.WriteString("\n")
}

// splitRates is "A + B (A alone + B alone)" GFLOP/s of a partitioned GEMM;
// profiles written before the co-running calibration have no rates ("—").
func splitRates(s results.MatrixSplit) string {
	if s.RateAGFLOPS == 0 && s.RateBGFLOPS == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f + %.1f (%.1f + %.1f)", s.RateAGFLOPS, s.RateBGFLOPS, s.RateAAloneGFLOPS, s.RateBAloneGFLOPS)
}

// splitAlone is RatioAlone, or "—" in profiles that lack it.
func splitAlone(s results.MatrixSplit) string {
	if s.RatioAlone == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", s.RatioAlone)
}
