package numa

import (
	"fmt"
	"os"
	"slices"
)

// Span is a byte range [Off, End) of a buffer that the threads of NUMA node
// Node read (or write) most: a worker's static share of a weight matrix.
type Span struct {
	Off, End int
	Node     int
}

// PageOwners assigns each page of a size-byte buffer (pages of
// os.Getpagesize() bytes, the buffer starting on a page boundary, as Alloc's
// do) to the node whose spans cover most of its bytes: owners[i] is page i's
// node, -1 where no span covers any byte of it. Ties go to the node of the
// span that comes first in spans. A span's bytes count once per span, so
// overlapping spans of one node add up. Rows of a packed weight panel are
// not page-aligned: a page shared by two workers' shares goes to the one
// that reads more of it, so the bytes a worker reads from a remote node are
// at most one page at each end of its share.
//
// Errors: size ≤ 0, a span with Off > End, Off < 0, End > size, or Node < 0,
// each naming the span.
func PageOwners(size int, spans []Span) ([]int, error) {
	if size <= 0 {
		return nil, fmt.Errorf("numa: page owners of %d bytes: size must be positive", size)
	}
	ps := os.Getpagesize()
	np := (size + ps - 1) / ps
	type tally struct{ node, bytes, order int }
	per := make([][]tally, np)
	for i, s := range spans {
		if s.Off < 0 || s.Off > s.End || s.End > size || s.Node < 0 {
			return nil, fmt.Errorf("numa: page owners: span %d [%d, %d) on node %d: want 0 ≤ off ≤ end ≤ %d and node ≥ 0", i, s.Off, s.End, s.Node, size)
		}
		for off := s.Off; off < s.End; {
			p := off / ps
			end := min(s.End, (p+1)*ps)
			j := slices.IndexFunc(per[p], func(t tally) bool { return t.node == s.Node })
			if j < 0 {
				per[p] = append(per[p], tally{node: s.Node, order: i})
				j = len(per[p]) - 1
			}
			per[p][j].bytes += end - off
			off = end
		}
	}
	owners := make([]int, np)
	for p, ts := range per {
		owners[p] = -1
		best := tally{bytes: -1}
		for _, t := range ts {
			if t.bytes > best.bytes || (t.bytes == best.bytes && t.order < best.order) {
				best = t
			}
		}
		if best.bytes > 0 {
			owners[p] = best.node
		}
	}
	return owners, nil
}

// runs calls f(first, last, node) for each maximal run of pages [first,
// last) with the same owner ≥ 0.
func runs(owners []int, f func(p0, p1, node int) error) error {
	for p0 := 0; p0 < len(owners); {
		p1 := p0 + 1
		for p1 < len(owners) && owners[p1] == owners[p0] {
			p1++
		}
		if owners[p0] >= 0 {
			if err := f(p0, p1, owners[p0]); err != nil {
				return err
			}
		}
		p0 = p1
	}
	return nil
}
