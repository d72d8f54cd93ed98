package reports

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/cpubench/bench/roofline"
)

// Fig. 4 of the low-bit GEMV paper for its LNL profile: a PNG and a table
// with the §III-F caps (6.4, 3.68, 1.67, 0.849 bytes/cycle) and the
// published β per core type.
func TestEBWPlotPublished(t *testing.T) {
	m, err := roofline.Published("lnl")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := EBWPNG(&buf, m); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	md, err := EBWMarkdown(m, "fig4.png")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| int2 | P | 4 | 4.1 | 8 | 1.25 | 6.4 | 3.18 (published) | 3.18 | memory |",
		"| int2 | E | 4 | 3.7 | 8 | 2.175 | 3.68 | 3.52 (published)", "| int1 | P | 4 | 4.1 | 4 | 2.4 | 1.67 | 3.18 (published) | 1.67 | up-convert |",
		"| int1 | E | 4 | 3.7 | 4 | 4.71 | 0.849 |", "| int1 | 37.2 GB/s | 97 GB/s | 37.2 GB/s (38%) | up-convert |", "![ebw per core", "2^30"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if _, err := EBWMarkdown(&roofline.Machine{Name: "m4", Targets: []roofline.Target{{Name: "cores", Kind: "cores", BandwidthGBps: 1}}}, ""); err == nil || !strings.Contains(err.Error(), "machine m4") {
		t.Errorf("no γ: %v", err)
	}
}
