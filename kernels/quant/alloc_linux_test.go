package quant

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// hugeBytesIn sums the AnonHugePages of the mappings of /proc/self/smaps
// that overlap [lo, hi), in bytes, counting each mapping's huge pages
// only in proportion to its overlap (a lower bound would need pagemap).
func hugeBytesIn(t *testing.T, lo, hi uintptr) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("smaps: %v", err)
	}
	defer f.Close()
	var total int64
	var vlo, vhi uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fs := strings.Fields(line)
		if len(fs) > 0 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			a, b, _ := strings.Cut(fs[0], "-")
			x, err1 := strconv.ParseUint(a, 16, 64)
			y, err2 := strconv.ParseUint(b, 16, 64)
			if err1 == nil && err2 == nil {
				vlo, vhi = uintptr(x), uintptr(y)
			}
			continue
		}
		if len(fs) >= 2 && fs[0] == "AnonHugePages:" && vhi > lo && vlo < hi {
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			olo, ohi := max(lo, vlo), min(hi, vhi)
			total += kb << 10 * int64(ohi-olo) / int64(vhi-vlo)
		}
	}
	return total
}

// TestWeightsAdvisedHuge checks that a DRAM-sized packed weight (quants
// and scales, after Repack to the best backend's layout) lies on
// transparent huge pages where THP is "always" or "madvise": the memory
// probe's DRAM read roof is measured on such pages, and a GEMV streamed on
// 4 KiB pages would be reported below it for the pages, not the kernel.
func TestWeightsAdvisedHuge(t *testing.T) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !(strings.Contains(string(b), "[always]") || strings.Contains(string(b), "[madvise]")) {
		t.Skipf("transparent huge pages not available (%q, %v)", strings.TrimSpace(string(b)), err)
	}
	if testing.Short() {
		t.Skip("64 MiB weight")
	}
	for _, f := range []Format{Q4_0, Q4_K} {
		m, err := Random(f, 16384, 7168, 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Repack(Best())
		q := uintptr(unsafe.Pointer(unsafe.SliceData(m.q)))
		got := hugeBytesIn(t, q, q+uintptr(len(m.q)))
		// At least half: the buffer's ends need not be 2 MiB-aligned,
		// and a page may be refused when memory is fragmented.
		if 2*got < int64(len(m.q)) {
			t.Errorf("%s: %d of the %d bytes of packed quants on huge pages: want at least half (advised MADV_HUGEPAGE before the first touch)", f, got, len(m.q))
		}
	}
}
