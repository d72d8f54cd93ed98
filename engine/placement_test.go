package engine

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/roofline"
)

// Tolerance kinds of TestPlacements: bf16 weights are compared with the
// fp32 engine on the same weights rounded to bf16 (exactly representable
// in fp32, so only the fp32 summation differs: 1e-3 as for llama2.c);
// int8 (weights and activations quantized per row to 7 bits) changes the
// numbers for real, so it must agree on the argmax with llama2.c wherever
// llama2.c's top-1/top-2 margin is at least 1 logit (that is, wherever a
// quantization error of the size seen here cannot flip a near-tie).
const (
	bf16Tol   = -1
	int8Tol   = -2 // argmax where llama2.c's margin ≥ 2 (7-bit activations)
	argmaxTol = -3 // argmax where llama2.c's margin ≥ 1 (bf16 in part)
)

// margin is the top-1 minus top-2 logit.
func margin(row []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range row {
		switch x := float64(v); {
		case x > a:
			a, b = x, a
		case x > b:
			b = x
		}
	}
	return a - b
}

// roundBF16 returns a copy of w with every matrix rounded to bf16.
func roundBF16(w *Weights) *Weights {
	r := func(s []float32) []float32 {
		o := make([]float32, len(s))
		for i, v := range s {
			o[i] = gemm.BF16ToFloat32(gemm.Float32ToBF16(v))
		}
		return o
	}
	c := *w
	c.Embed = r(w.Embed)
	c.LMHead = r(w.LMHead)
	c.Layers = make([]LayerWeights, len(w.Layers))
	for i, l := range w.Layers {
		l.Wq, l.Wk, l.Wv, l.Wo, l.Gate, l.Up, l.Down = r(l.Wq), r(l.Wk), r(l.Wv), r(l.Wo), r(l.Gate), r(l.Up), r(l.Down)
		c.Layers[i] = l
	}
	return &c
}

// logitsOf runs a teacher-forced prefill of tokens on w under o.
func logitsOf(t *testing.T, w *Weights, o Options, tokens []int) ([]float32, *Model) {
	t.Helper()
	m, err := New(w, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	s, err := m.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.PrefillAll(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return got, m
}

// TestPlacements: every placement, and both ablations, compute the
// teacher-forced logits of stories260K (fp32 within 1e-3 of llama2.c; a
// bf16 backend within bf16Tol), and the mixed split runs on two groups.
func TestPlacements(t *testing.T) {
	ref := loadReference(t)
	mach := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "test", Targets: []roofline.Target{
		{Name: "cores", Kind: roofline.KindCores, BandwidthGBps: 20, CeilingsGFLOPS: map[string]float64{"fp32": 100, "bf16": 100}},
	}}
	for _, c := range []struct {
		name string
		o    Options
		tol  float64
	}{
		{"cores", Options{Placement: PlaceCores}, 1e-3},
		{"matrix", Options{Placement: PlaceMatrix}, matrixTol(t)},
		{"matrix-fp32", Options{Placement: PlaceMatrix, MatrixBackend: "go-fp32"}, 1e-3},
		{"matrix-int8", Options{Placement: PlaceMatrix, MatrixBackend: "go-int8"}, int8Tol},
		// Mixed with an fp32 second backend checks the split exactly; with
		// bf16 each output column is fp32 or bf16 by the split, so only
		// the argmax test applies.
		{"mixed-fp32", Options{Placement: PlaceMixed, Threads: 2, MatrixBackend: "go-fp32"}, 1e-3},
		{"mixed-fp32-packpercall", Options{Placement: PlaceMixed, Threads: 2, MatrixBackend: "go-fp32", PackPerCall: true}, 1e-3},
		{"mixed", Options{Placement: PlaceMixed, Threads: 2}, argmaxTol},
		{"mixed-nopartition", Options{Placement: PlaceMixed, Threads: 2, NoPartition: true}, argmaxTol},
		{"cores-packpercall", Options{Placement: PlaceCores, PackPerCall: true}, 1e-3},
		{"auto", Options{Placement: PlaceAuto, Machine: mach}, 1e-3},
		{"one-thread", Options{Threads: 1}, 1e-3},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.o.Threads > 1 && len(allowedCPUs(t)) < c.o.Threads {
				t.Skipf("needs %d CPUs", c.o.Threads)
			}
			w := loadStories(t)
			got, m := logitsOf(t, w, c.o, ref.input)
			want, what := ref.logits, "llama2.c"
			if c.tol == bf16Tol {
				// The bf16 matrix placement computes on bf16 weights; the
				// embedding table stays fp32 (a gather), and so must the
				// reference's, except where it is the tied LM head.
				bw := roundBF16(w)
				if w.Config.TiedEmbeddings {
					bw.Config.TiedEmbeddings = false
					bw.LMHead = bw.Embed
				}
				bw.Embed = w.Embed
				want, _ = logitsOf(t, bw, Options{}, ref.input)
				what = "fp32 engine on bf16-rounded weights"
			}
			d, at := maxAbsDiff(got, want)
			t.Logf("%s (%s): max |logit - %s| = %.3g; notes %q", c.name, m.Backends(), what, d, m.Notes)
			switch {
			case c.tol == int8Tol || c.tol == argmaxTol:
				need := 1.0
				if c.tol == int8Tol {
					need = 2
				}
				V, same, clear := m.Config.Vocab, 0, 0
				for p := range len(ref.input) {
					row := ref.logits[p*V : (p+1)*V]
					agree := Argmax(got[p*V:(p+1)*V]) == Argmax(row)
					if agree {
						same++
					}
					if margin(row) >= need {
						clear++
						if !agree {
							t.Errorf("position %d: argmax %d, llama2.c %d with margin %.3g", p, Argmax(got[p*V:(p+1)*V]), Argmax(row), margin(row))
						}
					}
				}
				t.Logf("argmax agrees with llama2.c at %d of %d positions (%d with margin ≥ %g)", same, len(ref.input), clear, need)
			case c.tol < 0:
				if d > 1e-3 {
					t.Errorf("max abs logit difference %.3g at position %d token %d: want ≤ 1e-3", d, at/512, at%512)
				}
			case d > c.tol:
				t.Errorf("max abs logit difference %.3g at position %d token %d: want ≤ %g", d, at/512, at%512, c.tol)
			}
			if c.o.Placement == PlaceMixed && m.coresG == nil {
				t.Error("mixed without two groups")
			}
			if c.o.Placement == PlaceAuto {
				p := m.Plan(Prefill, len(ref.input), 1)
				if p[OpQProj] != PlaceCores || p[OpLMHead] != PlaceCores {
					t.Errorf("auto plan on a cores-only machine: %v, want cores", p)
				}
			}
		})
	}
}

// matrixTol is the tolerance of the default matrix target: fp32 (a matrix
// unit's fp32 backend, sme-fp32) within 1e-3 of llama2.c, bf16 weights
// (the second backend on the cores) within bf16Tol.
func matrixTol(t *testing.T) float64 {
	p, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	switch p.Matrix.DType {
	case gemm.FP32:
		return 1e-3
	case gemm.Int8:
		return int8Tol
	}
	return bf16Tol
}

func allowedCPUs(t *testing.T) []int {
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Skipf("no CPU list: %v", err)
	}
	return cpus
}

// TestBatchedDecode: a decode step over several slots at different
// positions gives each slot the logits it gets when decoded alone.
func TestBatchedDecode(t *testing.T) {
	ref := loadReference(t)
	m, err := New(loadStories(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	V := m.Config.Vocab
	b, err := m.NewBatch(3, 64)
	if err != nil {
		t.Fatal(err)
	}
	// Slots 0, 1, 2 hold prompts of 5, 9 and 2 tokens.
	lens := []int{5, 9, 2}
	for s, n := range lens {
		if _, err := b.Prefill(s, ref.input[:n]); err != nil {
			t.Fatal(err)
		}
	}
	slots := []int{2, 0, 1}
	toks := []int{ref.input[2], ref.input[5], ref.input[9]}
	got, err := b.Decode(slots, toks)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range slots {
		if b.Pos(s) != lens[s]+1 {
			t.Errorf("slot %d at position %d, want %d", s, b.Pos(s), lens[s]+1)
		}
		p := lens[s] // the position decoded
		d, _ := maxAbsDiff(got[i*V:(i+1)*V], ref.logits[p*V:(p+1)*V])
		if d > 1e-3 {
			t.Errorf("slot %d (position %d): max abs logit difference %.3g, want ≤ 1e-3", s, p, d)
		}
	}
	if _, err := b.Decode([]int{0, 0}, []int{1, 2}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate slot: %v", err)
	}
	if _, err := b.Decode([]int{3}, []int{1}); err == nil {
		t.Error("slot out of range: no error")
	}
	if err := b.Reset(1); err != nil || b.Pos(1) != 0 {
		t.Errorf("Reset: %v, pos %d", err, b.Pos(1))
	}
}

// TestMoEPlacements: an MoE model computes the same logits under cores
// and mixed (within bf16), batched decode included.
func TestMoEPlacements(t *testing.T) {
	c := Config{Name: "tiny-moe", Dim: 64, Intermediate: 80, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 70, MaxSeq: 32,
		RoPETheta: 1e6, RoPELayout: 1, RMSEps: 1e-6, QKNorm: true, Experts: 8, TopK: 2, MoEIntermediate: 32, NormTopK: true}
	w, err := Synthetic(c, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	run := func(o Options) []float32 {
		m, err := New(w, o)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		b, err := m.NewBatch(2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Prefill(0, []int{1, 2, 3, 4, 5, 6}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Prefill(1, []int{7, 8, 9}); err != nil {
			t.Fatal(err)
		}
		l, err := b.Decode([]int{0, 1}, []int{10, 11})
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), l...)
	}
	base := run(Options{})
	if len(allowedCPUs(t)) >= 2 {
		mixed := run(Options{Placement: PlaceMixed, Threads: 2})
		scale := 0.0
		for _, v := range base {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		if d, _ := maxAbsDiff(base, mixed); d > 0.05*scale+1e-3 {
			t.Errorf("mixed vs cores: max abs difference %.3g (logit scale %.3g)", d, scale)
		}
	}
	// Decoding slot 1 alone gives its batched row.
	m, err := New(w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession(0)
	if _, err := s.Prefill([]int{7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Decode(11)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxAbsDiff(l, base[c.Vocab:]); d > 1e-5 {
		t.Errorf("batched row of slot 1 vs alone: max abs difference %.3g", d)
	}
}

// TestPlacementErrors: bad options are refused by name.
func TestPlacementErrors(t *testing.T) {
	w := loadStories(t)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Placement: "gpu"}, `placement "gpu"`},
		{Options{Placement: PlaceAuto}, "needs a roofline machine"},
		{Options{Placement: PlaceMixed, Threads: 1}, "at least 2 threads"},
		{Options{Threads: -1}, "threads -1"},
		{Options{Threads: 100000}, "CPUs allowed"},
		{Options{Placement: PlaceMatrix, MatrixBackend: "nope"}, `"nope"`},
	} {
		m, err := New(w, c.o)
		if err == nil {
			m.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", c.o, err, c.want)
		}
	}
	if _, err := gemm.BackendByName("go-bf16"); err != nil {
		t.Fatal(err)
	}
}

// TestPlacementTargets: each placement runs its linear operators where it
// says, chosen by capability (gemm.ChoosePair), never by registration
// order: cores on the cores' fp32 backend, matrix on the matrix unit's
// backend where the CPU has one (else on the second backend with "no
// matrix unit" in the notes), mixed on both, and auto on the targets of
// its plan. Batch.Use counts the calls per backend.
//
// BENCH_ENGINE_REQUIRE_MATRIX (set by scripts/test.sh under qemu-aarch64)
// names the matrix backend the machine must choose ("sme-fp32"), or
// "none": the CPU has no matrix unit, so the matrix target must fall back
// to the cores with the note.
func TestPlacementTargets(t *testing.T) {
	w := loadStories(t)
	ref := loadReference(t)
	pair, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	if pair.Cores.Unit != gemm.Cores || pair.Cores.DType != gemm.FP32 {
		t.Fatalf("cores backend %s: unit %s, dtype %s", pair.Cores.Name, pair.Cores.Unit, pair.Cores.DType)
	}
	_, hasUnit := gemm.Pick(gemm.Backends(), gemm.MatrixUnit, "")
	switch req := os.Getenv("BENCH_ENGINE_REQUIRE_MATRIX"); {
	case req == "none" && hasUnit:
		t.Fatalf("BENCH_ENGINE_REQUIRE_MATRIX=none, but %s runs on a matrix unit", pair.Matrix.Name)
	case req != "" && req != "none" && pair.Matrix.Name != req:
		t.Fatalf("BENCH_ENGINE_REQUIRE_MATRIX=%s, but the matrix target is %s (%s)", req, pair.Matrix.Name, pair.MatrixLabel())
	}
	if hasUnit != (pair.Matrix.Unit == gemm.MatrixUnit) {
		t.Fatalf("matrix target %s on %s with a matrix unit %v", pair.Matrix.Name, pair.Matrix.Unit, hasUnit)
	}
	T := len(ref.input)
	use := func(b *Batch) map[Placement]TargetUse {
		out := map[Placement]TargetUse{}
		for _, u := range b.Use() {
			if u.Library == "kernels/gemm" {
				out[u.Target] = u
			}
		}
		return out
	}
	run := func(t *testing.T, o Options) (*Model, *Batch) {
		m, err := New(w, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		b, err := m.NewBatch(1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Prefill(0, ref.input); err != nil {
			t.Fatal(err)
		}
		return m, b
	}
	// Linear calls of one forward pass: 7 per layer and the LM head.
	calls := 7*w.Config.Layers + 1

	t.Run("cores", func(t *testing.T) {
		m, b := run(t, Options{Placement: PlaceCores})
		u := use(b)
		if m.Backend.Name != pair.Cores.Name || m.Matrix != nil {
			t.Errorf("cores placement: backend %s, matrix %v", m.Backend.Name, m.Matrix)
		}
		if c := u[PlaceCores]; c.Calls != calls || c.Unit != gemm.Cores || c.Backend != pair.Cores.Name {
			t.Errorf("cores use %+v, want %d calls on %s", c, calls, pair.Cores.Name)
		}
		if _, ok := u[PlaceMatrix]; ok {
			t.Errorf("cores placement lists a matrix target: %+v", u[PlaceMatrix])
		}
	})
	t.Run("matrix", func(t *testing.T) {
		m, b := run(t, Options{Placement: PlaceMatrix})
		u := use(b)[PlaceMatrix]
		if u.Backend != pair.Matrix.Name || u.Calls != calls || u.Unit != pair.Matrix.Unit || use(b)[PlaceCores].Calls != 0 {
			t.Errorf("matrix use %+v (cores %+v), want %d calls on %s", u, use(b)[PlaceCores], calls, pair.Matrix.Name)
		}
		note := strings.Join(m.Notes, "; ")
		if !strings.Contains(note, "matrix = "+pair.MatrixLabel()) {
			t.Errorf("notes %q lack %q", note, "matrix = "+pair.MatrixLabel())
		}
		if strings.Contains(note, "has no AMX or SME kernels") {
			t.Errorf("hard-coded note: %q", note)
		}
		if hasUnit {
			if m.MatrixNote != "" || u.Unit != gemm.MatrixUnit {
				t.Errorf("with a matrix unit: note %q, unit %s", m.MatrixNote, u.Unit)
			}
		} else if !strings.Contains(m.MatrixNote, "no matrix unit") || !strings.Contains(u.Label(), "on the cores, no matrix unit") {
			t.Errorf("without a matrix unit: note %q, label %q", m.MatrixNote, u.Label())
		}
		t.Logf("matrix = %s", u.Label())
	})
	t.Run("mixed", func(t *testing.T) {
		if len(allowedCPUs(t)) < 2 {
			t.Skip("needs 2 CPUs")
		}
		_, b := run(t, Options{Placement: PlaceMixed, Threads: 2})
		u := use(b)
		if u[PlaceCores].Calls == 0 || u[PlaceMatrix].Calls == 0 || u[PlaceCores].Backend != pair.Cores.Name || u[PlaceMatrix].Backend != pair.Matrix.Name {
			t.Errorf("mixed use %+v, want calls on both %s and %s", u, pair.Cores.Name, pair.Matrix.Name)
		}
	})
	t.Run("named", func(t *testing.T) {
		_, b := run(t, Options{Placement: PlaceMatrix, Backend: "go-fp32", MatrixBackend: "go-bf16"})
		u := use(b)
		if u[PlaceCores].Backend != "go-fp32" || u[PlaceMatrix].Backend != "go-bf16" || !strings.Contains(u[PlaceMatrix].Label(), "chosen by name") {
			t.Errorf("named backends: %+v", u)
		}
	})
	t.Run("auto", func(t *testing.T) {
		// Cores ridge 1 FLOP/byte, matrix ridge 50: a decode GEMV
		// (0.5 FLOP/byte in fp32) is memory-bound, on the cores; the
		// prefill GEMMs are ridge-crossing, on the matrix target.
		prec := string(pair.Matrix.DType)
		mach := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "test-matrix", Targets: []roofline.Target{
			{Name: "cores", Kind: roofline.KindCores, BandwidthGBps: 20, CeilingsGFLOPS: map[string]float64{"fp32": 20, prec: 20}},
			{Name: "matrix", Kind: roofline.KindMatrix, BandwidthGBps: 20, CeilingsGFLOPS: map[string]float64{"fp32": 1000, prec: 1000}},
		}}
		m, b := run(t, Options{Placement: PlaceAuto, Machine: mach})
		check := func(phase roofline.Phase, rows int) {
			t.Helper()
			plan := m.Plan(phase, rows, 1)
			want := map[Placement]int{}
			for _, op := range []string{OpQProj, OpKProj, OpVProj, OpOProj, OpGateProj, OpUpProj, OpDownProj, OpLMHead} {
				n := w.Config.Layers
				if op == OpLMHead {
					n = 1
				}
				p, ok := plan[op]
				if !ok {
					t.Fatalf("%s plan has no %s: %v", phase, op, plan)
				}
				if p == PlaceMixed {
					t.Fatalf("%s plan puts %s on mixed (the test machine has no mixed target): %v", phase, op, plan)
				}
				want[p] += n
			}
			u := use(b)
			if u[PlaceCores].Calls != want[PlaceCores] || u[PlaceMatrix].Calls != want[PlaceMatrix] {
				t.Errorf("%s: plan %v: calls cores %d, matrix %d; want %d, %d", phase, plan, u[PlaceCores].Calls, u[PlaceMatrix].Calls, want[PlaceCores], want[PlaceMatrix])
			}
			if want[PlaceMatrix] == 0 && phase == Prefill {
				t.Errorf("prefill plan puts nothing on the matrix target: %v", plan)
			}
			if want[PlaceCores] == 0 && phase == Decode {
				t.Errorf("decode plan puts nothing on the cores: %v", plan)
			}
		}
		check(Prefill, T)
		b.ResetTimings()
		if _, err := b.Decode([]int{0}, []int{1}); err != nil {
			t.Fatal(err)
		}
		check(Decode, 1)
	})
}

// TestMoEExpertPlacement: under auto each expert is placed by its own
// routed token count (SMEPilot §4.1): on a machine whose matrix target
// has a ridge between a one-token and a many-token expert call, experts
// with few tokens run on the cores and experts with many on the matrix
// target, in one forward call; logits stay within the bf16 tolerance of
// the cores run.
func TestMoEExpertPlacement(t *testing.T) {
	c := Config{Name: "tiny-moe", Dim: 64, Intermediate: 80, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 70, MaxSeq: 64,
		RoPETheta: 1e6, RoPELayout: 1, RMSEps: 1e-6, QKNorm: true, Experts: 4, TopK: 2, MoEIntermediate: 32, NormTopK: true}
	w, err := Synthetic(c, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := gemm.ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	prec := string(pair.Matrix.DType)
	// Cores: ridge 1 FLOP/byte; matrix: ridge 10. An expert FFN of n
	// tokens at 64×32 has intensity ≈ n·6·64·32 / (3·64·32·b + ...) ≈ n/b:
	// one token is memory-bound (cores), 40 tokens cross the matrix ridge.
	mach := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "test-matrix", Targets: []roofline.Target{
		{Name: "cores", Kind: roofline.KindCores, BandwidthGBps: 20, CeilingsGFLOPS: map[string]float64{"fp32": 20, prec: 20}},
		{Name: "matrix", Kind: roofline.KindMatrix, BandwidthGBps: 20, CeilingsGFLOPS: map[string]float64{"fp32": 200, prec: 200}},
	}}
	prompt := make([]int, 48)
	for i := range prompt {
		prompt[i] = 1 + i%60
	}
	run := func(o Options) ([]float32, *Model) {
		m, err := New(w, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		s, err := m.NewSession(0)
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Prefill(prompt)
		if err != nil {
			t.Fatal(err)
		}
		if l, err = s.Decode(3); err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), l...), m
	}
	base, _ := run(Options{})
	got, m := run(Options{Placement: PlaceAuto, Machine: mach})
	plans := m.ExpertPlans()
	var few, many []Placement
	for n, p := range plans {
		if n <= 2 {
			few = append(few, p)
		}
		if n >= 16 {
			many = append(many, p)
		}
	}
	if len(few) == 0 || len(many) == 0 {
		t.Fatalf("expert plans %v: want routed counts ≤ 2 (decode) and ≥ 16 (prefill of 48 tokens over 4 experts)", plans)
	}
	for _, p := range few {
		if p != PlaceCores {
			t.Errorf("expert plans %v: a few-token expert not on the cores", plans)
		}
	}
	for _, p := range many {
		if p != PlaceMatrix {
			t.Errorf("expert plans %v: a many-token expert not on the matrix target", plans)
		}
	}
	scale := 0.0
	for _, v := range base {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	if d, _ := maxAbsDiff(base, got); d > 0.05*scale+1e-3 {
		t.Errorf("auto vs cores: max abs difference %.3g (logit scale %.3g)", d, scale)
	}
	if n := m.ExpertPlanNote(); !strings.Contains(n, "cores for 1") || !strings.Contains(n, "matrix for") {
		t.Errorf("ExpertPlanNote = %q", n)
	}
	if p, err := New(w, Options{}); err == nil {
		if p.ExpertPlans() != nil {
			t.Error("ExpertPlans under a fixed placement: want nil")
		}
		p.Close()
	}
}
