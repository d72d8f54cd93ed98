package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestBuildChase(t *testing.T) {
	const untouched = 0xdead_beef_cafe_f00d
	for _, lineBytes := range []int{8, 64, 128, 4096} {
		stride := lineBytes / 8
		for _, lines := range []int{1, 2, 3, 17, 1000} {
			for _, extra := range []int{0, stride - 1} { // a partial last line is left alone
				for _, seed := range []uint64{0, 1, 42} {
					name := fmt.Sprintf("line=%d/lines=%d/extra=%d/seed=%d", lineBytes, lines, extra, seed)
					buf := make([]uint64, lines*stride+extra)
					for i := range buf {
						buf[i] = untouched
					}
					start := BuildChase(buf, lineBytes, seed)
					if start%uint64(stride) != 0 || start >= uint64(lines*stride) {
						t.Fatalf("%s: start %d is not a line's first element", name, start)
					}
					// Every line exactly once per cycle.
					seen := make([]bool, lines)
					i := start
					for step := 0; step < lines; step++ {
						if i%uint64(stride) != 0 || i >= uint64(lines*stride) {
							t.Fatalf("%s: step %d: index %d is not a line's first element", name, step, i)
						}
						if seen[i/uint64(stride)] {
							t.Fatalf("%s: step %d: line %d visited twice before the cycle closed", name, step, i/uint64(stride))
						}
						seen[i/uint64(stride)] = true
						i = buf[i]
					}
					if i != start {
						t.Fatalf("%s: after %d steps at %d, want back at start %d", name, lines, i, start)
					}
					if got := Chase(buf, start, lines); got != start {
						t.Fatalf("%s: Chase(%d steps) = %d, want start %d", name, lines, got, start)
					}
					// Chase's checksum against a Go replay, for several step counts.
					for _, steps := range []int{0, 1, 2, lines - 1, 3*lines + 5} {
						want := start
						for range steps {
							want = buf[want]
						}
						if got := Chase(buf, start, steps); got != want {
							t.Fatalf("%s: Chase(%d steps) = %d, replay %d", name, steps, got, want)
						}
					}
					// Only the first element of each whole line is written.
					for j, v := range buf {
						if (j%stride != 0 || j >= lines*stride) && v != untouched {
							t.Fatalf("%s: buf[%d] = %#x written, want untouched", name, j, v)
						}
					}
					// Deterministic in the seed.
					again := slices.Clone(buf)
					if BuildChase(again, lineBytes, seed) != start || !slices.Equal(again, buf) {
						t.Fatalf("%s: BuildChase is not deterministic", name)
					}
				}
			}
		}
	}
	a, b := make([]uint64, 1000), make([]uint64, 1000)
	BuildChase(a, 8, 1)
	BuildChase(b, 8, 2)
	if slices.Equal(a, b) {
		t.Fatal("seeds 1 and 2 gave the same chain")
	}
}

func TestBuildChasePanics(t *testing.T) {
	for _, tc := range []struct {
		n, lineBytes int
		want         string
	}{
		{8, 0, "lineBytes 0"},
		{8, 12, "lineBytes 12"},
		{8, -64, "lineBytes -64"},
		{7, 64, "len(buf) 7"},
		{0, 8, "len(buf) 0"},
	} {
		func() {
			defer func() {
				if e := recover(); e == nil || !strings.Contains(fmt.Sprint(e), tc.want) {
					t.Errorf("BuildChase(len %d, %d): panic %v, want one naming %q", tc.n, tc.lineBytes, e, tc.want)
				}
			}()
			BuildChase(make([]uint64, tc.n), tc.lineBytes, 1)
		}()
	}
}
