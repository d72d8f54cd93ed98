package probes

import (
	"fmt"
	"math"
	"slices"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/quant"
	"github.com/cpubench/bench/results"
)

// roundUp is the multiple of q at or above n ≥ 0 (q ≥ 1), as a factor
// for memlimit: (n/q + 1)·q never overflows an int.
func roundUp(n, q int) memlimit.Size { return memlimit.Mul(n/q+1, q) }

// GEMMBytes is the memory a GEMM measurement of an n×k weight in dtype (a
// kernels/gemm dtype: fp32, bf16, int8; or a kernels/quant format) holds at
// the rows ms: the weights (NewGEMMWeights: the matrix as drawn and its
// packed copy, panels padded; NewQuantWeights: the packed blocks), one
// M×K float32 input per M (GEMMBench keeps them) and the largest M×N
// float32 output. Overflow-checked: flags give n, k and ms.
func GEMMBytes(dtype string, ms []int, n, k int) memlimit.Size {
	var w memlimit.Size
	if f, err := quant.ParseFormat(dtype); err == nil {
		w = roundUp(n, 64).Times(k/quant.SuperLen + 1).Times(quant.SuperLen).TimesFloat(f.BytesPerWeight())
	} else {
		e := int(gemm.WeightBytes(gemm.DType(dtype), 1, 1))
		w = memlimit.Mul(n, k, e).Plus(roundUp(n, 64).Times(k/64+1, 64, e))
		if gemm.DType(dtype) == gemm.Int8 {
			w = w.Plus(memlimit.Mul(2, n, 4)) // per-row scales, raw and packed
		}
	}
	var in memlimit.Size
	for _, m := range ms {
		in = in.Plus(memlimit.Mul(m, k, 4))
	}
	maxM := 0
	if len(ms) > 0 {
		maxM = slices.Max(ms)
	}
	return w.Plus(in).Plus(memlimit.Mul(maxM, n, 4))
}

// workingSetCopies is how many working sets of the largest size the
// selected sections hold at once: two in the mixed section (one per
// thread group, streamed together) and the matrix section (the fp32 GEMV
// weight as drawn and packed), one otherwise.
func workingSetCopies(sections []string) int {
	if len(sections) == 0 || slices.Contains(sections, results.SectionMixed) || slices.Contains(sections, results.SectionMatrix) {
		return 2
	}
	return 1
}

// minMaxWS is the smallest largest working set the probe accepts.
const minMaxWS = 64 << 10

// CheckMaxWorkingSet refuses a --max-ws of ws bytes that the probe of
// sections (nil: all) cannot hold in the memory this process may use
// (memlimit.Available), or that is below 64 KiB or beyond an int64.
func CheckMaxWorkingSet(ws uint64, sections []string) error {
	l, _ := memlimit.Available()
	return checkMaxWS(ws, sections, l)
}

func checkMaxWS(ws uint64, sections []string, l memlimit.Limit) error {
	switch {
	case ws > math.MaxInt64:
		return fmt.Errorf("--max-ws %d: more than an int64 of bytes", ws)
	case ws < minMaxWS:
		return fmt.Errorf("--max-ws %d: must be at least 64 KiB", ws)
	}
	n := workingSetCopies(sections)
	what := fmt.Sprintf("--max-ws %s: %d working set(s) of that size at once", sizeText(int64(ws)), n)
	if n == 2 {
		what += " (the mixed and matrix sections)"
	}
	return l.Check(what, memlimit.Of(ws).Times(n))
}

// fitWorkingSet lowers a default largest working set ws to the largest
// power of two whose copies fit in what l allows, and says why when it
// does; ok false when not even 64 KiB fit.
func fitWorkingSet(ws int64, sections []string, l memlimit.Limit) (int64, string, bool) {
	n := workingSetCopies(sections)
	if !l.Known || uint64(ws)*uint64(n) <= l.Usable() {
		return ws, "", true
	}
	fit := int64(minMaxWS)
	for uint64(fit)*2*uint64(n) <= l.Usable() {
		fit *= 2
	}
	if uint64(fit)*uint64(n) > l.Usable() {
		return 0, "", false
	}
	return fit, fmt.Sprintf("largest working set lowered from %s to %s: %d of them at once must fit in the %s this process may use (%.1f of the %s left: %s)",
		sizeText(ws), sizeText(fit), n, memlimit.Of(l.Usable()), memlimit.Margin, memlimit.Of(l.Bytes), l.Source), true
}
