package cpu

import (
	"slices"
	"testing"
)

func TestDisableUndo(t *testing.T) {
	before := ISAs()
	undo := DisableAVX2()
	if slices.Contains(ISAs(), "avx2") || slices.Contains(ISAs(), "avx512") {
		t.Fatalf("after DisableAVX2, ISAs() = %v", ISAs())
	}
	undo()
	if !slices.Equal(before, ISAs()) {
		t.Fatalf("undo did not restore: %v != %v", ISAs(), before)
	}
	u2 := DisableSVE()
	if slices.Contains(ISAs(), "sve") || slices.Contains(ISAs(), "sme") {
		t.Fatalf("after DisableSVE, ISAs() = %v", ISAs())
	}
	u2()
	if _, err := Disable("nonsense"); err == nil {
		t.Fatal("Disable(nonsense) = nil error")
	}
	if ISAs()[0] != "go" {
		t.Fatalf("ISAs()[0] = %q, want go", ISAs()[0])
	}
}
