package sweep_test

// The sweep's resume and skip behaviour on sweeptest's fake engine (an
// external test: sweeptest imports sweep).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/sweep/sweeptest"
	"github.com/cpubench/bench/workloads"
)

func withCellEngine(t *testing.T, f func(workloads.Cell, *sweep.Options) (sweep.CellEngine, error)) {
	old := sweep.NewCellEngine
	sweep.NewCellEngine = f
	t.Cleanup(func() { sweep.NewCellEngine = old })
}

// TestInterruptResumes: a context cancelled during the second cell stops
// the sweep with context.Canceled, keeps the first cell whole, and a rerun
// runs only the rest; a cell the machine cannot run is skipped with a note.
func TestInterruptResumes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	withCellEngine(t, func(c workloads.Cell, _ *sweep.Options) (sweep.CellEngine, error) {
		return &sweeptest.FakeCellEngine{Cell: c, OnDecode: func(c workloads.Cell) {
			if c.Batch == 2 {
				cancel()
			}
		}}, nil
	})
	opts := func(out, errw *bytes.Buffer) *sweep.Options {
		o := sweep.Defaults(out, errw)
		o.Workloads, o.Batch, o.Threads, o.ThreadsGiven, o.Placement, o.Requests, o.MaxGen, o.Out = "gsm8k", "1,2,3", "1", true, "cores", 3, 3, dir
		return o
	}
	var errb bytes.Buffer
	err := sweep.Run(ctx, opts(&bytes.Buffer{}, &errb))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted sweep returned %v", err)
	}
	if !strings.Contains(errb.String(), "interrupted: 1 of 3 cells done") {
		t.Errorf("stderr %q", errb.String())
	}
	cells, bad, _ := results.ReadSweepCells(filepath.Join(dir, sweep.CellsFile))
	if len(cells) != 1 || len(bad) != 0 || cells[0].Batch != 1 {
		t.Fatalf("after the interrupt: %d cells, bad %v", len(cells), bad)
	}

	withCellEngine(t, func(c workloads.Cell, _ *sweep.Options) (sweep.CellEngine, error) {
		if c.Batch == 3 {
			return nil, fmt.Errorf("batch 3 is odd: %w", sweep.ErrCellUnavailable)
		}
		return &sweeptest.FakeCellEngine{Cell: c}, nil
	})
	var out bytes.Buffer
	errb.Reset()
	if err := sweep.Run(context.Background(), opts(&out, &errb)); err != nil {
		t.Fatal(err)
	}
	if errs := errb.String(); !strings.Contains(errs, "resuming: 1 of 3 cells done") || !strings.Contains(errs, "skipped: batch 3 is odd: not available on this machine") {
		t.Fatalf("rerun: stderr %q", errs)
	}
	if strings.Count(out.String(), "| gsm8k") != 1 {
		t.Errorf("the rerun ran other cells than batch 2:\n%s", out.String())
	}
	cells, _, _ = results.ReadSweepCells(filepath.Join(dir, sweep.CellsFile))
	if len(cells) != 2 || cells[1].Batch != 2 || cells[1].Backends != "fake" || cells[1].Ops[0].Calls == 0 {
		t.Errorf("after the rerun: %+v", cells)
	}
}
