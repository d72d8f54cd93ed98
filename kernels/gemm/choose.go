package gemm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// Unit is what executes a backend's microkernels (SMEPilot §2: the vector
// cores or the matrix unit beside them).
type Unit string

// The execution units.
const (
	// Cores: the cores' vector (SIMD) units, or scalar code for the
	// portable "go" backends: AVX2, AVX-512, NEON.
	Cores Unit = "cores"
	// MatrixUnit: a matrix unit with its own register state, fed by the
	// cores: Arm SME (ZA tiles, FMOPA), Intel AMX (tiles, TDP*).
	MatrixUnit Unit = "matrix"
)

// Where names the unit in a sentence: "cores" or "matrix unit".
func (u Unit) Where() string {
	if u == MatrixUnit {
		return "matrix unit"
	}
	return "cores"
}

// ISARank is the position of isa in the ISA capability order of
// kernels/registry, shared by every kernel family (registry.Order: "go",
// "neon", "avx2", "avx512", "avx512vnni", "sme", "amx" among gemm's ISAs):
// an ISA ranks above those whose registers are narrower, whose
// instructions it extends (avx512vnni: AVX-512 plus VPDPWSSD), or which
// run on the vector units where it has a matrix unit (sme, amx). Backends
// of one unit and dtype are chosen by it (Pick), never by the order they
// are declared in; -1 for an ISA the order does not list (the registry
// refuses to register those).
func ISARank(isa string) int { return registry.ISARank(isa) }

// dtypeOrder breaks ties between a unit's backends of different dtypes,
// the most accurate first: fp32, then bf16 weights, then int8 weights and
// activations.
var dtypeOrder = []DType{FP32, BF16, Int8}

// Pick returns the most capable available backend in bs executed by u and
// computing dt ("" for any dtype): the highest ISARank; among equal ranks
// (any dtype) the most accurate dtype (fp32, bf16, int8), then the larger
// register tile (TileM·TileN), then the name. The order of bs never
// matters. ok is false when bs has no such available backend.
func Pick(bs []Backend, u Unit, dt DType) (Backend, bool) {
	var best Backend
	ok := false
	for _, b := range bs {
		if b.Unit != u || b.Unavailable != "" || (dt != "" && b.DType != dt) {
			continue
		}
		if !ok || better(b, best) {
			best, ok = b, true
		}
	}
	return best, ok
}

// better reports whether a ranks above b by Pick's rule, which is the
// registry's (registry.Better) with rank: the ISA, then the dtype, the
// register tile, the name.
func better(a, b Backend) bool { return registry.Better(rankEntry(a), rankEntry(b)) }

// rankEntry is what registry.Better compares of b.
func rankEntry(b Backend) registry.Entry[struct{}] {
	return registry.Entry[struct{}]{Name: b.Name, ISA: b.ISA, Rank: rank(b.DType, b.TileM, b.TileN)}
}

// Pair is the two backends of the engine's placements (SMEPilot §4.1):
// Cores runs placement cores and the cores group of mixed, Matrix runs
// placement matrix and the matrix group of mixed. Where the CPU has no
// usable matrix unit, Matrix is a second backend on the cores (the best
// bf16 one) and MatrixNote says so.
type Pair struct {
	Cores, Matrix Backend
	// CoresNamed and MatrixNamed are true where the backend was named by
	// the caller rather than chosen.
	CoresNamed, MatrixNamed bool
	// MatrixNote is "" where Matrix is a matrix unit's backend, else why
	// the matrix target runs on the cores: "no matrix unit", "no matrix
	// unit usable (sme-fp32: unavailable: CPU lacks SME)", or "chosen by
	// name; the matrix unit's sme-fp32 is not used".
	MatrixNote string
}

// Label says what runs a placement target, generated from the backend:
// "avx2-fp32 (fp32 weights) on the cores", "sme-fp32 (fp32 weights) on
// the matrix unit (sme)", with note appended after a comma ("avx2-bf16
// (bf16 weights) on the cores, no matrix unit").
func Label(b Backend, note string) string {
	s := fmt.Sprintf("%s (%s weights) on the %s", b.Name, b.DType, b.Unit.Where())
	if b.Unit == MatrixUnit {
		s += " (" + b.ISA + ")"
	}
	if note != "" {
		s += ", " + note
	}
	return s
}

// CoresLabel is Label of the cores target.
func (p Pair) CoresLabel() string { return Label(p.Cores, "") }

// MatrixLabel is Label of the matrix target, with MatrixNote.
func (p Pair) MatrixLabel() string { return Label(p.Matrix, p.MatrixNote) }

// ChoosePair picks the placements' backends among Backends() available
// now: cores is the name of the cores backend ("": the most capable fp32
// backend on the cores, Pick), matrix that of the matrix target (""): the
// most capable matrix-unit backend of any dtype, else the most capable
// bf16 backend on the cores as the second backend). A named cores backend
// must run fp32 weights on the cores; a named matrix backend may be any
// available backend. Errors, one line naming the backend and the
// available ones: an unknown name, a backend whose ISA this CPU lacks
// ("unavailable: CPU lacks SME"), a cores backend of another unit or
// dtype.
func ChoosePair(cores, matrix string) (Pair, error) {
	hint := ""
	if cpu.X86.HasAMXTile {
		// Only where the AMX backends are not compiled in: otherwise they
		// are listed, with why they cannot run, in the note.
		hint = "the CPU has AMX; this build has no AMX backend (built with -tags purego)"
	}
	return choosePair(Backends(), cores, matrix, hint)
}

// choosePair is ChoosePair on the backend list bs; hint is added to the
// note of a fallback where bs has no matrix-unit backend at all (none
// compiled in).
func choosePair(bs []Backend, cores, matrix, hint string) (Pair, error) {
	var p Pair
	coresOK := func(b Backend) bool { return b.Unit == Cores && b.DType == FP32 }
	if cores == "" {
		b, ok := Pick(bs, Cores, FP32)
		if !ok {
			return p, fmt.Errorf("gemm: no fp32 backend on the cores available (%s)", availableNames(bs, Cores, FP32))
		}
		p.Cores = b
	} else {
		b, err := named(bs, "cores", cores, coresOK)
		if err != nil {
			return p, err
		}
		if b.Unit != Cores {
			return p, fmt.Errorf("gemm: cores backend %q runs on the %s (%s), not the cores (available: %s)", b.Name, b.Unit.Where(), b.ISA, listNames(bs, coresOK))
		}
		if b.DType != FP32 {
			return p, fmt.Errorf("gemm: cores backend %q computes %s weights; the cores backend computes fp32 (available: %s)", b.Name, b.DType, listNames(bs, coresOK))
		}
		p.Cores, p.CoresNamed = b, true
	}
	var units []string // matrix-unit backends compiled in but unavailable
	for _, b := range bs {
		if b.Unit == MatrixUnit && b.Unavailable != "" {
			units = append(units, b.Name+": "+b.Unavailable)
		}
	}
	if matrix != "" {
		b, err := named(bs, "matrix", matrix, func(Backend) bool { return true })
		if err != nil {
			return p, err
		}
		p.Matrix, p.MatrixNamed = b, true
		if b.Unit != MatrixUnit {
			if mu, ok := Pick(bs, MatrixUnit, ""); ok {
				p.MatrixNote = "chosen by name; the matrix unit's " + mu.Name + " is not used"
			} else {
				p.MatrixNote = "chosen by name, " + noUnit(units, hint)
			}
		}
		return p, nil
	}
	if b, ok := Pick(bs, MatrixUnit, ""); ok {
		p.Matrix = b
		return p, nil
	}
	for _, dt := range []DType{BF16, Int8, FP32} {
		if b, ok := Pick(bs, Cores, dt); ok {
			p.Matrix, p.MatrixNote = b, noUnit(units, hint)
			return p, nil
		}
	}
	return p, fmt.Errorf("gemm: no backend available for the matrix target (available: %s)", listNames(bs, func(Backend) bool { return true }))
}

// noUnit is the fallback note: "no matrix unit", with why where bs has a
// matrix-unit backend this CPU cannot run, or the hint.
func noUnit(unavailable []string, hint string) string {
	switch {
	case len(unavailable) > 0:
		return "no matrix unit usable (" + strings.Join(unavailable, "; ") + ")"
	case hint != "":
		return "no matrix unit backend (" + hint + ")"
	}
	return "no matrix unit"
}

// named looks up the backend called name for role ("cores" or "matrix")
// and checks it is available; errors list the available backends that
// suit the role (fit).
func named(bs []Backend, role, name string, fit func(Backend) bool) (Backend, error) {
	for _, b := range bs {
		if b.Name != name {
			continue
		}
		if b.Unavailable != "" {
			return Backend{}, fmt.Errorf("gemm: %s backend %q: %s (available: %s)", role, name, b.Unavailable, listNames(bs, fit))
		}
		return b, nil
	}
	return Backend{}, fmt.Errorf("gemm: %s backend %q: unknown (available: %s)", role, name, listNames(bs, fit))
}

// listNames names the available backends of bs that fit, most capable
// first ("none" when there is none).
func listNames(bs []Backend, fit func(Backend) bool) string {
	var ok []Backend
	for _, b := range bs {
		if b.Unavailable == "" && fit(b) {
			ok = append(ok, b)
		}
	}
	if len(ok) == 0 {
		return "none"
	}
	slices.SortStableFunc(ok, func(a, b Backend) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	names := make([]string, len(ok))
	for i, b := range ok {
		names[i] = b.Name
	}
	return strings.Join(names, ", ")
}

// availableNames lists the available backends of unit u and dtype dt.
func availableNames(bs []Backend, u Unit, dt DType) string {
	return listNames(bs, func(b Backend) bool { return b.Unit == u && b.DType == dt })
}
