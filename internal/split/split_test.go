package split

import (
	"math"
	"testing"
)

func TestEq1AwkwardExtents(t *testing.T) {
	for _, c := range []struct {
		extent, aa, ab, want, align int
	}{
		{1000, 32, 16, 608, 32}, // ideal 612.2 → 608 (max 0.2119) beats 640 (0.2192)
		{1000, 24, 16, 624, 48}, // lcm 48: 576 or 624; 624 balances better
		{620, 24, 16, 384, 48},  // ideal 379.5 → 384
		{20, 32, 16, 20, 32},    // smaller than one tile: all to the faster side
		{50, 48, 1, 48, 48},     // ideal 30.6: 48 (partial 2 on B) beats 0
		{7, 0, 0, 4, 1},         // no tiles: ideal 4.28 → 4
		{0, 32, 16, 0, 32},      // empty extent
	} {
		got, ideal, align := Eq1(c.extent, c.aa, c.ab, 2920, 1850)
		if got != c.want || align != c.align {
			t.Errorf("Eq1(%d, %d, %d) = %d align %d, want %d align %d", c.extent, c.aa, c.ab, got, align, c.want, c.align)
		}
		if math.Abs(ideal-2920.0/4770) > 1e-12 {
			t.Errorf("ideal = %v", ideal)
		}
	}
}
