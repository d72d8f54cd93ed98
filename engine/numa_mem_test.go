package engine

import (
	"errors"
	"fmt"
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
// returns every logits row it got (prefill's last row, each decode row),
// the Model's NUMA placement (nil under os), sampled while its Batch is
// live, and its tensor-parallel groups (nil but under tp).
func numaRun(t testing.TB, w *Weights, o Options) ([]float32, []NUMAPlacement, *TPInfo) {
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
	return out, pl, m.TP()
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
	ref, pl, _ := numaRun(t, w, Options{Threads: threads})
	if pl != nil {
		t.Errorf("os: placement %v, want nil", pl)
	}
	got := map[NUMAPolicy][]float32{}
	for _, p := range []NUMAPolicy{NUMAInterleave, NUMALocal} {
		l, pl, _ := numaRun(t, w, Options{Threads: threads, NUMA: p})
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

// numaCheckTPGroups checks tp's placement report pl against its groups:
// the 7 partitioned weight classes (every group's slices in one row each),
// then for kv_cache and activations one row per group, in group order,
// whose pages were bound to the group's node (TPInfo) and every sampled
// page found there.
func numaCheckTPGroups(t testing.TB, name string, tp *TPInfo, pl []NUMAPlacement) {
	t.Helper()
	if tp == nil {
		t.Fatalf("%s: no TP groups", name)
	}
	var want []string
	for _, c := range opOrder()[:7] {
		want = append(want, c+"/-1")
	}
	for _, c := range []string{numaKV, numaAct} {
		for g := range tp.Groups {
			want = append(want, fmt.Sprintf("%s/%d", c, g))
		}
	}
	var got []string
	for _, c := range pl {
		got = append(got, fmt.Sprintf("%s/%d", c.Tensor, c.TPGroup))
		if c.TPGroup < 0 {
			continue // weights: numaCheckTP (guests) and TestTPNUMAOneNode
		}
		if c.TPGroup >= len(tp.Groups) {
			t.Errorf("%s: %s: group %d of %d", name, c.Tensor, c.TPGroup, len(tp.Groups))
			continue
		}
		node := tp.Groups[c.TPGroup].Node
		if c.Node != node || node < 0 {
			t.Errorf("%s: %s of group %d bound to node %d, want the group's node %d", name, c.Tensor, c.TPGroup, c.Node, node)
		}
		if c.Sampled == 0 || c.OnIntended != c.Sampled || c.PagesPerNode[node] != c.Sampled {
			t.Errorf("%s: %s of group %d: %d of %d sampled pages on its node %d (pages per node %v, intended %s)",
				name, c.Tensor, c.TPGroup, c.PagesPerNode[node], c.Sampled, node, c.PagesPerNode, c.Intended)
		}
		if wantI := fmt.Sprintf("bound to TP group %d's node %d", c.TPGroup, node); c.Intended != wantI {
			t.Errorf("%s: %s of group %d: intended %q, want %q", name, c.Tensor, c.TPGroup, c.Intended, wantI)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: placement rows %v, want %v", name, got, want)
	}
}

// TestTPNUMAOneNode: under tp on this machine's node(s), with one group
// and with two, every group's KV caches and activations come from the
// node-bound allocator, reported per group with every sampled page on the
// group's node, the weights too, and the logits are those of os within
// the fp32 tolerance.
func TestTPNUMAOneNode(t *testing.T) {
	if err := numa.Available(); err != nil {
		t.Skipf("no NUMA memory policy here: %v", err)
	}
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	w, err := Synthetic(numaConfig(), 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	ref, _, _ := numaRun(t, w, Options{Threads: 2})
	for _, d := range []int{1, 2} {
		for _, sync := range []SyncMode{SyncA, SyncB} {
			name := fmt.Sprintf("tp degree %d sync %s", d, sync)
			l, pl, tp := numaRun(t, w, Options{Threads: 2, NUMA: NUMATP, TPDegree: d, Sync: sync})
			numaCheckLogits(t, name, l, ref)
			numaCheckTPGroups(t, name, tp, pl)
			for _, c := range pl {
				if c.Sampled == 0 || c.Fraction != 1 {
					t.Errorf("%s: %s: %d of %d sampled pages where intended (%s), pages per node %v",
						name, c.Tensor, c.OnIntended, c.Sampled, c.Intended, c.PagesPerNode)
				}
			}
		}
	}
}

// TestTPNUMAFree: under tp, a Batch's KV caches and activations are
// unmapped when it is collected, a regrow unmaps the old activations, and
// Close unmaps the weights.
func TestTPNUMAFree(t *testing.T) {
	if err := numa.Available(); err != nil {
		t.Skipf("no NUMA memory policy here: %v", err)
	}
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	w, err := Synthetic(numaConfig(), 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(w, Options{Threads: 2, NUMA: NUMATP, TPDegree: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m.tp.mem == nil {
		t.Fatalf("tp without its allocator; notes %v", m.Notes)
	}
	mem := m.tp.mem
	count := func() (all, acts int) {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		for _, b := range mem.bufs {
			if b.class == numaAct {
				acts++
			}
		}
		return len(mem.bufs), acts
	}
	weights, _ := count()
	if want := 2 * 7; weights != want { // Synthetic(..., 1, ...): one layer
		t.Errorf("%d buffers after New, want %d (2 groups × 7 linears)", weights, want)
	}
	b, err := m.NewBatch(3, 16)
	if err != nil {
		t.Fatal(err)
	}
	kv := 2 * 3 * 2 // groups × slots × (K, V)
	if got, _ := count(); got != weights+kv {
		t.Errorf("%d buffers with a batch, want %d (+%d KV caches)", got, weights+kv, kv)
	}
	for _, p := range [][]int{{1, 2, 3}, {4, 5, 6, 7, 8, 9}} { // the second regrows
		if _, err := b.Prefill(0, p); err != nil {
			t.Fatal(err)
		}
		if got, acts := count(); got != weights+kv+2*10 || acts != 2*10 {
			t.Errorf("prefill of %d: %d buffers (%d activations), want %d (+20 activations: 10 per group)", len(p), got, acts, weights+kv+20)
		}
	}
	b = nil
	// The pool's workers keep their last task (a closure over the batch)
	// until the next: give them another.
	if _, err := m.TimeLinear(0, OpQProj, 1, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if n, _ := count(); n == weights {
			break
		}
		runtime.GC()
	}
	if got, _ := count(); got != weights {
		t.Errorf("%d buffers after the batch was collected, want %d", got, weights)
	}
	m.Close()
	if got, _ := count(); got != 0 {
		t.Errorf("%d buffers after Close, want 0", got)
	}
}

// TestTPHeapFallback: without tp's allocator (a kernel without a NUMA
// memory policy, or groups whose nodes are unknown) the groups' KV caches
// and activations are Go slices, nothing is reported, and the logits are
// those of os within the fp32 tolerance.
func TestTPHeapFallback(t *testing.T) {
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	c := tpConfigs()[1]
	w := refWeights(c, 7)
	toks := make([][]int, 3)
	for s := range toks {
		toks[s] = make([]int, 48)
		for i := range toks[s] {
			toks[s][i] = (i*7 + s*3) % c.Vocab
		}
	}
	ref, err := New(w, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := tpRunScript(t, ref, toks)
	ref.Close()
	m, err := New(w, Options{Threads: 2, NUMA: NUMATP, TPDegree: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mem := m.tp.mem
	m.tp.mem = nil // the Batch's caches and activations on the Go heap (the weights stay where they are)
	defer func() { m.tp.mem = mem }()
	got := tpRunScript(t, m, toks)
	for call := range want {
		numaCheckLogits(t, fmt.Sprintf("call %d", call), got[call], want[call])
	}
	if pl, err := m.NUMAPlacement(0); err != nil || pl != nil {
		t.Errorf("NUMAPlacement without the allocator: %v, %v; want nil, nil", pl, err)
	}
}
