package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"", []int{}},
		{"\n", []int{}},
		{"0", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}},
		{"5,1-2,2", []int{1, 2, 5}},
		{"0-19,40-59", append(seq(0, 19), seq(40, 59)...)},
	} {
		got, err := ParseCPUList(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"a", "1-", "-1", "3-1", "1,,2", "0-7:2/4", "1-99999999"} {
		got, err := ParseCPUList(in)
		if err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want error", in, got)
			continue
		}
		if want := fmt.Sprintf("topology: parse cpulist %q: bad entry", in); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseCPUList(%q) error %q, want prefix %q", in, err, want)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{11, 10, 8, 3, 2, 1, 0, 8}, "0-3,8,10-11"},
		{[]int{0, 2, 4}, "0,2,4"},
	} {
		in := slices.Clone(tc.in)
		if got := FormatCPUList(in); got != tc.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("FormatCPUList modified its input: %v", in)
		}
		back, err := ParseCPUList(tc.want)
		if err != nil || FormatCPUList(back) != tc.want {
			t.Errorf("round trip of %q: %v, %v", tc.want, back, err)
		}
	}
}

func ExampleFormatCPUList() {
	cpus, _ := ParseCPUList("0-3,8,10-11")
	fmt.Println(cpus)
	fmt.Println(FormatCPUList([]int{40, 41, 1, 0, 2, 59, 58}))
	// Output:
	// [0 1 2 3 8 10 11]
	// 0-2,40-41,58-59
}

func seq(a, b int) []int {
	var s []int
	for i := a; i <= b; i++ {
		s = append(s, i)
	}
	return s
}
