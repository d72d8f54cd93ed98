package sweep

import (
	"math"
	"testing"

	"github.com/cpubench/bench/engine"
)

// TestSweepOps: per (phase, operator), seconds and interrupted calls summed
// over layers, calls per layer, and the uninterrupted time only where a
// call was interrupted.
func TestSweepOps(t *testing.T) {
	ts := []engine.Timing{
		{Phase: engine.Decode, Op: "attn_norm", Layer: 0, Seconds: 100e-6, Calls: 16, InterruptedCalls: 1, InterruptedSeconds: 60e-6},
		{Phase: engine.Decode, Op: "attn_norm", Layer: 1, Seconds: 40e-6, Calls: 16, InterruptedCalls: 2, InterruptedSeconds: 10e-6},
		{Phase: engine.Decode, Op: "q_proj", Layer: 0, Seconds: 5e-3, Calls: 16},
		{Phase: engine.Prefill, Op: "attn_norm", Layer: 0, Seconds: 30e-6, Calls: 1},
	}
	ops := sweepOps(ts)
	if len(ops) != 3 {
		t.Fatalf("%d ops, want 3: %+v", len(ops), ops)
	}
	n := ops[0]
	if n.Op != "attn_norm" || n.Phase != "decode" || n.Calls != 16 || math.Abs(n.MeasuredS-140e-6) > 1e-12 ||
		n.InterruptedCalls != 3 || n.UninterruptedS == nil || math.Abs(*n.UninterruptedS-70e-6) > 1e-12 {
		t.Errorf("decode attn_norm %+v; want 16 calls, 140 µs, 3 interrupted, 70 µs uninterrupted", n)
	}
	if ops[1].UninterruptedS != nil || ops[2].UninterruptedS != nil || ops[2].Phase != "prefill" {
		t.Errorf("q_proj %+v, prefill attn_norm %+v: want no uninterrupted time", ops[1], ops[2])
	}
}
