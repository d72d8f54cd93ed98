package pool

import "testing"

func TestBlocksCoverAlignedAndEven(t *testing.T) {
	for _, r := range []Region{
		{0, 1, 0, 3000}, {0, 37, 0, 8192}, {0, 3000, 0, 37}, {5, 9, 7, 7}, {0, 0, 0, 5},
		{2, 7, 0, 1}, {0, 64, 0, 64}, {10, 20, 100, 101}, {0, 100, 32, 50},
	} {
		for _, tile := range []Tile{{1, 1}, {6, 16}, {16, 32}, {0, 0}, {7, 5}} {
			for n := 1; n <= 9; n++ {
				blocks := Blocks(r, tile, n)
				dim := SplitDim(r.Rows(), r.Cols())
				step, lo := tile.n(), r.N0
				if dim == "M" {
					step, lo = tile.m(), r.M0
				}
				covered := 0
				minT, maxT := 1<<30, -1
				var prevEnd int = lo
				for i, b := range blocks {
					if b.Empty() {
						continue
					}
					a, e := b.N0, b.N1
					if dim == "M" {
						a, e = b.M0, b.M1
						if b.N0 != r.N0 || b.N1 != r.N1 {
							t.Fatalf("%v %v n=%d: block %d %v does not span the columns", r, tile, n, i, b)
						}
					} else if b.M0 != r.M0 || b.M1 != r.M1 {
						t.Fatalf("%v %v n=%d: block %d %v does not span the rows", r, tile, n, i, b)
					}
					if a != prevEnd || (a-lo)%step != 0 {
						t.Fatalf("%v %v n=%d: block %d %v starts at %d, want %d on a tile boundary", r, tile, n, i, b, a, prevEnd)
					}
					prevEnd = e
					covered += b.Elems()
					tiles := (e - a + step - 1) / step
					minT, maxT = min(minT, tiles), max(maxT, tiles)
				}
				if covered != r.Elems() {
					t.Fatalf("%v %v n=%d: blocks %v cover %d of %d elements", r, tile, n, blocks, covered, r.Elems())
				}
				// Non-empty blocks differ by at most one tile, and a worker is
				// idle only when there are fewer tiles than workers.
				if maxT >= 0 && maxT-minT > 1 {
					t.Fatalf("%v %v n=%d: uneven blocks %v", r, tile, n, blocks)
				}
			}
		}
	}
}

func TestSplitDim(t *testing.T) {
	for _, tc := range []struct {
		m, n int
		want string
	}{{1, 3000, "N"}, {3000, 1, "M"}, {64, 64, "N"}, {65, 64, "M"}} {
		if got := SplitDim(tc.m, tc.n); got != tc.want {
			t.Errorf("SplitDim(%d, %d) = %s, want %s", tc.m, tc.n, got, tc.want)
		}
	}
}

func TestBlockOutOfRange(t *testing.T) {
	r := Region{0, 4, 0, 8}
	for _, tc := range []struct{ n, i int }{{0, 0}, {2, 2}, {2, -1}} {
		if b := Block(r, Tile{1, 1}, tc.n, tc.i); !b.Empty() {
			t.Errorf("Block(n=%d, i=%d) = %v, want empty", tc.n, tc.i, b)
		}
	}
}
