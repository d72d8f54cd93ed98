package cpu

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// X86Features are the x86-64 features bench has kernels for; comparable, so
// a kernel registry can tell whether the features it chose under changed
// (kernels/registry caches its best choice per feature set).
type X86Features struct {
	HasSSE2       bool
	HasAVX        bool
	HasAVX2       bool
	HasFMA        bool
	HasF16C       bool // VCVTPH2PS/VCVTPS2PH
	HasAVX512F    bool
	HasAVX512BW   bool
	HasAVX512DQ   bool
	HasAVX512VL   bool
	HasAVX512BF16 bool
	HasAVX512FP16 bool
	HasAVX512VNNI bool
	HasAVXVNNI    bool
	HasGFNI       bool // GF2P8AFFINEQB and kin (kernels/quant's int1 column tiles on zmm)
	HasAMXTile    bool
	HasAMXBF16    bool
	HasAMXInt8    bool
}

// X86 holds the x86-64 features of this CPU. All false on other
// architectures.
var X86 X86Features

// ARM64Features are the arm64 features bench has kernels for, from AT_HWCAP
// and AT_HWCAP2; comparable, as X86Features.
type ARM64Features struct {
	HasASIMD     bool // NEON
	HasFPHP      bool // scalar FP16
	HasASIMDHP   bool // NEON FP16 arithmetic
	HasASIMDDP   bool // SDOT/UDOT
	HasBF16      bool // BFDOT/BFMMLA
	HasI8MM      bool // SMMLA
	HasSVE       bool
	HasSVE2      bool
	HasSME       bool
	HasSME2      bool
	HasSMEF32F32 bool
	HasSMEB16F32 bool
	HasSMEF16F32 bool
	HasSMEI8I32  bool
	HasSMEFA64   bool
}

// ARM64 holds the arm64 features of this CPU. All false on other
// architectures.
var ARM64 ARM64Features

// RawFeatures are the names of all features the CPU reports, sorted: cpuid/v2
// names on x86, HWCAP names upper-cased on arm64.
var RawFeatures []string

func init() {
	detect()
	sort.Strings(RawFeatures)
	applyEnv()
}

// applyEnv honours BENCH_CPU_DISABLE, a comma-separated list of features to
// treat as absent ("avx512,avx2,sve,sme"), so a whole run (e.g. under qemu or
// in CI) can be forced onto a slower path.
func applyEnv() {
	v := os.Getenv("BENCH_CPU_DISABLE")
	if v == "" {
		return
	}
	for _, f := range strings.Split(v, ",") {
		if _, err := Disable(strings.TrimSpace(f)); err != nil {
			fmt.Fprintf(os.Stderr, "bench: BENCH_CPU_DISABLE: %v\n", err)
		}
	}
}

// Disable treats the named feature family as absent and returns the undo.
// Names: "avx512" (all AVX-512 subsets, GFNI and AMX), "avx2" (AVX2, FMA,
// AVX-VNNI and everything above), "amx", "gfni", "avx512bf16", "avx512fp16", "vnni",
// "sve" (SVE, SVE2 and SME), "sme", "sme2", "neon" (all arm64 SIMD),
// "neon-dotprod", "bf16", "i8mm".
func Disable(name string) (undo func(), err error) {
	x, a := X86, ARM64
	undo = func() { X86, ARM64 = x, a }
	switch strings.ToLower(name) {
	case "avx2":
		X86.HasAVX2, X86.HasFMA, X86.HasF16C, X86.HasAVXVNNI = false, false, false, false
		fallthrough
	case "avx512":
		X86.HasAVX512F, X86.HasAVX512BW, X86.HasAVX512DQ, X86.HasAVX512VL = false, false, false, false
		X86.HasAVX512BF16, X86.HasAVX512FP16, X86.HasAVX512VNNI, X86.HasGFNI = false, false, false, false
		fallthrough
	case "amx":
		X86.HasAMXTile, X86.HasAMXBF16, X86.HasAMXInt8 = false, false, false
	case "gfni":
		X86.HasGFNI = false
	case "avx512bf16":
		X86.HasAVX512BF16 = false
	case "avx512fp16":
		X86.HasAVX512FP16 = false
	case "vnni":
		X86.HasAVX512VNNI, X86.HasAVXVNNI = false, false
	case "sve":
		ARM64.HasSVE, ARM64.HasSVE2 = false, false
		fallthrough
	case "sme":
		ARM64.HasSME, ARM64.HasSMEF32F32, ARM64.HasSMEB16F32, ARM64.HasSMEF16F32, ARM64.HasSMEI8I32, ARM64.HasSMEFA64 = false, false, false, false, false, false
		fallthrough
	case "sme2":
		ARM64.HasSME2 = false
	case "neon":
		// NEON and every extension built on it (and SVE/SME, whose kernels
		// fall back to NEON or Go): the pure-Go path on arm64.
		ARM64.HasASIMD, ARM64.HasASIMDHP, ARM64.HasASIMDDP, ARM64.HasBF16, ARM64.HasI8MM = false, false, false, false, false
		ARM64.HasSVE, ARM64.HasSVE2 = false, false
		ARM64.HasSME, ARM64.HasSMEF32F32, ARM64.HasSMEB16F32, ARM64.HasSMEF16F32, ARM64.HasSMEI8I32, ARM64.HasSMEFA64, ARM64.HasSME2 = false, false, false, false, false, false, false
	case "neon-dotprod":
		ARM64.HasASIMDDP = false
	case "bf16":
		ARM64.HasBF16 = false
	case "i8mm":
		ARM64.HasI8MM = false
	default:
		return func() {}, fmt.Errorf("cpu: unknown feature %q (want avx512, avx2, amx, gfni, avx512bf16, avx512fp16, vnni, sve, sme, sme2, neon, neon-dotprod, bf16, i8mm)", name)
	}
	return undo, nil
}

// DisableAVX512 treats AVX-512 (and AMX) as absent; it returns the undo.
func DisableAVX512() func() { u, _ := Disable("avx512"); return u }

// DisableAVX2 treats AVX2/FMA and everything newer as absent; it returns the undo.
func DisableAVX2() func() { u, _ := Disable("avx2"); return u }

// DisableSVE treats SVE and SME as absent; it returns the undo.
func DisableSVE() func() { u, _ := Disable("sve"); return u }

// DisableSIMD treats every vector ISA (x86 AVX2 and above, arm64 NEON and
// above) as absent, leaving the pure-Go kernels; it returns the undo.
func DisableSIMD() func() {
	u1, _ := Disable("avx2")
	u2, _ := Disable("neon")
	return func() { u2(); u1() }
}

// DisableSME treats SME as absent; it returns the undo.
func DisableSME() func() { u, _ := Disable("sme"); return u }

// ISAs lists the vector and matrix instruction sets bench can use on this CPU
// right now (after any Disable), best last: e.g. ["go", "avx2", "avx512", "amx"].
func ISAs() []string {
	out := []string{"go"}
	if X86.HasAVX2 && X86.HasFMA {
		out = append(out, "avx2")
	}
	if X86.HasAVX512F && X86.HasAVX512BW && X86.HasAVX512DQ && X86.HasAVX512VL {
		out = append(out, "avx512")
	}
	if X86.HasAMXTile {
		out = append(out, "amx")
	}
	if ARM64.HasASIMD {
		out = append(out, "neon")
	}
	if ARM64.HasSVE {
		out = append(out, "sve")
	}
	if ARM64.HasSME {
		out = append(out, "sme")
	}
	return out
}

// Lacks returns "" if every feature is present, else
// "unavailable: CPU lacks F1, F2" naming the missing ones, the reason a
// kernel registry reports. Arguments alternate name (string) and present
// (bool): Lacks("AVX2", X86.HasAVX2, "FMA", X86.HasFMA).
func Lacks(features ...any) string {
	var missing []string
	for i := 0; i+1 < len(features); i += 2 {
		if !features[i+1].(bool) {
			missing = append(missing, features[i].(string))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "unavailable: CPU lacks " + strings.Join(missing, ", ")
}
