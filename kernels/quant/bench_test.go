package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkUpconvert is the γ loop of the probe: one L1-resident panel,
// activations quantized once; bytes are the packed weight bytes.
// go test -run '^$' -bench Upconvert ./kernels/quant
func BenchmarkUpconvert(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, be := range Backends() {
		if be.Unavailable != "" {
			continue
		}
		for _, f := range Formats() {
			for _, m := range []int{1, 4} {
				for _, kk := range []int{512, 2048, 8192} {
					k := kk
					w, _ := Quantize(f, randMat(rng, PanelRows*k, 0.02), PanelRows, k)
					var a Activations
					_ = a.Quantize(f, randMat(rng, m*k, 1), m, k)
					y := make([]float32, m*PanelRows)
					im := byName()[be.Name]
					b.Run(fmt.Sprintf("%s/%s/M=%d/K=%d", be.Name, f, m, k), func(b *testing.B) {
						b.SetBytes(w.Bytes())
						for b.Loop() {
							mul(im, w, &a, y, PanelRows, 0, PanelRows)
						}
					})
				}
			}
		}
	}
}
