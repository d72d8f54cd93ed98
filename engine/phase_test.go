package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels"
)

// greedyTokens prefills prompt into two slots and decodes steps tokens
// greedily for both together, returning every token drawn.
func greedyTokens(t *testing.T, m *Model, prompt []int, steps int) []int {
	t.Helper()
	b, err := m.NewBatch(2, len(prompt)+steps)
	if err != nil {
		t.Fatal(err)
	}
	toks := make([]int, 2)
	for s := range toks {
		if toks[s], err = b.PrefillNext(s, prompt[s:], nil); err != nil {
			t.Fatal(err)
		}
	}
	out := slices.Clone(toks)
	for range steps {
		if err := b.DecodeNext([]int{0, 1}, toks, toks, nil); err != nil {
			t.Fatal(err)
		}
		out = append(out, toks...)
	}
	return out
}

// TestPhaseConfigs: prefill on 2 CPUs and decode on 1 draws the same
// greedy tokens as the default run on every worker, and each phase
// reports the workers that ran it.
func TestPhaseConfigs(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 allowed CPUs (have %v, %v)", cpus, err)
	}
	c := Config{Name: "tiny-phase", Dim: 128, Intermediate: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Vocab: 300, MaxSeq: 64,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true}
	w, err := Synthetic(c, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{5, 17, 250, 3, 99, 42, 7, 8, 120, 64, 11, 200, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	base, err := New(w, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := greedyTokens(t, base, prompt, 6)
	base.Close()

	m, err := New(w, Options{PrefillCPUs: cpus[:2], DecodeCPUs: cpus[1:2]})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := greedyTokens(t, m, prompt, 6); !slices.Equal(got, want) {
		t.Errorf("per-phase tokens %v, want the default run's %v", got, want)
	}
	if p, d := m.PhaseThreads(Prefill), m.PhaseThreads(Decode); p != 2 || d != 1 || m.Threads != 2 {
		t.Errorf("threads: prefill %d, decode %d, pool %d; want 2, 1, 2", p, d, m.Threads)
	}
	if got := m.PhaseCPUs(Decode); !slices.Equal(got, cpus[1:2]) {
		t.Errorf("decode CPUs %v, want %v", got, cpus[1:2])
	}
	// Worker 0 (the master) is on the CPU both phases share.
	if m.CPUs()[0] != cpus[1] && m.CPUs()[0] != -1 {
		t.Errorf("worker 0 on CPU %d, want %d (in both configurations)", m.CPUs()[0], cpus[1])
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "decode on 1 workers") {
		t.Errorf("notes %q: want the per-phase configurations named", m.Notes)
	}
}

func TestPhaseConfigsBad(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Skip(err)
	}
	c := Config{Name: "tiny-phase", Dim: 32, Intermediate: 64, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 16, Vocab: 40, MaxSeq: 16,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6}
	w, err := Synthetic(c, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	one := cpus[:1]
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{PrefillCPUs: one}, "give both"},
		{Options{PrefillCPUs: one, DecodeCPUs: one, Threads: 1}, "threads 1"},
		{Options{PrefillCPUs: one, DecodeCPUs: one, Placement: PlaceMixed}, "placement mixed"},
		{Options{PrefillCPUs: one, DecodeCPUs: []int{1 << 20}}, "decode CPUs 1048576: CPUs 1048576 are outside the allowed set"},
		{Options{PrefillCPUs: []int{cpus[0], cpus[0]}, DecodeCPUs: one}, "twice"},
	} {
		m, err := New(w, tc.o)
		if err == nil {
			m.Close()
			t.Errorf("%+v: no error", tc.o)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q: want one line with %q", err, tc.want)
		}
	}
}

func TestSetPhaseCPUs(t *testing.T) {
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Skip(err)
	}
	c := Config{Name: "tiny-phase", Dim: 32, Intermediate: 64, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 16, Vocab: 40, MaxSeq: 16,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6}
	w, err := Synthetic(c, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(w, Options{PrefillCPUs: cpus, DecodeCPUs: cpus})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := greedyTokens(t, m, []int{1, 2, 3, 4, 5}, 3)
	if err := m.SetPhaseCPUs(cpus, cpus[:1]); err != nil {
		t.Fatal(err)
	}
	if got := greedyTokens(t, m, []int{1, 2, 3, 4, 5}, 3); !slices.Equal(got, want) || m.PhaseThreads(Decode) != 1 {
		t.Errorf("after SetPhaseCPUs: tokens %v (want %v), decode threads %d", got, want, m.PhaseThreads(Decode))
	}
	if err := m.SetPhaseCPUs(cpus, []int{1 << 20}); err == nil || !strings.Contains(err.Error(), "not among the pool's CPUs") {
		t.Errorf("a CPU outside the pool: %v", err)
	}
}
