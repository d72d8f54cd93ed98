package roofline

import (
	"math"
	"strings"
	"testing"
)

// TestNUMABandwidth: the policies' roofs on ArcLight Table 1 (the shipped
// kunpeng-920 profile), worked by hand from the formulas of NUMABandwidth.
func TestNUMABandwidth(t *testing.T) {
	k, err := Published("kunpeng-920")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		policy string
		n      int
		want   float64
	}{
		{NUMAOS, 1, 102}, {NUMALocal, 1, 102}, {NUMAInterleave, 1, 102},
		{NUMAOS, 2, 52},         // node 1 reads half the weights from node 0 at 26
		{NUMALocal, 2, 2 * 102}, // min(102, 103) per node
		{NUMAInterleave, 2, 1 / ((1.0/102 + 1.0/26) / 4)}, // node 0 is the slower
		{NUMAOS, 4, 4 * 23}, // node 3 reads a quarter from node 0 at 23
		{NUMATP, 4, 4 * 101},
		{NUMAInterleave, 4, 1 / ((1.0/23 + 1.0/22 + 1.0/26 + 1.0/101) / 16)}, // node 3 is the slowest
	} {
		got, err := k.NUMABandwidth(c.policy, c.n)
		if err != nil || math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%s on %d nodes: %g GB/s (%v), want %g", c.policy, c.n, got, err, c.want)
		}
	}
	for _, c := range []struct {
		policy string
		n      int
		want   string
	}{{"spread", 2, `NUMA policy "spread"`}, {NUMALocal, 5, "5 NUMA nodes: machine kunpeng-920 has 4"}, {NUMALocal, 0, "want 1..4"}} {
		if _, err := k.NUMABandwidth(c.policy, c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d: %v, want %q", c.policy, c.n, err, c.want)
		}
	}
	m4, _ := Published("m4-pro")
	if _, err := m4.NUMABandwidth(NUMALocal, 1); err == nil || !strings.Contains(err.Error(), "no NUMA matrix") {
		t.Errorf("m4-pro: %v", err)
	}
}

// TestNUMAPredict: tp's Sync A pays a barrier per operator, Sync B per
// Gather; the speedups are relative to os; prefill is refused.
func TestNUMAPredict(t *testing.T) {
	k, _ := Published("kunpeng-920")
	k.FixedCosts = &FixedCosts{Points: []FixedCost{{Threads: 1, CallSeconds: 1e-7}, {Threads: 192, CallSeconds: 5e-6}}}
	arch := Arch{Name: "t", Dim: 1024, Intermediate: 3072, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 128, Vocab: 1000}
	r := Request{Phase: Decode, Batch: 1, Tokens: 1, Context: 64, Weight: "q4_0", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
	ps, notes, err := k.NUMAPredict(arch, r, "fp32", 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 5 || ps[0].Policy != NUMAOS || ps[0].Speedup != 1 || ps[3].Sync != "a" || ps[4].Sync != "b" {
		t.Fatalf("predictions %+v", ps)
	}
	if !(ps[3].SyncS > ps[4].SyncS && ps[4].SyncS == 2*4*5e-6) || !(ps[4].TokPerS > ps[3].TokPerS) {
		t.Errorf("sync a %g s, b %g s (want b = 8 barriers of 5 µs)", ps[3].SyncS, ps[4].SyncS)
	}
	if !(ps[2].Speedup > ps[1].Speedup && ps[1].Speedup > 1) {
		t.Errorf("speedups %+v", ps)
	}
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, ";"), "192 threads") {
		t.Errorf("notes %v", notes)
	}
	r.Phase = Prefill
	if _, _, err := k.NUMAPredict(arch, r, "fp32", 2); err == nil || !strings.Contains(err.Error(), "decode only") {
		t.Errorf("prefill: %v", err)
	}
}
