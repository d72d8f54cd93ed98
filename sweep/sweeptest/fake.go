package sweeptest

import (
	"time"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/workloads"
)

// FakeCellEngine is a sweep.CellEngine on no engine: each forward pass
// sleeps a millisecond; OnDecode, when set, runs before each decode step
// with Cell.
type FakeCellEngine struct {
	Cell     workloads.Cell
	OnDecode func(cell workloads.Cell)
	calls    int
}

var _ sweep.CellEngine = (*FakeCellEngine)(nil)

// Prefill implements sweep.CellEngine.
func (f *FakeCellEngine) Prefill(slot, n int) error {
	f.calls++
	time.Sleep(time.Millisecond)
	return nil
}

// Decode implements sweep.CellEngine.
func (f *FakeCellEngine) Decode(slots []int) error {
	f.calls++
	if f.OnDecode != nil {
		f.OnDecode(f.Cell)
	}
	time.Sleep(time.Millisecond)
	return nil
}

// Reset implements sweep.CellEngine.
func (f *FakeCellEngine) Reset(slot int) error { return nil }

// Ops implements sweep.CellEngine: one lm_head row counting the calls.
func (f *FakeCellEngine) Ops() []results.SweepOp {
	return []results.SweepOp{{Phase: "decode", Op: "lm_head", Calls: f.calls, MeasuredS: 0.001}}
}

// ResetOps implements sweep.CellEngine.
func (f *FakeCellEngine) ResetOps() { f.calls = 0 }

// Backends implements sweep.CellEngine.
func (f *FakeCellEngine) Backends() string { return "fake" }

// PackSeconds implements sweep.CellEngine.
func (f *FakeCellEngine) PackSeconds() float64 { return 0 }

// Close implements sweep.CellEngine.
func (f *FakeCellEngine) Close() error { return nil }
