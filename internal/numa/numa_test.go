package numa_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/cpubench/bench/internal/numa"
)

func TestAllocFree(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skipf("Alloc is not implemented on %s", runtime.GOOS)
	}
	ps := os.Getpagesize()
	for _, size := range []int{1, 8, ps - 1, ps, ps + 1, 3*ps + 5, 1 << 20} {
		b, err := numa.Alloc(size)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", size, err)
		}
		if len(b) != size {
			t.Errorf("Alloc(%d): len = %d", size, len(b))
		}
		if p := uintptr(unsafe.Pointer(&b[0])); p%uintptr(ps) != 0 {
			t.Errorf("Alloc(%d) at %#x: not page-aligned", size, p)
		}
		b[size-1] = 2
		b[0] = 1
		if b[0] != 1 || (size > 1 && b[size-1] != 2) {
			t.Errorf("Alloc(%d): writes lost", size)
		}
		if err := numa.Free(b[:size/2]); err != nil {
			t.Errorf("Free(Alloc(%d)[:%d]): %v", size, size/2, err)
		}
	}
	if err := numa.Free(nil); err != nil {
		t.Errorf("Free(nil) = %v, want nil", err)
	}
	if err := numa.Free(make([]byte, 64)); err == nil {
		t.Errorf("Free of a Go slice: no error")
	}
}

func TestAllocBadSize(t *testing.T) {
	for _, size := range []int{0, -1} {
		b, err := numa.Alloc(size)
		want := "alloc " + itoa(size) + " bytes"
		if err == nil || b != nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Alloc(%d) = %d bytes, %v; want an error containing %q", size, len(b), err, want)
		}
		b, err = numa.AllocOnNode(size, 0)
		if err == nil || b != nil || !strings.Contains(err.Error(), want) {
			t.Errorf("AllocOnNode(%d, 0) = %d bytes, %v; want an error containing %q", size, len(b), err, want)
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}

func TestViews(t *testing.T) {
	back := make([]uint64, 6)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&back[0])), 8*5+7) // 8-byte aligned
	f := numa.Float64s(b)
	u := numa.Uint64s(b)
	if len(f) != 5 || len(u) != 5 {
		t.Fatalf("len(Float64s) = %d, len(Uint64s) = %d for %d bytes; want 5", len(f), len(u), len(b))
	}
	f[3] = math.Pi
	if got := binary.NativeEndian.Uint64(b[24:]); got != math.Float64bits(math.Pi) {
		t.Errorf("Float64s write: bytes hold %#x, want %#x", got, math.Float64bits(math.Pi))
	}
	if u[3] != math.Float64bits(math.Pi) {
		t.Errorf("Uint64s view = %#x, want the same memory as Float64s", u[3])
	}
	binary.NativeEndian.PutUint64(b[32:], 42)
	if u[4] != 42 {
		t.Errorf("byte write: Uint64s()[4] = %d, want 42", u[4])
	}
	if numa.Float64s(b[:7]) != nil || numa.Uint64s(nil) != nil {
		t.Errorf("views of < 8 bytes are not nil")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "aligned") {
			t.Errorf("Float64s(misaligned) recovered %v, want a panic about alignment", r)
		}
	}()
	numa.Float64s(b[1:])
}

// needNUMA skips t where NUMA memory policy is unavailable (not Linux, a
// kernel without CONFIG_NUMA, or a seccomp profile denying mbind).
func needNUMA(t *testing.T) {
	t.Helper()
	if err := numa.Available(); err != nil {
		if !errors.Is(err, numa.ErrNoNUMA) {
			t.Fatalf("Available() = %v, which does not wrap ErrNoNUMA", err)
		}
		t.Skip(err)
	}
}

func TestAllocOnNode0(t *testing.T) {
	needNUMA(t)
	const size = 8<<20 + 123
	b, err := numa.AllocOnNode(size, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer numa.Free(b)
	if len(b) != size {
		t.Errorf("len = %d, want %d", len(b), size)
	}
	got, err := numa.PageNodes(b, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 64 {
		t.Errorf("PageNodes(AllocOnNode(%d, 0), 64) = %v, want map[0:64]", size, got)
	}
}

func TestAllocOnMissingNode(t *testing.T) {
	needNUMA(t)
	for _, node := range []int{7, -1, 1 << 20} {
		if _, err := os.Stat("/sys/devices/system/node/node" + itoa(node)); err == nil {
			t.Logf("node %d exists here; not testing it", node)
			continue
		}
		b, err := numa.AllocOnNode(1<<20, node)
		if err == nil {
			numa.Free(b)
			t.Errorf("AllocOnNode(1 MiB, %d): no error", node)
			continue
		}
		if !errors.Is(err, numa.ErrNoNUMA) || !strings.Contains(err.Error(), "node "+itoa(node)) {
			t.Errorf("AllocOnNode(1 MiB, %d) error = %v, want one naming the node and wrapping ErrNoNUMA", node, err)
		}
		t.Log(err)
	}
}

func TestPageNodes(t *testing.T) {
	needNUMA(t)
	ps := os.Getpagesize()
	b, err := numa.Alloc(16 * ps)
	if err != nil {
		t.Fatal(err)
	}
	defer numa.Free(b)
	got, err := numa.PageNodes(b, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Untouched pages are -2 (-ENOENT) or, where no page table covers
	// them, -14 (-EFAULT).
	if got[-2]+got[-14] != 16 {
		t.Errorf("PageNodes(untouched 16 pages, 1000) = %v, want 16 pages under -2 and -14", got)
	}
	for i := 0; i < 8*ps; i += ps {
		b[i] = 1
	}
	got, err = numa.PageNodes(b[ps/2:], 16)
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for n, c := range got {
		if n >= 0 {
			placed += c
		}
	}
	if placed != 8 || got[-2]+got[-14] != 8 {
		t.Errorf("PageNodes(half touched) = %v, want 8 pages placed and 8 under -2 or -14", got)
	}
	if _, err := numa.PageNodes(nil, 1); err == nil {
		t.Error("PageNodes(nil, 1): no error")
	}
	if _, err := numa.PageNodes(b, 0); err == nil || !strings.Contains(err.Error(), "0 samples") {
		t.Errorf("PageNodes(b, 0) error = %v, want one naming 0 samples", err)
	}
}

func TestAvailableNotLinux(t *testing.T) {
	if runtime.GOOS == "linux" {
		t.Skip("Linux implements NUMA")
	}
	if err := numa.Available(); !errors.Is(err, numa.ErrNoNUMA) || !strings.Contains(err.Error(), runtime.GOOS) {
		t.Errorf("Available() = %v, want an error naming %s and wrapping ErrNoNUMA", err, runtime.GOOS)
	}
}
