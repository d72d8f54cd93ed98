package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestCheckDRAMRoof: the check re-measures every working set of the
// profile's DRAM roof at its thread count (here small ones, so the test
// is quick) and returns the median of their medians beside the profile's;
// a profile without a roof at the thread count is one error naming it.
func TestCheckDRAMRoof(t *testing.T) {
	p := &results.Profile{Memory: &results.Memory{DRAM: []results.DRAMRoof{{
		Threads: 1, Kernel: "read", Pages: pagesSmall, WorkingSets: []int64{1 << 20, 2 << 20},
		GBps: results.Stat{Median: 20, N: 5},
	}}}}
	ck, err := CheckDRAMRoof(context.Background(), p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.WorkingSets) != 2 || !(ck.Now.Median > 0) || ck.Now.N != 2 || ck.Profile.Median != 20 || ck.Kernel != "read" {
		t.Errorf("check = %+v", ck)
	}
	if _, err := CheckDRAMRoof(context.Background(), p, 2); err == nil || !strings.Contains(err.Error(), "no DRAM read roof at 2 threads") {
		t.Errorf("2 threads: err %v", err)
	}
	if _, err := CheckDRAMRoof(context.Background(), &results.Profile{}, 1); err == nil {
		t.Error("no memory section: no error")
	}
}
