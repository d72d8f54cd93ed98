package gemm

import (
	"fmt"
	"testing"
	"unsafe"
)

// The spec kernels for any panel width nr: the loops of the fkern and
// ikern doc comments, verbatim. TestTileShapeTwins runs the loop nest with
// them at every backend's tile shape (the AVX-512 ones included, which
// cannot run on an AVX2 machine or under qemu), so the packing and
// blocking for 12×32 and 8×32 tiles is tested everywhere; the AVX-512
// kernels themselves are the AVX2 generator's code with zmm registers.
func specF32(nr int, bf16 bool) fkern {
	return func(m, k int, a *float32, b unsafe.Pointer, c *float32, ldc int, add bool, _ unsafe.Pointer) {
		as := unsafe.Slice(a, m*k)
		cs := unsafe.Slice(c, (m-1)*ldc+nr)
		for r := 0; r < m; r++ {
			for j := 0; j < nr; j++ {
				var s float32
				for p := 0; p < k; p++ {
					var w float32
					if bf16 {
						w = BF16ToFloat32(unsafe.Slice((*uint16)(b), k*nr)[p*nr+j])
					} else {
						w = unsafe.Slice((*float32)(b), k*nr)[p*nr+j]
					}
					s += as[p*m+r] * w
				}
				if add {
					cs[r*ldc+j] += s
				} else {
					cs[r*ldc+j] = s
				}
			}
		}
	}
}

func specI8(nr int) ikern {
	return func(m, kp int, a *uint32, b *int8, c *float32, ldc int, xs, ws *float32, _ unsafe.Pointer) {
		as, bs := unsafe.Slice(a, m*kp), unsafe.Slice(b, kp*nr*2)
		cs, xss, wss := unsafe.Slice(c, (m-1)*ldc+nr), unsafe.Slice(xs, m), unsafe.Slice(ws, nr)
		for r := 0; r < m; r++ {
			for j := 0; j < nr; j++ {
				var s int32
				for p := 0; p < kp; p++ {
					v := as[p*m+r]
					s += int32(int16(v))*int32(bs[(p*nr+j)*2]) + int32(int16(v>>16))*int32(bs[(p*nr+j)*2+1])
				}
				cs[r*ldc+j] = float32(s) * wss[j] * xss[r]
			}
		}
	}
}

func TestTileShapeTwins(t *testing.T) {
	for _, im := range impls() {
		if im.amx != nil {
			continue // their own layout and loop nest: TestAMXTwinLoopNest
		}
		twin := &impl{name: im.name, isa: im.isa, dt: im.dt, mr: im.mr, nr: im.nr, lacks: func() string { return "" }}
		for m := 0; m < im.mr; m++ {
			switch im.dt {
			case Int8:
				twin.ik = append(twin.ik, specI8(im.nr))
			default:
				twin.fk = append(twin.fk, specF32(im.nr, im.dt == BF16))
			}
		}
		t.Run(fmt.Sprintf("%s-%dx%d", im.name, im.mr, im.nr), func(t *testing.T) {
			for si, sh := range [][3]int{{1, 5, 3}, {13, 70, 33}, {26, 65, 9}} {
				m, n, k := sh[0], sh[1], sh[2]
				p := newProblem(uint64(si), m, n, k)
				ref, tol := p.ref(im.dt)
				w := &Weights{N: n, K: k, Backend: twin.backend(), im: twin, np: (n + im.nr - 1) / im.nr}
				switch im.dt {
				case FP32:
					w.f32 = packPanelsF32(nil, p.wf, n, k, im.nr, 0, w.np)
				case BF16:
					w.u16 = packPanelsU16(nil, p.wb, n, k, im.nr, 0, w.np)
				case Int8:
					w.i8, w.scales = packPanelsI8(nil, nil, p.wi, p.ws, n, k, im.nr, 0, w.np)
				}
				for _, bl := range blockings(w.Backend) {
					y := newY(m, n+1)
					w.compute(y, n+1, p.x, k, 0, m, 0, n, NewScratch(w, bl))
					check(t, fmt.Sprintf("%dx%dx%d/%+v", m, n, k, bl), y, n+1, ref, tol, n, 0, m, 0, n)
					y = newY(m, n+1)
					w.compute(y, n+1, p.x, k, m/2, m, n/3, n-1, NewScratch(w, bl))
					check(t, fmt.Sprintf("%dx%dx%d/%+v/sub", m, n, k, bl), y, n+1, ref, tol, n, m/2, m, n/3, n-1)
				}
			}
		})
	}
}
