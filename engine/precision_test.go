package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/cpubench/bench/roofline"
)

// TestPredictionPrecision (issue #16): a run with bf16 weights (placement
// matrix on the go-bf16 stand-in backend, which runs on the cores) is
// predicted with bf16 weight bytes and the cores' bf16 ceiling, on the
// cores target although the machine has a faster matrix target, and its
// attention at the fp32 ceilings; a cores run at fp32 on the cores.
func TestPredictionPrecision(t *testing.T) {
	cores := roofline.Target{Name: "cores", Kind: roofline.KindCores, BandwidthGBps: 100, CeilingsGFLOPS: map[string]float64{"fp32": 10, "bf16": 40}}
	mach := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "test", Targets: []roofline.Target{cores,
		{Name: "amx", Kind: roofline.KindMatrix, BandwidthGBps: 100, CeilingsGFLOPS: map[string]float64{"fp32": 1000, "bf16": 1000}}}}
	w := loadStories(t)
	c := w.Config
	predict := func(o Options) (Precision, string, map[string]OpPrediction) {
		t.Helper()
		m, err := New(w, o)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		p, note := m.PredictionPrecision(mach)
		ops, err := PredictOpsAs(mach, c, Prefill, 1, 64, 64, p)
		if err != nil {
			t.Fatal(err)
		}
		return p, note, ops
	}
	bp, note, bf := predict(Options{Placement: PlaceMatrix, MatrixBackend: "go-bf16"})
	if bp.Weight != "bf16" || bp.Ceiling != "bf16" || bp.Act != "fp32" || bp.KV != "fp32" || bp.Target != roofline.KindCores || bp.VectorCeiling != "fp32" {
		t.Fatalf("bf16 run: precision %+v", bp)
	}
	if s := bp.String(); !strings.Contains(s, "weights bf16") || !strings.Contains(s, "bf16 ceilings on the cores target") || !strings.Contains(s, "go-bf16") {
		t.Errorf("bf16 run: %q", s)
	}
	if !strings.Contains(note, "runs on the cores") {
		t.Errorf("bf16 run's note %q does not say the stand-in backend runs on the cores", note)
	}
	fp, _, f32 := predict(Options{Placement: PlaceCores})
	if fp.Weight != "fp32" || fp.Ceiling != "fp32" || fp.Target != roofline.KindCores {
		t.Fatalf("fp32 run: precision %+v", fp)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	for _, op := range []string{OpQProj, OpGateProj, OpDownProj} {
		b, f := bf[op], f32[op]
		// bf16 weights: fewer bytes, the same FLOPs.
		if f.Bytes <= b.Bytes {
			t.Errorf("%s: bf16 bytes %g not below fp32's %g", op, b.Bytes, f.Bytes)
		}
		if b.FLOPs != f.FLOPs {
			t.Errorf("%s: FLOPs %g (bf16) vs %g (fp32)", op, b.FLOPs, f.FLOPs)
		}
		if want := cores.Time("bf16", b.FLOPs, b.Bytes); !near(b.Seconds, want) {
			t.Errorf("%s: bf16 run predicted %g s, want the cores' bf16 roofline %g s", op, b.Seconds, want)
		}
		if want := cores.Time("fp32", f.FLOPs, f.Bytes); !near(f.Seconds, want) {
			t.Errorf("%s: fp32 run predicted %g s, want the cores' fp32 roofline %g s", op, f.Seconds, want)
		}
	}
	// The weights' bytes: q_proj reads Dim×QDim weights per layer.
	q := float64(c.Layers * c.Dim * c.QDim())
	if d := f32[OpQProj].Bytes - bf[OpQProj].Bytes; !near(d, 2*q) {
		t.Errorf("q_proj: fp32 − bf16 bytes %g, want 2 bytes × %g weights", d, q)
	}
	if a, b := bf[OpAttention].Seconds, f32[OpAttention].Seconds; !near(a, b) {
		t.Errorf("attention: %g s in the bf16 run, %g in the fp32 run: want the fp32 ceilings for both", a, b)
	}
}
