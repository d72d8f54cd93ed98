//go:build !purego

package kernels

import "github.com/cpubench/bench/kernels/registry"

// archDotImpls returns the amd64 assembly implementations, best last:
// AVX2, and AVX-512 (AxpyRows on zmm; DotRows is AVX2's).
func archDotImpls() []registry.Entry[*dotImpl] {
	return []registry.Entry[*dotImpl]{
		{Name: "avx2", ISA: "avx2", Lacks: lacksAVX2FMA, Value: &avx2Dot},
		{Name: "avx512", ISA: "avx512", Lacks: lacksAVX512FMA, Value: &avx512Dot},
	}
}

var avx2Dot = dotImpl{
	isa:            "avx2",
	dotRows:        func(o, q, k []float32, ld int) { dotRowsAsm(o, q, k, ld) },
	axpyRows:       func(a, p, v []float32, ld int) { axpyRowsAsm(a, p, v, ld) },
	transposeRows8: transposeRows8Asm,
}

var avx512Dot = dotImpl{
	isa:               "avx512",
	transposeRows8:    transposeRows8Asm,
	dotRows:           func(o, q, k []float32, ld int) { dotRowsAsm(o, q, k, ld) },
	axpyRows:          func(a, p, v []float32, ld int) { axpyRowsAsm512(a, p, v, ld) },
	axpyPanels32:      axpyPanels32Asm,
	axpyPanels32BF16:  axpyPanels32BF16Asm,
	axpyPanels32Pairs: axpyPanels32PairsAsm,
}

// axpyPanels32Asm runs the rows of x in groups of four, the last group
// of one to three, each group through axpyPanels32AVX512R<rows> over
// every panel (arguments checked by AxpyPanels).
func axpyPanels32Asm(acc []float32, lda int, x []float32, ldx, rows, n int, v []float32, vstride, panels int) {
	axpyPanelGroups(acc, lda, x, ldx, rows, n, v, vstride, panels, [4]axpyPanelsRows[float32]{
		axpyPanels32AVX512R1, axpyPanels32AVX512R2, axpyPanels32AVX512R3, axpyPanels32AVX512R4})
}

// axpyPanelsRows is an assembly kernel of one group of rows (1 to 4) over
// every 32-wide panel, fp32 or bf16 panels.
type axpyPanelsRows[T float32 | uint16] func(acc []float32, lda int, x []float32, ldx int, v []T, vstride, n, panels int)

// axpyPanelGroups cuts the rows into groups of four (the last of one to
// three) and runs each through k[rows-1].
func axpyPanelGroups[T float32 | uint16](acc []float32, lda int, x []float32, ldx, rows, n int, v []T, vstride, panels int, k [4]axpyPanelsRows[T]) {
	v = v[:(panels-1)*vstride+32*n]
	for r0 := 0; r0 < rows; r0 += 4 {
		g := min(4, rows-r0)
		k[g-1](acc[r0*lda:(r0+g-1)*lda+32*panels], lda, x[r0*ldx:(r0+g-1)*ldx+n], ldx, v, vstride, n, panels)
	}
}

// dotRowsAsm runs dotRows8 on the whole 8-lane vectors of q for the rows in groups of eight: the groups
// of out[:n&^7], then, if n%8 != 0, the last eight rows again (the same
// arithmetic, so the rows computed twice get the same values). The columns
// past the last whole vector are added in Go. Fewer than eight rows, or
// fewer columns than one vector, go to Go entirely.
func dotRowsAsm(out, q, k []float32, ldk int) {
	n := len(out)
	nd := len(q) &^ 7
	if n < 8 || nd == 0 {
		dotRowsGo(out, q, k, ldk)
		return
	}
	f := dotRows8AVX2
	// k is long enough for every row read (checked by DotRows); reslice so
	// the assembly's reads stay within a slice whose bounds Go checked.
	f(out[:n&^7], q[:nd], k[:(n&^7-1)*ldk+nd], ldk)
	if n&7 != 0 {
		f(out[n-8:n], q[:nd], k[(n-8)*ldk:(n-1)*ldk+nd], ldk)
	}
	if nd < len(q) {
		qt := q[nd:]
		for j := range out {
			kj := k[j*ldk+nd : j*ldk+len(q)][:len(qt)]
			s := out[j]
			for i, x := range qt {
				s += x * kj[i]
			}
			out[j] = s
		}
	}
}

// axpyRowsAsm runs axpyRows on the whole vectors of acc and adds the
// columns past them in Go.
func axpyRowsAsm(acc, p, v []float32, ldv int) {
	nd := len(acc) &^ 7
	if nd > 0 {
		last := (len(p)-1)*ldv + nd
		axpyRowsAVX2(acc[:nd], p, v[:last], ldv)
	}
	if nd < len(acc) {
		at := acc[nd:]
		for j, pj := range p {
			vj := v[j*ldv+nd : j*ldv+len(acc)][:len(at)]
			for i := range at {
				at[i] += pj * vj[i]
			}
		}
	}
}

// axpyRowsAsm512 runs axpyRowsAVX512 on the whole 16-lane vectors of
// acc and axpyRowsAsm (AVX2, then Go) on the columns past them.
func axpyRowsAsm512(acc, p, v []float32, ldv int) {
	nd := len(acc) &^ 15
	if nd > 0 {
		axpyRowsAVX512(acc[:nd], p, v[:(len(p)-1)*ldv+nd], ldv)
	}
	if nd < len(acc) {
		axpyRowsAsm(acc[nd:], p, v[nd:], ldv)
	}
}

// dotRows8AVX2 (eight rows per group, one vector accumulator per row,
// then a tree of pairwise lane sums), for len(out) a multiple of 8 and
// len(q) a nonzero multiple of 8:
//
//	for j := range out {
//		var s float32
//		for i := range q {
//			s += q[i] * k[j*ldk+i]
//		}
//		out[j] = s
//	}
//
//go:noescape
func dotRows8AVX2(out, q, k []float32, ldk int)

// axpyRowsAVX2 (the columns in chunks of eight, four, two, then one
// vector held in registers over all rows, each chunk in 8/w sets of
// accumulators over the rows j ≡ s (mod 8/w), added at the end; one FMA
// per element and row; rows prefetched 16 ahead: kernels/_asm/dot), for
// len(acc) a nonzero multiple of 8 and len(p) ≥ 1; column i in a chunk
// of w vectors sums, with S = 8/w and n = len(p)/S·S:
//
//	var set [8]float32
//	set[0] = acc[i]
//	for j := range p {
//		s := j % S
//		if j >= n {
//			s = 0 // the last len(p)%S rows
//		}
//		set[s] = fma32(p[j], v[j*ldv+i], set[s])
//	}
//	for s := 1; s < S; s++ {
//		set[0] += set[s]
//	}
//	acc[i] = set[0]
//
//go:noescape
func axpyRowsAVX2(acc, p, v []float32, ldv int)

// axpyRowsAVX512 is axpyRowsAVX2 on zmm registers, for len(acc) a nonzero
// multiple of 16 and len(p) ≥ 1.
//
//go:noescape
func axpyRowsAVX512(acc, p, v []float32, ldv int)

// axpyPanels32BF16Asm is axpyPanels32Asm on bf16 panels.
func axpyPanels32BF16Asm(acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, vstride, panels int) {
	axpyPanelGroups(acc, lda, x, ldx, rows, n, v, vstride, panels, [4]axpyPanelsRows[uint16]{
		axpyPanels32BF16AVX512R1, axpyPanels32BF16AVX512R2, axpyPanels32BF16AVX512R3, axpyPanels32BF16AVX512R4})
}

// axpyPanels32PairsAsm is AxpyPanelsBF16Pairs in groups of up to four
// rows (axpyPanels32PairsAVX512R1 .. R4), every count ≥ 1.
func axpyPanels32PairsAsm(acc []float32, lda int, x []float32, ldx, rows, n int, v []uint16, vstride, panels int) {
	k := [4]axpyPanelsRows[uint16]{axpyPanels32PairsAVX512R1, axpyPanels32PairsAVX512R2, axpyPanels32PairsAVX512R3, axpyPanels32PairsAVX512R4}
	v = v[:(panels-1)*vstride+(n+1)/2*64]
	for r0 := 0; r0 < rows; r0 += 4 {
		g := min(4, rows-r0)
		k[g-1](acc[r0*lda:(r0+g-1)*lda+32*panels], lda, x[r0*ldx:(r0+g-1)*ldx+n], ldx, v, vstride, n, panels)
	}
}

// axpyPanels32PairsAVX512R1 .. R4 are AxpyPanelsBF16Pairs for 1 to 4
// rows (kernels/_asm/dot genAxpyPanelsPairs), every count ≥ 1, lengths
// trusted: per element the sum of genAxpyPanels' sets over the pair rows,
// even k before odd, an odd n's last k into set 0.
//
//go:noescape
func axpyPanels32PairsAVX512R1(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

//go:noescape
func axpyPanels32PairsAVX512R2(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

//go:noescape
func axpyPanels32PairsAVX512R3(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

//go:noescape
func axpyPanels32PairsAVX512R4(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

// axpyPanels32AVX512R1 .. R4 are AxpyPanels for nr = 32 and 1 to 4 rows
// (kernels/_asm/dot genAxpyPanels), every count ≥ 1, lengths trusted:
// per element the sum of axpyRowsAVX512 on a two-vector chunk with 8/(2R)
// sets of accumulators (R = 1, 2; one set, in order of j, for 3 and 4).
//
//go:noescape
func axpyPanels32AVX512R1(acc []float32, lda int, x []float32, ldx int, v []float32, vstride, n, panels int)

//go:noescape
func axpyPanels32AVX512R2(acc []float32, lda int, x []float32, ldx int, v []float32, vstride, n, panels int)

//go:noescape
func axpyPanels32AVX512R3(acc []float32, lda int, x []float32, ldx int, v []float32, vstride, n, panels int)

//go:noescape
func axpyPanels32AVX512R4(acc []float32, lda int, x []float32, ldx int, v []float32, vstride, n, panels int)

// axpyPanels32BF16AVX512R1 .. R4 are AxpyPanelsBF16 for nr = 32 (the
// R-row kernels above on bf16 panel rows widened to fp32).
//
//go:noescape
func axpyPanels32BF16AVX512R1(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

//go:noescape
func axpyPanels32BF16AVX512R2(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

//go:noescape
func axpyPanels32BF16AVX512R3(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

//go:noescape
func axpyPanels32BF16AVX512R4(acc []float32, lda int, x []float32, ldx int, v []uint16, vstride, n, panels int)

// transposeRows8Asm runs transposeRows8AVX2 over the whole blocks of
// eight columns (n&^7) and the Go loop over the rest (arguments checked
// by TransposeRows8, resliced so the assembly's reads and writes stay
// within slices whose bounds Go checked).
func transposeRows8Asm(dst []float32, ldd int, src []float32, lds, n int) {
	nb := n &^ 7
	if nb > 0 {
		transposeRows8AVX2(dst[:(nb-1)*ldd+8], ldd, src[:7*lds+nb], lds, nb)
	}
	if nb < n {
		transposeRows8Go(dst[nb*ldd:], ldd, src[nb:], lds, n-nb)
	}
}

// transposeRows8AVX2 is TransposeRows8 for n a nonzero multiple of 8,
// lengths trusted (kernels/_asm/dot genTransposeRows8: an 8×8 register
// transpose per block of eight columns).
//
//go:noescape
func transposeRows8AVX2(dst []float32, ldd int, src []float32, lds, n int)
