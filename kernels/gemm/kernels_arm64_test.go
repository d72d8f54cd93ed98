//go:build !purego

package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/cpubench/bench/internal/cpu"
)

// TestARM64Tiles checks the registered tiles: 8×12 for NEON (the emitter's
// tile), (2·SVL/32)² for SME at the SVL RDSVL reports.
func TestARM64Tiles(t *testing.T) {
	if neonMR != asmNEONMR {
		t.Fatalf("neonMR = %d, the emitter generates %d row kernels", neonMR, asmNEONMR)
	}
	t.Logf("SVL %d bits; SME %v, SME_F32F32 %v, ASIMDDP %v", 8*smeSVL, cpu.ARM64.HasSME, cpu.ARM64.HasSMEF32F32, cpu.ARM64.HasASIMDDP)
	for _, b := range Backends() {
		switch b.ISA {
		case "neon":
			if b.TileM != 8 || b.TileN != 12 {
				t.Errorf("%s: tile %d×%d, want 8×12", b.Name, b.TileM, b.TileN)
			}
		case "sme":
			if b.Unavailable == "" && (b.TileM != smeSVL/2 || b.TileN != smeSVL/2) {
				t.Errorf("%s: tile %d×%d at SVL %d bits, want %d×%d", b.Name, b.TileM, b.TileN, 8*smeSVL, smeSVL/2, smeSVL/2)
			}
		}
	}
}

// TestARM64Required fails when a backend named in BENCH_GEMM_REQUIRE
// (comma-separated, e.g. "sme-fp32,neon-int8") is unavailable, so a qemu
// run with -cpu ...,sme512=on proves the SME path was taken, not skipped.
func TestARM64Required(t *testing.T) {
	req := os.Getenv("BENCH_GEMM_REQUIRE")
	if req == "" {
		t.Skip("BENCH_GEMM_REQUIRE not set")
	}
	for _, name := range strings.Split(req, ",") {
		if _, err := BackendByName(strings.TrimSpace(name)); err != nil {
			t.Error(err)
		}
	}
}

// TestARM64Disable checks each arm64 backend goes away with its feature.
func TestARM64Disable(t *testing.T) {
	avail := func() map[string]bool {
		out := map[string]bool{}
		for _, b := range Backends() {
			out[b.Name] = b.Unavailable == ""
		}
		return out
	}
	base := avail()
	for _, c := range []struct {
		feature string
		gone    []string
	}{
		{"neon", []string{"neon-fp32", "neon-bf16", "neon-int8", "sme-fp32"}},
		{"neon-dotprod", []string{"neon-int8"}},
		{"sve", []string{"sme-fp32"}},
		{"sme", []string{"sme-fp32"}},
	} {
		undo, err := cpu.Disable(c.feature)
		if err != nil {
			t.Fatal(err)
		}
		now := avail()
		for name, ok := range now {
			gone := false
			for _, g := range c.gone {
				gone = gone || g == name
			}
			switch {
			case gone && ok:
				t.Errorf("%s available with %s disabled", name, c.feature)
			case !gone && ok != base[name]:
				t.Errorf("%s: available %v with %s disabled, %v before", name, ok, c.feature, base[name])
			}
		}
		for _, g := range c.gone {
			if _, err := BackendByName(g); err == nil || !strings.Contains(err.Error(), g) {
				t.Errorf("BackendByName(%s) with %s disabled: err = %v", g, c.feature, err)
			}
		}
		undo()
	}
	// Every vector ISA disabled: only the "go" backends are chosen (the
	// arm64 form of TestDisabledISAsNeverChosen).
	defer cpu.DisableSIMD()()
	for _, dt := range []DType{FP32, BF16, Int8} {
		if b, err := Best(dt); err != nil || b.ISA != "go" {
			t.Errorf("Best(%s) with SIMD disabled = %s, %v", dt, b.Name, err)
		}
	}
}

// TestARM64Microkernels runs every arm64 microkernel directly, for every
// row count m and odd k (and odd KP), overwrite and add, on a C with
// ldc > nr and a guard after the tile, against the spec loops of
// twin_test.go: fp32/bf16 within the package bound, int8 bit for bit.
func TestARM64Microkernels(t *testing.T) {
	ks := []int{1, 2, 3, 4, 5, 7, 8, 17, 64}
	for _, im := range archImpls() {
		t.Run(im.name, func(t *testing.T) {
			if u := im.lacks(); u != "" {
				t.Skip(u)
			}
			mr, nr := im.mr, im.nr
			r := rand.New(rand.NewPCG(uint64(mr), uint64(nr)))
			ldc := nr + 3
			for m := 1; m <= mr; m++ {
				if mr > 16 && m > 4 && m < mr-4 && m%5 != 0 {
					continue // SME at large SVL: a sample of the row counts
				}
				for _, k := range ks {
					name := fmt.Sprintf("m=%d/k=%d", m, k)
					switch im.dt {
					case Int8:
						microI8(t, name, im, r, m, k, ldc)
					default:
						for _, add := range []bool{false, true} {
							microF(t, fmt.Sprintf("%s/add=%v", name, add), im, r, m, k, ldc, add)
						}
					}
				}
			}
		})
	}
}

func guardC(rows, ldc int) []float32 {
	c := make([]float32, rows*ldc+5)
	for i := range c {
		c[i] = sentinel
	}
	return c
}

func microF(t *testing.T, name string, im *impl, r *rand.Rand, m, k, ldc int, add bool) {
	t.Helper()
	nr := im.nr
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	wf := make([]float32, k*nr)
	wb := make([]uint16, k*nr)
	for i := range wf {
		wb[i] = Float32ToBF16(float32(r.NormFloat64()))
		wf[i] = BF16ToFloat32(wb[i])
	}
	b := unsafe.Pointer(&wf[0])
	if im.dt == BF16 {
		b = unsafe.Pointer(&wb[0])
	}
	got, want := guardC(m, ldc), guardC(m, ldc)
	if add {
		for i := 0; i < m; i++ {
			for j := 0; j < nr; j++ {
				v := float32(r.NormFloat64())
				got[i*ldc+j], want[i*ldc+j] = v, v
			}
		}
	}
	im.fk[m-1](m, k, &a[0], b, &got[0], ldc, add, b)
	specF32(nr, im.dt == BF16)(m, k, &a[0], b, &want[0], ldc, add, nil)
	bad := 0
	for i := range got {
		inTile := i/ldc < m && i%ldc < nr
		if !inTile {
			if math.Float32bits(got[i]) != math.Float32bits(sentinel) {
				t.Errorf("%s: c[%d] (row %d, col %d) outside the tile overwritten: %g", name, i, i/ldc, i%ldc, got[i])
				bad++
			}
			continue
		}
		var s float64
		for p := 0; p < k; p++ {
			s += math.Abs(float64(a[p*m+i/ldc]) * float64(wf[p*nr+i%ldc]))
		}
		if add {
			s += math.Abs(float64(want[i]))
		}
		tol := 2*float64(k+1)*0x1p-24*s + 0x1p-126
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
			t.Errorf("%s: c[%d][%d] = %g, want %g ± %.3g", name, i/ldc, i%ldc, got[i], want[i], tol)
			bad++
		}
		if bad > 5 {
			t.FailNow()
		}
	}
}

func microI8(t *testing.T, name string, im *impl, r *rand.Rand, m, k, ldc int) {
	t.Helper()
	nr := im.nr
	kp := (k + 1) / 2
	a := make([]uint32, m*kp)
	for i := range a {
		lo, hi := uint16(int16(r.IntN(255)-127)), uint16(int16(r.IntN(255)-127))
		a[i] = uint32(lo) | uint32(hi)<<16
	}
	b := make([]int8, kp*nr*2)
	for i := range b {
		b[i] = int8(r.IntN(255) - 127)
	}
	xs, ws := make([]float32, m), make([]float32, nr)
	for i := range xs {
		xs[i] = float32(r.Float64())
	}
	for i := range ws {
		ws[i] = float32(r.Float64())
	}
	got, want := guardC(m, ldc), guardC(m, ldc)
	im.ik[m-1](m, kp, &a[0], &b[0], &got[0], ldc, &xs[0], &ws[0], unsafe.Pointer(&b[0]))
	specI8(nr)(m, kp, &a[0], &b[0], &want[0], ldc, &xs[0], &ws[0], nil)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: c[%d][%d] = %g, want %g (bit for bit)", name, i/ldc, i%ldc, got[i], want[i])
		}
	}
}

// TestSMELongK runs sme-fp32 over more than smeMaxK steps (split into
// several streaming calls) and checks it against the spec.
func TestSMELongK(t *testing.T) {
	for _, im := range archImpls() {
		if im.isa != "sme" {
			continue
		}
		if u := im.lacks(); u != "" {
			t.Skip(u)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for _, add := range []bool{false, true} {
			microF(t, fmt.Sprintf("m=3/k=%d/add=%v", smeMaxK+5, add), im, r, 3, smeMaxK+5, im.nr+1, add)
		}
	}
}
