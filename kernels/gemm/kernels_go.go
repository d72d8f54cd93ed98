package gemm

import (
	"math"
	"unsafe"
)

// fkern computes one m×nr tile of a float GEMM (fp32 or bf16 weights):
//
//	for r < m, j < nr:
//		s := Σ_{p<k} a[p*m+r] * W(b, p*nr+j)     // W: float32, or bf16 bits << 16
//		c[r*ldc+j] = s  (or += s when add)
//
// a is a packed sliver of X, b points into a packed panel of W. pf is a
// prefetch hint (the assembly prefetches the stream at pf alongside b; the
// Go kernels ignore it).
type fkern func(m, k int, a *float32, b unsafe.Pointer, c *float32, ldc int, add bool, pf unsafe.Pointer)

// ikern computes one m×nr tile of the int8 GEMM:
//
//	for r < m, j < nr:
//		s := Σ_{p<kp} int32(lo16(a[p*m+r]))*int32(b[(p*nr+j)*2]) + int32(hi16(a[p*m+r]))*int32(b[(p*nr+j)*2+1])
//		c[r*ldc+j] = float32(s) * ws[j] * xs[r]
type ikern func(m, kp int, a *uint32, b *int8, c *float32, ldc int, xs, ws *float32, pf unsafe.Pointer)

// The "go" backends: tiles of goMR×goNR with the same packed layouts as the
// assembly, computed by the specification loops below (16 scalar
// accumulators, which fit the register file of arm64).
const goMR, goNR = 4, 4

func goImpls() []*impl {
	tab := func(k fkern) []fkern {
		out := make([]fkern, goMR)
		for i := range out {
			out[i] = k
		}
		return out
	}
	ik := make([]ikern, goMR)
	for i := range ik {
		ik[i] = kernI8Go
	}
	none := func() string { return "" }
	return []*impl{
		{name: "go-fp32", isa: "go", unit: Cores, dt: FP32, mr: goMR, nr: goNR, lacks: none, fk: tab(kernF32Go)},
		{name: "go-bf16", isa: "go", unit: Cores, dt: BF16, mr: goMR, nr: goNR, lacks: none, fk: tab(kernBF16Go)},
		{name: "go-int8", isa: "go", unit: Cores, dt: Int8, mr: goMR, nr: goNR, lacks: none, ik: ik},
	}
}

// kernF32Go is fkern for float32 panels of goNR columns.
func kernF32Go(m, k int, a *float32, b unsafe.Pointer, c *float32, ldc int, add bool, _ unsafe.Pointer) {
	as := unsafe.Slice(a, m*k)
	bs := unsafe.Slice((*float32)(b), k*goNR)
	cs := unsafe.Slice(c, (m-1)*ldc+goNR)
	for r := 0; r < m; r++ {
		var s0, s1, s2, s3 float32
		for p := 0; p < k; p++ {
			x := as[p*m+r]
			w := bs[p*goNR : p*goNR+goNR : p*goNR+goNR]
			s0 += x * w[0]
			s1 += x * w[1]
			s2 += x * w[2]
			s3 += x * w[3]
		}
		storeRow(cs[r*ldc:r*ldc+goNR], add, s0, s1, s2, s3)
	}
}

// kernBF16Go is fkern for bf16 panels of goNR columns.
func kernBF16Go(m, k int, a *float32, b unsafe.Pointer, c *float32, ldc int, add bool, _ unsafe.Pointer) {
	as := unsafe.Slice(a, m*k)
	bs := unsafe.Slice((*uint16)(b), k*goNR)
	cs := unsafe.Slice(c, (m-1)*ldc+goNR)
	for r := 0; r < m; r++ {
		var s0, s1, s2, s3 float32
		for p := 0; p < k; p++ {
			x := as[p*m+r]
			w := bs[p*goNR : p*goNR+goNR : p*goNR+goNR]
			s0 += x * BF16ToFloat32(w[0])
			s1 += x * BF16ToFloat32(w[1])
			s2 += x * BF16ToFloat32(w[2])
			s3 += x * BF16ToFloat32(w[3])
		}
		storeRow(cs[r*ldc:r*ldc+goNR], add, s0, s1, s2, s3)
	}
}

func storeRow(c []float32, add bool, s0, s1, s2, s3 float32) {
	c = c[:4:4]
	if add {
		c[0] += s0
		c[1] += s1
		c[2] += s2
		c[3] += s3
		return
	}
	c[0], c[1], c[2], c[3] = s0, s1, s2, s3
}

// kernI8Go is ikern for int8 panels of goNR columns.
func kernI8Go(m, kp int, a *uint32, b *int8, c *float32, ldc int, xs, ws *float32, _ unsafe.Pointer) {
	as := unsafe.Slice(a, m*kp)
	bs := unsafe.Slice(b, kp*goNR*2)
	cs := unsafe.Slice(c, (m-1)*ldc+goNR)
	xss := unsafe.Slice(xs, m)
	wss := unsafe.Slice(ws, goNR)
	for r := 0; r < m; r++ {
		var s [goNR]int32
		for p := 0; p < kp; p++ {
			v := as[p*m+r]
			x0, x1 := int32(int16(v)), int32(int16(v>>16))
			w := bs[p*goNR*2 : p*goNR*2+goNR*2 : p*goNR*2+goNR*2]
			for j := range s {
				s[j] += x0*int32(w[2*j]) + x1*int32(w[2*j+1])
			}
		}
		for j := range s {
			cs[r*ldc+j] = float32(s[j]) * wss[j] * xss[r]
		}
	}
}

// BF16ToFloat32 widens bf16 bits to the float32 they are the upper half of.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds f to the nearest bf16 (ties to even; NaN stays NaN).
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
