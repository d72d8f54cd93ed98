package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cpubench/bench/roofline"
)

// TestLayoutFigures: the three PIM-SHERPA figures render as PNG and SVG,
// and empty or bad input is one error line.
func TestLayoutFigures(t *testing.T) {
	a := roofline.Arch{Name: "tiny", Dim: 64, Intermediate: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 100}
	c, err := roofline.LayoutCapacityOf(a, 2)
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.Name, b.Layers = "tiny-8", 8
	c2, _ := roofline.LayoutCapacityOf(b, 2)
	figs := map[string]func() (Figure, error){
		"capacity": func() (Figure, error) { return LayoutCapacityFigure([]roofline.LayoutCapacity{c, c2}, "bf16") },
		"ttft": func() (Figure, error) {
			return LayoutTTFTFigure([]LayoutTTFT{{"duplicate", 8, 0.01, 0.009, 0.0095, 0.011}, {"duplicate", 64, 0.05, 0.04, 0.0475, 0.055},
				{"owr", 8, 0.03, 0.02, 0.0285, 0.033}, {"owr", 64, 0.08, 0.07, 0.076, 0.088}, {"ddb", 8, 0.02, 0.02, 0.019, 0.022}, {"ddb", 64, 0.06, 0.05, 0.057, 0.066}}, 20, "TTFT")
		},
		"gantt": func() (Figure, error) {
			return LayoutGanttFigure([]LayoutSpan{{"compute 0", "preload", "", 0, 0, 0.001}, {"compute 0", "gemm", "q_proj", 0, 0.001, 0.002},
				{"copy 0", "copy", "layer 1", 1, 0.001, 0.003}, {"compute 1", "gemm", "q_proj", 0, 0.001, 0.0021}}, "timeline")
		},
	}
	for name, f := range figs {
		fig, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, format := range []string{FormatPNG, FormatSVG} {
			data, err := fig.Encode(format, WidthColumn)
			if err != nil || len(data) < 100 {
				t.Errorf("%s %s: %d bytes, %v", name, format, len(data), err)
			}
		}
	}
	for name, err := range map[string]error{
		"capacity":  second(LayoutCapacityFigure(nil, "bf16")),
		"ttft":      second(LayoutTTFTFigure(nil, 0, "")),
		"ttft bad":  second(LayoutTTFTFigure([]LayoutTTFT{{"owr", 0, 1, 1, 0.95, 1.1}}, 0, "")),
		"gantt":     second(LayoutGanttFigure(nil, "")),
		"gantt bad": second(LayoutGanttFigure([]LayoutSpan{{"compute 0", "gemm", "", 0, 2, 1}}, "")),
	} {
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line", name, err)
		}
	}
	var buf bytes.Buffer
	if err := MarkdownTable(&buf, []string{"a"}, [][]string{{"1"}}); err != nil {
		t.Fatal(err)
	}
}

func second[T any](_ T, err error) error { return err }
