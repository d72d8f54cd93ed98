package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// LlamaBenchRow is one test of llama.cpp's llama-bench output (-o json: an
// array of objects; -o jsonl: one object per line), the fields the report
// uses. A test is a prompt-processing run (n_prompt > 0, n_gen = 0: pp),
// a generation run (n_gen > 0, n_prompt = 0: tg) or both (pp+tg).
type LlamaBenchRow struct {
	BuildCommit   string `json:"build_commit"`
	CPUInfo       string `json:"cpu_info"`
	ModelFilename string `json:"model_filename"`
	// ModelType is llama.cpp's model description: architecture, size and
	// the file's weight type, e.g. "qwen3 0.6B Q8_0".
	ModelType string `json:"model_type"`
	NThreads  int    `json:"n_threads"`
	TypeK     string `json:"type_k"`
	TypeV     string `json:"type_v"`
	NPrompt   int    `json:"n_prompt"`
	NGen      int    `json:"n_gen"`
	NDepth    int    `json:"n_depth"`
	// AvgTS and StddevTS are tokens per second (n_prompt + n_gen tokens
	// over each repetition's time), mean and standard deviation.
	AvgTS    float64 `json:"avg_ts"`
	StddevTS float64 `json:"stddev_ts"`
}

// Format is the test's weight format from ModelType's last word, named as
// bench names formats (Q8_0 → q8_0, F32 → fp32, F16 → fp16, BF16 → bf16);
// "?" when ModelType is empty.
func (r LlamaBenchRow) Format() string {
	f := strings.Fields(r.ModelType)
	if len(f) == 0 {
		return "?"
	}
	switch w := strings.ToLower(f[len(f)-1]); w {
	case "f32", "all f32":
		return "fp32"
	case "f16":
		return "fp16"
	default:
		return w
	}
}

// Test names the test as llama-bench prints it: pp512, tg128, pp512+tg128;
// with a depth, "@ d4096".
func (r LlamaBenchRow) Test() string {
	var t string
	switch {
	case r.NGen == 0:
		t = fmt.Sprintf("pp%d", r.NPrompt)
	case r.NPrompt == 0:
		t = fmt.Sprintf("tg%d", r.NGen)
	default:
		t = fmt.Sprintf("pp%d+tg%d", r.NPrompt, r.NGen)
	}
	if r.NDepth > 0 {
		t += fmt.Sprintf(" @ d%d", r.NDepth)
	}
	return t
}

// Baseline is a peer's end-to-end figures for the report: llama-bench's
// tests, read from Source.
type Baseline struct {
	Source string
	Rows   []LlamaBenchRow
}

// ParseLlamaBench reads llama-bench's JSON (-o json) or JSONL (-o jsonl)
// output. name is the file named in errors, each one line: not JSON, an
// empty file, or a test with a missing or impossible field (n_threads ≥ 1,
// n_prompt + n_gen ≥ 1, avg_ts > 0 finite, stddev_ts ≥ 0).
func ParseLlamaBench(data []byte, name string) (*Baseline, error) {
	b := &Baseline{Source: name}
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return nil, fmt.Errorf("%s: empty: want llama-bench -o json or -o jsonl output", name)
	}
	if trim[0] == '[' {
		if err := json.Unmarshal(trim, &b.Rows); err != nil {
			return nil, fmt.Errorf("%s: not llama-bench JSON (-o json, an array of tests): %v", name, err)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(trim))
		sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			l := bytes.TrimSpace(sc.Bytes())
			if len(l) == 0 {
				continue
			}
			var r LlamaBenchRow
			if err := json.Unmarshal(l, &r); err != nil {
				return nil, fmt.Errorf("%s:%d: not llama-bench JSONL (-o jsonl, one test per line): %v", name, line, err)
			}
			b.Rows = append(b.Rows, r)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	if len(b.Rows) == 0 {
		return nil, fmt.Errorf("%s: no llama-bench tests", name)
	}
	for i, r := range b.Rows {
		where := fmt.Sprintf("%s: test %d (%s)", name, i+1, r.ModelType)
		switch {
		case r.NThreads < 1:
			return nil, fmt.Errorf("%s: n_threads %d: must be ≥ 1", where, r.NThreads)
		case r.NPrompt < 0 || r.NGen < 0 || r.NPrompt+r.NGen < 1:
			return nil, fmt.Errorf("%s: n_prompt %d, n_gen %d: need one of them ≥ 1", where, r.NPrompt, r.NGen)
		case !(r.AvgTS > 0) || math.IsInf(r.AvgTS, 0):
			return nil, fmt.Errorf("%s: avg_ts %v: must be > 0 tokens/s", where, r.AvgTS)
		case r.StddevTS < 0 || math.IsNaN(r.StddevTS) || math.IsInf(r.StddevTS, 0):
			return nil, fmt.Errorf("%s: stddev_ts %v: must be ≥ 0", where, r.StddevTS)
		}
	}
	return b, nil
}

// baselineSeries is one bar series of the baseline figure.
type baselineSeries struct {
	name string
	vals map[int]float64 // per thread count, tok/s
	sd   map[int]float64 // per thread count, stddev (llama.cpp) or 0
	what string          // how the value was obtained, for the table
}

// baselineSection: the engine's prefill and decode tok/s per placement
// (batch-1 cells) beside llama.cpp's pp and tg tok/s from llama-bench,
// SMEPilot Fig. 9 compares with llama.cpp the same way.
func (r *sweepReport) baselineSection(b *bytes.Buffer) error {
	bl := r.d.o.Baseline
	if bl == nil {
		return nil
	}
	d := r.d
	src := filepath.Base(bl.Source)
	b.WriteString("## Beside llama.cpp (llama-bench)\n\n")
	phases := []struct {
		name, unit string
		eng        func(i int) (float64, string)
		peer       func(LlamaBenchRow) bool
	}{
		{"prefill", "prompt tokens/s", func(i int) (float64, string) {
			c := &d.cells[i]
			return c.PrefillTokS, "prompt tokens / prefill seconds over the cell's requests"
		}, func(x LlamaBenchRow) bool { return x.NPrompt > 0 && x.NGen == 0 }},
		{"decode", "generated tokens/s (one sequence)", func(i int) (float64, string) {
			c := &d.cells[i]
			if !(c.TPOT.Mean > 0) {
				return 0, ""
			}
			return 1 / c.TPOT.Mean, "1 / mean TPOT (batch 1: one sequence decoding)"
		}, func(x LlamaBenchRow) bool { return x.NGen > 0 && x.NPrompt == 0 }},
	}
	var ps []*plot.Plot
	var rows [][]string
	pw := 7 * vg.Inch
	for _, ph := range phases {
		var threads []int
		var series []*baselineSeries
		idx := map[string]*baselineSeries{}
		get := func(name string, what string) *baselineSeries {
			s, ok := idx[name]
			if !ok {
				s = &baselineSeries{name: name, vals: map[int]float64{}, sd: map[int]float64{}, what: what}
				idx[name] = s
				series = append(series, s)
			}
			return s
		}
		for _, i := range d.base {
			c := &d.cells[i]
			if c.Batch != 1 {
				continue
			}
			v, what := ph.eng(i)
			if !(v > 0) {
				continue
			}
			name := "bench " + c.Placement + " · " + d.model[i]
			if len(d.workloads) > 1 {
				name += " · " + c.Workload
			}
			if len(d.srcs) > 1 {
				name += " · " + d.src[i]
			}
			s := get(name, what)
			s.vals[c.Threads] = v
			if !slices.Contains(threads, c.Threads) {
				threads = append(threads, c.Threads)
			}
		}
		for _, x := range bl.Rows {
			if !ph.peer(x) {
				continue
			}
			name := fmt.Sprintf("llama.cpp %s · %s (%s)", x.Test(), x.Format(), src)
			s := get(name, fmt.Sprintf("llama-bench avg_ts of %s, model %s, type_k %s", x.Test(), x.ModelType, orDash(x.TypeK)))
			s.vals[x.NThreads], s.sd[x.NThreads] = x.AvgTS, x.StddevTS
			if !slices.Contains(threads, x.NThreads) {
				threads = append(threads, x.NThreads)
			}
		}
		slices.Sort(threads)
		if len(series) == 0 {
			continue
		}
		var names []string
		var colors []color.Color
		var vals, cis [][]float64
		var labels [][]string
		bench, peer := 0, 0
		for _, s := range series {
			v := make([]float64, len(threads))
			ci := make([]float64, len(threads))
			l := make([]string, len(threads))
			for ti, t := range threads {
				v[ti] = s.vals[t]
				ci[ti] = s.sd[t]
				if x, ok := s.vals[t]; ok {
					l[ti] = fmtSig(x)
					sd := "—"
					if _, peer := s.sd[t]; peer {
						sd = fmtSig(s.sd[t])
					}
					rows = append(rows, []string{ph.name, strconv.Itoa(t), s.name, fmtSig(x), sd, s.what})
				}
			}
			// bench's series in the Okabe–Ito colours (black excluded),
			// llama.cpp's in black and dark greys.
			var col color.Color
			if strings.HasPrefix(s.name, "llama.cpp") {
				col = color.Gray{Y: uint8((45 * peer) % 135)}
				peer++
			} else {
				col = okabeIto[bench%(len(okabeIto)-1)]
				bench++
			}
			names, colors = append(names, s.name), append(colors, col)
			vals, labels, cis = append(vals, v), append(labels, l), append(cis, ci)
		}
		pw = max(pw, barPanelWidth(len(threads), len(names)))
		pl := sweepPlot(fmt.Sprintf("%s: bench beside llama.cpp (%s)", ph.name, src), d.caption(), "threads", ph.unit, horizontalGrid)
		bw := barWidthFor(pw, len(threads), len(names))
		top, err := addGroupedBarsCI(pl, names, colors, vals, cis, labels, bw)
		if err != nil {
			return err
		}
		if top, err = addCIBars(pl, vals, cis, bw, top); err != nil {
			return err
		}
		var xl []string
		for _, t := range threads {
			xl = append(xl, fmt.Sprintf("%d thread(s)", t))
		}
		pl.NominalX(xl...)
		pl.X.Min, pl.X.Max = -0.6, float64(len(threads))-0.4
		pl.Y.Min, pl.Y.Max = 0, max(top, 1e-9)*1.3
		ps = append(ps, pl)
	}
	if len(ps) == 0 {
		r.note(b, fmt.Sprintf("baseline.png: no batch-1 cells with prefill or decode figures and no pp or tg test in %s", bl.Source))
		return nil
	}
	if err := savePanels(r.d.ctx, r.d.o.Figures, ps, 1, pw, sweepPanelH, r.dir, "baseline.png", d.produced(d.base)+"\nllama.cpp: avg_ts ± its stddev over llama-bench's repetitions (error bars); bench: one replay per cell"); err != nil {
		return err
	}
	r.figure(b, "baseline.png", "Prefill and decode tokens/s beside llama.cpp",
		fmt.Sprintf("Prefill and decode tokens/s of bench's placements (batch-1 cells; legend: placement · model and weight format) beside llama.cpp's llama-bench tests from %s (legend: test · weight format from its model type), grouped by thread count, SMEPilot Fig. 9 style; llama-bench's figures are its avg_ts over its own prompt (pp) and generation (tg) lengths, bench's over the workload's requests.", bl.Source))
	if err := MarkdownTable(b, []string{"phase", "threads", "series", "tok/s", "stddev", "what"}, rows); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}
