// Package split is SMEPilot's Eq. 1 work split (§4.4) rounded to the
// kernels' tiles: the one formula that both the roofline model
// (roofline.SplitEq1, placement mixed) and the engine's thread-group pool
// (kernels/pool.PlanSplit) use, so that the split the model predicts is the
// split the pool runs.
//
// It is pure arithmetic. This package imports no other package of bench,
// so that kernels/pool need not import roofline.
package split
