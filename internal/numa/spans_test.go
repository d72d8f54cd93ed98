package numa_test

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/numa"
)

func TestPageOwners(t *testing.T) {
	ps := os.Getpagesize()
	for _, tc := range []struct {
		name  string
		size  int
		spans []numa.Span
		want  []int
	}{
		{"aligned halves", 4 * ps, []numa.Span{{0, 2 * ps, 0}, {2 * ps, 4 * ps, 1}}, []int{0, 0, 1, 1}},
		// A page shared by two shares goes to the one that reads more of it.
		{"unaligned", 3 * ps, []numa.Span{{0, ps + ps/4, 0}, {ps + ps/4, 3 * ps, 1}}, []int{0, 1, 1}},
		{"unaligned other way", 3 * ps, []numa.Span{{0, 2*ps - ps/4, 0}, {2*ps - ps/4, 3 * ps, 1}}, []int{0, 0, 1}},
		// Equal bytes: the span listed first.
		{"tie", 2 * ps, []numa.Span{{ps + ps/2, 2 * ps, 3}, {0, ps + ps/2, 2}}, []int{2, 3}},
		// Two spans of one node add up against a longer one of another.
		{"same node adds", ps, []numa.Span{{0, ps / 4, 1}, {ps / 4, ps * 5 / 8, 0}, {ps * 5 / 8, ps, 1}}, []int{1}},
		{"uncovered", 3*ps + 1, []numa.Span{{ps, 2 * ps, 5}}, []int{-1, 5, -1, -1}},
		{"no spans", 1, nil, []int{-1}},
	} {
		got, err := numa.PageOwners(tc.size, tc.spans)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: PageOwners(%d, %v) = %v, %v; want %v", tc.name, tc.size, tc.spans, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		size  int
		spans []numa.Span
		want  string
	}{
		{0, nil, "size must be positive"},
		{ps, []numa.Span{{0, ps + 1, 0}}, "span 0 [0, 4097) on node 0"},
		{ps, []numa.Span{{0, 1, 0}, {3, 2, 0}}, "span 1 [3, 2)"},
		{ps, []numa.Span{{0, 1, -1}}, "node -1"},
	} {
		if ps != 4096 && strings.Contains(tc.want, "4097") {
			continue
		}
		if _, err := numa.PageOwners(tc.size, tc.spans); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PageOwners(%d, %v) error = %v; want one containing %q", tc.size, tc.spans, err, tc.want)
		}
	}
}

// TestBindInterleaveOneNode binds and interleaves parts of a buffer on node
// 0, which every Linux machine has, and checks every sampled page is there
// (the 2-node guest test checks two nodes).
func TestBindInterleaveOneNode(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("NUMA policies are implemented on Linux only")
	}
	if err := numa.Available(); err != nil {
		t.Skipf("no NUMA policy here: %v", err)
	}
	ps := os.Getpagesize()
	b, err := numa.Alloc(8*ps + 100)
	if err != nil {
		t.Fatal(err)
	}
	defer numa.Free(b)
	if err := numa.Interleave(b[:4*ps], []int{0}); err != nil {
		t.Fatal(err)
	}
	if err := numa.BindPages(b[4*ps:], []int{0, -1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := numa.Bind(b[5*ps:6*ps], 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += ps {
		b[i] = 1
	}
	pages, nodes, err := numa.SamplePages(b, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(pages, want) || !slices.Equal(nodes, make([]int, 9)) {
		t.Errorf("SamplePages = %v, %v; want pages %v all on node 0", pages, nodes, want)
	}
	// Errors name what is wrong.
	for _, tc := range []struct {
		err  error
		want string
	}{
		{numa.Bind(b[1:ps], 0), "does not start on a page boundary"},
		{numa.Bind(nil, 0), "empty buffer"},
		{numa.Interleave(b[:ps], nil), "no nodes"},
		{numa.BindPages(b, []int{0}), "1 owners for 9 pages"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error = %v; want one containing %q", tc.err, tc.want)
		}
	}
	if n, err := numa.CPUNode(0); err != nil || n != 0 {
		t.Errorf("CPUNode(0) = %d, %v; want 0 on this one-node test host", n, err)
	}
	if _, err := numa.CPUNode(-1); err == nil {
		t.Error("CPUNode(-1): no error")
	}
}
