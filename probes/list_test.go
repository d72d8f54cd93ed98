package probes

import (
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
)

// --list has one row per gemm and per quant backend, and a quant row says
// which formats run the Go specification tiles rather than a kernel.
func TestKernelsListsGEMMAndQuant(t *testing.T) {
	var ng, nq int
	for _, k := range Kernels() {
		switch k.Section {
		case "gemm":
			ng++
		case "quant":
			nq++
			var be quant.Backend
			for _, b := range quant.Backends() {
				if b.ISA == k.ISA {
					be = b
				}
			}
			if be.ISA != "go" && len(be.GoTiles) > 0 && !strings.Contains(k.Detail, "Go specification tiles for "+string(be.GoTiles[0])) {
				t.Errorf("%s: detail %q does not name its Go tiles %v", k.ISA, k.Detail, be.GoTiles)
			}
		}
	}
	if ng != len(gemm.Backends()) || nq != len(quant.Backends()) {
		t.Errorf("%d gemm rows for %d backends, %d quant rows for %d", ng, len(gemm.Backends()), nq, len(quant.Backends()))
	}
}
