package gemm

import "math"

// The conversions around the loop nests, each a Go specification that an
// assembly kernel replaces at init where the CPU has it (convert_amd64.go),
// bit for bit:
//
//	quantizeRow      X's int8 quantization, per row (every int8 backend)
//	scaleTile        an int32 AMX tile into Y: float32(c)·ws[j]·xs[r]
//	splitBF16Steps   X's bf16 hi+mid+lo split into the AMX A slivers
//	roundBF16Steps   X rounded to bf16 into one-term AMX A slivers
var (
	quantizeRow    = quantizeRowGo
	scaleTile      = scaleTileGo
	splitBF16Steps = splitBF16StepsGo
	roundBF16Steps = roundBF16StepsGo
)

// roundBF16StepsGo writes x's nkb whole K steps of 32 rounded to bf16
// (Float32ToBF16: ties to even, NaNs quieted) into the one-term AMX sliver
// layout of one row: step kb at u[kb·1024:][:32].
func roundBF16StepsGo(u []uint16, x []float32, nkb int) {
	for kb := 0; kb < nkb; kb++ {
		t := u[kb*amxPart/2 : kb*amxPart/2+32]
		for e, v := range x[kb*32 : kb*32+32] {
			t[e] = Float32ToBF16(v)
		}
	}
}

// scaleTileGo writes y[r·ldy+j] = float32(c[r·32+j])·ws[j]·xs[r] for r <
// rows, j < n (n ≤ 32): rows of a 32-column int32 tile (amxNR wide),
// scaled as every int8 backend scales its int32 sums.
func scaleTileGo(y []float32, ldy int, c []int32, ws, xs []float32, rows, n int) {
	for r := 0; r < rows; r++ {
		yr, cr, sx := y[r*ldy:r*ldy+n], c[r*amxNR:r*amxNR+n], xs[r]
		for j := range yr {
			yr[j] = float32(cr[j]) * ws[j] * sx
		}
	}
}

// splitBF16StepsGo splits nkb whole K steps (32 values each) of one row x
// into splitBF16's hi, mid and lo terms, written to the row's place in an
// AMX A sliver (amx.go): value kb·32+e goes to u[kb·3072+e] (hi),
// u[kb·3072+1024+e] (mid) and u[kb·3072+2048+e] (lo).
func splitBF16StepsGo(u []uint16, x []float32, nkb int) {
	for kb := 0; kb < nkb; kb++ {
		base := kb * 3 * amxPart / 2
		t0, t1, t2 := u[base:base+32], u[base+amxPart/2:base+amxPart/2+32], u[base+amxPart:base+amxPart+32]
		for e, v := range x[kb*32 : kb*32+32] {
			t0[e], t1[e], t2[e] = splitBF16(v)
		}
	}
}

// absMaxFinite reports whether quantizeRow's fast path applies to a row
// whose largest |x| is amax: finite and not zero (zero, NaN and infinite
// rows take quantizeRowGo, whose handling of them is the specification).
func absMaxFinite(amax float32) bool {
	return amax != 0 && !math.IsInf(float64(amax), 0) && amax == amax
}
