package gemm

import (
	"fmt"
	"math"

	"github.com/cpubench/bench/internal/hugepage"
)

// Weights is a weight matrix W (N×K, row-major: one row per output column
// of Y) packed once into its backend's panel layout (SMEPilot §4.3:
// weights are static, so their layout conversion stays off the request
// path). Panel p holds rows p·NR..p·NR+NR-1 of W, zero-padded, k-major:
//
//	fp32, bf16: panel[p][k][j]           = W[p·NR+j][k]
//	int8:       panel[p][k/2][j][k%2]    = W[p·NR+j][k]   (K padded to even)
//
// so a microkernel reads one panel front to back, and a decode GEMV
// streams all of W exactly once, sequentially. The AMX backends (amx-bf16,
// amx-int8) pack panels of 32 rows in the tile layout of amx.go instead.
type Weights struct {
	N, K    int
	Backend Backend

	im     *impl
	np     int       // panels: ceil(N/NR)
	p0     int       // index of the first stored panel (BlockUnpacked packs a range)
	f32    []float32 // fp32 panels, np·K·NR
	u16    []uint16  // bf16 panels, np·K·NR
	i8     []int8    // int8 panels, np·KP·NR·2, KP = ceil(K/2)
	scales []float32 // int8: per output column, padded to np·NR
	bl     Blocking  // for Block with a nil Scratch
}

func checkShape(name string, got, n, k int) error {
	if n <= 0 || k <= 0 {
		return fmt.Errorf("gemm: %s: shape %d×%d: N and K must be positive", name, n, k)
	}
	if got != n*k {
		return fmt.Errorf("gemm: %s: len(w) = %d, want N·K = %d·%d = %d", name, got, n, k, n*k)
	}
	return nil
}

func newWeights(b Backend, dt DType, n, k int) (*Weights, error) {
	im, err := lookup(b.Name)
	if err != nil {
		return nil, err
	}
	if im.dt != dt {
		return nil, fmt.Errorf("gemm: backend %q computes %s weights, not %s", b.Name, im.dt, dt)
	}
	w := &Weights{N: n, K: k, Backend: im.backend(), im: im, np: (n + im.nr - 1) / im.nr}
	w.bl = DefaultBlocking(w.Backend)
	return w, nil
}

// PackFP32 packs the N×K row-major float32 weights w for backend b.
func PackFP32(b Backend, w []float32, n, k int) (*Weights, error) {
	if err := checkShape("PackFP32", len(w), n, k); err != nil {
		return nil, err
	}
	pw, err := newWeights(b, FP32, n, k)
	if err != nil {
		return nil, err
	}
	pw.f32 = packPanelsF32(nil, w, n, k, pw.im.nr, 0, pw.np)
	return pw, nil
}

// PanelFloatsFP32 is the number of float32s PackFP32Into needs for N×K
// weights on backend b: ceil(N/NR)·K·NR (the panels, padded to whole
// panels of the backend's NR rows).
func PanelFloatsFP32(b Backend, n, k int) (int, error) {
	im, err := lookup(b.Name)
	if err != nil {
		return 0, err
	}
	return (n + im.nr - 1) / im.nr * k * im.nr, nil
}

// PackFP32Into packs like PackFP32 but into dst, which must hold
// PanelFloatsFP32(b, n, k) floats: memory the caller placed (a NUMA
// node's, an mmap'ed buffer) holds the panels, and stays the caller's to
// free once the Weights are no longer used.
func PackFP32Into(b Backend, dst, w []float32, n, k int) (*Weights, error) {
	if err := checkShape("PackFP32Into", len(w), n, k); err != nil {
		return nil, err
	}
	pw, err := newWeights(b, FP32, n, k)
	if err != nil {
		return nil, err
	}
	if need := pw.np * k * pw.im.nr; len(dst) < need {
		return nil, fmt.Errorf("gemm: PackFP32Into: len(dst) = %d, want %d (PanelFloatsFP32)", len(dst), need)
	}
	pw.f32 = packPanelsF32(dst[:pw.np*k*pw.im.nr], w, n, k, pw.im.nr, 0, pw.np)
	return pw, nil
}

// PackBF16 packs the N×K row-major bf16 weights w (the upper 16 bits of a
// float32 each) for backend b.
func PackBF16(b Backend, w []uint16, n, k int) (*Weights, error) {
	if err := checkShape("PackBF16", len(w), n, k); err != nil {
		return nil, err
	}
	pw, err := newWeights(b, BF16, n, k)
	if err != nil {
		return nil, err
	}
	if op := pw.im.amx; op != nil {
		pw.u16 = packAMXU16(op, nil, w, n, k, 0, pw.np)
		return pw, nil
	}
	pw.u16 = packPanelsU16(nil, w, n, k, pw.im.nr, 0, pw.np)
	return pw, nil
}

// PackInt8 packs the N×K row-major int8 weights w with one scale per row
// (output column) n: W[n][k] = w[n·K+k]·scales[n].
func PackInt8(b Backend, w []int8, scales []float32, n, k int) (*Weights, error) {
	if err := checkShape("PackInt8", len(w), n, k); err != nil {
		return nil, err
	}
	if len(scales) != n {
		return nil, fmt.Errorf("gemm: PackInt8: len(scales) = %d, want N = %d", len(scales), n)
	}
	pw, err := newWeights(b, Int8, n, k)
	if err != nil {
		return nil, err
	}
	if op := pw.im.amx; op != nil {
		pw.i8, pw.scales = packAMXI8(op, nil, nil, w, scales, n, k, 0, pw.np)
		return pw, nil
	}
	pw.i8, pw.scales = packPanelsI8(nil, nil, w, scales, n, k, pw.im.nr, 0, pw.np)
	return pw, nil
}

// grow returns s resized to n elements, reusing its storage when it can;
// new storage of 2 MiB or more is advised for transparent huge pages
// (internal/hugepage: a decode GEMV streams the packed weights at the
// DRAM read roof the probe measures on such pages).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return hugepage.Make[T](n)
	}
	return s[:n]
}

// packPanelsF32 packs panels [p0, p1) of w into dst (grown as needed).
func packPanelsF32(dst, w []float32, n, k, nr, p0, p1 int) []float32 {
	dst = grow(dst, (p1-p0)*k*nr)
	for p := p0; p < p1; p++ {
		pan := dst[(p-p0)*k*nr : (p-p0+1)*k*nr]
		for j := 0; j < nr; j++ {
			row := p*nr + j
			if row >= n {
				for kk := 0; kk < k; kk++ {
					pan[kk*nr+j] = 0
				}
				continue
			}
			src := w[row*k : row*k+k]
			for kk, v := range src {
				pan[kk*nr+j] = v
			}
		}
	}
	return dst
}

func packPanelsU16(dst, w []uint16, n, k, nr, p0, p1 int) []uint16 {
	dst = grow(dst, (p1-p0)*k*nr)
	for p := p0; p < p1; p++ {
		pan := dst[(p-p0)*k*nr : (p-p0+1)*k*nr]
		for j := 0; j < nr; j++ {
			row := p*nr + j
			if row >= n {
				for kk := 0; kk < k; kk++ {
					pan[kk*nr+j] = 0
				}
				continue
			}
			src := w[row*k : row*k+k]
			for kk, v := range src {
				pan[kk*nr+j] = v
			}
		}
	}
	return dst
}

func packPanelsI8(dst []int8, dsc []float32, w []int8, scales []float32, n, k, nr, p0, p1 int) ([]int8, []float32) {
	kp := (k + 1) / 2
	dst = grow(dst, (p1-p0)*kp*nr*2)
	dsc = grow(dsc, (p1-p0)*nr)
	for p := p0; p < p1; p++ {
		pan := dst[(p-p0)*kp*nr*2 : (p-p0+1)*kp*nr*2]
		for j := 0; j < nr; j++ {
			row := p*nr + j
			if row >= n {
				dsc[(p-p0)*nr+j] = 0
				for q := 0; q < kp; q++ {
					pan[(q*nr+j)*2], pan[(q*nr+j)*2+1] = 0, 0
				}
				continue
			}
			dsc[(p-p0)*nr+j] = scales[row]
			src := w[row*k : row*k+k]
			for kk, v := range src {
				pan[((kk>>1)*nr+j)*2+kk&1] = v
			}
			if k&1 == 1 {
				pan[((kp-1)*nr+j)*2+1] = 0
			}
		}
	}
	return dst, dsc
}

// QuantizeRows quantizes each row of the m×k row-major x symmetrically to
// int8: scales[r] = max_k |x[r][k]| / 127 and q[r][k] = round(x[r][k] /
// scales[r]) (ties to even) in [-127, 127], so x[r][k] ≈ q[r][k]·scales[r]
// with |error| ≤ scales[r]/2. A row of zeros has scale 0. The int8 backends
// quantize X this way inside Block; every int8 backend consumes signed
// int8 activations (widened to int16 in the kernel), so no offset is
// needed.
func QuantizeRows(x []float32, m, k int) (q []int8, scales []float32) {
	q = make([]int8, m*k)
	scales = make([]float32, m)
	for r := 0; r < m; r++ {
		scales[r] = quantizeRow(q[r*k:r*k+k], x[r*k:r*k+k])
	}
	return q, scales
}

// quantizeRowGo quantizes one row into q and returns its scale: the
// specification of quantizeRow (convert.go).
func quantizeRowGo(q []int8, x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	if amax == 0 || amax != amax {
		for i := range q {
			q[i] = 0
		}
		return amax
	}
	inv := 127 / amax
	for i, v := range x {
		q[i] = quantizeValue(v, inv)
	}
	return amax / 127
}

// quantizeValue is one element of quantizeRowGo: v·inv rounded to float32,
// then to the nearest integer (ties to even), clamped to [-127, 127].
func quantizeValue(v, inv float32) int8 {
	f := math.RoundToEven(float64(v * inv))
	return int8(min(max(f, -127), 127))
}
