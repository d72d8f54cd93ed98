//go:build !purego

package quant

import (
	"maps"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// colSelfTestFn is the self-test of backend name's column-order tiles.
func colSelfTestFn(name string) string {
	if name == "avx512bw" {
		return bwSelfTest()
	}
	return colSelfTest()
}

// The avx512vnni int1 tiles without GFNI (VPTESTMB on the bit planes),
// which a CPU with GFNI never chooses, equal kernColGo bit for bit on the
// self-test's exact inputs wherever AVX512-VNNI runs; so do the GFNI ones
// where GFNI is present.
func TestColumnI1Variants(t *testing.T) {
	x := cpu.X86
	if l := lacks("AVX512F", x.HasAVX512F, "AVX512BW", x.HasAVX512BW, "AVX512VNNI", x.HasAVX512VNNI); l != "" {
		t.Skip(l)
	}
	variants := map[string][]kern{"VPTESTMB": vnniColI1Mask}
	if x.HasGFNI {
		variants["VGF2P8AFFINEQB"] = []kern{kernColI1VNNIm1, kernColI1VNNIm2, kernColI1VNNIm3, kernColI1VNNIm4}
	}
	for what, ks := range variants {
		m := maps.Clone(vnniColKerns)
		m[Int1] = ks
		if v := colSelfTestOf(m, what); v != "" {
			t.Errorf("%s: %s", what, v)
		}
	}
}

// ColumnUpconvert names the int1 tiles the avx512vnni backend chose on
// this CPU, and nothing for a format whose tiles the CPU does not decide.
func TestColumnUpconvertNote(t *testing.T) {
	be, err := BackendByName("avx512vnni")
	if err != nil || be.Unavailable != "" {
		t.Skipf("avx512vnni: %v %s", err, be.Unavailable)
	}
	want := "VPTESTMB"
	if vnniColI1GFNI {
		want = "VGF2P8AFFINEQB"
	}
	if got := be.ColumnUpconvert(Int1); !strings.Contains(got, want) {
		t.Errorf("ColumnUpconvert(int1) = %q, want it to name %s", got, want)
	}
	if got := be.ColumnUpconvert(Q8_0); got != "" {
		t.Errorf("ColumnUpconvert(q8_0) = %q, want none", got)
	}
}
