package split

import "math"

// Eq1 computes SMEPilot Eq. 1, f = P_A / (P_A + P_B), for an output extent
// of `extent` rows (or columns) and rounds the ideal split point f·extent to
// a boundary aligned with both kernels' tiles: multiples of align =
// lcm(alignA, alignB), or the extent itself, which ends in a partial tile.
// Of the aligned points just below and above the ideal it keeps the one that
// minimizes the predicted max(rowsA/P_A, (extent−rowsA)/P_B) completion
// time, assuming work spreads evenly over the extent; ties go to the point
// nearer the ideal, then to the lower one (§4.4). It returns the rows given
// to side A, the ideal fraction f and align. Tile sizes ≤ 0 count as 1; an
// extent ≤ 0 gives 0 rows. P_A and P_B are rates in any one unit (GFLOP/s,
// output elements per second), both > 0 for a meaningful f.
func Eq1(extent, alignA, alignB int, pA, pB float64) (rowsA int, ideal float64, align int) {
	if alignA <= 0 {
		alignA = 1
	}
	if alignB <= 0 {
		alignB = 1
	}
	align = alignA / gcd(alignA, alignB) * alignB
	ideal = pA / (pA + pB)
	if extent <= 0 {
		return 0, ideal, align
	}
	x := ideal * float64(extent)
	lo := int(math.Floor(x/float64(align))) * align
	hi := lo + align
	if hi > extent {
		hi = extent
	}
	if lo > extent {
		lo = extent
	}
	cost := func(s int) float64 {
		return math.Max(float64(s)/pA, float64(extent-s)/pB)
	}
	best := lo
	if cl, ch := cost(lo), cost(hi); ch < cl || (ch == cl && math.Abs(float64(hi)-x) < math.Abs(float64(lo)-x)) {
		best = hi
	}
	return best, ideal, align
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
