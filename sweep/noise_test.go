package sweep_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/noise"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/sweep/sweeptest"
	"github.com/cpubench/bench/workloads"
)

// steadyOrNot is the fake engine with a noise record's inputs: decode
// steps alternating 1 and 3 ms (cv far above 10%) when noisy, else steady.
type steadyOrNot struct {
	sweeptest.FakeCellEngine
	noisy bool
}

func (s *steadyOrNot) CPUs() ([]int, int) { return []int{0}, 1 }

func (s *steadyOrNot) Steps() ([]float64, []int, []float64) {
	steps := []float64{1e-3, 1e-3, 1e-3, 1e-3, 1e-3}
	if s.noisy {
		steps = []float64{1e-3, 3e-3, 1e-3, 3e-3, 1e-3}
	}
	return steps, nil, nil
}

// TestCellNoise: every cell of an engine that reports its steps carries a
// noise record with its decode steps' cv; a replay is judged on its CPU
// share alone (ReplayNoise: its steps are not repetitions), so a spread of
// the steps is recorded but marks nothing, and a cell whose threads got
// less than 90% of their CPUs is marked NOISY in its JSON, in bench.txt's
// labels and on stderr.
func TestCellNoise(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	withCellEngine(t, func(c workloads.Cell, _ *sweep.Options) (sweep.CellEngine, error) {
		return &steadyOrNot{FakeCellEngine: sweeptest.FakeCellEngine{Cell: c}, noisy: c.Batch == 2}, nil
	})
	var out, errb bytes.Buffer
	o := sweep.Defaults(&out, &errb)
	o.Workloads, o.Batch, o.Threads, o.ThreadsGiven, o.Placement, o.Requests, o.MaxGen, o.Out = "gsm8k", "1,2", "1", true, "cores", 2, 3, dir
	if err := sweep.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	cells, _, err := results.ReadSweepCells(filepath.Join(dir, sweep.CellsFile))
	if err != nil || len(cells) != 2 {
		t.Fatalf("%d cells, %v", len(cells), err)
	}
	anyNoisy := false
	for _, c := range cells {
		if c.Noise == nil || c.Noise.Attempts != 1 {
			t.Fatalf("batch %d: noise %+v", c.Batch, c.Noise)
		}
		if spread := c.Batch == 2; (c.Noise.CV > results.NoiseMaxCV) != spread || strings.Contains(c.Noise.Why, "cv ") {
			t.Errorf("batch %d: noise %+v: want the cv recorded, not judged", c.Batch, c.Noise)
		}
		starved := c.Noise.CPUFraction > 0 && c.Noise.CPUFraction < results.NoiseMinCPUFraction
		if c.Noisy() != starved {
			t.Errorf("batch %d: noisy %v with CPU share %.2f", c.Batch, c.Noisy(), c.Noise.CPUFraction)
		}
		anyNoisy = anyNoisy || c.Noisy()
	}
	// The fake engine's cells last milliseconds: the CPU share is the
	// process's own, usually far below 90%, so the marks can be checked.
	if !anyNoisy {
		t.Skip("no cell starved of CPU here: the NOISY marks are not exercised")
	}
	if !strings.Contains(errb.String(), "NOISY: ") {
		t.Errorf("stderr does not flag the noisy cell: %q", errb.String())
	}
	bench, err := os.ReadFile(filepath.Join(dir, sweep.BenchFile))
	if err != nil || !strings.Contains(string(bench), "noise: NOISY: ") {
		t.Errorf("bench.txt has no NOISY label (%v):\n%s", err, bench)
	}
}

// TestCountFidelity: rows within ±10% counted by rows and time; a noisy
// run's count is flagged, not counted.
func TestCountFidelity(t *testing.T) {
	pairs := [][2]float64{{1.05, 1}, {2, 1}, {0.5, 0.52}, {1, 0}}
	f := sweep.CountFidelity(pairs, nil)
	if f.Rows != 3 || f.Within != 2 || f.TimeS != 3.55 || f.WithinS != 1.55 || !f.Counted {
		t.Errorf("CountFidelity = %+v", f)
	}
	if s := f.String(); !strings.Contains(s, "2 of 3 rows") {
		t.Errorf("%q", s)
	}
	n := &results.Noise{Noisy: true, Why: "cv 30.0% > 10%"}
	if f := sweep.CountFidelity(pairs, n); f.Counted || !strings.Contains(f.String(), "NOISY (cv 30.0% > 10%): flagged, not counted") {
		t.Errorf("noisy: %+v %q", f, f.String())
	}
}

// TestRunNoise: the cv comes from the decode steps by successive
// differences, or from the prefills when there are too few steps.
func TestRunNoise(t *testing.T) {
	m := noise.NewMeter(nil, 1)
	if n := sweep.RunNoise(m, []float64{1, 1.01, 1.02, 1.03}, nil, nil); n.CV > 0.02 || n.Noisy {
		t.Errorf("steady drifting steps: %+v", n)
	}
	if n := sweep.RunNoise(m, []float64{1}, nil, []float64{1, 2, 1, 2}); n.CV < 0.3 || !n.Noisy {
		t.Errorf("spread prefills: %+v", n)
	}
}
