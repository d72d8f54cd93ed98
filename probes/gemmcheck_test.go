package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/results"
)

// TestCheckGEMM: the check re-measures the largest table points of the
// backend and thread count within its FLOP bound (here small ones, so the
// test is quick), skipping points beyond the bound and of other backends
// or thread counts, and returns the median ratio to the profile's figures;
// a profile without such a point is one error naming the backend.
func TestCheckGEMM(t *testing.T) {
	be, err := gemm.Best(gemm.FP32)
	if err != nil {
		t.Skip(err)
	}
	pt := func(name string, m, n, k, threads int, gf float64) results.GEMMResult {
		return results.GEMMResult{Backend: name, M: m, N: n, K: k, Threads: threads, GFLOPS: results.Stat{Median: gf, N: 5}}
	}
	p := &results.Profile{Matrix: &results.Matrix{GEMMShapes: []results.GEMMResult{
		pt(be.Name, 16, 64, 64, 1, 1),
		pt(be.Name, 32, 64, 64, 1, 1),
		pt(be.Name, 64, 64, 64, 1, 1),
		pt(be.Name, 128, 64, 64, 1, 1),
		pt(be.Name, 4096, 4096, 4096, 1, 1), // beyond gemmCheckMaxFlops
		pt(be.Name, 256, 64, 64, 2, 1),      // other threads
		pt("other-fp32", 512, 64, 64, 1, 1), // other backend
	}}}
	ck, err := CheckGEMM(context.Background(), p, be.Name, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.Points) != gemmCheckPoints || ck.Points[0].M != 128 || ck.Points[2].M != 32 || !(ck.Ratio > 0) || ck.Threads != 1 {
		t.Errorf("check = %+v", ck)
	}
	for _, q := range ck.Points {
		if q.ProfileGFLOPS != 1 || !(q.NowGFLOPS > 0) {
			t.Errorf("point %+v", q)
		}
	}
	if ck.Rows != nil || ck.RowsRatio() != 0 {
		t.Errorf("rows 0: rows point %+v", ck.Rows)
	}
	// A prefill of 1500 rows: the point at the largest M ≤ 1500 (1024) of
	// the class with the most FLOPs within gemmCheckMaxRowsFlops (6.4
	// GFLOP; not the 4096×4096 one, 34 GFLOP).
	p.Matrix.GEMMShapes = append(p.Matrix.GEMMShapes, pt(be.Name, 1024, 3072, 1024, 1, 2), pt(be.Name, 1024, 1024, 1024, 1, 1),
		pt(be.Name, 1024, 4096, 4096, 1, 1), pt(be.Name, 2048, 3072, 1024, 1, 1))
	if ck, err := CheckGEMM(context.Background(), p, be.Name, 1, 1500); err != nil || ck.Rows == nil || ck.Rows.M != 1024 || ck.Rows.N != 3072 || ck.Rows.ProfileGFLOPS != 2 || !(ck.RowsRatio() > 0) {
		t.Errorf("rows 1500: %+v, rows %+v (%v)", ck, ck.Rows, err)
	}
	if _, err := CheckGEMM(context.Background(), p, "nosuch-fp32", 1, 0); err == nil || !strings.Contains(err.Error(), "no nosuch-fp32 point at 1 threads") {
		t.Errorf("unknown backend: err %v", err)
	}
	if _, err := CheckGEMM(context.Background(), &results.Profile{}, be.Name, 1, 0); err == nil {
		t.Error("no matrix section: no error")
	}
}
