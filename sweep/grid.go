package sweep

import (
	"fmt"
	"strings"

	"github.com/cpubench/bench/engine"
	"github.com/cpubench/bench/workloads"
)

// skipCell is the grid's workloads.Grid.Skip: the combinations the engine
// does not run (engine.Placement.Partitions, WithQuantized and
// engine.Ablation.WithQuantized), one line per reason.
func skipCell(c workloads.Cell) string {
	p, a := engine.Placement(c.Placement), engine.Ablation(c.Ablation)
	quantized := c.WeightDType != "" && c.WeightDType != engine.FormatFP32
	switch {
	case quantized && !p.WithQuantized():
		return fmt.Sprintf("wdtype=%s with placement=%s: skipped (quantized weights run on the cores' quant backend)", c.WeightDType, p)
	case a == engine.AblatePartition && !p.Partitions():
		var ps []string
		for _, q := range engine.Placements() {
			if q.Partitions() {
				ps = append(ps, string(q))
			}
		}
		return fmt.Sprintf("ablate=partition with placement=%s: skipped (only placements %s partition a GEMM between the matrix unit and the cores)",
			p, strings.Join(ps, " and "))
	case quantized && !a.WithQuantized():
		return fmt.Sprintf("wdtype=%s with ablate=%s: skipped (quantized weights are packed once, by their loader, and never partitioned)", c.WeightDType, a)
	}
	return ""
}
