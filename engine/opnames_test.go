package engine

import (
	"testing"

	"github.com/cpubench/bench/roofline"
)

// TestOpNamesInVocabulary: every operator the engine times is in
// roofline's operator vocabulary, so that reports can classify it.
func TestOpNamesInVocabulary(t *testing.T) {
	for _, op := range append(append([]string{}, layerOps...), headOps...) {
		if _, ok := roofline.LookupOp(op); !ok {
			t.Errorf("engine operator %q is not in roofline's vocabulary", op)
		}
	}
}

// TestAblations: every ablation parses from its name and turns off its
// part of the system; an unknown name is one error naming the valid ones.
func TestAblations(t *testing.T) {
	for _, a := range Ablations() {
		got, err := ParseAblation(string(a))
		if err != nil || got != a {
			t.Errorf("ParseAblation(%q) = %q, %v", a, got, err)
		}
		var o Options
		a.Apply(&o)
		if n := btoi(o.NoPartition) + btoi(o.PackPerCall) + btoi(o.KVPackPerCall) + btoi(o.NoPipeline); n != 1 {
			t.Errorf("%s sets %d options", a, n)
		}
	}
	if _, err := ParseAblation("fusion"); err == nil || err.Error() != `unknown ablation "fusion" (valid: partition, packing, kv-packing, pipeline)` {
		t.Errorf("ParseAblation(fusion): %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
