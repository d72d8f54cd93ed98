package roofline

import (
	"math"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// A profile's quant_ebw becomes the cores' effective bandwidth, and a
// quantized GEMV whose up-convert is slower than DRAM is predicted at it
// (low-bit GEMV paper §III-F), while q8_0 (memory-bound) keeps β.
func TestEffectiveBandwidth(t *testing.T) {
	p := &results.Profile{Schema: results.SchemaV1,
		Memory: &results.Memory{Levels: []results.LevelBandwidth{{Level: "DRAM", Kernel: "read", Threads: 2, GBps: results.Stat{Median: 60, N: 5}}}},
		Matrix: &results.Matrix{QuantEBW: []results.QuantEBW{
			{Format: "int1", BytesPerWeight: 0.1875, GammaCycles: 9, Points: []results.QuantEBWPoint{{Threads: 1, EBWGBps: 13}, {Threads: 2, EBWGBps: 26, Limit: "up-convert"}}},
			{Format: "q8_0", BytesPerWeight: 34.0 / 32, GammaCycles: 1.5, Points: []results.QuantEBWPoint{{Threads: 2, EBWGBps: 60, Limit: "memory"}}},
		}},
	}
	m, err := FromProfile(p, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Targets[0].EffectiveGWeightsPerS; math.Abs(got["int1"]-26/0.1875) > 1e-9 || math.Abs(got["q8_0"]-60/(34.0/32)) > 1e-9 {
		t.Fatalf("effective bandwidth %v", got)
	}
	arch := Arch{Name: "x", Hidden: 1024, Intermediate: 3072, Layers: 1, Heads: 8, KVHeads: 8, HeadDim: 128, Vocab: 1000}
	for _, tc := range []struct {
		dtype string
		gbps  float64
	}{{"int1", 26}, {"q8_0", 60}} {
		a, err := Analyze(m, arch, Request{Phase: "decode", Batch: 1, Tokens: 1, Context: 128, Weight: tc.dtype, Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}, "fp32")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range a.Layers[0].Ops {
			if o.Name != "gate_proj" {
				continue
			}
			bpw, _ := DTypeBytes(tc.dtype)
			kb := map[string]float64{"int1": 0.1875, "q8_0": 34.0 / 32}[tc.dtype]
			want := o.Bytes.Weights/bpw*kb/(tc.gbps*1e9) + (o.Bytes.Total()-o.Bytes.Weights)/60e9
			if tc.dtype == "q8_0" { // memory-bound: Place's own time stands
				want = o.Bytes.Total() / 60e9
			}
			if math.Abs(o.Time-want) > 1e-9*want {
				t.Errorf("%s gate_proj: %.3g s, want %.3g (weights at %v GB/s)", tc.dtype, o.Time, want, tc.gbps)
			}
			if (tc.dtype == "int1") != strings.Contains(o.Note, "effective rate") {
				t.Errorf("%s gate_proj note %q", tc.dtype, o.Note)
			}
		}
	}
}
