package probes

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/cpubench/bench/internal/amx"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/peak"
	"github.com/cpubench/bench/kernels/quant"
)

func formatNames(fs []quant.Format) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f))
	}
	return out
}

// KernelInfo is one kernel `bench probe --list` reports.
type KernelInfo struct {
	Section string // "memory", "compute", "gemm", "quant", "nonlinear"
	Name    string
	ISA     string
	Detail  string // instruction or kernel set
	// Status is "available" or "unavailable: why".
	Status string
}

// Kernels lists every kernel compiled into this bench for this GOARCH, with
// whether this CPU (after any cpu.Disable or BENCH_CPU_DISABLE) can run it.
func Kernels() []KernelInfo {
	status := func(u string) string {
		if u == "" {
			return "available"
		}
		return u
	}
	var out []KernelInfo
	for _, m := range kernels.MemImpls() {
		out = append(out, KernelInfo{Section: "memory", Name: "read, write, write_nt, copy, triad", ISA: m.ISA,
			Detail: fmt.Sprintf("non-temporal stores: %s", m.NT), Status: status(m.Unavailable)})
	}
	if len(peak.Kernels()) == 0 {
		out = append(out, KernelInfo{Section: "compute", Name: "(none)", ISA: "-",
			Status: "unavailable: this build has no compute-peak kernels (built with -tags purego, or no assembly for " + runtime.GOARCH + ")"})
	}
	for _, k := range peak.Kernels() {
		detail := fmt.Sprintf("%s, %s, %d ops/instruction, %d accumulators", k.Instruction, k.Precision, k.OpsPerInstruction, k.Accumulators)
		if k.ISA == "amx" {
			detail += "; " + amx.Verified
		}
		out = append(out, KernelInfo{Section: "compute", Name: k.Name, ISA: k.ISA, Detail: detail, Status: status(k.Unavailable)})
	}
	pair, pairErr := gemm.ChoosePair("", "")
	for _, b := range gemm.Backends() {
		detail := fmt.Sprintf("%s weights, %d×%d register tile, on the %s", b.DType, b.TileM, b.TileN, b.Unit.Where())
		if pairErr == nil && b.Name == pair.Cores.Name {
			detail += "; placement cores runs it"
		}
		if pairErr == nil && b.Name == pair.Matrix.Name {
			detail += "; placement matrix runs it"
			if pair.MatrixNote != "" {
				detail += " (" + pair.MatrixNote + ")"
			}
		}
		if b.Verified != "" {
			detail += "; " + b.Verified
		}
		out = append(out, KernelInfo{Section: "gemm", Name: b.Name, ISA: b.ISA, Detail: detail, Status: status(b.Unavailable)})
	}
	for _, b := range quant.Backends() {
		var own, fmts []string
		for _, f := range quant.Formats() {
			fmts = append(fmts, string(f))
			if !slices.Contains(b.GoTiles, f) {
				own = append(own, string(f))
			}
		}
		detail := fmt.Sprintf("GEMV tiles %d×%d", b.TileM, b.TileN)
		switch {
		case b.ISA == "go":
			detail += " (the Go specification loops)"
		case len(b.GoTiles) > 0:
			detail += fmt.Sprintf("; kernels for %s, Go specification tiles for %s", strings.Join(own, ", "), strings.Join(formatNames(b.GoTiles), ", "))
		}
		if cf := b.ColumnFormats(); len(cf) > 0 {
			detail += fmt.Sprintf("; column-order layout (groups of %d rows, W repacked at load) for %s, lane order for the rest", quant.ColRows, strings.Join(formatNames(cf), ", "))
			for _, f := range cf {
				if u := b.ColumnUpconvert(f); u != "" {
					detail += "; " + u
				}
			}
		}
		if b.PrefillTileM > 0 {
			detail += fmt.Sprintf("; prefill %d×32 tiles from M %d (K-quants %d)", b.PrefillTileM, quant.PrefillMinM, quant.PrefillMinMK)
		}
		out = append(out, KernelInfo{Section: "quant", Name: strings.Join(fmts, ", "), ISA: b.ISA, Detail: detail, Status: status(b.Unavailable)})
	}
	for _, n := range kernels.NonlinearImpls() {
		var names []string
		for _, spec := range nonlinearSpecs() {
			if !slices.Contains(names, spec.kernel) {
				names = append(names, spec.kernel)
			}
		}
		out = append(out, KernelInfo{Section: "nonlinear", Name: strings.Join(names, ", "), ISA: n.ISA,
			Status: status(n.Unavailable)})
	}
	return out
}
