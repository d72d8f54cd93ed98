package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/cpubench/bench/roofline"
)

// Fit returns the parameters of meas ≈ fixed + pred/efficiency over
// paired uncalibrated predictions and measurements (seconds, > 0): the
// weighted least-squares line of meas on pred (gonum stat.LinearRegression)
// with weights 1/meas², which minimizes the squared relative error. A
// negative intercept is refitted through the origin (fixed = 0); a slope
// ≤ 0 is an error. One point gives the efficiency alone (fixed = 0).
func Fit(pred, meas []float64) (roofline.ClassParams, error) {
	if len(pred) != len(meas) {
		return roofline.ClassParams{}, fmt.Errorf("fit: %d predictions for %d measurements", len(pred), len(meas))
	}
	if len(pred) == 0 {
		return roofline.ClassParams{}, errors.New("fit: no shape to fit")
	}
	w := make([]float64, len(meas))
	for i := range meas {
		if !(pred[i] > 0) || !(meas[i] > 0) || math.IsInf(pred[i], 0) || math.IsInf(meas[i], 0) {
			return roofline.ClassParams{}, fmt.Errorf("fit: point %d: predicted %v s, measured %v s: both must be > 0 and finite", i, pred[i], meas[i])
		}
		w[i] = 1 / (meas[i] * meas[i])
	}
	var alpha, beta float64
	if len(pred) == 1 || slices.Min(pred) == slices.Max(pred) {
		// No spread in x: the efficiency alone, through the origin.
		beta = stat.Mean(meas, nil) / stat.Mean(pred, nil)
	} else {
		alpha, beta = stat.LinearRegression(pred, meas, w, false)
		if alpha < 0 {
			alpha, beta = 0, originSlope(pred, meas, w)
		}
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return roofline.ClassParams{}, fmt.Errorf("fit: slope %v of measured on predicted time: must be > 0 (the prediction does not order the shapes)", beta)
	}
	return roofline.ClassParams{Efficiency: 1 / beta, FixedSeconds: alpha}, nil
}

// originSlope is the weighted least-squares slope of y on x through the
// origin (stat.LinearRegression with origin = true).
func originSlope(x, y, w []float64) float64 {
	_, b := stat.LinearRegression(x, y, w, true)
	return b
}

// RelErrors returns |pred−meas|/meas for each pair.
func RelErrors(pred, meas []float64) []float64 {
	out := make([]float64, len(pred))
	for i := range pred {
		out[i] = math.Abs(pred[i]-meas[i]) / meas[i]
	}
	return out
}
