package results

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Summarize returns the median, min, max and coefficient of variation of
// samples (sample standard deviation / mean; 0 for fewer than two samples or
// a zero mean). Samples are not modified. An empty input gives the zero Stat.
func Summarize(samples []float64) Stat {
	if len(samples) == 0 {
		return Stat{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	st := Stat{
		Median: median(s),
		Min:    s[0],
		Max:    s[len(s)-1],
		N:      len(s),
		// Samples keep the caller's order (the order measured).
		Samples: slices.Clone(samples),
	}
	if len(s) > 1 {
		mean, sd := stat.MeanStdDev(s, nil)
		if mean != 0 && !math.IsNaN(sd) {
			st.CV = sd / math.Abs(mean)
		}
	}
	return st
}

// median of sorted s: the middle element, or the mean of the two middle ones.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Scale returns st with every value multiplied by k (CV and N unchanged);
// k must be positive. It converts, e.g., seconds to GB/s via bytes/seconds
// where the caller inverts first.
func (st Stat) Scale(k float64) Stat {
	st.Median *= k
	st.Min *= k
	st.Max *= k
	return st
}
