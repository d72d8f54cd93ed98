package engine

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/numa"
)

// numaConfig is the small model of the NUMA tests: 2 layers, shapes whose
// weight matrices are whole pages per worker's share on up to 4 workers,
// 4 query and 4 KV heads (so tp degrees 1, 2 and 4 divide them).
func numaConfig() Config {
	return Config{Name: "tiny-numa", Dim: 256, Intermediate: 768, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 64, Vocab: 512,
		MaxSeq: 64, RoPETheta: 1e4, RoPELayout: 1, RMSEps: 1e-5}
}

// numaRun runs a fixed workload on a Model made with o: slot 0 prefills 9
// tokens, slot 1 prefills 5, then 3 batched decode steps of both slots; it
// returns every logits row it got (prefill's last row, each decode row)
// and the Model's NUMA placement (nil under os), sampled while its Batch
// is live.
func numaRun(t testing.TB, w *Weights, o Options) ([]float32, []NUMAPlacement) {
	t.Helper()
	m, err := New(w, o)
	if err != nil {
		t.Fatalf("New(numa %q): %v", o.NUMA, err)
	}
	defer m.Close()
	b, err := m.NewBatch(2, 32)
	if err != nil {
		t.Fatal(err)
	}
	V := w.Config.Vocab
	tok := func(i int) int { return (i*37 + 11) % V }
	var out []float32
	for s, n := range []int{9, 5} {
		p := make([]int, n)
		for i := range p {
			p[i] = tok(i + 7*s)
		}
		l, err := b.Prefill(s, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l...)
	}
	for step := range 3 {
		l, err := b.Decode([]int{0, 1}, []int{tok(100 + step), tok(200 + step)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l...)
	}
	pl, err := m.NUMAPlacement(0)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	return out, pl
}

// numaCheckLogits checks got against want within the fp32 reduction-order
// tolerance, relative to the largest logit.
func numaCheckLogits(t testing.TB, name string, got, want []float32) {
	t.Helper()
	d, at := maxAbsDiff(got, want)
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	if d > 1e-5*max(scale, 1) {
		t.Errorf("%s: logits differ from os by %g at %d (largest |logit| %g)", name, d, at, scale)
	}
}

// TestNUMAPoliciesOneNode: on this machine's node(s) interleave and local
// run, give the same logits as each other bit for bit, as os within the
// fp32 tolerance, and put every sampled page where it was meant to go.
func TestNUMAPoliciesOneNode(t *testing.T) {
	if err := numa.Available(); err != nil {
		t.Skipf("no NUMA memory policy here: %v", err)
	}
	w, err := Synthetic(numaConfig(), 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	threads := min(len(allowedCPUs(t)), 2)
	ref, pl := numaRun(t, w, Options{Threads: threads})
	if pl != nil {
		t.Errorf("os: placement %v, want nil", pl)
	}
	got := map[NUMAPolicy][]float32{}
	for _, p := range []NUMAPolicy{NUMAInterleave, NUMALocal} {
		l, pl := numaRun(t, w, Options{Threads: threads, NUMA: p})
		got[p] = l
		numaCheckLogits(t, string(p), l, ref)
		var classes []string
		for _, c := range pl {
			classes = append(classes, c.Tensor)
			if c.Sampled == 0 || c.Fraction != 1 {
				t.Errorf("%s: %s: %d of %d sampled pages where intended (%s), pages per node %v",
					p, c.Tensor, c.OnIntended, c.Sampled, c.Intended, c.PagesPerNode)
			}
		}
		want := append(opOrder(), numaKV, numaAct)
		if !slices.Equal(classes, want) {
			t.Errorf("%s: placement classes %v, want %v", p, classes, want)
		}
	}
	if d, at := maxAbsDiff(got[NUMAInterleave], got[NUMALocal]); d != 0 {
		t.Errorf("interleave and local logits differ by %g at %d, want identical", d, at)
	}
}

// TestNUMAErrors: what interleave and local cannot run with is one error
// line naming the policy.
func TestNUMAErrors(t *testing.T) {
	w, err := Synthetic(numaConfig(), 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	q, err := SyntheticAs(numaConfig(), 1, 5, "q8_0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w    *Weights
		o    Options
		want string
	}{
		{w, Options{NUMA: NUMALocal, Placement: PlaceMatrix}, "engine: NUMA policy local: needs placement cores (have matrix)"},
		{w, Options{NUMA: NUMAInterleave, PackPerCall: true}, "engine: NUMA policy interleave: not with the packing ablation"},
		{w, Options{NUMA: NUMALocal, WeightLayout: LayoutOWR}, "engine: NUMA policy local: not with weight layout owr"},
		{q, Options{NUMA: NUMALocal}, "engine: NUMA policy local: needs fp32 weights (have q8_0)"},
		{w, Options{NUMA: "remote"}, `engine: NUMA policy "remote": want one of os, interleave, local, tp`},
	} {
		m, err := New(tc.w, tc.o)
		if err == nil {
			m.Close()
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%+v) error = %v; want one line starting %q", tc.o, err, tc.want)
		}
	}
	// A kernel without mbind: New fails naming the policy and why.
	if err := numa.Available(); errors.Is(err, numa.ErrNoNUMA) {
		_, err := New(w, Options{NUMA: NUMALocal})
		if err == nil || !strings.HasPrefix(err.Error(), "engine: NUMA policy local: ") {
			t.Errorf("New(local) without NUMA: error %v", err)
		}
	}
}

// TestNUMAFree: Close unmaps every buffer of the allocator; a Batch's are
// unmapped when it is collected.
func TestNUMAFree(t *testing.T) {
	if err := numa.Available(); err != nil {
		t.Skipf("no NUMA memory policy here: %v", err)
	}
	w, err := Synthetic(numaConfig(), 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(w, Options{Threads: 1, NUMA: NUMAInterleave})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		m.numa.mu.Lock()
		defer m.numa.mu.Unlock()
		return len(m.numa.bufs)
	}
	weights := count()
	if want := 7 + 1; weights != want {
		t.Errorf("%d buffers after New, want %d (7 linears and the LM head)", weights, want)
	}
	b, err := m.NewBatch(3, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prefill(0, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got, want := count(), weights+3*2+10; got != want {
		t.Errorf("%d buffers with a batch, want %d (3 slots' K and V, 10 activation buffers)", got, want)
	}
	b = nil
	// The pool's workers keep their last task (a closure over the batch)
	// until the next: give them another.
	if _, err := m.TimeLinear(0, OpQProj, 1, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20 && count() != weights; i++ {
		runtime.GC()
	}
	if got := count(); got != weights {
		t.Errorf("%d buffers after the batch was collected, want %d", got, weights)
	}
	m.Close()
	if got := count(); got != 0 {
		t.Errorf("%d buffers after Close, want 0", got)
	}
	if _, err := m.NUMAPlacement(0); err == nil {
		t.Error("NUMAPlacement after Close: no error")
	}
}
