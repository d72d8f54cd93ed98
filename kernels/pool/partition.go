package pool

import "fmt"

// Tile is a kernel's native output block: M rows (tokens) by N columns
// (output channels). Extents ≤ 0 count as 1.
type Tile struct{ M, N int }

func (t Tile) m() int { return max(t.M, 1) }
func (t Tile) n() int { return max(t.N, 1) }

// Region is the output rows [M0, M1) by columns [N0, N1).
type Region struct{ M0, M1, N0, N1 int }

// Rows returns M1-M0, Cols N1-N0 and Elems their product (0 if either is ≤ 0).
func (r Region) Rows() int  { return max(r.M1-r.M0, 0) }
func (r Region) Cols() int  { return max(r.N1-r.N0, 0) }
func (r Region) Elems() int { return r.Rows() * r.Cols() }

// Empty reports whether the region has no element.
func (r Region) Empty() bool { return r.Elems() == 0 }

func (r Region) String() string {
	return fmt.Sprintf("[%d,%d)x[%d,%d)", r.M0, r.M1, r.N0, r.N1)
}

// BlockFunc computes the output block rows [m0, m1) × columns [n0, n1). worker
// is the pool index of the worker calling it (0 ≤ worker < Pool.Size()),
// unique among blocks running at the same time, so a kernel may index
// per-worker scratch with it. The engine wraps (*gemm.Weights).Block this way.
type BlockFunc func(worker int, m0, m1, n0, n1 int) error

// SplitDim says which dimension a region of rows×cols is cut along: "N"
// (columns, i.e. output channels) when cols ≥ rows, else "M" (rows, tokens).
// Cutting the larger output dimension keeps blocks from being elongated
// (SMEPilot §4.1); on a tie N is preferred, because workers splitting output
// channels read disjoint slices of the weights.
func SplitDim(rows, cols int) string {
	if cols >= rows {
		return "N"
	}
	return "M"
}

// Block returns worker i's block of n workers over region r for a kernel
// with tile t. The region is cut along SplitDim(r.Rows(), r.Cols()) into
// tiles of t counted from the region's origin (the last one possibly
// partial); each worker gets ⌊T/n⌋ whole tiles and the first T mod n workers
// one more, where T is the number of tiles. Workers beyond T get an empty
// block, so a small region leaves some workers idle rather than cutting a
// tile. The blocks of i = 0..n-1 cover r exactly once.
func Block(r Region, t Tile, n, i int) Region {
	if r.Empty() || n <= 0 || i < 0 || i >= n {
		return Region{M0: r.M0, M1: r.M0, N0: r.N0, N1: r.N0}
	}
	lo, hi, step := r.N0, r.N1, t.n()
	if SplitDim(r.Rows(), r.Cols()) == "M" {
		lo, hi, step = r.M0, r.M1, t.m()
	}
	tiles := (hi - lo + step - 1) / step
	q, rem := tiles/n, tiles%n
	first := i*q + min(i, rem)
	count := q
	if i < rem {
		count++
	}
	a := min(lo+first*step, hi)
	b := min(lo+(first+count)*step, hi)
	if SplitDim(r.Rows(), r.Cols()) == "M" {
		return Region{M0: a, M1: b, N0: r.N0, N1: r.N1}
	}
	return Region{M0: r.M0, M1: r.M1, N0: a, N1: b}
}

// Blocks returns Block(r, t, n, i) for i = 0..n-1.
func Blocks(r Region, t Tile, n int) []Region {
	out := make([]Region, max(n, 0))
	for i := range out {
		out[i] = Block(r, t, n, i)
	}
	return out
}

// RunBlocks partitions r among the group's workers with Block and calls
// f(worker, m0, m1, n0, n1) on each worker with a non-empty block; it returns
// like Run.
func (g *Group) RunBlocks(r Region, t Tile, f BlockFunc) error {
	return g.Run(g.blockTask(r, t, f))
}

func (g *Group) blockTask(r Region, t Tile, f BlockFunc) func(local, n int) error {
	return func(local, n int) error {
		b := Block(r, t, n, local)
		if b.Empty() {
			return nil
		}
		return f(g.index[local], b.M0, b.M1, b.N0, b.N1)
	}
}
