package sweep

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// defaults are the options of `bench sweep` without flags.
func defaults(out, errw *bytes.Buffer) *Options {
	return &Options{Stdout: out, Stderr: errw, Models: DefaultModels, Weights: "synthetic", Layers: DefaultLayers,
		Workloads: DefaultWorkloads, Batch: DefaultBatch, Placement: DefaultPlacement, Requests: DefaultRequests,
		MaxGen: DefaultMaxGen, MaxPrompt: DefaultMaxPrompt, Arrival: "closed", SLOTTFT: DefaultSLOTTFT, SLOTPOT: DefaultSLOTPOT,
		Seed: 1, Cell: -1}
}

func TestDefaults(t *testing.T) {
	o := defaults(&bytes.Buffer{}, &bytes.Buffer{})
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.prepare(); err != nil {
		t.Fatal(err)
	}
	cells, skipped, err := o.Cells()
	if err != nil {
		t.Fatal(err)
	}
	g := o.Grid()
	if len(cells) != 16 || len(skipped) != 0 || g.Requests != 4 || g.MaxGenTokens != 32 || g.MaxPromptTokens != 2048 || g.Layers != 2 ||
		len(g.Threads) != 1 || g.Threads[0] < 1 || o.SLOTTFT != 2 || o.SLOTPOT != 0.28 {
		t.Errorf("default grid: %d cells, skipped %v, %+v, SLO %v/%v", len(cells), skipped, g, o.SLOTTFT, o.SLOTPOT)
	}
}

// TestValidateErrors: bad settings give one line naming the flag and
// value, before anything is read.
func TestValidateErrors(t *testing.T) {
	for _, c := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Workloads = "gsm8k,mmlu" }, `unknown workload "mmlu"`},
		{func(o *Options) { o.Placement = "gpu" }, `--placement: unknown placement "gpu"`},
		{func(o *Options) { o.Ablate = "fusion" }, `--ablate: unknown ablation "fusion"`},
		{func(o *Options) { o.Placement = "auto" }, "--placement auto: needs --profile"},
		{func(o *Options) { o.Requests = 0 }, "--requests 0"},
		{func(o *Options) { o.Cell = -2 }, "--cell -2: must be ≥ 0"},
		{func(o *Options) { o.Weights, o.ModelsGiven = "x.bin", true }, "not used with --weights x.bin"},
	} {
		o := defaults(&bytes.Buffer{}, &bytes.Buffer{})
		c.set(o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "sweep: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v, want one line containing %q", err, c.want)
		}
	}
}

func TestTargetsLine(t *testing.T) {
	got := TargetsLine([]results.SweepTarget{{Target: "cores", Label: "avx2-fp32 (fp32 weights) on the cores", Calls: 3}, {Target: "matrix", Label: "x", Calls: 0}})
	if want := "cores = avx2-fp32 (fp32 weights) on the cores, 3 calls; matrix = x, 0 calls"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSkipCell: the grid leaves out what the engine does not run, one line
// per reason: partition outside mixed and auto, quantized weights on the
// matrix target or with the weight ablations (kv-packing applies).
func TestSkipCell(t *testing.T) {
	o := defaults(&bytes.Buffer{}, &bytes.Buffer{})
	o.Workloads, o.Batch, o.Threads, o.ThreadsGiven = "gsm8k", "2", "2", true
	o.Placement, o.Ablate, o.WeightDType, o.Profile = "cores,matrix,mixed,auto", "partition,packing,kv-packing", "fp32,q4_0", "m4-pro"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	cells, skipped := o.Grid().Cells()
	// fp32: cores and matrix 3 each (no partition), mixed and auto 4 each;
	// q4_0: cores (none, kv-packing) and auto (none, kv-packing).
	if len(cells) != 14+4 {
		t.Errorf("%d cells, want 18", len(cells))
	}
	want := []string{
		"ablate=partition with placement=cores: skipped (only placements mixed and auto partition a GEMM between the matrix unit and the cores)",
		"ablate=partition with placement=matrix: skipped (only placements mixed and auto partition a GEMM between the matrix unit and the cores)",
		"wdtype=q4_0 with ablate=packing: skipped (quantized weights are packed once, by their loader, and never partitioned)",
		"wdtype=q4_0 with placement=matrix: skipped (quantized weights run on the cores' quant backend)",
		"wdtype=q4_0 with placement=mixed: skipped (quantized weights run on the cores' quant backend)",
		"wdtype=q4_0 with ablate=partition: skipped (quantized weights are packed once, by their loader, and never partitioned)",
	}
	if strings.Join(skipped, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(want, "\n"))
	}
}
