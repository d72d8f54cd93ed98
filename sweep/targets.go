package sweep

import (
	"fmt"
	"strings"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/results"
)

// The placements' backends: the --cores-backend and --matrix-backend flags
// of bench run and bench sweep, and the record of what ran.

// CheckBackends checks the backend names of the two flags ("" is the
// default choice): one error line, prefixed by cmd and the flag, naming
// the backend and the available ones.
func CheckBackends(cmd, cores, matrix string) error {
	if cores != "" {
		if _, err := gemm.ChoosePair(cores, ""); err != nil {
			return fmt.Errorf("%s: --cores-backend: %w", cmd, err)
		}
	}
	if matrix != "" {
		if _, err := gemm.ChoosePair("", matrix); err != nil {
			return fmt.Errorf("%s: --matrix-backend: %w", cmd, err)
		}
	}
	return nil
}

// Targets records what ran each placement target (engine.Batch.Use).
func Targets(us []engine.TargetUse) []results.SweepTarget {
	out := make([]results.SweepTarget, len(us))
	for i, u := range us {
		out[i] = results.SweepTarget{Target: string(u.Target), Library: u.Library, Backend: u.Backend, Unit: string(u.Unit),
			ISA: u.ISA, Precision: u.Precision, Note: u.Note, Calls: u.Calls, Label: u.Label()}
	}
	return out
}

// TargetsLine lists the targets' labels and calls: "cores = avx2-fp32
// (fp32 weights) on the cores, 0 calls; matrix = avx2-bf16 (bf16 weights)
// on the cores, no matrix unit, 41 calls".
func TargetsLine(ts []results.SweepTarget) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s = %s, %d calls", t.Target, t.Label, t.Calls)
	}
	return strings.Join(parts, "; ")
}
