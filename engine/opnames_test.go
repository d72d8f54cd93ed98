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
