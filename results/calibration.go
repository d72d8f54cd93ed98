package results

import (
	"fmt"
	"math"
)

// CalibrationSchemaV1 tags the calibration section's own version: the
// section's keys may change without a new profile schema, and a reader
// refuses a calibration section whose schema it does not know.
const CalibrationSchemaV1 = "bench.calibration/v1"

// CalibrationSchemaV2 adds each class's level (the memory level, or
// "compute/" and the activations' level, that bounds the roofline time of the shapes it was fitted
// on): a class is then applied only to operators bound by the same level,
// so a fit on cache-resident GEMVs never applies to DRAM-sized ones. A new
// version because a v1 reader would apply every level's entry to every
// operator (and refuse the repeated class). v1 sections are still read:
// their classes have no level and apply at every level.
const CalibrationSchemaV2 = "bench.calibration/v2"

// Calibration is the "calibration" section of a profile, written by `bench
// calibrate` (issue #16 part 2): for each operator class, the parameters of
//
//	t = FixedSeconds + t_roofline / Efficiency (+ RowSeconds · rows for a
//	    prefill attention)
//
// fitted (weighted least squares on relative error) on the fit half of a
// designed set of measured shapes, and the relative error |pred−meas|/meas
// on the held-out half before and after.
type Calibration struct {
	// Schema is CalibrationSchemaV2 (or V1: no levels).
	Schema    string `json:"schema"`
	CreatedAt string `json:"created_at"`
	// Precision is the precision the shapes ran and were predicted at
	// ("fp32").
	Precision string `json:"precision"`
	// Threads are the thread counts the shapes ran at.
	Threads []int `json:"threads"`
	// Classes are the fitted classes, by name; a class of the model with
	// no entry is predicted uncalibrated.
	Classes []CalibrationClass `json:"classes"`
	Notes   []string           `json:"notes,omitempty"`
}

// CalibrationClass is one operator class's fitted parameters and its
// held-out error.
type CalibrationClass struct {
	// Class is "gemm", "gemv", "attention", "norm", "residual", "rope",
	// "softmax" or "silu_mul" (roofline.ClassOf).
	Class string `json:"class"`
	// Threads is the thread count that runs the class's operators these
	// parameters are for (roofline.OpThreads: a small vector operator runs
	// on one thread whatever the workers); 0: every thread count without
	// an entry of its own.
	Threads int `json:"threads,omitempty"`
	// Level is what bounds the roofline time of the class's shapes: the
	// memory level holding most of their bytes ("L1", "L2", "L3", "DRAM")
	// when the memory term is the max; when the FLOP ceiling or the
	// non-linear rate is, "compute/" and the level holding the activations
	// ("compute/L3"; a GEMM's attained rate falls when its panels leave
	// the caches) (roofline.Placed.Bound). Absent (v1): every level.
	Level string `json:"level,omitempty"`
	// Efficiency is attained/roof (dimensionless, > 0): the roofline time
	// is divided by it.
	Efficiency float64 `json:"efficiency"`
	// FixedSeconds is the per-call fixed cost added, in seconds (≥ 0).
	FixedSeconds float64 `json:"fixed_seconds"`
	// RowSeconds (added within v2, absent = 0) is the cost per row,
	// seconds (≥ 0), added once per row (roofline.CalibrationRows): an
	// attention's per query row and head (B·H·T; prefill's per-row work
	// around the tiles, decode's per-job setup, neither growing with the
	// context as the roofline time does), a row-wise vector operator's
	// per row (the per-row work its rows × width roofline time spreads
	// over the width).
	RowSeconds float64 `json:"row_seconds,omitempty"`
	// FitShapes and HeldOutShapes count the shapes of each half.
	FitShapes     int `json:"fit_shapes"`
	HeldOutShapes int `json:"held_out_shapes"`
	// Before and After are the held-out relative errors |pred−meas|/meas
	// with the uncalibrated and the calibrated prediction.
	Before ErrorSummary `json:"before"`
	After  ErrorSummary `json:"after"`
}

// ErrorSummary is a distribution of relative errors (fractions, 0.1 = 10%).
type ErrorSummary struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// Validate checks the section: its schema, and every class's efficiency
// > 0 and fixed cost ≥ 0, finite, with no class twice.
func (c *Calibration) Validate() error {
	if c.Schema != CalibrationSchemaV1 && c.Schema != CalibrationSchemaV2 {
		return fmt.Errorf("calibration.schema %q is not supported by this bench (it reads %q and %q)", c.Schema, CalibrationSchemaV2, CalibrationSchemaV1)
	}
	type key struct {
		class   string
		threads int
		level   string
	}
	seen := map[key]bool{}
	for i, k := range c.Classes {
		if k.Class == "" {
			return fmt.Errorf("calibration.classes[%d]: missing key \"class\"", i)
		}
		if k.Threads < 0 {
			return fmt.Errorf("calibration.classes[%d] (%s): threads %d: must be ≥ 0", i, k.Class, k.Threads)
		}
		if k.Level != "" && c.Schema == CalibrationSchemaV1 {
			return fmt.Errorf("calibration.classes[%d] (%s): level %q needs schema %q", i, k.Class, k.Level, CalibrationSchemaV2)
		}
		if seen[key{k.Class, k.Threads, k.Level}] {
			return fmt.Errorf("calibration.classes[%d]: class %q at threads %d, level %q appears twice", i, k.Class, k.Threads, k.Level)
		}
		seen[key{k.Class, k.Threads, k.Level}] = true
		if !(k.Efficiency > 0) || math.IsInf(k.Efficiency, 0) {
			return fmt.Errorf("calibration.classes[%d] (%s): efficiency %v: must be > 0 and finite", i, k.Class, k.Efficiency)
		}
		if !(k.FixedSeconds >= 0) || math.IsInf(k.FixedSeconds, 0) {
			return fmt.Errorf("calibration.classes[%d] (%s): fixed_seconds %v: must be ≥ 0 and finite", i, k.Class, k.FixedSeconds)
		}
		if !(k.RowSeconds >= 0) || math.IsInf(k.RowSeconds, 0) {
			return fmt.Errorf("calibration.classes[%d] (%s): row_seconds %v: must be ≥ 0 and finite", i, k.Class, k.RowSeconds)
		}
	}
	return nil
}
