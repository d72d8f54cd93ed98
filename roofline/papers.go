package roofline

import (
	"fmt"
	"math"
)

// EffectiveBandwidth is the low-bit GEMV paper's per-core effective
// bandwidth roofline (§III-F, Eq. 1–3): computing one 256-bit output vector
// needs B bytes from memory and γ cycles of up-convert-and-compute, so it
// takes T = max(B/β, γ) cycles (Eq. 1) and the core draws
//
//	ebw = min(β, B/γ)   bytes/cycle (Eq. 3)
//
// where β is the bytes/cycle one core can read when all cores read at
// once. The paper's 2-bit kernel (γ_P = 1.25, B = 8) gives min(β, 6.4); the
// 1-bit kernel (γ_P = 2.4, B = 4) gives min(β, 1.67), printed as 1.7.
func EffectiveBandwidth(beta, bytesPerVector, gamma float64) float64 {
	return math.Min(beta, bytesPerVector/gamma)
}

// GiB is 2^30 bytes. The low-bit paper converts GB/s to bytes/cycle as if
// GB were GiB: its printed β and modeled totals are reproduced only with
// that conversion (see PerCoreBytesPerCycle).
const GiB = 1 << 30

// PerCoreBytesPerCycle is the low-bit paper's β (§IV-B): total read
// bandwidth shared equally by `cores` cores, divided by a core's loaded
// frequency, in bytes/cycle. unit is the byte count of the paper's "GB":
// 1e9 gives the SI value; GiB reproduces the printed figures (ARL:
// 98 GB/s / 24 cores at 5.4 GHz is 0.756 bytes/cycle in SI units, 0.80 as
// printed).
func PerCoreBytesPerCycle(totalGBps float64, cores int, ghz, unit float64) float64 {
	return totalGBps * unit / float64(cores) / (ghz * 1e9)
}

// CoreGroup is a set of identical cores for ModeledBandwidth.
type CoreGroup struct {
	Cores int
	GHz   float64
	// Gamma is the kernel's cycles per output vector on these cores.
	Gamma float64
}

// ModeledBandwidth is the low-bit paper's whole-chip model (§IV-B): each
// core draws min(β, B/γ) bytes/cycle (Eq. 3) at its frequency, with β the
// equal share of the total read bandwidth; the result is in the same "GB/s"
// unit as totalGBps (unit as in PerCoreBytesPerCycle). With GiB units it
// reproduces the paper's ≈55 GB/s (ARLH, 1-bit) and ≈37 GB/s (LNL, 1-bit).
func ModeledBandwidth(totalGBps float64, bytesPerVector float64, unit float64, groups ...CoreGroup) float64 {
	n := 0
	for _, g := range groups {
		n += g.Cores
	}
	sum := 0.0
	for _, g := range groups {
		beta := PerCoreBytesPerCycle(totalGBps, n, g.GHz, unit)
		sum += float64(g.Cores) * EffectiveBandwidth(beta, bytesPerVector, g.Gamma) * g.GHz * 1e9 / unit
	}
	return sum
}

// AmdahlSpeedup is the low-bit paper's Eq. 4 (§IV-D): if a fraction α of
// the 16-bit run's time is GEMV and the GEMV data shrinks x-fold, the
// speedup is at most s = 1 / (1 − α + α/x). The paper prints α rounded to
// two digits, so its figures are not exactly the formula at the printed α:
// α = 0.87 gives 4.19 (printed 4.3) for x = 8 and 5.42 (printed 5.5) for
// x = 16; α = 0.96 gives 6.25 (printed 6.1) and 10.0 (printed 9.6). The
// printed pairs are consistent with α ≈ 0.874 and α ≈ 0.956 (AmdahlAlpha).
func AmdahlSpeedup(alpha, x float64) float64 {
	return 1 / (1 - alpha + alpha/x)
}

// AmdahlAlpha inverts Eq. 4: the fraction α that gives speedup s at size
// ratio x, α = (1 − 1/s) / (1 − 1/x).
func AmdahlAlpha(s, x float64) float64 {
	return (1 - 1/s) / (1 - 1/x)
}

// OWRRow is one row of PIM-SHERPA's Table 2 (§3.3), in units of t, the
// time of one pass over the weights in DRAM.
type OWRRow struct {
	InputSL int
	// GEMM = max(1, SL / (FLOP/B)) t: weight-read-bound up to SL = FLOP/B,
	// then growing with the input length.
	GEMM float64
	// DRAM is one weight pass, t.
	DRAM float64
	// Online is the online weight rearrangement: three DRAM transactions
	// (read the non-cacheable weight, read the destination into cache,
	// write it back), 3t.
	Online float64
	// Sum is serial execution GEMM + Online; SumPct = Sum/GEMM in percent.
	Sum, SumPct float64
	// Max is overlapped execution max(GEMM, Online); MaxPct = Max/GEMM.
	Max, MaxPct float64
}

// OWRLatency is PIM-SHERPA's Table 2 latency model (§3.3) for input
// sequence length sl on a machine with flopPerByte FLOP/B (the paper's
// Galaxy S24+ CPU: ≈4): GEMM time max(1, sl/flopPerByte)·t, online
// rearrangement 3t, serial SUM and overlapped MAX.
func OWRLatency(sl int, flopPerByte float64) (OWRRow, error) {
	if sl < 1 || !(flopPerByte > 0) {
		return OWRRow{}, fmt.Errorf("owr: input length %d and FLOP/B %v: must be ≥ 1 and > 0", sl, flopPerByte)
	}
	g := math.Max(1, float64(sl)/flopPerByte)
	r := OWRRow{InputSL: sl, GEMM: g, DRAM: 1, Online: 3}
	r.Sum = g + r.Online
	r.Max = math.Max(g, r.Online)
	r.SumPct = 100 * r.Sum / g
	r.MaxPct = 100 * r.Max / g
	return r, nil
}
