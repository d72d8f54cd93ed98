package probes

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/peak"
)

// KernelInfo is one kernel `bench probe --list` reports.
type KernelInfo struct {
	Section string // "memory", "compute", "nonlinear"
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
		out = append(out, KernelInfo{Section: "compute", Name: k.Name, ISA: k.ISA,
			Detail: fmt.Sprintf("%s, %s, %d ops/instruction, %d accumulators", k.Instruction, k.Precision, k.OpsPerInstruction, k.Accumulators),
			Status: status(k.Unavailable)})
	}
	for _, n := range kernels.NonlinearImpls() {
		var names []string
		for _, spec := range nonlinearSpecs() {
			if !slices.Contains(names, spec.kernel) {
				names = append(names, spec.kernel)
			}
		}
		out = append(out, KernelInfo{Section: "nonlinear", Name: strings.Join(names, ", "), ISA: n.Backend,
			Status: status(n.Unavailable)})
	}
	return out
}
