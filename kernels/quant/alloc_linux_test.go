package quant

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// smapsIn reads the mappings of /proc/self/smaps that overlap [lo, hi):
// whether every one of them carries the "hg" VmFlag (advised
// MADV_HUGEPAGE) and their AnonHugePages, in bytes, counted in proportion
// to each mapping's overlap.
func smapsIn(t *testing.T, lo, hi uintptr) (advised bool, huge int64) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("smaps: %v", err)
	}
	defer f.Close()
	var vlo, vhi uintptr
	seen := false
	advised = true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 0 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			a, b, _ := strings.Cut(fs[0], "-")
			x, err1 := strconv.ParseUint(a, 16, 64)
			y, err2 := strconv.ParseUint(b, 16, 64)
			if err1 == nil && err2 == nil {
				vlo, vhi = uintptr(x), uintptr(y)
			}
			continue
		}
		if vhi <= lo || vlo >= hi || len(fs) < 1 {
			continue
		}
		switch fs[0] {
		case "AnonHugePages:":
			if len(fs) >= 2 {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				olo, ohi := max(lo, vlo), min(hi, vhi)
				huge += kb << 10 * int64(ohi-olo) / int64(vhi-vlo)
			}
		case "VmFlags:":
			seen = true
			if !slices.Contains(fs[1:], "hg") {
				advised = false
			}
		}
	}
	if !seen {
		t.Skip("smaps has no VmFlags")
	}
	return advised, huge
}

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
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !(strings.Contains(string(b), "[always]") || strings.Contains(string(b), "[madvise]")) {
		t.Skipf("transparent huge pages not available (%q, %v)", strings.TrimSpace(string(b)), err)
	}
	if testing.Short() {
		t.Skip("64 MiB weight")
	}
	// A control: advice given here must show in smaps, else madvise has
	// no effect in this process (qemu-user ignores MADV_HUGEPAGE).
	ctl := make([]byte, 8<<20)
	c := uintptr(unsafe.Pointer(unsafe.SliceData(ctl)))
	adviseHuge(unsafe.Pointer(unsafe.SliceData(ctl)), len(ctl))
	if ok, _ := smapsIn(t, c+4096, c+uintptr(len(ctl))-4096); !ok {
		t.Skip("MADV_HUGEPAGE leaves no hg flag in smaps in this process (an emulator such as qemu-user ignores it)")
	}
	for _, f := range []Format{Q4_0, Q4_K} {
		m, err := Random(f, 16384, 7168, 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Repack(Best())
		q := uintptr(unsafe.Pointer(unsafe.SliceData(m.q)))
		// The interior: the advice covers whole base pages only.
		advised, huge := smapsIn(t, q+4096, q+uintptr(len(m.q))-4096)
		if !advised {
			t.Errorf("%s: the %d bytes of packed quants are not all advised MADV_HUGEPAGE (smaps VmFlags without hg)", f, len(m.q))
		}
		t.Logf("%s: %d of %d bytes on huge pages", f, huge, len(m.q))
	}
}
