package perfcount

import (
	"bytes"
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/cpubench/bench/results"
)

// phaseColors are the bar colours of the phases, in order.
var phaseColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// Plot draws the phases' metrics as grouped bars, one group per metric
// and one bar per phase (prefill vs decode, as in Sandwich Fig. 1), each
// metric normalized to its largest value over the phases (the tick labels
// give that value). A report with no metric gives a figure that says
// "hardware counters unavailable: <why>" instead.
func (r *Report) Plot() *plot.Plot {
	p := plot.New()
	var names []string
	for _, n := range MetricNames() {
		for _, ph := range r.Phases {
			if _, ok := metric(ph, n); ok {
				names = append(names, n)
				break
			}
		}
	}
	if r.Unavailable != "" || len(names) == 0 {
		why := r.Unavailable
		if why == "" {
			why = "unavailable: no metric could be derived from the counters read"
		}
		p.Title.Text = "hardware counters " + wrap(why, 70)
		p.HideAxes()
		return p
	}
	p.Title.Text = "Hardware counters per phase (each metric / its largest value)"
	p.Y.Label.Text = "relative to the larger phase"
	p.Y.Min, p.Y.Max = 0, 1.25
	w := vg.Points(60 / float64(len(r.Phases)))
	labels := make([]string, len(names))
	maxes := make([]float64, len(names))
	for i, n := range names {
		for _, ph := range r.Phases {
			if v, ok := metric(ph, n); ok && finite(v) && v > maxes[i] {
				maxes[i] = v
			}
		}
		labels[i] = fmt.Sprintf("%s\n(max %.3g)", n, maxes[i])
	}
	for j, ph := range r.Phases {
		vals := make(plotter.Values, len(names))
		for i, n := range names {
			if v, ok := metric(ph, n); ok && finite(v) && maxes[i] > 0 {
				vals[i] = v / maxes[i]
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			continue
		}
		bars.Color = phaseColors[j%len(phaseColors)]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(j)-float64(len(r.Phases)-1)/2)
		p.Add(bars)
		p.Legend.Add(ph.Name, bars)
	}
	p.Legend.Top = true
	p.NominalX(labels...)
	return p
}

func metric(ph Phase, name string) (float64, bool) {
	for _, m := range ph.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// wrap breaks s into lines of at most n characters at spaces.
func wrap(s string, n int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// CheckPlotPath says whether WritePlot can write path: its extension must
// be .png, .svg or .pdf.
func CheckPlotPath(path string) error {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if ext != "png" && ext != "svg" && ext != "pdf" {
		return fmt.Errorf("perfcount: plot %s: extension %q (want .png, .svg or .pdf)", path, filepath.Ext(path))
	}
	return nil
}

// WritePlot draws Plot to path (.png, .svg or .pdf by extension, 8 × 4.5
// in) and writes it atomically.
func (r *Report) WritePlot(path string) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	wt, err := r.Plot().WriterTo(8*vg.Inch, 4.5*vg.Inch, ext)
	if err != nil {
		return fmt.Errorf("perfcount: plot %s: %w", path, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("perfcount: plot %s: %w", path, err)
	}
	return results.WriteFileAtomic(path, buf.Bytes(), 0o644)
}
