package probes

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/amx"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/peak"
	"github.com/cpubench/bench/kernels/quant"
)

// --list has one row per gemm and per quant backend; a gemm row says what
// executes it and which placement runs it, a quant row which formats run
// the Go specification tiles rather than a kernel.
func TestKernelsListsGEMMAndQuant(t *testing.T) {
	var ng, nq int
	pair, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kernels() {
		switch k.Section {
		case "gemm":
			ng++
			// Each row says what executes it and which placement runs it.
			b, _ := gemm.BackendByName(k.Name)
			if b.Name != "" && !strings.Contains(k.Detail, "on the "+b.Unit.Where()) {
				t.Errorf("%s: detail %q lacks its unit", k.Name, k.Detail)
			}
			if (k.Name == pair.Cores.Name) != strings.Contains(k.Detail, "placement cores runs it") ||
				(k.Name == pair.Matrix.Name) != strings.Contains(k.Detail, "placement matrix runs it") {
				t.Errorf("%s: detail %q, placements' backends %s and %s", k.Name, k.Detail, pair.Cores.Name, pair.Matrix.Name)
			}
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

// Every AMX kernel (compute ceilings and gemm backends) is marked as never
// executed on hardware; no other kernel is.
func TestKernelsMarkVerifiedAMX(t *testing.T) {
	n := 0
	for _, k := range Kernels() {
		marked := strings.Contains(k.Detail, amx.Verified)
		if marked != (k.ISA == "amx") {
			t.Errorf("%s %s (%s): detail %q", k.Section, k.Name, k.ISA, k.Detail)
		}
		if marked {
			n++
		}
	}
	if runtime.GOARCH == "amd64" && len(peak.Kernels()) > 0 && n != 4 {
		t.Errorf("%d AMX rows marked, want 4 (amx_bf16, amx_int8, amx-bf16, amx-int8)", n)
	}
}
