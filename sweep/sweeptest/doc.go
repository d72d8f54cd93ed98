// Package sweeptest has test doubles for package sweep and its users: a
// sweep.CellEngine that runs no engine (FakeCellEngine).
//
// This package imports only sweep, workloads and results of bench; it must
// not import engine or cmd.
package sweeptest
