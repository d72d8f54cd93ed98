package roofline

import (
	"math"
	"strings"
	"testing"
)

// TestPredictAttention: the serial time is the sum of the stages and the
// pipelined one the longer stage's plus one tile per job (SMEPilot §4.2),
// the stages come from the catalog's qk, pv (matrix) and softmax plus the
// rescale (vector), the rescale count follows the tiles each row sees
// (causal and windowed), and bad schedules are one error naming the value.
func TestPredictAttention(t *testing.T) {
	m, err := Published("m4-pro")
	if err != nil {
		t.Fatal(err)
	}
	arch := Arch{Name: "t", Dim: 64, Intermediate: 128, Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 1, Vocab: 10}
	req := Request{Phase: Prefill, Batch: 1, Tokens: 4, Context: 4, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
	s := AttentionSchedule{Target: "cores", MatrixShare: 1, VectorShare: 1, Tile: 2, Rows: 4}
	st, err := PredictAttention(m, arch, req, "fp16", s)
	if err != nil {
		t.Fatal(err)
	}
	// Rows at positions 0..3 see 1, 1, 2, 2 tiles of 2, plus the division.
	if st.RescaleElems != 10 || st.TilesPerJob != 2 || st.Tiles != 2 {
		t.Errorf("causal: rescale elements %v, tiles per job %v, tiles %v; want 10, 2, 2", st.RescaleElems, st.TilesPerJob, st.Tiles)
	}
	s.Window = 1 // each row sees its own tile only
	if w, err := PredictAttention(m, arch, req, "fp16", s); err != nil || w.RescaleElems != 8 {
		t.Errorf("window 1: rescale elements %v (%v), want 8", w.RescaleElems, err)
	}

	arch = Arch{Name: "qwen3-0.6b-like", Dim: 1024, Intermediate: 3072, Layers: 1, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 1000}
	req.Tokens, req.Context = 2048, 2048
	s = AttentionSchedule{Target: "cores", MatrixShare: 1, VectorShare: 1, Tile: 128, Rows: 32}
	st, err = PredictAttention(m, arch, req, "fp16", s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Matrix <= 0 || st.Softmax <= 0 || st.Rescale <= 0 || st.Note != "" {
		t.Fatalf("stages %+v: want each > 0", st)
	}
	if math.Abs(st.Serial-(st.Matrix+st.Softmax+st.Rescale)) > 1e-12*st.Serial {
		t.Errorf("serial %v ≠ matrix %v + softmax %v + rescale %v", st.Serial, st.Matrix, st.Softmax, st.Rescale)
	}
	// 64 jobs of 32 rows per KV head, each seeing the tiles of 128 up to
	// its last row: 1..16 (4 jobs each), 8.5 on average, 8 KV heads.
	if wantTiles := 8 * 64 * 8.5; st.Tiles != wantTiles || st.TilesPerJob != 8.5 {
		t.Errorf("tiles %v, per job %v; want %v, 8.5", st.Tiles, st.TilesPerJob, wantTiles)
	}
	want := math.Max(st.Matrix, st.Vector) + math.Min(st.Matrix, st.Vector)/st.Tiles
	if math.Abs(st.Pipelined-want) > 1e-12*want || st.Pipelined >= st.Serial {
		t.Errorf("pipelined %v, want max + min/tiles = %v < serial %v", st.Pipelined, want, st.Serial)
	}
	// Each pair fills and drains once: two pairs, two tiles of the shorter stage.
	s.Pairs = 2
	if two, err := PredictAttention(m, arch, req, "fp16", s); err != nil || math.Abs(two.Pipelined-st.Pipelined-math.Min(st.Matrix, st.Vector)/st.Tiles) > 1e-12*want {
		t.Errorf("2 pairs: pipelined %v (%v), want %v + one more tile of the shorter stage", two.Pipelined, err, st.Pipelined)
	}
	s.Pairs = 0
	// The matrix stage on the matrix unit: the same vector stage.
	s.Target = "sme"
	if sme, err := PredictAttention(m, arch, req, "fp16", s); err != nil || sme.Matrix >= st.Matrix || sme.Vector != st.Vector {
		t.Errorf("on sme: matrix %v (cores %v), vector %v (cores %v), %v", sme.Matrix, st.Matrix, sme.Vector, st.Vector, err)
	}
	s.Target = "cores"
	// Two halves of the same cores: each stage at half the throughput,
	// never faster than both stages on every core one after the other.
	s.MatrixShare, s.VectorShare = 0.5, 0.5
	half, err := PredictAttention(m, arch, req, "fp16", s)
	if err != nil {
		t.Fatal(err)
	}
	if half.Pipelined < half.Serial {
		t.Errorf("halves of the cores: pipelined %v < serial %v", half.Pipelined, half.Serial)
	}
	for _, bad := range []AttentionSchedule{
		{Target: "cores", MatrixShare: 0, VectorShare: 1, Tile: 1, Rows: 1},
		{Target: "cores", MatrixShare: 1, VectorShare: 1.5, Tile: 1, Rows: 1},
		{Target: "cores", MatrixShare: 1, VectorShare: 1, Tile: 0, Rows: 1},
		{Target: "nowhere", MatrixShare: 1, VectorShare: 1, Tile: 1, Rows: 1},
	} {
		if _, err := PredictAttention(m, arch, req, "fp16", bad); err == nil || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%+v: %v, want one error line", bad, err)
		}
	}
}

// TestPredictAttentionColdKV: a decode attention whose KV fits a cache
// level is predicted at that level's roof, and with ColdKV (the KV
// evicted before each call, as in an engine's decode step) at DRAM's:
// slower by about the two roofs' ratio; a KV larger than every level
// reads DRAM either way.
func TestPredictAttentionColdKV(t *testing.T) {
	m := callMachine()
	arch := Arch{Name: "qwen3-0.6b-like", Dim: 1024, Intermediate: 3072, Layers: 1, Heads: 16, KVHeads: 8, HeadDim: 128, Vocab: 1000}
	s := AttentionSchedule{Target: "cores", MatrixShare: 1, VectorShare: 1, Tile: 128, Rows: 1}
	for _, c := range []struct {
		ctx      int
		minRatio float64
	}{
		{ctx: 64, minRatio: 3},   // 512 KiB of KV: L2 at 100 GB/s against DRAM's 20
		{ctx: 4096, minRatio: 1}, // 32 MiB: DRAM either way
	} {
		req := Request{Phase: Decode, Batch: 1, Tokens: 1, Context: c.ctx, Weight: "fp32", Act: "fp32", KV: "fp32", Routing: Routing{Kind: "uniform"}}
		warm, err := PredictAttention(m, arch, req, "fp32", s)
		if err != nil {
			t.Fatal(err)
		}
		s.ColdKV = true
		cold, err := PredictAttention(m, arch, req, "fp32", s)
		s.ColdKV = false
		if err != nil {
			t.Fatal(err)
		}
		if r := cold.Serial / warm.Serial; r < c.minRatio || (c.minRatio == 1 && math.Abs(r-1) > 1e-9) {
			t.Errorf("context %d: cold %v / warm %v = %v, want ≥ %v (1: equal)", c.ctx, cold.Serial, warm.Serial, r, c.minRatio)
		}
	}
}
