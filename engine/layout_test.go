package engine

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels"
)

// layoutCPUs is how many CPUs the layout tests may pin to.
func layoutCPUs(t *testing.T) int {
	cpus, err := affinity.Allowed()
	if err != nil {
		return runtime.NumCPU()
	}
	return len(cpus)
}

// layoutRun prefills tokens[:T] (every position's logits), then decodes
// the rest one by one, and returns every logit in order.
func layoutRun(t *testing.T, w *Weights, o Options, tokens []int, T int) ([]float32, *Model) {
	t.Helper()
	m, err := New(w, o)
	if err != nil {
		t.Fatalf("%s: %v", o.WeightLayout, err)
	}
	t.Cleanup(m.Close)
	s, err := m.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.PrefillAll(tokens[:T])
	if err != nil {
		t.Fatal(err)
	}
	out := append([]float32(nil), l...)
	for _, tok := range tokens[T:] {
		l, err := s.Decode(tok)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l...)
	}
	// A second prefill reuses the buffers (ddb: both; owr: the one).
	s.Reset()
	l, err = s.Prefill(tokens[:T])
	if err != nil {
		t.Fatal(err)
	}
	return append(out, l...), m
}

// TestLayoutLogitsIdentical: duplicate, owr and ddb give bit-identical
// logits (prefill at every position, then decode), the same arithmetic on
// the same values with the same compute workers, and agree with the
// default engine within rounding; on stories260K and on a tiny synthetic
// Qwen3 (QK-norm, untied head, shapes not multiples of the tiles).
func TestLayoutLogitsIdentical(t *testing.T) {
	tiny := Config{Name: "tiny-qwen", Dim: 40, Intermediate: 72, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 12, Vocab: 53, MaxSeq: 48,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true}
	tw, err := Synthetic(tiny, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	ref := loadReference(t)
	for _, tc := range []struct {
		name   string
		w      *Weights
		tokens []int
		T      int
	}{
		{"stories260K", loadStories(t), ref.input[:40], 33},
		{"tiny-qwen", tw, []int{3, 9, 27, 1, 50, 2, 8, 13, 21, 34, 5, 7, 11}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := layoutRun(t, tc.w, Options{Threads: 1}, tc.tokens, tc.T)
			var first []float32
			for _, p := range WeightLayouts() {
				o := Options{Threads: 1, WeightLayout: p}
				if p == LayoutDDB {
					if layoutCPUs(t) < 2 {
						t.Logf("ddb skipped: one CPU (a copy thread needs a second)")
						continue
					}
					o.Threads, o.CopyThreads = 2, 1 // one compute worker, as the others
				}
				got, m := layoutRun(t, tc.w, o, tc.tokens, tc.T)
				if m.Threads != 1 {
					t.Fatalf("%s: %d compute workers, want 1", p, m.Threads)
				}
				if d, at := maxAbsDiff(got, base); d > 1e-4 {
					t.Errorf("%s: logits differ from the default engine by %.3g at %d", p, d, at)
				}
				if first == nil {
					first = got
					continue
				}
				if !slices.Equal(got, first) {
					d, at := maxAbsDiff(got, first)
					t.Errorf("%s: logits differ from duplicate's by %.3g at %d: want identical", p, d, at)
				}
			}
		})
	}
}

// TestLayoutMoreWorkers: with two compute workers the policies still agree
// bit for bit (duplicate and owr; ddb needs a third CPU).
func TestLayoutMoreWorkers(t *testing.T) {
	if layoutCPUs(t) < 2 {
		t.Skip("one CPU")
	}
	ref := loadReference(t)
	a, _ := layoutRun(t, loadStories(t), Options{Threads: 2, WeightLayout: LayoutDuplicate}, ref.input[:20], 17)
	b, _ := layoutRun(t, loadStories(t), Options{Threads: 2, WeightLayout: LayoutOWR}, ref.input[:20], 17)
	if !slices.Equal(a, b) {
		d, at := maxAbsDiff(a, b)
		t.Errorf("owr vs duplicate on 2 workers: differ by %.3g at %d", d, at)
	}
}

// TestLayoutStats: resident bytes per policy, rearrangement counters, the
// per-thread trace of a prefill and the resident set.
func TestLayoutStats(t *testing.T) {
	w := loadStories(t)
	ref := loadReference(t)
	stats := map[WeightLayout]LayoutStats{}
	traces := map[WeightLayout][]LayoutEvent{}
	var lay *layoutState // ddb's
	for _, p := range WeightLayouts() {
		o := Options{Threads: 1, WeightLayout: p}
		if p == LayoutDDB {
			if layoutCPUs(t) < 2 {
				continue
			}
			o.Threads = 2
		}
		_, m := layoutRun(t, w, o, ref.input[:24], 20)
		stats[p], traces[p] = m.Layout(), m.LayoutTrace()
		if p == LayoutDDB {
			lay = m.lay
		}
		if m.WeightBytes != stats[p].ResidentBytes {
			t.Errorf("%s: WeightBytes %d, Layout().ResidentBytes %d", p, m.WeightBytes, stats[p].ResidentBytes)
		}
	}
	dup, owr := stats[LayoutDuplicate], stats[LayoutOWR]
	if dup.PrefillBytes <= 0 || dup.BufferBytes != 0 || owr.PrefillBytes != 0 || owr.BufferBytes <= 0 || owr.DecodeBytes != dup.DecodeBytes {
		t.Errorf("bytes: duplicate %+v, owr %+v", dup, owr)
	}
	if owr.ResidentBytes >= dup.ResidentBytes {
		t.Errorf("owr resident %d ≥ duplicate %d", owr.ResidentBytes, dup.ResidentBytes)
	}
	if dup.CopyBytes != 0 || owr.CopyBytes <= 0 || owr.Prefills != 2 {
		t.Errorf("copies: duplicate %d bytes, owr %d bytes over %d prefills", dup.CopyBytes, owr.CopyBytes, owr.Prefills)
	}
	kinds := func(ev []LayoutEvent) map[string]int {
		k := map[string]int{}
		for _, e := range ev {
			if e.End < e.Start || e.Start < 0 {
				t.Errorf("event %+v: bad interval", e)
			}
			k[e.Kind]++
		}
		return k
	}
	if k := kinds(traces[LayoutOWR]); k["pack"] == 0 || k["gemm"] == 0 || k["copy"] != 0 {
		t.Errorf("owr trace kinds %v", k)
	}
	if ddb, ok := stats[LayoutDDB]; ok {
		c := w.Config.Layers
		// §4.1: two buffers, each the largest matrix (owr's one buffer).
		if ddb.BufferBytes != 2*owr.BufferBytes || ddb.CopyThreads != 1 || ddb.ComputeThreads != 1 || ddb.ResidentBytes >= dup.ResidentBytes {
			t.Errorf("ddb %+v", ddb)
		}
		// Copy groups: each layer's 7 matrices in forward order, in groups
		// of consecutive matrices of one layer that fit one buffer.
		units := lay.units
		var order []*linear
		for i := range units {
			var floats int
			for _, l := range units[i].mats {
				_, f := lay.panels(l)
				floats += f
				order = append(order, l)
				if l.li != units[i].layer {
					t.Errorf("group %d (%s) holds layer %d's %s", i, units[i].name(), l.li, l.op)
				}
			}
			if 4*int64(floats) > owr.BufferBytes {
				t.Errorf("group %d (%s): %d floats overflow the %d-byte buffer", i, units[i].name(), floats, owr.BufferBytes)
			}
			if i > 0 && units[i].layer == units[i-1].layer {
				_, f := lay.panels(units[i].mats[0])
				var prev int
				for _, l := range units[i-1].mats {
					_, pf := lay.panels(l)
					prev += pf
				}
				if 4*int64(prev+f) <= owr.BufferBytes {
					t.Errorf("group %d (%s) would fit in group %d (%s)", i, units[i].name(), i-1, units[i-1].name())
				}
			}
		}
		if len(order) != 7*c || len(units) < c || len(units) >= 7*c {
			t.Errorf("%d matrices in %d groups for %d layers", len(order), len(units), c)
		}
		g := len(units)
		k := kinds(traces[LayoutDDB])
		if k["copy"] != g || k["preload"] != 1 || k["wait"] != g-1 || k["gemm"] != 7*c {
			t.Errorf("ddb trace kinds %v, want %d copies, 1 preload, %d waits, %d gemms", k, g, g-1, 7*c)
		}
	}
	if runtime.GOOS == "linux" {
		if rss, err := ResidentSetBytes(); err != nil || rss <= 0 {
			t.Errorf("ResidentSetBytes = %d, %v", rss, err)
		}
	}
}

// TestLayoutStopped: a ddb prefill stopped by its context leaves a copy in
// flight; the next prefill waits for it and gives the same logits.
func TestLayoutStopped(t *testing.T) {
	if layoutCPUs(t) < 2 {
		t.Skip("one CPU")
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := New(loadStories(t), Options{Threads: 2, WeightLayout: LayoutDDB, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	toks := loadReference(t).input[:16]
	want, err := s.Prefill(toks)
	if err != nil {
		t.Fatal(err)
	}
	want = append([]float32(nil), want...)
	cancel()
	s.Reset()
	if _, err := s.Prefill(toks); err == nil {
		t.Fatal("prefill after cancel: no error")
	}
	m.opts.Context = context.Background()
	s.Reset()
	got, err := s.Prefill(toks)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("prefill after a stopped one differs")
	}
}

// TestLayoutErrors: bad policies and combinations are one error line.
func TestLayoutErrors(t *testing.T) {
	if _, err := ParseWeightLayout("swizzle"); err == nil || !strings.Contains(err.Error(), `"swizzle"`) {
		t.Errorf("ParseWeightLayout(swizzle) = %v", err)
	}
	if p, err := ParseWeightLayout(""); p != "" || err != nil {
		t.Errorf(`ParseWeightLayout("") = %q, %v`, p, err)
	}
	w := loadStories(t)
	qc := Config{Name: "tiny-q", Dim: 64, Intermediate: 96, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 50, MaxSeq: 16,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6}
	q, err := SyntheticAs(qc, 0, 1, "q8_0")
	if err != nil {
		t.Fatal(err)
	}
	moe := Config{Name: "tiny-moe", Dim: 32, Intermediate: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Vocab: 50, MaxSeq: 16,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, Experts: 4, TopK: 2, MoEIntermediate: 24, SparseStep: 1}
	mw, err := Synthetic(moe, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := layoutCPUs(t)
	for _, tc := range []struct {
		w    *Weights
		o    Options
		want string
	}{
		{w, Options{WeightLayout: "swizzle"}, `weight layout "swizzle"`},
		{w, Options{WeightLayout: LayoutDDB, Threads: 1, CopyThreads: 1}, "1 copy threads of 1 threads leave no compute thread"},
		{w, Options{WeightLayout: LayoutDDB, CopyThreads: n}, "leave no compute thread"},
		{w, Options{WeightLayout: LayoutDDB, CopyThreads: -1}, "copy threads -1"},
		{w, Options{WeightLayout: LayoutOWR, CopyThreads: 1}, "only with weight layout ddb"},
		{w, Options{CopyThreads: 1}, "only with weight layout ddb"},
		{q, Options{WeightLayout: LayoutOWR}, "policy unsupported by weight format q8_0"},
		{q, Options{WeightLayout: LayoutDuplicate}, "policy unsupported by weight format q8_0"},
		{w, Options{WeightLayout: LayoutOWR, Placement: PlaceMatrix}, "placement matrix unsupported"},
		{w, Options{WeightLayout: LayoutOWR, PackPerCall: true}, "packing ablation"},
		{mw, Options{WeightLayout: LayoutDuplicate}, "MoE layers"},
	} {
		m, err := New(tc.w, tc.o)
		if err == nil {
			m.Close()
			t.Errorf("%+v: no error", tc.o)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %q, want one line containing %q", tc.o, err, tc.want)
		}
	}
}

// TestPackRows: the rearrangement writes gemm's fp32 panel layout,
// panel[p][k][j] = W[p·NR+j][k], rows past N zero, for shapes that are not
// multiples of 8 or NR, and only the panels asked for.
func TestPackRows(t *testing.T) {
	for _, sh := range []struct{ n, k, nr int }{{1, 1, 8}, {7, 5, 8}, {37, 13, 16}, {64, 9, 32}, {70, 33, 32}} {
		w := make([]float32, sh.n*sh.k)
		for i := range w {
			w[i] = float32(i + 1)
		}
		np := (sh.n + sh.nr - 1) / sh.nr
		dst := make([]float32, np*sh.k*sh.nr)
		for i := range dst {
			dst[i] = -1
		}
		packRows(dst, w, sh.n, sh.k, sh.nr, 0, np)
		for p := range np {
			for kk := range sh.k {
				for j := range sh.nr {
					want := float32(0)
					if row := p*sh.nr + j; row < sh.n {
						want = w[row*sh.k+kk]
					}
					if got := dst[(p*sh.k+kk)*sh.nr+j]; got != want {
						t.Fatalf("%+v: panel %d k %d j %d = %v, want %v", sh, p, kk, j, got, want)
					}
				}
			}
		}
		if np > 1 { // a range leaves the other panels alone
			for i := range dst {
				dst[i] = -1
			}
			packRows(dst, w, sh.n, sh.k, sh.nr, 1, np)
			if dst[0] != -1 || dst[sh.k*sh.nr] != w[sh.nr*sh.k] {
				t.Errorf("%+v: range [1, %d) wrote panel 0 or missed panel 1", sh, np)
			}
		}
	}
}
