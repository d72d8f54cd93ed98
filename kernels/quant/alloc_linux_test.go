package quant

import (
	"testing"

	"github.com/cpubench/bench/internal/hugepage"
)

// TestWeightsAdvisedHuge checks that a DRAM-sized packed weight (quants
// and scales, after Repack to the best backend's layout) is advised for
// transparent huge pages (MADV_HUGEPAGE: smaps' "hg" flag on every
// mapping of its interior) where THP is "always" or "madvise": the memory
// probe's DRAM read roof is measured on such pages, and a GEMV streamed on
// 4 KiB pages would be reported below it for the pages, not the kernel.
// Whether the kernel then grants huge pages depends on free, unfragmented
// memory (a loaded CI machine may get none), so the test checks the
// advice and only logs the pages granted.
func TestWeightsAdvisedHuge(t *testing.T) {
	if !hugepage.Allowed() {
		t.Skip("transparent huge pages not allowed here (/sys/kernel/mm/transparent_hugepage/enabled)")
	}
	if testing.Short() {
		t.Skip("64 MiB weight")
	}
	// A control: advice given here must show in smaps, else madvise has
	// no effect in this process (qemu-user ignores MADV_HUGEPAGE).
	ctl := make([]byte, 8<<20)
	hugepage.Advise(ctl)
	if ok, _, err := hugepage.Advised(ctl); err != nil || !ok {
		t.Skipf("MADV_HUGEPAGE leaves no hg flag in smaps in this process (an emulator such as qemu-user ignores it; %v)", err)
	}
	for _, f := range []Format{Q4_0, Q4_K} {
		m, err := Random(f, 16384, 7168, 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Repack(Best())
		advised, huge, err := hugepage.Advised(m.q) // the whole pages inside
		if err != nil {
			t.Fatal(err)
		}
		if !advised {
			t.Errorf("%s: the %d bytes of packed quants are not all advised MADV_HUGEPAGE (smaps VmFlags without hg)", f, len(m.q))
		}
		t.Logf("%s: %d of %d bytes on huge pages", f, huge, len(m.q))
	}
}
