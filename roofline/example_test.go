package roofline_test

import (
	"fmt"

	"github.com/cpubench/bench/roofline"
)

// The M4 Pro's FP16 ceilings and read bandwidths (SMEPilot Fig. 3) give
// two ridge points; a GEMV (I ≈ 1 FLOP/byte) gets 247 GFLOP/s on the cores
// whatever the ceiling.
func ExampleAttainable() {
	fmt.Printf("cores ridge %.2f, SME ridge %.2f FLOP/byte\n", roofline.Ridge(1850, 247), roofline.Ridge(2920, 224))
	for _, i := range []float64{1, 10, 100} {
		fmt.Printf("I=%-3v cores %6.0f  SME %6.0f  mixed %6.0f GFLOP/s\n", i,
			roofline.Attainable(1850, 247, i), roofline.Attainable(2920, 224, i), roofline.Attainable(4270, 247, i))
	}
	// Output:
	// cores ridge 7.49, SME ridge 13.04 FLOP/byte
	// I=1   cores    247  SME    224  mixed    247 GFLOP/s
	// I=10  cores   1850  SME   2240  mixed   2470 GFLOP/s
	// I=100 cores   1850  SME   2920  mixed   4270 GFLOP/s
}

// SMEPilot Eq. 1 on an awkward extent: 1000 output channels, SME tiles of
// 32 and core tiles of 16 columns. The ideal split 612.2 rounds to 608, the
// aligned point with the smaller max(SME, cores) time.
func ExampleSplitEq1() {
	s, f, align := roofline.SplitEq1(1000, 32, 16, 2920, 1850)
	fmt.Printf("f = %.4f, ideal %.1f, aligned to %d: SME %d, cores %d\n", f, f*1000, align, s, 1000-s)
	// Output:
	// f = 0.6122, ideal 612.2, aligned to 32: SME 608, cores 392
}

// Causal masking: a decode step attends to the whole context; a fresh
// prefill of T tokens computes T(T+1)/2 of the T² scores.
func ExampleCausalPairs() {
	fmt.Println(roofline.CausalPairs(1, 1024), roofline.CausalPairs(512, 512), roofline.CausalPairs(4, 10))
	// Output:
	// 1024 131328 34
}

// The low-bit paper's Eq. 3 for its 2-bit and 1-bit kernels on a P core
// with β = 0.8 bytes/cycle (ARL), and Eq. 4 at α = 0.87.
func ExampleEffectiveBandwidth() {
	fmt.Printf("2-bit: min(β, %.2f) = %.2f\n", 8/1.25, roofline.EffectiveBandwidth(0.8, 8, 1.25))
	fmt.Printf("1-bit: min(β, %.2f) = %.2f\n", 4/2.4, roofline.EffectiveBandwidth(0.8, 4, 2.4))
	fmt.Printf("Amdahl α=0.87: x=8 %.2f, x=16 %.2f\n", roofline.AmdahlSpeedup(0.87, 8), roofline.AmdahlSpeedup(0.87, 16))
	// Output:
	// 2-bit: min(β, 6.40) = 0.80
	// 1-bit: min(β, 1.67) = 0.80
	// Amdahl α=0.87: x=8 4.19, x=16 5.42
}

// PIM-SHERPA Table 2: serial vs overlapped online weight rearrangement.
func ExampleOWRLatency() {
	for _, sl := range []int{1, 8, 16, 192} {
		r, _ := roofline.OWRLatency(sl, 4)
		fmt.Printf("SL %3d: GEMM %2.0ft  SUM %2.0ft (%3.0f%%)  MAX %2.0ft (%3.0f%%)\n", sl, r.GEMM, r.Sum, r.SumPct, r.Max, r.MaxPct)
	}
	// Output:
	// SL   1: GEMM  1t  SUM  4t (400%)  MAX  3t (300%)
	// SL   8: GEMM  2t  SUM  5t (250%)  MAX  3t (150%)
	// SL  16: GEMM  4t  SUM  7t (175%)  MAX  4t (100%)
	// SL 192: GEMM 48t  SUM 51t (106%)  MAX 48t (100%)
}
