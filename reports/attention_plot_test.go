package reports

import (
	"bytes"
	"strings"
	"testing"
)

func TestOpSweepFigure(t *testing.T) {
	panels := []OpPanel{
		{Title: "prefill", XLabel: "context", YLabel: "GFLOP/s", LogX: true, Series: []OpSeries{
			{Label: "cores (avx2-fp32)", Group: "cores", X: []float64{256, 512}, Y: []float64{10, 20}, Lo: []float64{9, 18}, Hi: []float64{11, 21}},
			{Label: "cores roofline", Group: "cores", Predicted: true, X: []float64{256, 512}, Y: []float64{30, 30}},
		}},
		{Title: "decode", XLabel: "batch", YLabel: "GFLOP/s", LogX: true, Series: []OpSeries{
			{Label: "mixed", Group: "mixed", X: []float64{1}, Y: []float64{3}},
		}},
	}
	f, err := OpSweepFigure(panels, 2, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	png, err := f.Encode(FormatPNG, "")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("png: %v", err)
	}
	if _, err := OpSweepFigure([]OpPanel{{Title: "empty"}}, 1, ""); err == nil {
		t.Error("a panel without points drew")
	}
	md, err := OpSweepMarkdown("Attention", "attention.png", []string{"threads 2"}, []string{"a", "b"}, [][]string{{"1", "2"}}, []string{"note"})
	if err != nil || !strings.Contains(md, "![Attention](attention.png)") || !strings.Contains(md, "[1] note") || !strings.Contains(md, "| 1 ") {
		t.Errorf("markdown %v:\n%s", err, md)
	}
}
