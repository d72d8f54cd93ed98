package reports

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

func loadProfile(t *testing.T) *results.Profile {
	t.Helper()
	p, err := results.ReadProfile("../results/testdata/profile-amd-epyc-2core.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// withSyntheticCompute adds made-up compute and nonlinear sections so the
// rendering code is exercised; the values are for the test only.
func withSyntheticCompute(p *results.Profile) {
	st := func(v float64) results.Stat {
		return results.Stat{Median: v, Min: v * 0.98, Max: v * 1.01, CV: 0.01, N: 5}
	}
	p.Compute = &results.Compute{FrequencyHz: 2.6e9, FrequencySource: "test", Peaks: []results.ComputePeak{
		{Kernel: "avx2_fma_fp32", ISA: "avx2", Instruction: "VFMADD231PS ymm", Precision: "fp32", Unit: "GFLOP/s", Threads: 2, Accumulators: 10, OpsPerInstruction: 16, Rate: st(160), TheoreticalRate: 166.4, IPC: 2, AchievedFraction: 160 / 166.4},
		{Kernel: "avx2_fma_fp64", ISA: "avx2", Instruction: "VFMADD231PD ymm", Precision: "fp64", Unit: "GFLOP/s", Threads: 2, Accumulators: 10, OpsPerInstruction: 8, Rate: st(80)},
	}, Unavailable: []results.Unavailable{{Kernel: "amx_bf16", Why: "unavailable: CPU lacks AMX-TILE"}}}
	p.Nonlinear = &results.Nonlinear{FastExpMaxULP: 2.5, FastExpDomain: "[-87, 88]", Points: []results.NonlinearPoint{
		{Kernel: "exp", Backend: "go", Elems: 4096, Threads: 1, GElemsPerSec: st(0.4), NSPerElem: 2.5},
		{Kernel: "exp", Backend: "avx2", Elems: 4096, Threads: 1, GElemsPerSec: st(3), NSPerElem: 0.33},
		{Kernel: "softmax", Backend: "avx2", RowElems: 4096, Elems: 4096, Threads: 1, GElemsPerSec: st(2), NSPerElem: 0.5},
	}}
}

func TestProfileReport(t *testing.T) {
	p := loadProfile(t)
	withSyntheticCompute(p)
	dir := t.TempDir()
	plots, err := ProfilePlots(p, dir, FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bandwidth-vs-working-set-1t.png", "bandwidth-vs-working-set-2t.png", "bandwidth-vs-threads.png", "latency-vs-working-set.png", "roofline.png", "nonlinear-throughput.png", "numa-read-bandwidth.png"}
	var got []string
	for _, pl := range plots {
		got = append(got, pl.File)
		f, err := os.Open(filepath.Join(dir, pl.File))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", pl.File, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 300 {
			t.Errorf("%s: %v too small", pl.File, b)
		}
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(got, " "), w) {
			t.Errorf("missing plot %s (have %v)", w, got)
		}
	}
	var md bytes.Buffer
	if err := ProfileMarkdown(&md, p, plots); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Compute ceilings", "VFMADD231PS ymm", "96.2%", "amx_bf16: unavailable: CPU lacks AMX-TILE", "## Non-linear kernels", "2.50 ULP", "## Latency", "| L1    | 2 "} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("profile.md lacks %q", s)
		}
	}
}

func TestCompareNeedsTwo(t *testing.T) {
	p := loadProfile(t)
	if err := Compare(&bytes.Buffer{}, []string{"a"}, []*results.Profile{p}); err == nil {
		t.Fatal("Compare with one profile succeeded")
	}
	var b bytes.Buffer
	if err := Compare(&b, []string{"a", "b"}, []*results.Profile{p, p}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "DRAM read GB/s, 2 thread(s)") || !strings.Contains(b.String(), "| 1.00") {
		t.Fatalf("compare output:\n%s", b.String())
	}
}
