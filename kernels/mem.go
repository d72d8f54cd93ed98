package kernels

import (
	"fmt"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// MemImpl is one implementation of the memory kernels. Buffers are float64
// slices; lengths in elements.
type MemImpl struct {
	ISA         string // "avx512", "avx2", "neon", "go"
	Unavailable string // "" if usable on this CPU now, else "unavailable: CPU lacks AVX512F" etc.
	// Read returns sum(x) (the checksum; load + reduce).
	Read func(x []float64) float64
	// Write sets every x[i] = v with regular stores.
	Write func(x []float64, v float64)
	// WriteNT sets every x[i] = v with non-temporal (streaming) stores where
	// the ISA has them (ends with SFENCE on x86); the "go" impl uses regular
	// stores and says so in NT.
	WriteNT func(x []float64, v float64)
	NT      string // "vmovntpd", "stnp", or "none (regular stores)"
	// Copy: dst[i] = src[i], len(dst) == len(src).
	Copy func(dst, src []float64)
	// Triad: a[i] = b[i] + s*c[i] (FMA where available), equal lengths.
	Triad func(a, b, c []float64, s float64)
}

// memKernels are the raw kernels of one ISA; Copy and Triad trust their
// lengths, so newMemImpl wraps them with length checks.
type memKernels struct {
	read    func(x []float64) float64
	write   func(x []float64, v float64)
	writeNT func(x []float64, v float64)
	copy    func(dst, src []float64)
	triad   func(a, b, c []float64, s float64)
}

// newMemImpl is the registry entry of the kernels k of isa (its name too),
// usable where lacks returns "".
func newMemImpl(isa string, lacks func() string, nt string, k memKernels) registry.Entry[MemImpl] {
	return registry.Entry[MemImpl]{Name: isa, ISA: isa, Lacks: lacks, Value: MemImpl{
		ISA:     isa,
		Read:    k.read,
		Write:   k.write,
		WriteNT: k.writeNT,
		NT:      nt,
		Copy: func(dst, src []float64) {
			if len(dst) != len(src) {
				panic(fmt.Sprintf("kernels: Copy (%s): len(dst) %d != len(src) %d", isa, len(dst), len(src)))
			}
			k.copy(dst, src)
		},
		Triad: func(a, b, c []float64, s float64) {
			if len(a) != len(b) || len(a) != len(c) {
				panic(fmt.Sprintf("kernels: Triad (%s): lengths a %d, b %d, c %d differ", isa, len(a), len(b), len(c)))
			}
			k.triad(a, b, c, s)
		},
	}}
}

// lacks is cpu.Lacks: "" or "unavailable: CPU lacks F1, F2".
var lacks = cpu.Lacks

// memRegistry holds the memory kernels: "go", then the architecture's
// (registration order is MemImpls' order; BestMem goes by the ISA
// capability order of kernels/registry).
var memRegistry = func() *registry.Registry[MemImpl] {
	r := registry.New[MemImpl]("kernels: isa")
	r.Register(goMemImpl())
	for _, e := range archMemImpls() {
		r.Register(e)
	}
	return r
}()

// MemImpls returns every implementation compiled in for GOARCH, "go" first
// and best last, with availability evaluated now (so cpu.Disable... takes
// effect).
func MemImpls() []MemImpl {
	var out []MemImpl
	for _, e := range memRegistry.All() {
		m := e.Value
		m.Unavailable = e.Unavailable()
		out = append(out, m)
	}
	return out
}

// BestMem returns the best implementation available now: the most capable
// ISA (kernels/registry's order), chosen once per CPU feature set.
func BestMem() MemImpl {
	e, err := memRegistry.Best()
	if err != nil { // unreachable: "go" is always available
		e, _ = memRegistry.Lookup("go")
	}
	return e.Value
}

// MemImplByISA returns the implementation for isa, or an error naming isa
// and why it cannot be used (unknown for this build: the ISAs it has; or
// unavailable on this CPU now: the ISAs available).
func MemImplByISA(isa string) (MemImpl, error) {
	e, err := memRegistry.ByName(isa)
	if err != nil {
		return MemImpl{}, err
	}
	return e.Value, nil
}
