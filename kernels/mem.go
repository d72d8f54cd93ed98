package kernels

import (
	"fmt"
	"strings"

	"github.com/cpubench/bench/internal/cpu"
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

func newMemImpl(isa, unavailable, nt string, k memKernels) MemImpl {
	return MemImpl{
		ISA:         isa,
		Unavailable: unavailable,
		Read:        k.read,
		Write:       k.write,
		WriteNT:     k.writeNT,
		NT:          nt,
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
	}
}

// lacks is cpu.Lacks: "" or "unavailable: CPU lacks F1, F2".
var lacks = cpu.Lacks

// MemImpls returns every implementation compiled in for GOARCH, "go" first
// and best last, with availability evaluated now (so cpu.Disable... takes
// effect).
func MemImpls() []MemImpl {
	return append([]MemImpl{goMemImpl()}, archMemImpls()...)
}

// BestMem returns the best implementation available now.
func BestMem() MemImpl {
	impls := MemImpls()
	for i := len(impls) - 1; i > 0; i-- {
		if impls[i].Unavailable == "" {
			return impls[i]
		}
	}
	return impls[0]
}

// MemImplByISA returns the implementation for isa, or an error naming isa
// and why it cannot be used (unknown for this build, or unavailable on this
// CPU now).
func MemImplByISA(isa string) (MemImpl, error) {
	impls := MemImpls()
	names := make([]string, len(impls))
	for i, m := range impls {
		names[i] = m.ISA
		if m.ISA != isa {
			continue
		}
		if m.Unavailable != "" {
			return MemImpl{}, fmt.Errorf("kernels: isa %q: %s", isa, m.Unavailable)
		}
		return m, nil
	}
	return MemImpl{}, fmt.Errorf("kernels: isa %q: unknown in this build (have %s)", isa, strings.Join(names, ", "))
}
