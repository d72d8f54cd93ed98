package affinity_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
)

func TestAllowed(t *testing.T) {
	cpus, err := affinity.Allowed()
	if runtime.GOOS != "linux" {
		if err == nil || !strings.Contains(err.Error(), runtime.GOOS) {
			t.Fatalf("Allowed() error = %v, want one naming %s", err, runtime.GOOS)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 || !slices.IsSorted(cpus) || cpus[0] < 0 {
		t.Fatalf("Allowed() = %v, want a non-empty sorted list of CPUs", cpus)
	}
	if len(cpus) < runtime.NumCPU() {
		t.Errorf("Allowed() = %v has fewer CPUs than runtime.NumCPU() = %d", cpus, runtime.NumCPU())
	}
}

// pinned runs f on a fresh goroutine locked to its OS thread; the goroutine
// exits locked, so the runtime discards the thread and its narrowed mask.
func pinned(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

func TestPinEachAllowedCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("affinity is not implemented on %s", runtime.GOOS)
	}
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	for _, cpu := range cpus {
		pinned(func() {
			if err := affinity.Pin(cpu); err != nil {
				t.Errorf("Pin(%d): %v", cpu, err)
				return
			}
			// The kernel migrates the thread at the next scheduling point;
			// yield a few times before calling it a failure.
			got := -1
			for range 100 {
				if got, err = affinity.Current(); err != nil {
					t.Errorf("Current: %v", err)
					return
				}
				if got == cpu {
					return
				}
				runtime.Gosched()
			}
			t.Errorf("after Pin(%d), Current() = %d", cpu, got)
		})
	}
	after, err := affinity.Allowed()
	if err != nil || !slices.Equal(after, cpus) {
		t.Errorf("Allowed() after pinning = %v, %v; want %v (unchanged)", after, err, cpus)
	}
}

func TestPinSet(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("affinity is not implemented on %s", runtime.GOOS)
	}
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	pinned(func() {
		if err := affinity.PinSet(cpus); err != nil {
			t.Errorf("PinSet(%v): %v", cpus, err)
			return
		}
		got, err := affinity.Current()
		if err != nil || !slices.Contains(cpus, got) {
			t.Errorf("after PinSet(%v), Current() = %d, %v", cpus, got, err)
		}
	})
}

func TestPinErrorsNameCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		pin  func() error
		want string
	}{
		{"out of range", func() error { return affinity.Pin(4096) }, "CPU 4096"},
		{"negative", func() error { return affinity.Pin(-1) }, "CPU -1"},
		{"huge", func() error { return affinity.Pin(1 << 30) }, "CPU 1073741824"},
		{"set out of range", func() error { return affinity.PinSet([]int{4096, 4097}) }, "[4096 4097]"},
		{"empty set", func() error { return affinity.PinSet(nil) }, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			pinned(func() { err = tc.pin() })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}
