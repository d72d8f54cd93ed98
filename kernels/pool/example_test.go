package pool_test

import (
	"fmt"

	"github.com/cpubench/bench/kernels/pool"
)

// A 37×8192 output split between a kernel three times as fast as the other
// (Eq. 1: α = 3/(3+1)), with tiles 6×16 and 16×32: the cut runs along N at a
// multiple of lcm(16, 32) = 32.
func ExamplePlanSplit() {
	s, err := pool.PlanSplit(37, 8192, 3e9, 1e9, pool.Tile{M: 6, N: 16}, pool.Tile{M: 16, N: 32})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Dim, s.Align, s.A, s.B)
	fmt.Printf("α ideal %.3f chosen %.3f, predicted %.1f µs\n", s.AlphaIdeal, s.Alpha, s.Predicted*1e6)
	// Output:
	// N 32 [0,37)x[0,6144) [0,37)x[6144,8192)
	// α ideal 0.750 chosen 0.750, predicted 75.8 µs
}

// Three workers share a 64×100 output along N (the larger extent) in tiles
// of 16 columns: 7 tiles, the last partial, as 3 + 2 + 2.
func ExampleBlocks() {
	for i, b := range pool.Blocks(pool.Region{M0: 0, M1: 64, N0: 0, N1: 100}, pool.Tile{M: 1, N: 16}, 3) {
		fmt.Println(i, b)
	}
	// Output:
	// 0 [0,64)x[0,48)
	// 1 [0,64)x[48,80)
	// 2 [0,64)x[80,100)
}
