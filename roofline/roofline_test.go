package roofline

import (
	"math"
	"strings"
	"testing"
)

// Architectures written out by hand so these tests do not depend on the
// models package (values from models/configs).
var (
	llama1B = Arch{Name: "llama-3.2-1b", Dim: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8,
		HeadDim: 64, Vocab: 128256, TiedEmbeddings: true}
	qwen30B = Arch{Name: "qwen3-30b-a3b", Dim: 2048, Intermediate: 6144, Layers: 48, Heads: 32, KVHeads: 4,
		HeadDim: 128, Vocab: 151936, QKNorm: true, Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 768, MoELayers: 48}
)

func req(phase Phase, b, t, c int) Request {
	return Request{Phase: phase, Batch: b, Tokens: t, Context: c, Weight: "fp16", Act: "fp16", KV: "fp16", Routing: Routing{Kind: "uniform"}}
}

func m4(t *testing.T) *Machine {
	t.Helper()
	m, err := Published("m4-pro")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func op(t *testing.T, ops []Operator, name string) Operator {
	t.Helper()
	for _, o := range ops {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no operator %q", name)
	return Operator{}
}

func placed(t *testing.T, ps []Placed, name string) Placed {
	t.Helper()
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no operator %q", name)
	return Placed{}
}

// TestDenseCatalogByHand checks Llama-3.2-1B, one decode step of one
// sequence at context 1024, fp16 everywhere, against hand arithmetic:
//
//	q_proj: 2·2048·2048 = 8,388,608 FLOPs; 2048·2048·2 + 2048·2 + 2048·2 = 8,396,800 bytes
//	qk: 32 heads · 1024 keys → 2·64·32768 = 4,194,304 FLOPs;
//	    Q 32·64·2 + K 1024·8·64·2 + scores 32768·2 = 1,118,208 bytes
//	layer: 121,634,816 (projections) + 8,388,608 (qk, pv) + 232,960 (vector) FLOPs;
//	    weights 121,643,008, activations 460,800 (kv_write reads the rotated
//	    k and v, 2·512·2 bytes, which rope and v_proj write as activations),
//	    KV write 2,048, KV read 2,097,152 bytes
func TestDenseCatalogByHand(t *testing.T) {
	c, err := BuildCatalog(llama1B, req(Decode, 1, 1, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Layers) != 1 || c.Layers[0].Count != 16 {
		t.Fatalf("layers = %+v", c.Layers)
	}
	ops := c.Layers[0].Ops
	q := op(t, ops, "q_proj")
	if q.FLOPs != 8388608 || q.Bytes.Total() != 8396800 {
		t.Errorf("q_proj: %v FLOPs %v bytes", q.FLOPs, q.Bytes.Total())
	}
	qk := op(t, ops, "qk")
	if qk.FLOPs != 4194304 || qk.Bytes.Total() != 1118208 || qk.Bytes.KVRead != 1048576 {
		t.Errorf("qk: %v FLOPs %+v", qk.FLOPs, qk.Bytes)
	}
	if _, ok := find(ops, "qk_norm"); ok {
		t.Error("llama has no QK-norm")
	}
	tot := Sum(ops)
	if tot.FLOPs != 130256384 {
		t.Errorf("layer FLOPs = %v, want 130256384", tot.FLOPs)
	}
	want := Bytes{Weights: 121643008, KVWrite: 2048, KVRead: 2097152}
	if tot.Bytes.Weights != want.Weights || tot.Bytes.KVWrite != want.KVWrite || tot.Bytes.KVRead != want.KVRead ||
		tot.Bytes.ActIn+tot.Bytes.ActOut != 460800 {
		t.Errorf("layer bytes = %+v", tot.Bytes)
	}
	// Model: 16 layers + embed row + final norm + LM head (1 row, 128256×2048).
	mt := c.ModelTotals()
	lm := 2.0 * 2048 * 128256
	if got, want := mt.FLOPs, 16*130256384+4*2048+lm; got != want {
		t.Errorf("model FLOPs = %v, want %v", got, want)
	}
}

func find(ops []Operator, name string) (Operator, bool) {
	for _, o := range ops {
		if o.Name == name {
			return o, true
		}
	}
	return Operator{}, false
}

// TestMoECatalogByHand checks Qwen3-30B-A3B prefill of 512 tokens with
// uniform routing: 512·8 = 4096 assignments over 128 experts = 32 tokens
// each; an expert is 6·32·2048·768 = 301,989,888 FLOPs and moves
// 3·2048·768·2 = 9,437,184 weight bytes, (32·2048 + 32·768)·2 = 180,224
// bytes in and (2·32·768 + 32·2048)·2 = 229,376 bytes out. Causal QKᵀ has
// 512·513/2 = 131,328 pairs per head.
func TestMoECatalogByHand(t *testing.T) {
	c, err := BuildCatalog(qwen30B, req(Prefill, 1, 512, 512))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Layers[0]
	if l.Kind != "moe" || l.Count != 48 || l.IdleExperts != 0 {
		t.Fatalf("layer %s ×%d idle %d", l.Kind, l.Count, l.IdleExperts)
	}
	n := 0
	for _, o := range l.Ops {
		if o.Expert < 0 {
			continue
		}
		n++
		if o.RoutedTokens != 32 || o.FLOPs != 301989888 || o.Bytes.Weights != 9437184 || o.Bytes.ActIn != 180224 || o.Bytes.ActOut != 229376 {
			t.Fatalf("%s: %+v", o.Name, o)
		}
	}
	if n != 128 {
		t.Errorf("%d expert entries, want 128", n)
	}
	qk := op(t, l.Ops, "qk")
	if want := 2.0 * 128 * 32 * 131328; qk.FLOPs != want {
		t.Errorf("qk FLOPs = %v, want %v", qk.FLOPs, want)
	}
	if _, ok := find(l.Ops, "qk_norm"); !ok {
		t.Error("qwen3 needs qk_norm")
	}
	r := op(t, l.Ops, "router")
	if r.FLOPs != 2*512*128*2048 {
		t.Errorf("router FLOPs = %v", r.FLOPs)
	}
	// Prefill computes logits for the last token only.
	if lm := op(t, c.Head, "lm_head"); lm.M != 1 {
		t.Errorf("lm_head rows = %d, want 1", lm.M)
	}
	// One decode step of one sequence activates top-8 experts, 1 token each.
	c, _ = BuildCatalog(qwen30B, req(Decode, 1, 1, 512))
	if c.Layers[0].IdleExperts != 120 {
		t.Errorf("decode idle experts = %d, want 120", c.Layers[0].IdleExperts)
	}
}

func TestRouteTokens(t *testing.T) {
	u, _ := RouteTokens(3, 128, 8, Routing{Kind: "uniform"})
	sum := 0
	for i, n := range u {
		sum += n
		if want := map[bool]int{true: 1, false: 0}[i < 24]; n != want {
			t.Fatalf("uniform[%d] = %d", i, n)
		}
	}
	if sum != 24 {
		t.Errorf("sum = %d", sum)
	}
	z, err := RouteTokens(512, 128, 8, Routing{Kind: "zipf", S: 1.2})
	if err != nil {
		t.Fatal(err)
	}
	sum = 0
	for i, n := range z {
		sum += n
		if n > 512 || (i > 0 && n > z[i-1]) {
			t.Fatalf("zipf[%d] = %d (prev %d)", i, n, z[i-1])
		}
	}
	if sum != 4096 || z[0] != 512 {
		t.Errorf("zipf sum %d, hottest %d: want 4096 and the 512 cap", sum, z[0])
	}
	if _, err := RouteTokens(1, 4, 8, Routing{Kind: "uniform"}); err == nil {
		t.Error("top-k > experts accepted")
	}
}

// TestRegimeBoundaries checks Classify at the M4 Pro ridge points:
// cores 1850/247 = 7.4899, SME 2920/224 = 13.0357 FLOP/byte.
func TestRegimeBoundaries(t *testing.T) {
	m := m4(t)
	for _, c := range []struct {
		i    float64
		want Regime
	}{
		{0.5, MemoryBound}, {7.48, MemoryBound}, {1850.0 / 247, RidgeCrossing}, {7.49, RidgeCrossing},
		{13.03, RidgeCrossing}, {2920.0 / 224, ComputeBound}, {13.04, ComputeBound}, {1e4, ComputeBound},
	} {
		if got := Classify(m, "fp16", c.i); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.i, got, c.want)
		}
	}
	// No fp32 ceiling on the M4 Pro profile.
	if got := Classify(m, "fp32", 100); got != NoCeiling {
		t.Errorf("fp32: %s", got)
	}
	one, _ := Published("lnl")
	if got := Classify(one, "fp16", 1e6); got != NoCeiling {
		t.Errorf("no-ceiling machine: %s", got)
	}
}

// TestSMEPilotFindings reproduces SMEPilot's qualitative findings on the
// M4 Pro profile (§3.2, §3.3 Insight 2, §5.3): single-token decode GEMV is
// memory-bound on the cores; batched decode at a moderate batch is
// ridge-crossing and goes to SME alone; prefill FFN at 512+ tokens is
// compute-bound and goes to mixed execution; decode attention stays
// memory-bound at any batch; non-linear operators stay on the cores.
func TestSMEPilotFindings(t *testing.T) {
	m := m4(t)
	arch := Arch{Name: "llama-3.2-3b", Dim: 3072, Intermediate: 8192, Layers: 28, Heads: 24, KVHeads: 8, HeadDim: 128, Vocab: 128256, TiedEmbeddings: true}
	check := func(r Request, name string, regime Regime, target string) {
		t.Helper()
		a, err := Analyze(m, arch, r, "fp16")
		if err != nil {
			t.Fatal(err)
		}
		p := placed(t, a.Layers[0].Ops, name)
		if p.Regime != regime || p.Target != target {
			t.Errorf("%s B=%d T=%d: %s on %s (I=%.2f), want %s on %s", name, r.Batch, r.Tokens, p.Regime, p.Target, p.Intensity, regime, target)
		}
	}
	for _, ffn := range []string{"gate_proj", "up_proj", "down_proj"} {
		check(req(Decode, 1, 1, 1024), ffn, MemoryBound, "cores")
		check(req(Decode, 10, 1, 1024), ffn, RidgeCrossing, "sme")
		for _, T := range []int{512, 1024, 8192} {
			check(req(Prefill, 1, T, T), ffn, ComputeBound, "mixed")
		}
	}
	check(req(Decode, 64, 1, 4096), "qk", MemoryBound, "cores")
	check(req(Decode, 64, 1, 4096), "softmax", NonLinear, "cores")
	check(req(Prefill, 1, 4096, 4096), "qk", ComputeBound, "mixed")

	// MoE (§4.1): hot experts under skewed routing leave the cores; the
	// decode experts (1 token each) stay there.
	r := req(Prefill, 1, 512, 512)
	r.Routing = Routing{Kind: "zipf", S: 1.2}
	a, err := Analyze(m, qwen30B, r, "fp16")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range a.Layers[0].Ops {
		if p.Expert >= 0 {
			seen[p.Target] = true
		}
	}
	if !seen["mixed"] || !seen["cores"] {
		t.Errorf("zipf experts placed on %v: want hot experts mixed and cold ones on the cores", seen)
	}
}

func TestPlanTimes(t *testing.T) {
	m := m4(t)
	a, err := Analyze(m, llama1B, req(Prefill, 1, 1024, 1024), "fp16")
	if err != nil {
		t.Fatal(err)
	}
	p := placed(t, a.Layers[0].Ops, "gate_proj")
	// 2·1024·8192·2048 FLOPs split between SME and cores at the mixed
	// ceiling: 34.36 GFLOP / 4270 GFLOP/s ≈ 8.05 ms, never below it.
	ideal := p.FLOPs / 4270e9
	if p.Time < ideal || p.Time > ideal*1.01 {
		t.Errorf("gate_proj mixed time %v, want ≈ %v", p.Time, ideal)
	}
	if p.Split == nil || p.Split.Dim != "N" || p.Split.Matrix+p.Split.Cores != 8192 {
		t.Errorf("split = %+v", p.Split)
	}
	if p.Times["cores"] <= p.Time || p.Times["sme"] <= p.Time {
		t.Errorf("plan %v not faster than cores %v and sme %v", p.Time, p.Times["cores"], p.Times["sme"])
	}
	// Model totals: the plan is never slower than running all on the cores.
	if a.Model.Time > a.Model.Times["cores"] {
		t.Errorf("plan %v slower than cores %v", a.Model.Time, a.Model.Times["cores"])
	}
	if a.Model.FLOPs <= 16*a.Layers[0].Totals.FLOPs {
		t.Errorf("model FLOPs %v ≤ 16 layers", a.Model.FLOPs)
	}
}

func TestSplitEq1AwkwardExtents(t *testing.T) {
	for _, c := range []struct {
		extent, am, ac, want, align int
	}{
		{1000, 32, 16, 608, 32}, // ideal 612.2 → 608 (max 0.2119) beats 640 (0.2192)
		{1000, 24, 16, 624, 48}, // lcm 48: 576 or 624; 624 balances better
		{620, 24, 16, 384, 48},  // ideal 379.5 → 384
		{20, 32, 16, 20, 32},    // smaller than one tile: all to the faster side
		{50, 48, 1, 48, 48},     // ideal 30.6: 48 (partial 2 on cores) beats 0
		{7, 0, 0, 4, 1},         // no tiles: ideal 4.28 → 4
	} {
		got, ideal, align := SplitEq1(c.extent, c.am, c.ac, 2920, 1850)
		if got != c.want || align != c.align {
			t.Errorf("SplitEq1(%d, %d, %d) = %d align %d, want %d align %d", c.extent, c.am, c.ac, got, align, c.want, c.align)
		}
		if math.Abs(ideal-2920.0/4770) > 1e-12 {
			t.Errorf("ideal = %v", ideal)
		}
	}
}

func TestPublishedProfiles(t *testing.T) {
	for _, n := range PublishedNames() {
		m, err := Published(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range m.Targets {
			if tg.Source == "" {
				t.Errorf("%s/%s: no citation", n, tg.Name)
			}
		}
		if len(m.Sources) == 0 {
			t.Errorf("%s: no sources", n)
		}
	}
	k, _ := Published("kunpeng-920")
	if k.NUMA.GBps[1][1] != 103 || k.NUMA.GBps[3][1] != 22 || k.Targets[0].BandwidthGBps != 102 {
		t.Errorf("kunpeng Table 1 transcription: %+v", k.NUMA)
	}
	for name, bw := range map[string]float64{"arl": 98, "arlh": 75, "lnl": 97} {
		m, _ := Published(name)
		if m.Targets[0].BandwidthGBps != bw || len(m.Targets) != 1 {
			t.Errorf("%s: %+v", name, m.Targets)
		}
		if !strings.Contains(strings.Join(m.Notes, " "), "no measured compute ceiling") {
			t.Errorf("%s: notes do not say the ceiling is missing", name)
		}
	}
	if _, err := Published("nope"); err == nil || !strings.Contains(err.Error(), "m4-pro") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestParseMachineErrors(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{}`, `f.json: missing key "schema"`},
		{`{"schema":"bench.machine/v1","name":"x"}`, `f.json: missing key "targets"`},
		{`{"schema":"bench.machine/v1","name":"x","targets":[{"name":"cores","kind":"cores"}]}`, `"bandwidth_gbps"`},
		{`{"schema":"bench.machine/v1","name":"x","targets":[{"name":"cores","bandwidth_gbps":1}]}`, `missing key "kind"`},
		{`{"schema":"bench.machine/v1","name":"x","targets":[{"name":"c","kind":"cores","bandwidth_gbps":1,"ceilings":{}}]}`, `unknown field "ceilings"`},
		{`{"schema":"bench.machine/v1","name":"x","targets":[{"name":"m","kind":"matrix","bandwidth_gbps":1}]}`, `0 targets of kind "cores"`},
		{`{"schema":"bench.machine/v1","name":"x","targets":[{"name":"c","kind":"cores","bandwidth_gbps":1},{"name":"x","kind":"mixed","bandwidth_gbps":1}]}`, `"components"`},
		{`{"schema":"bench.profile/v1"}`, `missing key "memory"`},
		{`{"schema":"bench.profile/v1","memory":{"levels":[{"level":"L1","gbps":{"median":100}}]}}`, `no "DRAM" level`},
		{`{"schema":"other"}`, `schema "other"`},
	} {
		_, err := ParseMachine([]byte(c.json), "f.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.json, err, c.want)
		}
	}
}

func TestFromProfile(t *testing.T) {
	data := `{"schema":"bench.profile/v1","host":"box","machine":{"arch":"amd64","cpu_model":"X","isas":["avx2","amx"]},
	"memory":{"levels":[{"level":"L2","kernel":"read","threads":8,"gbps":{"median":900,"n":5}},
	{"level":"DRAM","kernel":"read","threads":8,"gbps":{"median":80,"n":5}}]}}`
	m, err := ParseMachine([]byte(data), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Targets) != 1 || m.Targets[0].BandwidthGBps != 80 || len(m.Roofs) != 1 || m.Roofs[0].GBps != 900 {
		t.Fatalf("machine = %+v", m)
	}
	notes := strings.Join(m.Notes, "\n")
	for _, w := range []string{"no measured compute ceiling", "matrix unit (amx)", "one target"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	a, err := Analyze(m, llama1B, req(Decode, 1, 1, 128), "fp16")
	if err != nil {
		t.Fatal(err)
	}
	q := placed(t, a.Layers[0].Ops, "q_proj")
	if q.Regime != NoCeiling || q.Target != "cores" || q.Time != q.Bytes.Total()/80e9 {
		t.Errorf("q_proj: %+v", q)
	}
}

func TestRequestValidation(t *testing.T) {
	for _, c := range []struct {
		r    Request
		want string
	}{
		{req(Decode, 0, 1, 1), "batch 0: must be ≥ 1"},
		{req(Decode, 1, 0, 1), "tokens 0"},
		{req(Prefill, 1, 512, 100), "context 100: must be ≥ tokens (512)"},
		{req("train", 1, 1, 1), `phase "train"`},
		{Request{Phase: Decode, Batch: 1, Tokens: 1, Context: 1, Weight: "fp7", Act: "fp16", KV: "fp16", Routing: Routing{Kind: "uniform"}}, `weight dtype: dtype "fp7"`},
	} {
		_, err := BuildCatalog(llama1B, c.r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.r, err, c.want)
		}
	}
}

func TestSweepBatch(t *testing.T) {
	v, vals, err := ParseSweep("batch=1..64")
	if err != nil || v != SweepBatch || len(vals) != 64 {
		t.Fatalf("ParseSweep: %v %v %v", v, len(vals), err)
	}
	s, err := Sweep(m4(t), llama1B, req(Decode, 1, 1, 1024), "fp16", v, vals)
	if err != nil {
		t.Fatal(err)
	}
	// gate_proj: I ≈ B, so it leaves the cores at B = 8 (I = 7.98 > 7.49)
	// and reaches mixed at B = 14 (I = 13.9 > 13.04).
	var got []Change
	for _, c := range s.Changes {
		if c.Operator == "gate_proj" {
			got = append(got, c)
		}
	}
	if len(got) != 2 || got[0].At != 8 || got[0].To != RidgeCrossing || got[1].At != 14 || got[1].To != ComputeBound {
		t.Errorf("gate_proj changes = %+v", got)
	}
	for _, c := range s.Changes {
		if c.Operator == "qk" || c.Operator == "pv" {
			t.Errorf("decode attention changed regime with batch: %+v", c)
		}
	}
	for _, bad := range []string{"batch", "beam=1..2", "batch=0..4", "batch=8..4", "batch=4,2", "batch=1..x"} {
		if _, _, err := ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q) accepted", bad)
		}
	}
	_, vals, _ = ParseSweep("context=1k..64k")
	if vals[0] != 1024 || vals[1] != 2048 || vals[len(vals)-1] != 65536 {
		t.Errorf("doubling range = %v", vals)
	}
}
