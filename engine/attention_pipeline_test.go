package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/kernels"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// testPool starts n workers on the allowed CPUs (repeated when there are
// fewer: oversubscribed, for correctness only).
func testPool(t *testing.T, n int) *pool.Pool {
	t.Helper()
	cpus, err := affinity.Allowed()
	if err != nil || len(cpus) == 0 {
		cpus = []int{0}
	}
	o := pool.Options{}
	for i := range n {
		o.CPUs = append(o.CPUs, cpus[i%len(cpus)])
	}
	p, err := pool.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestAttentionPipeline runs prefill-shaped jobs (blocks of attnPlanRows rows
// × KV heads, the latest first, as Batch.attention cuts them) through the
// pipeline on 2 and 3 workers (a pair, and a pair plus a serial worker)
// and serially (attend), with and without sliding windows, from an empty
// cache and continuing one, on the packed cache, the kv-packing
// ablation's row-major one and a bf16 cache (within attnTolBF16), on the Go and the best fp32 backend: the
// pipeline's outputs equal the serial ones bit for bit, and both are
// within attnTol of the float64 reference over each row's window.
func TestAttentionPipeline(t *testing.T) {
	bes := attnBackends(t) // under the race detector, without go-fp32
	if len(bes) > 1 {
		bes = append(bes[:1:1], bes[len(bes)-1])
	}
	if raceEnabled {
		bes = bes[len(bes)-1:]
	}
	const kvHeads, group = 2, 2
	type shape struct {
		T, pos0, window int
	}
	// The last two: 3 rows × 2 heads, fewer than attnVecRows: the vector
	// kernels' stages in the pipeline.
	shapes := []shape{{300, 0, 0}, {300, 0, 37}, {261, 0, attnTile}, {150, 60, 0}, {150, 60, 200}, {40, 0, 0}, {3, 200, 0}, {3, 200, 70}}
	for _, workers := range []int{2, 3} {
		p := testPool(t, workers)
		gs, err := p.Groups(workers-workers/2, workers/2)
		if err != nil {
			t.Fatal(err)
		}
		type variant struct {
			be   gemm.Backend
			kind string
		}
		var variants []variant
		for _, be := range bes {
			for _, kind := range []string{"packed", "kv-packing", "bf16"} {
				variants = append(variants, variant{be, kind})
			}
		}
		amxBe, amxReal := amxAttnBackend(t)
		variants = append(variants, variant{amxBe, "amx"})
		for _, vr := range variants {
			be, kind := vr.be, vr.kind
			{
				packed := kind != "kv-packing"
				for _, hd := range []int{16, 64} {
					for si, sh := range shapes {
						if kind == "amx" && !amxReal && (workers != 2 || raceEnabled && (hd != 16 || si%3 != 1)) {
							continue // the Go specification of the tiles is slow: these cover its paths
						}
						name := fmt.Sprintf("workers=%d/%s/kv=%s/hd=%d/T=%d,pos0=%d,window=%d", workers, be.Name, kind, hd, sh.T, sh.pos0, sh.window)
						t.Run(name, func(t *testing.T) {
							ctx := sh.pos0 + sh.T
							lay := kvLayoutFor(be, kvHeads, hd, ctx+5, packed, kind == "bf16" || kind == "amx")
							rng := rand.New(rand.NewPCG(uint64(hd), uint64(si)))
							ldq, ldkv := kvHeads*group*hd, kvHeads*hd
							q := make([]float32, sh.T*ldq)
							k, v := make([]float32, ctx*ldkv), make([]float32, ctx*ldkv)
							for i := range q {
								q[i] = float32(rng.NormFloat64())
							}
							for i := range k {
								k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
							}
							kc, vc := kvCacheFor(lay, k, v, ctx)
							scale := float32(1 / math.Sqrt(float64(hd)))
							type unit struct{ r0, r1, h int }
							var units []unit
							rows := attnPlanRows(be, group)
							for r1 := sh.T; r1 > 0; r1 -= rows {
								for h := range kvHeads {
									units = append(units, unit{max(r1-rows, 0), r1, h})
								}
							}
							jobFor := func(out []float32) func(i int, _ *attnScratch, j *attnJob) {
								return func(i int, _ *attnScratch, j *attnJob) {
									u := units[i]
									*j = attnJob{out: out, q: q, ldq: ldq, kc: kc, vc: vc, r0: u.r0, r1: u.r1, pos0: sh.pos0, kvHead: u.h, group: group, scale: scale, window: sh.window}
								}
							}
							serial, piped := make([]float32, len(q)), make([]float32, len(q))
							ws := newAttnScratch(be, lay, group)
							job := jobFor(serial)
							for i := range units {
								var j attnJob
								job(i, ws, &j)
								attend(&j, ws)
							}
							scr := make([]*attnScratch, workers)
							for w := range scr {
								scr[w] = newAttnScratch(be, lay, group)
							}
							err := p.Do(func(ms *pool.Master) error {
								return attnPipeline(nil, ms, gs[0], gs[1], len(units), func(w int) *attnScratch { return scr[w] }, jobFor(piped))
							})
							if err != nil {
								t.Fatal(err)
							}
							for i := range serial {
								if math.Float32bits(serial[i]) != math.Float32bits(piped[i]) {
									t.Fatalf("out[%d] (row %d): pipelined %v, serial %v: want bit-identical", i, i/ldq, piped[i], serial[i])
								}
							}
							for _, r := range []int{0, 1, sh.T / 2, sh.T - 1} {
								pos := sh.pos0 + r
								lo := 0
								if sh.window > 0 {
									lo = max(0, pos-sh.window+1)
								}
								for h := range kvHeads * group {
									kh := h / group
									want, mag, a := attnRef(q[r*ldq+h*hd:r*ldq+(h+1)*hd], k[lo*ldkv:], v[lo*ldkv:], ldkv, kh*hd, hd, pos-lo, scale)
									for d := range hd {
										got := float64(serial[r*ldq+h*hd+d])
										tol := attnTol(mag[d], a, hd, pos-lo+1, lay.tile)
										if kind == "amx" {
											tol = attnTolAMX(mag[d], a, hd, pos-lo+1, lay.tile)
										} else if kind == "bf16" {
											tol = attnTolBF16(mag[d], a, hd, pos-lo+1, lay.tile)
										}
										if !(math.Abs(got-want[d]) <= tol) {
											t.Fatalf("row %d head %d [%d]: %v, reference %v (window from %d): error %.3g > %.3g", r, h, d, got, want[d], lo, math.Abs(got-want[d]), tol)
										}
									}
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestAttentionTilesMaskAware checks the tile list of a job: causal tiles
// past the block's last row and tiles before every row's window are not
// listed, each listed tile's rows are exactly those that see it, and the
// QKᵀ rows are whole slivers around them.
func TestAttentionTilesMaskAware(t *testing.T) {
	be := attnBackends(t)[0]
	const hd, group = 16, 2
	lay := newKVLayout(be, 1, hd, 2000, true)
	T := lay.tile
	ws := newAttnScratch(be, lay, group)
	nk, nv := lay.floats()
	kc, vc := make([]float32, nk), make([]float32, nv)
	q := make([]float32, 2000*group*hd)
	for _, c := range []struct{ r0, r1, pos0, window, tiles int }{
		{0, 32, 0, 0, 1},                           // the first block: the diagonal tile only
		{1000, 1032, 0, 0, 1032/T + 1},             // every tile up to the diagonal
		{1000, 1032, 0, 100, 2},                    // a window of 100 over the block: two or three tiles
		{1000, 1001, 0, 1, 1},                      // a window of one: its own tile
		{0, 1, 1500, 3 * T, 4},                     // decode with a window of three tiles, not aligned
		{T + 9*T/16, T + 9*T/16 + 32, 0, 2 * T, 2}, // rows in tile 1, window 2T: tiles 0, 1
		{5 * T, 5*T + 32, 0, T, 2},                 // aligned: the tile before and the diagonal
		{5 * T, 5*T + 32, 0, T - 40, 2},            // the window's start moves into the previous tile
		{5*T + 40, 5*T + 41, 0, 41, 1},             // a window ending exactly at the tile start
		{5*T + 40, 5*T + 41, 0, 42, 2},             // one further: the previous tile's last key
		{0, 300, 0, 64, 300/T + 1},                 // a whole prompt in one job
		{0, 3 * T, 0, 0, 3},                        // whole tiles
		{10, 20, 0, 0, 1},                          // rows after r0 = 10
		{0, 16, 1990 - 16, 0, 1990/T + 1},          // continuing a long cache
		{0, 16, 1990 - 16, 2 * T, 3},               // with a window
		{T - 1, T + 1, 0, 0, 2},                    // a block across a tile edge
		{T - 1, T + 1, 0, 1, 2},                    // window 1: each row its own tile
		{T, T + 1, 0, T + 1, 2},                    // window reaching position 0
		{1999, 2000, 0, 2000, 1999/T + 1},          // window as long as the cache
		{1999, 2000, 0, 0, 1999/T + 1},             // none
		{0, 1, 0, 5, 1},                            // the first token
	} {
		j := attnJob{out: q, q: q, ldq: group * hd, kc: kc, vc: vc, r0: c.r0, r1: c.r1, pos0: c.pos0, kvHead: 0, group: group, scale: 1, window: c.window}
		if !ws.begin(&j) {
			t.Fatalf("%+v: empty", c)
		}
		rows := c.r1 - c.r0
		// A decode job (fewer than attnVecRows query rows) on the packed
		// cache runs tiles of attnVecTile positions: c.tiles counts
		// lay.tile's, so only the rule below is checked there.
		T := ws.T
		if T != lay.tile {
			c.tiles = -1
		}
		// Every (row, tile) pair the masks leave some key of must be
		// listed, with the row in its range, and only those.
		want := map[int]bool{}
		for t0 := 0; t0 < c.pos0+c.r1; t0 += T {
			for i := range rows {
				p := c.pos0 + c.r0 + i
				lo := 0
				if c.window > 0 {
					lo = max(0, p-c.window+1)
				}
				if max(lo, t0) <= min(p, t0+T-1) {
					want[t0] = true
				}
			}
		}
		if len(ws.tiles) != len(want) || (c.tiles >= 0 && len(ws.tiles) != c.tiles) {
			t.Fatalf("%+v: %d tiles %v, want %d (%v)", c, len(ws.tiles), ws.tiles, c.tiles, want)
		}
		for _, sp := range ws.tiles {
			if !want[sp.j0] || sp.j1 != min(sp.j0+T, c.pos0+c.r1) {
				t.Fatalf("%+v: tile %+v not wanted", c, sp)
			}
			for i := range rows * group {
				lo, hi := j.visible(&sp, i)
				sees := lo < hi
				if in := i >= sp.iA && i < sp.iB; in != sees {
					t.Fatalf("%+v: tile %+v row %d: in range %v, sees %d..%d", c, sp, i, in, lo, hi)
				}
			}
			mr := be.TileM
			if sp.iS%mr != 0 || sp.iS > sp.iA || sp.iE < sp.iB || (sp.iE%mr != 0 && sp.iE != rows*group) {
				t.Fatalf("%+v: tile %+v: QKᵀ rows [%d, %d) not whole slivers of %d around [%d, %d)", c, sp, sp.iS, sp.iE, mr, sp.iA, sp.iB)
			}
		}
	}
}

// TestPipelineLogits runs a GQA model with and without a sliding window
// on 2 workers, with the pipeline and with the pipeline ablation: prefill
// (every position) and batched decode logits within refTol of the float64
// reference, and the ablation's equal to the pipeline's bit for bit.
func TestPipelineLogits(t *testing.T) {
	for _, window := range []int{0, 70} {
		c := Config{Name: fmt.Sprintf("gqa2-window%d", window), Dim: 32, Intermediate: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 320,
			RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true, SlidingWindow: window}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		w := refWeights(c, 12)
		rng := rand.New(rand.NewPCG(7, uint64(window)))
		lens := []int{200, 33}
		const steps = 2
		toks, want := refSequences(w, rng, lens, steps)
		check := func(what string, got []float32, ref []float64) {
			t.Helper()
			sc := refScale(ref)
			for j, g := range got {
				if e := math.Abs(float64(g) - ref[j]); !(e <= refTol*sc) {
					t.Fatalf("window %d: %s: logit %d: %v, want %v: error %.3g > %g·scale", window, what, j, g, ref[j], e, refTol)
				}
			}
		}
		run := func(o Options) []float32 {
			o.Threads = 2
			m, err := New(w, o)
			if err != nil {
				t.Skip(err) // fewer than 2 CPUs allowed
			}
			defer m.Close()
			b, err := m.NewBatch(len(lens), 0)
			if err != nil {
				t.Fatal(err)
			}
			if (b.vecG == nil) != o.NoPipeline {
				t.Fatalf("NoPipeline %v: pipeline groups %v", o.NoPipeline, b.vecG != nil)
			}
			var all []float32
			for s, n := range lens {
				l, err := b.PrefillAll(s, toks[s][:n])
				if err != nil {
					t.Fatal(err)
				}
				for p := range n {
					check(fmt.Sprintf("PrefillAll slot %d position %d", s, p), l[p*c.Vocab:(p+1)*c.Vocab], want[s][p])
				}
				all = append(all, l...)
			}
			slots := []int{1, 0}
			for i := range steps {
				next := make([]int, len(slots))
				for k, s := range slots {
					next[k] = toks[s][lens[s]+i]
				}
				l, err := b.Decode(slots, next)
				if err != nil {
					t.Fatal(err)
				}
				for k, s := range slots {
					check(fmt.Sprintf("batched decode step %d slot %d", i, s), l[k*c.Vocab:(k+1)*c.Vocab], want[s][lens[s]+i])
				}
				all = append(all, l...)
			}
			return all
		}
		piped := run(Options{ForcePipeline: true})
		serial := run(Options{NoPipeline: true})
		for i := range piped {
			if math.Float32bits(piped[i]) != math.Float32bits(serial[i]) {
				t.Fatalf("window %d: logit %d: pipeline %v, pipeline ablation %v: want bit-identical", window, i, piped[i], serial[i])
			}
		}
	}
}

// TestSlidingWindowConfig: FromHF reads sliding_window where the config
// uses it (Mistral's form; Qwen's use_sliding_window true from layer 0),
// ignores it where use_sliding_window is false, it is null (every shipped
// Qwen3 config) or max_window_layers is the layer count, refuses Qwen's
// per-layer form and a window below 1, and
// Validate refuses a negative window.
func TestSlidingWindowConfig(t *testing.T) {
	base := readModelConfig(t, "qwen3-0.6b")
	edit := func(f func(map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		f    func(map[string]any)
		want int
		err  string
	}{
		{"shipped", func(map[string]any) {}, 0, ""},
		{"unused", func(m map[string]any) { m["sliding_window"] = 4096 }, 0, ""},
		{"mistral", func(m map[string]any) { m["sliding_window"] = 4096; delete(m, "use_sliding_window") }, 4096, ""},
		{"qwen-used", func(m map[string]any) {
			m["sliding_window"], m["use_sliding_window"], m["max_window_layers"] = 512, true, 0
		}, 512, ""},
		{"qwen-per-layer", func(m map[string]any) {
			m["sliding_window"], m["use_sliding_window"], m["max_window_layers"] = 512, true, 20
		}, 0, "a window on some layers only"},
		{"qwen-none", func(m map[string]any) {
			m["sliding_window"], m["use_sliding_window"], m["max_window_layers"] = 512, true, 28
		}, 0, ""},
		{"zero", func(m map[string]any) {
			m["sliding_window"], m["use_sliding_window"], m["max_window_layers"] = 0, true, 0
		}, 0, "sliding_window 0: must be ≥ 1"},
	} {
		got, err := FromHF(edit(c.f), c.name)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want error containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got.SlidingWindow != c.want {
			t.Errorf("%s: window %d, %v; want %d", c.name, got.SlidingWindow, err, c.want)
		}
	}
	c, err := FromHF(base, "qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	c.SlidingWindow = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "sliding window -1") {
		t.Errorf("Validate with window -1: %v", err)
	}
}

// TestAttentionBackend: attention runs the matrix placement's backend
// where it computes fp32 (its panels in the KV cache), else the cores';
// with fp32 linears the logits stay within refTol of the reference either
// way.
func TestAttentionBackend(t *testing.T) {
	c := Config{Name: "gqa2", Dim: 32, Intermediate: 40, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 40, MaxSeq: 64,
		RoPETheta: 1e4, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6}
	w := refWeights(c, 3)
	toks := []int{1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 2, 4}
	want, _ := refForward(w, toks)
	// The default matrix backend: sme-fp32 under qemu-aarch64 with SME
	// (attention and its pipeline's matrix stage on SME), a bf16 backend
	// elsewhere (attention on the cores).
	for _, o := range []Options{{Placement: PlaceMatrix, MatrixBackend: "go-fp32"}, {Placement: PlaceCores}, {Placement: PlaceMatrix}, {Placement: PlaceMixed, Threads: 2}} {
		m, err := New(w, o)
		if err != nil {
			if o.Threads == 2 {
				t.Skip(err) // fewer than 2 CPUs
			}
			t.Fatal(err)
		}
		b, err := m.NewBatch(1, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantBe := m.Backend.Name
		if m.Matrix != nil && m.Matrix.DType == gemm.FP32 {
			wantBe = m.Matrix.Name
		}
		if o.MatrixBackend != "" && wantBe != o.MatrixBackend {
			t.Errorf("%+v: matrix backend %s", o, wantBe)
		}
		t.Logf("%s: attention on %s", o.Placement, wantBe)
		// The pipeline runs by default only with a matrix unit for its
		// matrix stage (and a second worker).
		if pipe, want := b.vecG != nil, m.pool.Size() >= 2 && attnPipelineDefault(b.attnWS[0].be); pipe != want {
			t.Errorf("%+v: pipeline %v on %s (unit %v), want %v", o, pipe, b.attnWS[0].be.Name, b.attnWS[0].be.Unit, want)
		}
		if got := b.attnWS[0].be; got.Name != wantBe || b.kv.nr != max(got.TileN, 1) {
			t.Errorf("%+v: attention backend %s (panel width %d), want %s", o, got.Name, b.kv.nr, wantBe)
		}
		l, err := b.PrefillAll(0, toks)
		if err != nil {
			t.Fatal(err)
		}
		if m.Matrix != nil && m.Matrix.DType != gemm.FP32 {
			m.Close()
			continue // bf16 linears: not held to the fp32 tolerance
		}
		for p := range toks {
			ref, sc := want[p], refScale(want[p])
			for j, g := range l[p*c.Vocab : (p+1)*c.Vocab] {
				if e := math.Abs(float64(g) - ref[j]); !(e <= refTol*sc) {
					t.Fatalf("%+v: position %d logit %d: %v, want %v", o, p, j, g, ref[j])
				}
			}
		}
		m.Close()
	}
}

// TestAttentionPlanMatchesKernel: the tiling the roofline times
// (AttentionPlan) is the one the kernel runs: the KV layout's tile, the
// planner's rows, the backend's MR and NR, the softmax padding.
func TestAttentionPlanMatchesKernel(t *testing.T) {
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ hd, group int }{{128, 2}, {64, 4}, {256, 8}} {
		p := AttentionPlan(be, c.hd, c.group)
		lay := newKVLayout(be, 1, c.hd, 64, true)
		if p.Tile != lay.tile || p.Rows != attnPlanRows(be, c.group) || p.TileM != max(be.TileM, 1) || p.PanelN != lay.nr || p.Pad != softmaxPad || p.VecRows != attnVecRows {
			t.Errorf("head dim %d, group %d: plan %+v, layout tile %d, nr %d", c.hd, c.group, p, lay.tile, lay.nr)
		}
	}
}
