package engine

import (
	"bufio"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cpubench/bench/roofline"
)

var (
	storiesPath = filepath.Join("testdata", "stories260K", "stories260K.bin")
	refDir      = filepath.Join("testdata", "stories260K")
)

// reference is llama2.c run.c's greedy run of stories260K from BOS.
type reference struct {
	input, argmax []int
	margin        []float64
	logits        []float32 // positions × vocab
}

var (
	storiesOnce    sync.Once
	storiesWeights *Weights
	storiesErr     error
)

func loadStories(t testing.TB) *Weights {
	t.Helper()
	storiesOnce.Do(func() { storiesWeights, storiesErr = LoadLlama2C(storiesPath) })
	if storiesErr != nil {
		t.Fatal(storiesErr)
	}
	return storiesWeights
}

func loadReference(t testing.TB) *reference {
	t.Helper()
	f, err := os.Open(filepath.Join(refDir, "reference_tokens.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref := &reference{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("reference_tokens.txt: %q: want 4 columns", line)
		}
		pos, _ := strconv.Atoi(fs[0])
		in, _ := strconv.Atoi(fs[1])
		am, _ := strconv.Atoi(fs[2])
		mg, err := strconv.ParseFloat(fs[3], 64)
		if err != nil || pos != len(ref.input) {
			t.Fatalf("reference_tokens.txt: %q: bad row (want position %d)", line, len(ref.input))
		}
		ref.input, ref.argmax, ref.margin = append(ref.input, in), append(ref.argmax, am), append(ref.margin, mg)
	}
	raw, err := os.ReadFile(filepath.Join(refDir, "reference_logits.f32"))
	if err != nil {
		t.Fatal(err)
	}
	ref.logits = make([]float32, len(raw)/4)
	for i := range ref.logits {
		ref.logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if len(ref.logits) != len(ref.input)*512 {
		t.Fatalf("reference: %d logits for %d positions of vocab 512", len(ref.logits), len(ref.input))
	}
	return ref
}

func newStories(t testing.TB, o Options) (*Model, *Session) {
	t.Helper()
	m, err := New(loadStories(t), o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

func maxAbsDiff(a, b []float32) (float64, int) {
	if len(a) != len(b) {
		panic("maxAbsDiff: lengths differ")
	}
	worst, at := 0.0, -1
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if d > worst || d != d {
			worst, at = d, i
		}
	}
	return worst, at
}

func TestStoriesConfig(t *testing.T) {
	c := loadStories(t).Config
	want := Config{Name: "stories260K.bin", Dim: 64, Intermediate: 172, Layers: 5, Heads: 8, KVHeads: 4, HeadDim: 8,
		Vocab: 512, MaxSeq: 512, RoPETheta: 10000, RMSEps: 1e-5, TiedEmbeddings: true}
	if c.Name != want.Name || c.Dim != want.Dim || c.Intermediate != want.Intermediate || c.Layers != want.Layers ||
		c.Heads != want.Heads || c.KVHeads != want.KVHeads || c.HeadDim != want.HeadDim || c.Vocab != want.Vocab ||
		c.MaxSeq != want.MaxSeq || c.RoPETheta != want.RoPETheta || c.RMSEps != want.RMSEps ||
		c.TiedEmbeddings != want.TiedEmbeddings || c.RoPELayout != want.RoPELayout || c.QKNorm || c.RoPEScaling != nil {
		t.Errorf("config = %+v, want %+v", c, want)
	}
}

// backends returns the gemm backends to check the reference with: the best
// one and, when different, the Go specification kernels.
func backends(t *testing.T) []string {
	m, _ := newStories(t, Options{})
	if m.Backend.Name == "go-fp32" {
		return []string{"go-fp32"}
	}
	return []string{m.Backend.Name, "go-fp32"}
}

// TestTeacherForcing: feeding the reference's input ids, the logits at
// every position match llama2.c's within 1e-3, both prefilled at once and
// decoded one token at a time.
func TestTeacherForcing(t *testing.T) {
	ref := loadReference(t)
	for _, b := range backends(t) {
		t.Run(b, func(t *testing.T) {
			_, s := newStories(t, Options{Backend: b})
			got, err := s.PrefillAll(ref.input)
			if err != nil {
				t.Fatal(err)
			}
			d, at := maxAbsDiff(got, ref.logits)
			t.Logf("prefill of %d tokens: max |logit - llama2.c| = %.3g (position %d, token %d)", len(ref.input), d, at/512, at%512)
			if d > 1e-3 {
				t.Errorf("prefill: max abs logit difference %.3g at position %d token %d: want ≤ 1e-3", d, at/512, at%512)
			}
			s.Reset()
			worst := 0.0
			for p, tok := range ref.input {
				l, err := s.Decode(tok)
				if err != nil {
					t.Fatal(err)
				}
				d, at := maxAbsDiff(l, ref.logits[p*512:(p+1)*512])
				worst = max(worst, d)
				if d > 1e-3 {
					t.Fatalf("decode position %d: max abs logit difference %.3g at token %d: want ≤ 1e-3", p, d, at)
				}
			}
			t.Logf("decode one by one: max |logit - llama2.c| = %.3g", worst)
		})
	}
}

// TestGreedy: greedy decoding from BOS gives llama2.c's argmax wherever
// its top-1/top-2 margin exceeds 1e-2. At the few positions under that
// margin the reference's choice is fed back, so one near-tie does not
// change the rest of the sequence.
func TestGreedy(t *testing.T) {
	ref := loadReference(t)
	_, s := newStories(t, Options{})
	tok, matched, clear := 1, 0, 0
	for p := range ref.input {
		if tok != ref.input[p] {
			t.Fatalf("position %d: input %d, reference %d", p, tok, ref.input[p])
		}
		l, err := s.Decode(tok)
		if err != nil {
			t.Fatal(err)
		}
		next := Argmax(l)
		if next == ref.argmax[p] {
			matched++
		}
		if ref.margin[p] > 1e-2 {
			clear++
			if next != ref.argmax[p] {
				t.Errorf("position %d: argmax %d, llama2.c %d (margin %.3g)", p, next, ref.argmax[p], ref.margin[p])
			}
		}
		tok = ref.argmax[p]
	}
	t.Logf("argmax matched llama2.c at %d of %d positions (%d with margin > 1e-2)", matched, len(ref.input), clear)
}

// TestPrefillThenDecode: prefilling T tokens then decoding the rest gives
// the logits of decoding every token one by one, within 1e-4.
func TestPrefillThenDecode(t *testing.T) {
	ref := loadReference(t)
	_, a := newStories(t, Options{})
	_, b := newStories(t, Options{})
	toks := ref.input[:96]
	one := make([][]float32, len(toks))
	for i, tok := range toks {
		l, err := a.Decode(tok)
		if err != nil {
			t.Fatal(err)
		}
		one[i] = append([]float32(nil), l...)
	}
	for _, T := range []int{1, 2, 7, 33, 64} {
		b.Reset()
		all, err := b.PrefillAll(toks[:T])
		if err != nil {
			t.Fatal(err)
		}
		for p := range T {
			if d, at := maxAbsDiff(all[p*512:(p+1)*512], one[p]); d > 1e-4 {
				t.Fatalf("T=%d: prefill position %d: logits differ from one-by-one decode by %.3g at %d", T, p, d, at)
			}
		}
		for p := T; p < len(toks); p++ {
			l, err := b.Decode(toks[p])
			if err != nil {
				t.Fatal(err)
			}
			if d, at := maxAbsDiff(l, one[p]); d > 1e-4 {
				t.Fatalf("T=%d: decode position %d: logits differ from one-by-one decode by %.3g at %d", T, p, d, at)
			}
		}
		// Prefill (last row only) agrees with PrefillAll's last row.
		b.Reset()
		last, err := b.Prefill(toks[:T])
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := maxAbsDiff(last, one[T-1]); d > 1e-4 {
			t.Fatalf("T=%d: Prefill's logits differ from one-by-one decode by %.3g", T, d)
		}
	}
}

func TestSessionErrors(t *testing.T) {
	m, _ := newStories(t, Options{})
	if _, err := m.NewSession(513); err == nil || !strings.Contains(err.Error(), "513") {
		t.Errorf("NewSession(513) = %v, want an error naming 513", err)
	}
	s, err := m.NewSession(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		toks []int
		want string
	}{{nil, "no tokens"}, {[]int{1, 512}, "token 512"}, {[]int{-1}, "token -1"}, {[]int{1, 2, 3, 4, 5}, "max sequence 4"}} {
		if _, err := s.Prefill(c.toks); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Prefill(%v) = %v, want an error containing %q", c.toks, err, c.want)
		}
	}
	if _, err := New(loadStories(t), Options{Backend: "nope"}); err == nil {
		t.Error("New with backend nope: no error")
	}
}

// moeOp are the operators of an MoE FFN only.
var moeOp = map[string]bool{OpRouter: true, OpRouterTopK: true, OpExperts: true, OpMoECombine: true}

// TestTimings: every catalog operator of a Llama layer is timed per phase
// and layer, with calls and tokens counted.
func TestTimings(t *testing.T) {
	ref := loadReference(t)
	m, s := newStories(t, Options{})
	if m.PackSeconds <= 0 {
		t.Errorf("PackSeconds = %v, want > 0", m.PackSeconds)
	}
	if _, err := s.Prefill(ref.input[:16]); err != nil {
		t.Fatal(err)
	}
	for _, tok := range ref.input[16:20] {
		if _, err := s.Decode(tok); err != nil {
			t.Fatal(err)
		}
	}
	ts := s.Timings()
	got := map[string]Timing{}
	for _, tm := range ts {
		got[string(tm.Phase)+"/"+tm.Op+"/"+strconv.Itoa(tm.Layer)] = tm
	}
	for _, ph := range []struct {
		name          roofline.Phase
		calls, tokens int
	}{{Prefill, 1, 16}, {Decode, 4, 4}} {
		for _, op := range headOps {
			tm, ok := got[string(ph.name)+"/"+op+"/-1"]
			wantTok := ph.tokens
			if op != OpEmbed && ph.name == Prefill {
				wantTok = 1 // Prefill computes logits of the last row only
			}
			if !ok || tm.Calls != ph.calls || tm.Tokens != wantTok || tm.Seconds < 0 {
				t.Errorf("%s %s: %+v (found %v), want %d calls, %d tokens", ph.name, op, tm, ok, ph.calls, wantTok)
			}
		}
		for l := range m.Config.Layers {
			for _, op := range layerOps {
				tm, ok := got[string(ph.name)+"/"+op+"/"+strconv.Itoa(l)]
				if op == OpQKNorm || moeOp[op] || slices.Contains(tpOps, op) {
					if ok {
						t.Errorf("%s layer %d: %s timed for a dense model without QK-norm or tp", ph.name, l, op)
					}
					continue
				}
				if !ok || tm.Calls != ph.calls || tm.Tokens != ph.tokens {
					t.Errorf("%s layer %d %s: %+v (found %v), want %d calls, %d tokens", ph.name, l, op, tm, ok, ph.calls, ph.tokens)
				}
			}
		}
	}
	tot := Totals(ts)
	if want := 2 * (len(layerOps) - 1 - len(moeOp) - len(tpOps) + len(headOps)); len(tot) != want {
		t.Errorf("Totals: %d rows, want %d", len(tot), want)
	}
	for _, tm := range tot {
		if tm.Op == OpQProj && tm.Calls != 5*map[roofline.Phase]int{Prefill: 1, Decode: 4}[tm.Phase] {
			t.Errorf("Totals %s q_proj: %d calls, want one per layer per call", tm.Phase, tm.Calls)
		}
	}
	s.ResetTimings()
	if n := len(s.Timings()); n != 0 {
		t.Errorf("after ResetTimings: %d timings", n)
	}
}

// BenchmarkStories256 is the 256-token greedy run of the reference:
// prefill of the first token, then 255 decode steps.
func BenchmarkStories256(b *testing.B) {
	ref := loadReference(b)
	_, s := newStories(b, Options{})
	for b.Loop() {
		s.Reset()
		if _, err := s.Prefill(ref.input[:1]); err != nil {
			b.Fatal(err)
		}
		for _, tok := range ref.input[1:] {
			if _, err := s.Decode(tok); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(ref.input))*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkStoriesPrefill256 prefills all 256 tokens at once.
func BenchmarkStoriesPrefill256(b *testing.B) {
	ref := loadReference(b)
	_, s := newStories(b, Options{})
	for b.Loop() {
		s.Reset()
		if _, err := s.Prefill(ref.input); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ref.input))*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// TestOpObserver: the observer sees every timed operator once per call, in
// the phase that ran it, and stays set across ResetTimings.
func TestOpObserver(t *testing.T) {
	ref := loadReference(t)
	_, s := newStories(t, Options{})
	seen := map[string]int{}
	var order []string
	s.b.Observe(func(p roofline.Phase, op string) {
		seen[string(p)+"/"+op]++
		if p == Prefill && len(order) < 3 {
			order = append(order, op)
		}
	})
	s.ResetTimings()
	if _, err := s.Prefill(ref.input[:8]); err != nil {
		t.Fatal(err)
	}
	for _, tok := range ref.input[8:11] {
		if _, err := s.Decode(tok); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{}
	for _, tm := range s.Timings() {
		want[string(tm.Phase)+"/"+tm.Op] += tm.Calls
	}
	if len(want) == 0 || !maps.Equal(seen, want) {
		t.Errorf("observed %v\nwant (timed calls) %v", seen, want)
	}
	if !slices.Equal(order, []string{OpEmbed, OpAttnNorm, OpQProj}) {
		t.Errorf("first prefill operators observed %v", order)
	}
}
