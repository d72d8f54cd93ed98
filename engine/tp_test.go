package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels"
)

// tpConfigs are the small models of the tp tests: GQA 2:1 with Llama's
// RoPE, Qwen3's QK-norm and half-split RoPE with tied embeddings, and a
// sliding window.
func tpConfigs() []Config {
	llama := Config{Name: "tp-llama-gqa", Dim: 32, Intermediate: 48, Layers: 2, Heads: 8, KVHeads: 4, HeadDim: 8, Vocab: 40, MaxSeq: 64,
		RoPETheta: 10000, RMSEps: 1e-5}
	qwen := Config{Name: "tp-qwen-qknorm", Dim: 32, Intermediate: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 64,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, TiedEmbeddings: true, QKNorm: true}
	window := llama
	window.Name, window.SlidingWindow = "tp-llama-window", 7
	return []Config{llama, qwen, window}
}

// tpRunScript runs the same requests on m: a prefill of 40 tokens into
// slot 0 (two attention row blocks), of 5 into slot 1 and 2 into slot 2
// (logits of every position), then 3 batched decode steps of all slots
// and one of slot 1 alone. It returns the logits of every call in order.
func tpRunScript(t *testing.T, m *Model, toks [][]int) [][]float32 {
	t.Helper()
	b, err := m.NewBatch(3, 64)
	if err != nil {
		t.Fatal(err)
	}
	lens := []int{40, 5, 2}
	var out [][]float32
	for s, n := range lens {
		got, err := b.PrefillAll(s, toks[s][:n])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), got...))
	}
	slots := []int{2, 0, 1}
	for step := range 3 {
		tk := make([]int, len(slots))
		for i, s := range slots {
			tk[i] = toks[s][lens[s]+step]
		}
		got, err := b.Decode(slots, tk)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), got...))
	}
	got, err := b.Decode([]int{1}, []int{toks[1][lens[1]+3]})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, append([]float32(nil), got...))
}

// TestTPMatchesSingleGroup: policy tp with degree 2 (both sync modes,
// packed and row-major KV caches) gives the logits of the single-group
// engine within refTightTol of the logits' scale (the same operations;
// only o_proj's and down_proj's sums are split into two partial sums
// added in another order) for prefill, batched decode and decode, and
// those of the float64 reference within refTol.
func TestTPMatchesSingleGroup(t *testing.T) {
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	for ci, c := range tpConfigs() {
		w := refWeights(c, uint64(100+ci))
		rng := rand.New(rand.NewPCG(uint64(ci), 7))
		toks := make([][]int, 3)
		for s := range toks {
			toks[s] = make([]int, 48)
			for i := range toks[s] {
				toks[s][i] = rng.IntN(c.Vocab)
			}
		}
		ref, err := New(w, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := tpRunScript(t, ref, toks)
		ref.Close()
		ref64, _ := refForward(w, toks[0][:40])
		opts := []Options{
			{Threads: 2, NUMA: NUMATP, TPDegree: 2, Sync: SyncA},
			{Threads: 2, NUMA: NUMATP, TPDegree: 2, Sync: SyncB},
			{Threads: 2, NUMA: NUMATP, TPDegree: 2, KVPackPerCall: true},
			{Threads: 2, NUMA: NUMATP, TPDegree: 1},
		}
		// Degree 4 where the CPUs allow 4 workers (the engine pins one
		// worker per CPU) and the heads divide.
		if len(allowedCPUs(t)) >= 4 && checkTPDegree(c, 4) == nil {
			opts = append(opts, Options{Threads: 4, NUMA: NUMATP, TPDegree: 4, Sync: SyncA}, Options{Threads: 4, NUMA: NUMATP, TPDegree: 4, Sync: SyncB})
		}
		for _, o := range opts {
			name := c.Name + "/d" + string(rune('0'+o.TPDegree)) + "-sync-" + string(o.Sync)
			if o.KVPackPerCall {
				name += "-kvrowmajor"
			}
			t.Run(name, func(t *testing.T) {
				m, err := New(w, o)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				info := m.TP()
				if info == nil || info.Degree != o.TPDegree || len(info.Groups) != o.TPDegree {
					t.Fatalf("TP() = %+v, want degree %d", info, o.TPDegree)
				}
				if o.Sync == "" && info.Sync != SyncB {
					t.Errorf("default sync %q, want b", info.Sync)
				}
				got := tpRunScript(t, m, toks)
				V := c.Vocab
				for call := range want {
					for r := 0; r < len(want[call])/V; r++ {
						wr, gr := want[call][r*V:(r+1)*V], got[call][r*V:(r+1)*V]
						scale := 1e-3
						for _, v := range wr {
							scale = max(scale, float64(abs32(v)))
						}
						if d, at := maxAbsDiff(gr, wr); d > refTightTol*scale {
							t.Errorf("call %d row %d: max abs logit difference %.3g at %d, want ≤ %.3g", call, r, d, at, refTightTol*scale)
						}
					}
				}
				for pos, row := range ref64 {
					g := got[0][pos*V : (pos+1)*V]
					s := refScale(row)
					for j, v := range row {
						if d := abs64(float64(g[j]) - v); d > refTol*s {
							t.Errorf("prefill position %d logit %d: %v, float64 reference %v", pos, j, g[j], v)
							break
						}
					}
				}
			})
		}
	}
}

func abs32(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

func abs64(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestTPTimings: under tp the operator table names the Gathers (in place
// of the residual adds), each with its own row per layer and phase, and
// counts each group's linear calls; TimeLinear runs a partitioned
// operator.
func TestTPTimings(t *testing.T) {
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	c := tpConfigs()[0]
	m, err := New(refWeights(c, 1), Options{Threads: 2, NUMA: NUMATP, TPDegree: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := m.NewBatch(1, 32)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prefill(0, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decode([]int{0}, []int{4}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, tm := range b.Timings() {
		seen[string(tm.Phase)+" "+tm.Op]++
	}
	for _, ph := range []string{"prefill", "decode"} {
		for _, op := range []string{OpAttnGather, OpFFNGather, OpOProj, OpDownProj, OpAttention} {
			if seen[ph+" "+op] != c.Layers {
				t.Errorf("%s %s: %d layer rows, want %d", ph, op, seen[ph+" "+op], c.Layers)
			}
		}
		for _, op := range []string{OpAttnResidual, OpFFNResidual} {
			if seen[ph+" "+op] != 0 {
				t.Errorf("%s %s timed under tp (the Gathers replace it)", ph, op)
			}
		}
	}
	// 7 linears per layer per group per call, plus the LM head once.
	if u := b.Use(); len(u) == 0 || u[0].Calls != 2*(7*2*c.Layers+1) {
		t.Errorf("Use() = %+v, want %d cores calls", u, 2*(7*2*c.Layers+1))
	}
	for _, op := range []string{OpQProj, OpOProj, OpDownProj, OpLMHead} {
		if s, err := m.TimeLinear(0, op, 4, 2); err != nil || s <= 0 {
			t.Errorf("TimeLinear(%s) = %v, %v", op, s, err)
		}
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "numa tp: degree 2, sync b; group 0: CPUs") {
		t.Errorf("notes %q: no tp line", m.Notes)
	}
}

// TestTPErrors: an impossible degree or an unsupported combination is one
// error line naming it.
func TestTPErrors(t *testing.T) {
	c := tpConfigs()[0]
	w := refWeights(c, 2)
	moe := refConfigs()[len(refConfigs())-1]
	for _, x := range refConfigs() {
		if x.Experts > 0 {
			moe = x
			break
		}
	}
	q := refWeights(c, 3)
	if err := q.Quantize("q8_0"); err != nil {
		t.Fatal(err)
	}
	threads := min(2, len(allowedCPUs(t)))
	for _, tc := range []struct {
		w    *Weights
		o    Options
		want string
	}{
		{w, Options{NUMA: NUMATP, TPDegree: 3}, "engine: TP degree 3: must divide the 8 query heads and 4 KV heads (allowed: 1, 2, 4)"},
		{w, Options{NUMA: NUMATP, TPDegree: 8}, "engine: TP degree 8: must divide the 8 query heads and 4 KV heads (allowed: 1, 2, 4)"},
		{w, Options{Threads: threads, NUMA: NUMATP, TPDegree: 4}, "engine: TP degree 4: must be between 1 and the " + string(rune('0'+threads)) + " threads"},
		{w, Options{NUMA: NUMATP, Placement: PlaceMatrix}, "engine: NUMA policy tp: unsupported with placement matrix (cores only)"},
		{w, Options{NUMA: NUMATP, PackPerCall: true, ForcePipeline: true}, "engine: NUMA policy tp: unsupported with the packing ablation, the forced attention pipeline"},
		{q, Options{NUMA: NUMATP}, "engine: NUMA policy tp: unsupported with weight format q8_0 (fp32 only)"},
		{refWeights(moe, 4), Options{NUMA: NUMATP}, "engine: NUMA policy tp: unsupported with MoE layers (dense only)"},
		{w, Options{NUMA: NUMATP, Sync: "c"}, "engine: sync mode \"c\": want a"},
	} {
		m, err := New(tc.w, tc.o)
		if err == nil {
			m.Close()
			t.Errorf("%+v: no error, want %q", tc.o, tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %q, want one line starting %q", tc.o, err, tc.want)
		}
	}
}

// TestTPPartition: degree 0 is one group per node; the node count groups
// by node; another degree cuts consecutive near-equal shares, a group's
// node -1 where they span nodes; a degree over the threads is an error.
func TestTPPartition(t *testing.T) {
	cpus := []int{0, 1, 2, 3, 4, 5}
	nodes := map[int]int{0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1}
	for _, tc := range []struct {
		d     int
		parts [][]int
		nodes []int
	}{
		{0, [][]int{{0, 1, 2}, {3, 4, 5}}, []int{0, 1}},
		{2, [][]int{{0, 1, 2}, {3, 4, 5}}, []int{0, 1}},
		{3, [][]int{{0, 1}, {2, 3}, {4, 5}}, []int{0, -1, 1}},
		{1, [][]int{{0, 1, 2, 3, 4, 5}}, []int{-1}},
		{6, [][]int{{0}, {1}, {2}, {3}, {4}, {5}}, []int{0, 0, 0, 1, 1, 1}},
	} {
		parts, ns, err := tpPartition(cpus, nodes, tc.d)
		if err != nil || !reflect.DeepEqual(parts, tc.parts) || !reflect.DeepEqual(ns, tc.nodes) {
			t.Errorf("degree %d: %v %v %v, want %v %v", tc.d, parts, ns, err, tc.parts, tc.nodes)
		}
	}
	if _, _, err := tpPartition(cpus, nodes, 7); err == nil || err.Error() != "engine: TP degree 7: must be between 1 and the 6 threads" {
		t.Errorf("degree 7: %v", err)
	}
	// Unknown nodes: one group for degree 0, node -1.
	if parts, ns, err := tpPartition([]int{0, 1}, nil, 0); err != nil || len(parts) != 1 || ns[0] != -1 {
		t.Errorf("no nodes: %v %v %v", parts, ns, err)
	}
}

// TestCPUNodes reads node<N>/cpulist files.
func TestCPUNodes(t *testing.T) {
	dir := t.TempDir()
	for n, list := range []string{"0-1,4\n", "2-3\n"} {
		p := filepath.Join(dir, "node"+string(rune('0'+n)))
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "cpulist"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "power"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := cpuNodes(dir)
	want := map[int]int{0: 0, 1: 0, 4: 0, 2: 1, 3: 1}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("cpuNodes = %v, %v, want %v", got, err, want)
	}
	if _, err := cpuNodes(t.TempDir()); err == nil {
		t.Error("empty directory: no error")
	}
}

// TestTPDefaultDegree: degree 0 is one group per NUMA node of the Model's
// CPUs (sysfs), each group on one node.
func TestTPDefaultDegree(t *testing.T) {
	nodes, err := cpuNodes(sysNodeDir)
	if err != nil {
		t.Skip(err)
	}
	c := tpConfigs()[0]
	m, err := New(refWeights(c, 5), Options{NUMA: NUMATP})
	if err != nil {
		if strings.Contains(err.Error(), "must divide") {
			t.Skip(err) // this machine's node count does not divide the heads
		}
		t.Fatal(err)
	}
	defer m.Close()
	want := map[int]bool{}
	for _, cpu := range m.CPUs() {
		want[nodes[cpu]] = true
	}
	info := m.TP()
	if info.Degree != len(want) {
		t.Errorf("degree %d, want %d (the nodes of CPUs %v)", info.Degree, len(want), m.CPUs())
	}
	for g, gr := range info.Groups {
		for _, cpu := range gr.CPUs {
			if nodes[cpu] != gr.Node {
				t.Errorf("group %d (node %d) has CPU %d of node %d", g, gr.Node, cpu, nodes[cpu])
			}
		}
	}
	if _, err := tpRunOne(m); err != nil {
		t.Fatal(err)
	}
}

// tpRunOne prefills 4 tokens and decodes one.
func tpRunOne(m *Model) ([]float32, error) {
	s, err := m.NewSession(16)
	if err != nil {
		return nil, err
	}
	if _, err := s.Prefill([]int{1, 2, 3, 4}); err != nil {
		return nil, err
	}
	return s.Decode(5)
}

// TestTPContext: a cancelled Context stops a tp forward call with its
// error.
func TestTPContext(t *testing.T) {
	if len(allowedCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs")
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := New(refWeights(tpConfigs()[0], 6), Options{Threads: 2, NUMA: NUMATP, TPDegree: 2, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := tpRunOne(m); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := tpRunOne(m); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", err)
	}
}

// BenchmarkTPDecodeStep: one decode step of one sequence at position 64
// on 2 groups (2 threads), Sync A vs Sync B (ArcLight Fig. 9), on a
// synthetic GQA model of 4 layers, Dim 512.
func BenchmarkTPDecodeStep(b *testing.B) {
	if cpus, err := affinity.Allowed(); err != nil || len(cpus) < 2 {
		b.Skip("needs 2 CPUs")
	}
	c := Config{Name: "tp-bench", Dim: 512, Intermediate: 1536, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 64, Vocab: 512, MaxSeq: 128,
		RoPETheta: 10000, RMSEps: 1e-5}
	w := refWeights(c, 9)
	for _, sync := range []SyncMode{SyncA, SyncB} {
		b.Run("sync-"+string(sync), func(b *testing.B) {
			m, err := New(w, Options{Threads: 2, NUMA: NUMATP, TPDegree: 2, Sync: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			s, err := m.NewSession(c.MaxSeq)
			if err != nil {
				b.Fatal(err)
			}
			prompt := make([]int, 64)
			for i := range prompt {
				prompt[i] = i % c.Vocab
			}
			err = m.Hold(func() error {
				for b.Loop() {
					b.StopTimer()
					s.Reset()
					if _, err := s.Prefill(prompt); err != nil {
						return err
					}
					b.StartTimer()
					if _, err := s.Decode(7); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
