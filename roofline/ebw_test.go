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
	arch := Arch{Name: "x", Dim: 1024, Intermediate: 3072, Layers: 1, Heads: 8, KVHeads: 8, HeadDim: 128, Vocab: 1000}
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

// TestPublishedQuantRoof reproduces the low-bit paper's §IV-B modeled
// totals from the published profiles' γ_P, γ_E and β per core type: 1-bit
// on LNL ≈37 GB/s (6.5 per P core with B/γ printed as 1.7, 2.92 per E
// core), 2-bit on LNL and ARL at the full read bandwidth, 1-bit on ARLH
// ≈55 GB/s; and `--dtype int1` on LNL predicts the GEMVs up-convert-bound
// at that roof.
func TestPublishedQuantRoof(t *testing.T) {
	lnl, err := Published("lnl")
	if err != nil {
		t.Fatal(err)
	}
	cores := lnl.Targets[0]
	q, ok := cores.QuantRoof("int1")
	if !ok {
		t.Fatal("lnl: no int1 roof")
	}
	if !near(q.GBps, 37, 0.5) || q.Limit != results.LimitUpConvert {
		t.Errorf("LNL int1 roof %.2f GB/s (%s), paper ≈37 (up-convert)", q.GBps, q.Limit)
	}
	// Per core: 4/2.4 = 1.667 bytes/cycle × 4.1 GHz = 6.36 GiB/s (the
	// paper's 6.5 is 1.7 × 4.1); 4/4.71 × 3.7 GHz = 2.93 (paper 2.92).
	if p, e := q.Types[0], q.Types[1]; p.Name != "P" || !near(p.PerCoreGBps, 6.36, 0.01) || !near(1.7*p.GHz*1e9/GiB, 6.5, 0.01) ||
		e.Name != "E" || !near(e.PerCoreGBps, 2.92, 0.01) || p.Limit != results.LimitUpConvert || e.Limit != results.LimitUpConvert {
		t.Errorf("LNL int1 per core: %+v", q.Types)
	}
	for _, c := range []struct {
		name, format string
		want, tol    float64
		limit        string
	}{
		{"lnl", "int2", 97, 1e-9, results.LimitMemory}, // Σ of the printed β is 97.09: capped
		// ARL's printed β (0.8, 0.95) come from "4 GB/s per core", rounded
		// from 98/24 = 4.08: their sum is 95.9, 2% under the 98 GB/s roof.
		{"arl", "int2", 98, 0.025 * 98, results.LimitMemory},
		{"arlh", "int1", 55, 1, results.LimitUpConvert},
	} {
		m, err := Published(c.name)
		if err != nil {
			t.Fatal(err)
		}
		q, ok := m.Targets[0].QuantRoof(c.format)
		if !ok || !near(q.GBps, c.want, c.tol) || q.Limit != c.limit {
			t.Errorf("%s %s roof %.3f GB/s (%s), want %v (%s)", c.name, c.format, q.GBps, q.Limit, c.want, c.limit)
		}
	}
	arch := Arch{Name: "x", Dim: 2048, Intermediate: 8192, Layers: 1, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 1000}
	for _, c := range []struct {
		dtype  string
		regime Regime
		gbps   float64
	}{{"int1", UpConvertBound, q.GBps}, {"int2", NoCeiling, 97}} {
		a, err := Analyze(lnl, arch, Request{Phase: "decode", Batch: 1, Tokens: 1, Context: 128, Weight: c.dtype, Act: "fp16", KV: "fp16", Routing: Routing{Kind: "uniform"}}, "fp16")
		if err != nil {
			t.Fatal(err)
		}
		if a.QuantRoof == nil || a.QuantRoof.Format != c.dtype {
			t.Fatalf("%s: analysis roof %+v", c.dtype, a.QuantRoof)
		}
		for _, o := range a.Layers[0].Ops {
			if o.Name != "down_proj" {
				continue
			}
			want := o.Bytes.Weights/(c.gbps*1e9) + (o.Bytes.Total()-o.Bytes.Weights)/97e9
			if o.Regime != c.regime || !near(o.Time, want, 1e-9*want) {
				t.Errorf("%s down_proj: %s %.4g s, want %s %.4g s", c.dtype, o.Regime, o.Time, c.regime, want)
			}
		}
	}
}

// Bad core types give one error naming the key; v2 keys in a v1 file are
// rejected.
func TestCoreTypeErrors(t *testing.T) {
	base := `{"schema":"bench.machine/v2","name":"x","targets":[{"name":"cores","kind":"cores","bandwidth_gbps":10,%s}]}`
	for _, c := range []struct{ keys, want string }{
		{`"bytes_per_vector":{"int1":4},"core_types":[{"name":"P","cores":0,"ghz":1,"gamma_cycles":{"int1":2}}]`, "cores 0"},
		{`"bytes_per_vector":{"int1":4},"core_types":[{"name":"P","cores":1,"ghz":1,"gamma_cycles":{"int2":2}}]`, `bytes_per_vector["int2"]`},
		{`"bytes_per_vector":{"int1":4},"core_types":[{"name":"P","cores":1,"ghz":1,"gamma_cycles":{"int1":-2}}]`, `gamma_cycles["int1"] = -2`},
		{`"gb_bytes":1000`, "gb_bytes 1000"},
	} {
		_, err := ParseMachine([]byte(strings.Replace(base, "%s", c.keys, 1)), "f.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.keys, err, c.want)
		}
	}
	v1 := strings.Replace(strings.Replace(base, "%s", `"gb_bytes":1073741824`, 1), "machine/v2", "machine/v1", 1)
	if _, err := ParseMachine([]byte(v1), "f.json"); err == nil || !strings.Contains(err.Error(), "bench.machine/v2") {
		t.Errorf("v1 with v2 keys: %v", err)
	}
}

// A probe profile's quant_ebw becomes one core type, "all", with γ per
// 32 bytes of packed weights, the probed β and the measured GEMV bytes per
// cycle per core: its QuantRoof is the probe's own Eq. 3 total.
func TestProfileCoreType(t *testing.T) {
	p := &results.Profile{Schema: results.SchemaV1,
		Memory: &results.Memory{Levels: []results.LevelBandwidth{{Level: "DRAM", Kernel: "read", Threads: 2, GBps: results.Stat{Median: 60, N: 5}}}},
		Matrix: &results.Matrix{QuantEBW: []results.QuantEBW{
			{Format: "int1", BytesPerWeight: 0.1875, GammaCycles: 9, ClockHz: 3e9, Points: []results.QuantEBWPoint{
				{Threads: 2, BetaBytesPerCycle: 10, EBWBytesPerCycle: 32.0 / 9, EBWGBps: 2 * 32.0 / 9 * 3, Limit: results.LimitUpConvert, MeasuredGBps: 18}}},
		}},
	}
	m, err := FromProfile(p, "probe.json")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Targets[0]
	if len(c.CoreTypes) != 1 || c.CoreTypes[0].Name != "all" || c.CoreTypes[0].Cores != 2 || c.BytesPerVector["int1"] != 32 {
		t.Fatalf("core types %+v, B %v", c.CoreTypes, c.BytesPerVector)
	}
	q, ok := c.QuantRoof("int1")
	if !ok || !near(q.GBps, 2*32.0/9*3, 1e-9) || q.Limit != results.LimitUpConvert || q.Types[0].BetaFrom != "probe" || !near(q.Types[0].Measured, 3, 1e-12) {
		t.Errorf("probe roof %+v", q)
	}
}
