package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/cpubench/bench/roofline"
)

// Fit returns the parameters of meas ≈ fixed + pred/efficiency over
// paired uncalibrated predictions and measurements (seconds, > 0): the
// weighted least-squares line of meas on pred (gonum stat.LinearRegression)
// with weights 1/meas², which minimizes the squared relative error. A
// negative intercept is refitted through the origin (fixed = 0); a slope
// ≤ 0 is an error. One point gives the efficiency alone (fixed = 0), and so
// do points whose predictions span less than MinFixedSpan (largest over
// smallest): a per-call fixed cost is only pinned by shapes small enough
// for it to matter, and an intercept fitted between two large shapes
// extrapolates their noise to every smaller call of the class (measured:
// 537 µs fitted on DRAM-sized GEMVs 2× apart made a 4 MiB decode GEMV,
// 66 µs measured, predicted 620 µs).
func Fit(pred, meas []float64) (roofline.ClassParams, error) {
	return fitLine(pred, meas, MinFixedSpan)
}

// FitCold is Fit with a fixed cost fitted at any spread of the
// predictions (two different ones suffice), for the cold-lines classes
// (roofline.BoundColdLines): a serial decode operator's call there costs
// mostly a fixed 1.5–3 µs (its code and translations evicted with its
// data), which Fit through the origin turned into an efficiency that put
// the smallest shapes at a quarter of their time (a residual of 1×1024:
// 0.47 µs calibrated, 1.9–2.0 measured, on two quiet fit shapes of
// predictions 3× apart).
func FitCold(pred, meas []float64) (roofline.ClassParams, error) {
	return fitLine(pred, meas, 1)
}

// fitLine is Fit with a fixed cost fitted only where the largest
// prediction is at least minSpan × the smallest.
func fitLine(pred, meas []float64, minSpan float64) (roofline.ClassParams, error) {
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
		if beta > 0 && (alpha < 0 || slices.Max(pred) < minSpan*slices.Min(pred)) {
			alpha, beta = 0, originSlope(pred, meas, w)
		}
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return roofline.ClassParams{}, fmt.Errorf("fit: slope %v of measured on predicted time: must be > 0 (the prediction does not order the shapes)", beta)
	}
	return roofline.ClassParams{Efficiency: 1 / beta, FixedSeconds: alpha}, nil
}

// MinFixedSpan is the least ratio of the largest to the smallest fit
// prediction at which Fit and FitRows fit a fixed cost per call.
const MinFixedSpan = 4

// FitRows returns the parameters of meas ≈ fixed + pred/efficiency +
// row·rows (rows: each point's rows, Point.Rows) by weighted least squares
// with weights 1/meas (the squared relative error; gonum mat's QR solve),
// for a class whose calls do per-row work that the roofline time does not
// follow (the prefill attention's, the vector operators'). A negative
// intercept is dropped (fixed = 0) and the two-term fit redone; a negative
// or undetermined row cost falls back to Fit (row = 0), as do fewer than 4
// points or rows that are all equal (nothing to tell the row term from the
// others). The row term is kept only where it predicts the fit points
// better when each is left out in turn (leave-one-out: the mean squared
// relative error of each point predicted from the others), so a third
// parameter is not fitted to the noise of a few shapes. Errors: those of
// Fit.
func FitRows(pred []float64, rows []int, meas []float64) (roofline.ClassParams, error) {
	if len(rows) != len(pred) {
		return roofline.ClassParams{}, fmt.Errorf("fit: %d row counts for %d predictions", len(rows), len(pred))
	}
	base, err := Fit(pred, meas)
	if err != nil || len(pred) < 4 || slices.Min(rows) == slices.Max(rows) {
		return base, err
	}
	withRows, ok := fitRows(pred, rows, meas)
	if !ok {
		return base, nil
	}
	// Leave-one-out errors of both forms.
	var e2, e3 float64
	for i := range pred {
		p := slices.Delete(slices.Clone(pred), i, i+1)
		r := slices.Delete(slices.Clone(rows), i, i+1)
		m := slices.Delete(slices.Clone(meas), i, i+1)
		b, err := Fit(p, m)
		if err != nil {
			return base, nil
		}
		w, ok := fitRows(p, r, m)
		if !ok {
			w = b
		}
		d2 := b.Apply(pred[i], rows[i], true)/meas[i] - 1
		d3 := w.Apply(pred[i], rows[i], true)/meas[i] - 1
		e2, e3 = e2+d2*d2, e3+d3*d3
	}
	if e3 < e2 {
		return withRows, nil
	}
	return base, nil
}

// fitRows is FitRows' three-term fit; ok is false where it has no answer
// with efficiency > 0 and row ≥ 0 (or the rows are all equal).
func fitRows(pred []float64, rows []int, meas []float64) (roofline.ClassParams, bool) {
	if len(pred) < 3 || slices.Min(rows) == slices.Max(rows) {
		return roofline.ClassParams{}, false
	}
	solve := func(intercept bool) ([]float64, bool) {
		cols := 2
		if intercept {
			cols = 3
		}
		a := mat.NewDense(len(pred), cols, nil)
		b := mat.NewVecDense(len(pred), nil)
		for i := range pred {
			w := 1 / meas[i]
			c := 0
			if intercept {
				a.Set(i, c, w)
				c++
			}
			a.Set(i, c, w*pred[i])
			a.Set(i, c+1, w*float64(rows[i]))
			b.SetVec(i, 1)
		}
		var x mat.VecDense
		if err := x.SolveVec(a, b); err != nil {
			return nil, false
		}
		out := make([]float64, 3)
		copy(out[3-cols:], x.RawVector().Data)
		for _, v := range out {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, false
			}
		}
		return out, true
	}
	x, ok := solve(slices.Max(pred) >= MinFixedSpan*slices.Min(pred))
	if ok && x[0] < 0 {
		x, ok = solve(false)
	}
	if !ok || !(x[1] > 0) || x[2] < 0 {
		return roofline.ClassParams{}, false
	}
	return roofline.ClassParams{Efficiency: 1 / x[1], FixedSeconds: x[0], RowSeconds: x[2]}, true
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
