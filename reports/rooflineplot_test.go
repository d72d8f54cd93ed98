package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/cpubench/bench/roofline"
)

func rooflineTestAnalysis(t *testing.T, r roofline.Request) *roofline.Analysis {
	t.Helper()
	m, err := roofline.Published("m4-pro")
	if err != nil {
		t.Fatal(err)
	}
	arch := roofline.Arch{Name: "qwen3-30b-a3b", Dim: 2048, Intermediate: 6144, Layers: 48, Heads: 32, KVHeads: 4,
		HeadDim: 128, Vocab: 151936, QKNorm: true, Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 768, MoELayers: 48}
	a, err := roofline.Analyze(m, arch, r, "fp16")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// hasColor reports whether some pixel is exactly c (the regime glyphs are
// drawn in solid palette colors).
func hasColor(img image.Image, c color.RGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(bl>>8) == c.B {
				return true
			}
		}
	}
	return false
}

func TestRooflinePNG(t *testing.T) {
	r := roofline.Request{Phase: roofline.Prefill, Batch: 1, Tokens: 512, Context: 512, Weight: "fp16", Act: "fp16", KV: "fp16",
		Routing: roofline.Routing{Kind: "zipf", S: 1.2}}
	var buf bytes.Buffer
	if err := RooflinePNG(&buf, rooflineTestAnalysis(t, r)); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1056 || b.Dy() != 720 {
		t.Errorf("size %v, want 1056×720 (11×7.5 in at 96 dpi)", b)
	}
	for _, rg := range []roofline.Regime{roofline.MemoryBound, roofline.RidgeCrossing, roofline.ComputeBound, roofline.NonLinear} {
		if !hasColor(img, rooflineRegimeColor[rg].(color.RGBA)) {
			t.Errorf("no %s point drawn", rg)
		}
	}
}

func TestRooflineSweepPNG(t *testing.T) {
	m, _ := roofline.Published("m4-pro")
	arch := roofline.Arch{Name: "llama-3.2-1b", Dim: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, Vocab: 128256}
	r := roofline.Request{Phase: roofline.Decode, Batch: 1, Tokens: 1, Context: 1024, Weight: "fp16", Act: "fp16", KV: "fp16", Routing: roofline.Routing{Kind: "uniform"}}
	for _, vals := range [][]int{{1, 2, 4, 8, 16, 32, 64}, {4, 5, 6}, {8}} {
		s, err := roofline.Sweep(m, arch, r, "fp16", roofline.SweepBatch, vals)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := RooflineSweepPNG(&buf, s, "test"); err != nil {
			t.Fatalf("%v: %v", vals, err)
		}
		if _, err := png.Decode(&buf); err != nil {
			t.Fatal(err)
		}
	}
}

// A machine without ceilings (a bench.profile/v1 profile) still plots.
func TestRooflinePNGNoCeiling(t *testing.T) {
	m, _ := roofline.Published("kunpeng-920")
	arch := roofline.Arch{Name: "tiny", Dim: 64, Intermediate: 128, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 100}
	a, err := roofline.Analyze(m, arch, roofline.Request{Phase: roofline.Decode, Batch: 1, Tokens: 1, Context: 8,
		Weight: "fp16", Act: "fp16", KV: "fp16", Routing: roofline.Routing{Kind: "uniform"}}, "fp16")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := RooflinePNG(&buf, a); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
}
