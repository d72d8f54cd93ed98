package pool

import (
	"errors"
	"fmt"
	"math"

	"github.com/cpubench/bench/internal/split"
)

// Split is the division of an M×N output between two groups running
// different kernels, A and B (SMEPilot §4.1 tile-level work partitioning,
// §4.4 Eq. 1). A takes the low part of the split dimension, B the rest.
type Split struct {
	M, N int
	// Dim is "N" or "M", per SplitDim(M, N); Extent is N or M.
	Dim    string
	Extent int
	// Align is lcm(TileA, TileB) along Dim: the split point is a multiple
	// of it, or 0 or Extent.
	Align int
	// A and B are the regions; one may be empty (that group is dropped).
	A, B         Region
	TileA, TileB Tile
	// RateA and RateB are the rates given to PlanSplit, in output elements
	// per second.
	RateA, RateB float64
	// AlphaIdeal is Eq. 1, P_A/(P_A+P_B); Alpha is the fraction of Extent
	// actually given to A.
	AlphaIdeal, Alpha float64
	// TimeA and TimeB are the predicted seconds, elements/rate, and
	// Predicted their maximum.
	TimeA, TimeB, Predicted float64
	// Note says why a group was dropped, if one was.
	Note string
}

// PlanSplit divides an M×N output between kernel A (rate rateA output
// elements per second, tile tileA) and kernel B (rateB, tileB), SMEPilot
// §4.1/§4.4:
//
//   - the cut runs along the larger output dimension (SplitDim: N when
//     N ≥ M, else M; roofline.Place prefers M on a tie);
//   - the ideal fraction for A is Eq. 1, α = P_A/(P_A+P_B);
//   - the split point α·Extent is rounded to a multiple of the least common
//     multiple of both tiles along the dimension (or to Extent), taking of
//     the aligned points just below and above the one with the least
//     predicted max(t_A, t_B), t = elements/rate (internal/split.Eq1, the
//     function behind roofline.SplitEq1);
//   - a group whose region would be non-empty but smaller than its tile
//     along the dimension is dropped: all the work goes to a group whose
//     tile fits the whole extent, to the faster if both or neither do
//     (dropSubTile);
//   - a rate of 0 gives everything to the other group.
//
// Any rate unit works for the split itself; the predicted times are seconds
// when rates are output elements per second (for a GEMM with reduction
// depth K, FLOP/s ÷ 2K). Errors: M or N < 0, a rate negative, NaN or
// infinite, or both rates 0.
func PlanSplit(M, N int, rateA, rateB float64, tileA, tileB Tile) (Split, error) {
	if M < 0 || N < 0 {
		return Split{}, fmt.Errorf("pool: split %dx%d: negative extent", M, N)
	}
	for _, r := range []float64{rateA, rateB} {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return Split{}, fmt.Errorf("pool: split %dx%d: rates %g and %g: each must be finite and ≥ 0", M, N, rateA, rateB)
		}
	}
	if rateA == 0 && rateB == 0 {
		return Split{}, errors.New("pool: split: both rates are 0")
	}
	s := Split{M: M, N: N, TileA: tileA, TileB: tileB, RateA: rateA, RateB: rateB}
	s.Dim = SplitDim(M, N)
	ta, tb := tileA.n(), tileB.n()
	s.Extent = N
	if s.Dim == "M" {
		ta, tb, s.Extent = tileA.m(), tileB.m(), M
	}
	E := s.Extent
	var cut int
	switch {
	case rateB == 0:
		_, _, s.Align = split.Eq1(E, ta, tb, 1, 1)
		s.AlphaIdeal, cut = 1, E
	case rateA == 0:
		_, _, s.Align = split.Eq1(E, ta, tb, 1, 1)
		s.AlphaIdeal, cut = 0, 0
	default:
		cut, s.AlphaIdeal, s.Align = split.Eq1(E, ta, tb, rateA, rateB)
		cut, s.Note = dropSubTile(E, cut, ta, tb, rateA, rateB)
	}
	if s.Dim == "N" {
		s.A = Region{M0: 0, M1: M, N0: 0, N1: cut}
		s.B = Region{M0: 0, M1: M, N0: cut, N1: N}
	} else {
		s.A = Region{M0: 0, M1: cut, N0: 0, N1: N}
		s.B = Region{M0: cut, M1: M, N0: 0, N1: N}
	}
	if E > 0 {
		s.Alpha = float64(cut) / float64(E)
	}
	s.TimeA = predict(s.A.Elems(), rateA)
	s.TimeB = predict(s.B.Elems(), rateB)
	s.Predicted = math.Max(s.TimeA, s.TimeB)
	return s, nil
}

func predict(elems int, rate float64) float64 {
	if elems == 0 {
		return 0
	}
	return float64(elems) / rate
}

// RunSplit computes split s: group a runs blockA over s.A, partitioned among
// its workers with Block and s.TileA, while group b runs blockB over s.B
// with s.TileB; it returns when both are done. Timing.Seconds holds the
// measured seconds of A and B (0 for a group with an empty region, which
// is not dispatched and may be nil), Makespan the seconds until both were
// done. The groups must be disjoint. Errors are as for RunGroups.
func (p *Pool) RunSplit(a *Group, blockA BlockFunc, b *Group, blockB BlockFunc, s Split) (Timing, error) {
	return p.runSplit(nil, a, blockA, b, blockB, s)
}

func (p *Pool) runSplit(self *worker, a *Group, blockA BlockFunc, b *Group, blockB BlockFunc, s Split) (Timing, error) {
	var tasks [2]Task
	if !s.A.Empty() {
		if a == nil || blockA == nil {
			return Timing{}, fmt.Errorf("pool: split region A %v without a group and block function", s.A)
		}
		tasks[0] = Task{Group: a, F: a.blockTask(s.A, s.TileA, blockA)}
	}
	if !s.B.Empty() {
		if b == nil || blockB == nil {
			return Timing{}, fmt.Errorf("pool: split region B %v without a group and block function", s.B)
		}
		tasks[1] = Task{Group: b, F: b.blockTask(s.B, s.TileB, blockB)}
	}
	return p.runGroups(self, tasks[:])
}

// dropSubTile keeps cut if neither side's share is non-empty and smaller than
// its tile (ta for A's cut, tb for B's E-cut). Otherwise one group is
// dropped: all of E goes to the group whose tile is no larger than E, or to
// the faster group (least predicted time) if both or neither are.
func dropSubTile(E, cut, ta, tb int, rateA, rateB float64) (int, string) {
	sub := func(x, t int) bool { return x > 0 && x < t }
	if !sub(cut, ta) && !sub(E-cut, tb) {
		return cut, ""
	}
	why := fmt.Sprintf("Eq. 1 cut at %d of %d leaves A %d (tile %d) and B %d (tile %d)", cut, E, cut, ta, E-cut, tb)
	allA, allB := !sub(E, ta), !sub(E, tb)
	if allA == allB {
		allA = rateA >= rateB // equal predicted shapes: the faster takes all
	}
	next, dropped := 0, "A"
	if allA {
		next, dropped = E, "B"
	}
	if next == cut {
		return cut, why + ": no tile fits, kept"
	}
	return next, why + ": " + dropped + " dropped"
}

// Balancer re-plans a Split online from what the groups measured while
// running it together: SMEPilot Eq. 1 (§4.4) with the rates P_A, P_B
// tracked as exponentially weighted moving averages of each group's
// co-running rate (its region's elements over its seconds in a RunSplit).
// Rates measured with one group alone miss what the groups cost each other
// (a shared last-level cache, memory bandwidth, SMT siblings), and on a
// virtual machine a core's speed drifts between seconds; feedback follows
// both. The zero value is not usable: set the tiles and initial rates.
type Balancer struct {
	TileA, TileB Tile
	// RateA and RateB are the current estimates, output elements per
	// second (e.g. alone rates to start with).
	RateA, RateB float64
	// Weight is the weight of the newest observation, in (0, 1]; 0 means 1/2.
	Weight float64
}

// Plan is PlanSplit of an M×N output with the current rates and tiles.
func (b *Balancer) Plan(M, N int) (Split, error) {
	return PlanSplit(M, N, b.RateA, b.RateB, b.TileA, b.TileB)
}

// Observe folds one run of s, timed by t (from RunSplit), into the rates.
// A run in which a group had no work, or a time that is not positive,
// changes nothing: a group's rate is only learnt while both run. It reports
// whether the rates changed.
func (b *Balancer) Observe(s Split, t Timing) bool {
	if s.A.Empty() || s.B.Empty() || len(t.Seconds) < 2 || !(t.Seconds[0] > 0) || !(t.Seconds[1] > 0) {
		return false
	}
	w := b.Weight
	if !(w > 0 && w <= 1) {
		w = 0.5
	}
	b.RateA = (1-w)*b.RateA + w*float64(s.A.Elems())/t.Seconds[0]
	b.RateB = (1-w)*b.RateB + w*float64(s.B.Elems())/t.Seconds[1]
	return true
}
