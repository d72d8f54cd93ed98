package opbench

import (
	"fmt"
	"strings"

	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/roofline"
)

// The placements a sweep compares (SMEPilot §4.1): the cores' fp32 vector
// kernels on every thread, the matrix target's backend on every thread,
// and both, each on half of the threads.
const (
	PlaceCores  = "cores"
	PlaceMatrix = "matrix"
	PlaceMixed  = "mixed"
)

// ParsePlacements reads a comma-separated list of cores, matrix and mixed
// (no repeats). Errors name the value.
func ParsePlacements(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch p {
		case PlaceCores, PlaceMatrix, PlaceMixed:
		default:
			return nil, fmt.Errorf("--placement %q: want cores, matrix or mixed", p)
		}
		for _, q := range out {
			if q == p {
				return nil, fmt.Errorf("--placement %s: %s given twice", s, p)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Backends are the two targets' backends (gemm.ChoosePair: chosen by what
// executes them, or named), with their labels ("avx2-bf16 (bf16 weights)
// on the cores, no matrix unit").
type Backends struct {
	Pair                        gemm.Pair
	CoresLabel, MatrixLabel     string
	CoresBackend, MatrixBackend string
}

// ChooseBackends resolves --cores-backend and --matrix-backend ("": the
// engine's choice). Errors: those of gemm.ChoosePair (an unknown or
// unavailable backend, a cores backend that is not fp32 on the cores), one
// line naming the backend.
func ChooseBackends(cores, matrix string) (Backends, error) {
	p, err := gemm.ChoosePair(cores, matrix)
	if err != nil {
		return Backends{}, err
	}
	return Backends{Pair: p, CoresLabel: p.CoresLabel(), MatrixLabel: p.MatrixLabel(),
		CoresBackend: p.Cores.Name, MatrixBackend: p.Matrix.Name}, nil
}

// groupSizes cuts threads into the mixed placement's two groups as the
// engine does: the cores group threads - threads/2, the matrix group
// threads/2.
func groupSizes(threads int) (cores, matrix int) { return threads - threads/2, threads / 2 }

// predictionTarget is the roofline target a placement is predicted on:
// the machine's target of the same name, or, where the machine has none
// and the matrix target's backend runs on the cores (no matrix unit),
// the cores target, with a note saying so. ok is false where neither
// applies (a matrix unit the machine does not model).
func predictionTarget(m *roofline.Machine, placement string, pair gemm.Pair) (name, note string, ok bool) {
	if _, found := m.Target(placement); found {
		return placement, "", true
	}
	if placement != PlaceCores && pair.Matrix.Unit == gemm.Cores {
		if _, found := m.Target(PlaceCores); found {
			return PlaceCores, fmt.Sprintf("the machine %s has no %s target and matrix = %s runs on the cores: %s predicted on the cores target", m.Name, placement, pair.Matrix.Name, placement), true
		}
	}
	return "", "", false
}

// threadsMachine is m for a figure that ran on threads workers: m itself
// where its cores target has that many; else, for a figure predicted on
// the cores target, m.AtThreads(threads) (ceilings and the non-linear
// rate scaled to the threads, level roofs and fixed costs at that thread
// count), with a note; a matrix unit's figure stays on m's targets, and
// the note says the prediction is for m's workers.
func threadsMachine(m *roofline.Machine, threads int, target string) (*roofline.Machine, string) {
	w := m.CoresWorkers()
	switch {
	case threads < 1 || threads == w:
		return m, ""
	case target == PlaceCores:
		return m.AtThreads(threads), fmt.Sprintf("predicted on %d of the profile's %d cores workers", threads, w)
	}
	return m, fmt.Sprintf("predicted for the profile's %d workers, not the %d threads that ran (the %s target is not scaled by threads)", w, threads, target)
}

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
