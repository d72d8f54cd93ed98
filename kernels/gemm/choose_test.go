package gemm

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// Fake backend lists: an M4-class arm64 (NEON and SME), the same without
// SME, an AVX-512 x86, and an x86 with a (future) AMX backend. Units, ISAs
// and tiles as the real declarations have them.
var (
	fakeNEON = []Backend{
		{Name: "go-fp32", DType: FP32, ISA: "go", Unit: Cores, TileM: 4, TileN: 4},
		{Name: "go-bf16", DType: BF16, ISA: "go", Unit: Cores, TileM: 4, TileN: 4},
		{Name: "go-int8", DType: Int8, ISA: "go", Unit: Cores, TileM: 4, TileN: 4},
		{Name: "neon-fp32", DType: FP32, ISA: "neon", Unit: Cores, TileM: 8, TileN: 12},
		{Name: "neon-bf16", DType: BF16, ISA: "neon", Unit: Cores, TileM: 8, TileN: 12},
		{Name: "neon-int8", DType: Int8, ISA: "neon", Unit: Cores, TileM: 8, TileN: 12},
	}
	fakeSME   = append(slices.Clone(fakeNEON), Backend{Name: "sme-fp32", DType: FP32, ISA: "sme", Unit: MatrixUnit, TileM: 32, TileN: 32})
	fakeNoSME = append(slices.Clone(fakeNEON), Backend{Name: "sme-fp32", DType: FP32, ISA: "sme", Unit: MatrixUnit, TileM: 32, TileN: 32,
		Unavailable: "unavailable: CPU lacks SME, SME_F32F32"})
	fakeAVX512 = []Backend{
		{Name: "go-fp32", DType: FP32, ISA: "go", Unit: Cores, TileM: 4, TileN: 4},
		{Name: "go-bf16", DType: BF16, ISA: "go", Unit: Cores, TileM: 4, TileN: 4},
		{Name: "go-int8", DType: Int8, ISA: "go", Unit: Cores, TileM: 4, TileN: 4},
		{Name: "avx2-fp32", DType: FP32, ISA: "avx2", Unit: Cores, TileM: 6, TileN: 16},
		{Name: "avx512-fp32", DType: FP32, ISA: "avx512", Unit: Cores, TileM: 12, TileN: 32},
		{Name: "avx2-bf16", DType: BF16, ISA: "avx2", Unit: Cores, TileM: 6, TileN: 16},
		{Name: "avx512-bf16", DType: BF16, ISA: "avx512", Unit: Cores, TileM: 12, TileN: 32},
		{Name: "avx2-int8", DType: Int8, ISA: "avx2", Unit: Cores, TileM: 4, TileN: 16},
		{Name: "avx512-int8", DType: Int8, ISA: "avx512", Unit: Cores, TileM: 8, TileN: 32},
		{Name: "avx512vnni-int8", DType: Int8, ISA: "avx512vnni", Unit: Cores, TileM: 8, TileN: 32},
	}
	fakeAMX = append(slices.Clone(fakeAVX512),
		Backend{Name: "amx-int8", DType: Int8, ISA: "amx", Unit: MatrixUnit, TileM: 16, TileN: 16},
		Backend{Name: "amx-bf16", DType: BF16, ISA: "amx", Unit: MatrixUnit, TileM: 16, TileN: 16})
)

// shuffled returns bs in a random order (Pick must not depend on it).
func shuffled(bs []Backend, seed uint64) []Backend {
	out := slices.Clone(bs)
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestPickByCapability: Pick chooses by unit and ISA rank whatever the
// order of the list: on the M4-class list the cores' fp32 backend is NEON
// (the registration-order Best of old returned sme-fp32, the last fp32
// declared), the matrix unit's is SME.
func TestPickByCapability(t *testing.T) {
	for _, c := range []struct {
		list []Backend
		u    Unit
		dt   DType
		want string
	}{
		{fakeSME, Cores, FP32, "neon-fp32"},
		{fakeSME, Cores, BF16, "neon-bf16"},
		{fakeSME, MatrixUnit, FP32, "sme-fp32"},
		{fakeSME, MatrixUnit, "", "sme-fp32"},
		{fakeSME, MatrixUnit, BF16, ""},
		{fakeNoSME, MatrixUnit, "", ""},
		{fakeNoSME, Cores, FP32, "neon-fp32"},
		{fakeAVX512, Cores, FP32, "avx512-fp32"},
		{fakeAVX512, Cores, Int8, "avx512vnni-int8"},
		{fakeAVX512, Cores, "", "avx512vnni-int8"}, // rank first, then dtype
		{fakeAMX, MatrixUnit, "", "amx-bf16"},
		{fakeAMX, MatrixUnit, Int8, "amx-int8"},
		{fakeAMX, Cores, BF16, "avx512-bf16"},
	} {
		for seed := range uint64(8) {
			got, ok := Pick(shuffled(c.list, seed), c.u, c.dt)
			if c.want == "" {
				if ok {
					t.Errorf("Pick(%s, %q) = %s, want none", c.u, c.dt, got.Name)
				}
				continue
			}
			if !ok || got.Name != c.want {
				t.Errorf("Pick(%s, %q) on a list in order %d = %s (%v), want %s", c.u, c.dt, seed, got.Name, ok, c.want)
			}
		}
	}
	// An unavailable backend is never picked.
	noVNNI := slices.Clone(fakeAVX512)
	noVNNI[len(noVNNI)-1].Unavailable = "unavailable: CPU lacks AVX512VNNI"
	if b, _ := Pick(noVNNI, Cores, Int8); b.Name != "avx512-int8" {
		t.Errorf("Pick int8 without VNNI = %s, want avx512-int8", b.Name)
	}
}

// TestChoosePairFake: the placements' backends on each fake machine, and
// the notes generated from the choice.
func TestChoosePairFake(t *testing.T) {
	for _, c := range []struct {
		name                string
		list                []Backend
		cores, matrix, hint string
		wantCores, wantMat  string
		wantLabel           string
	}{
		{name: "m4", list: fakeSME, wantCores: "neon-fp32", wantMat: "sme-fp32", wantLabel: "sme-fp32 (fp32 weights) on the matrix unit (sme)"},
		{name: "no-sme", list: fakeNoSME, wantCores: "neon-fp32", wantMat: "neon-bf16",
			wantLabel: "neon-bf16 (bf16 weights) on the cores, no matrix unit usable (sme-fp32: unavailable: CPU lacks SME, SME_F32F32)"},
		{name: "avx512", list: fakeAVX512, wantCores: "avx512-fp32", wantMat: "avx512-bf16", wantLabel: "avx512-bf16 (bf16 weights) on the cores, no matrix unit"},
		{name: "amx-cpu-no-backend", list: fakeAVX512, hint: "the CPU has AMX", wantCores: "avx512-fp32", wantMat: "avx512-bf16",
			wantLabel: "avx512-bf16 (bf16 weights) on the cores, no matrix unit backend (the CPU has AMX)"},
		{name: "amx", list: fakeAMX, wantCores: "avx512-fp32", wantMat: "amx-bf16", wantLabel: "amx-bf16 (bf16 weights) on the matrix unit (amx)"},
		{name: "named", list: fakeSME, cores: "go-fp32", matrix: "neon-bf16", wantCores: "go-fp32", wantMat: "neon-bf16",
			wantLabel: "neon-bf16 (bf16 weights) on the cores, chosen by name; the matrix unit's sme-fp32 is not used"},
		{name: "named-fp32-second", list: fakeAVX512, matrix: "go-fp32", wantCores: "avx512-fp32", wantMat: "go-fp32",
			wantLabel: "go-fp32 (fp32 weights) on the cores, chosen by name, no matrix unit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(4) {
				p, err := choosePair(shuffled(c.list, seed), c.cores, c.matrix, c.hint)
				if err != nil {
					t.Fatal(err)
				}
				if p.Cores.Name != c.wantCores || p.Matrix.Name != c.wantMat {
					t.Fatalf("cores %s, matrix %s; want %s, %s", p.Cores.Name, p.Matrix.Name, c.wantCores, c.wantMat)
				}
				if got := p.MatrixLabel(); got != c.wantLabel {
					t.Errorf("MatrixLabel = %q, want %q", got, c.wantLabel)
				}
				if p.CoresNamed != (c.cores != "") || p.MatrixNamed != (c.matrix != "") {
					t.Errorf("named flags %v %v", p.CoresNamed, p.MatrixNamed)
				}
			}
		})
	}
}

// TestChoosePairErrors: a bad name gives one line naming it and the
// available backends for the role.
func TestChoosePairErrors(t *testing.T) {
	for _, c := range []struct {
		list          []Backend
		cores, matrix string
		want          []string
	}{
		{fakeSME, "nope", "", []string{`cores backend "nope": unknown`, "available: neon-fp32, go-fp32"}},
		{fakeSME, "", "nope", []string{`matrix backend "nope": unknown`, "available: sme-fp32, neon-fp32"}},
		{fakeNoSME, "", "sme-fp32", []string{`matrix backend "sme-fp32": unavailable: CPU lacks SME`, "available: neon-fp32, neon-bf16"}},
		{fakeSME, "sme-fp32", "", []string{`cores backend "sme-fp32" runs on the matrix unit (sme)`, "available: neon-fp32, go-fp32"}},
		{fakeSME, "neon-bf16", "", []string{`cores backend "neon-bf16" computes bf16 weights`}},
	} {
		_, err := choosePair(c.list, c.cores, c.matrix, "")
		if err == nil {
			t.Errorf("choosePair(%q, %q): no error", c.cores, c.matrix)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error on several lines: %q", err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("choosePair(%q, %q) = %q, want it to contain %q", c.cores, c.matrix, err, w)
			}
		}
	}
}

// TestBackendsDeclareUnit: every backend compiled in declares its unit and
// an ISA the capability order ranks; Best never returns a matrix-unit
// backend and BestOn(MatrixUnit) never a cores one.
func TestBackendsDeclareUnit(t *testing.T) {
	for _, b := range Backends() {
		if b.Unit != Cores && b.Unit != MatrixUnit {
			t.Errorf("%s: unit %q", b.Name, b.Unit)
		}
		if ISARank(b.ISA) < 0 {
			t.Errorf("%s: ISA %q not in the ISA order (kernels/registry)", b.Name, b.ISA)
		}
		if (b.ISA == "sme" || b.ISA == "amx") != (b.Unit == MatrixUnit) {
			t.Errorf("%s: ISA %s on unit %s", b.Name, b.ISA, b.Unit)
		}
	}
	for _, dt := range dtypeOrder {
		if b, err := Best(dt); err != nil || b.Unit != Cores {
			t.Errorf("Best(%s) = %s on %s, %v", dt, b.Name, b.Unit, err)
		}
		if b, err := BestOn(MatrixUnit, dt); err == nil && b.Unit != MatrixUnit {
			t.Errorf("BestOn(matrix, %s) = %s on %s", dt, b.Name, b.Unit)
		}
	}
	p, err := ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Cores.Unit != Cores || p.Cores.DType != FP32 {
		t.Errorf("ChoosePair cores = %+v", p.Cores)
	}
	if (p.Matrix.Unit == MatrixUnit) != (p.MatrixNote == "") {
		t.Errorf("ChoosePair matrix = %s on %s with note %q", p.Matrix.Name, p.Matrix.Unit, p.MatrixNote)
	}
	t.Logf("cores = %s; matrix = %s", p.CoresLabel(), p.MatrixLabel())
}

// TestBestOnIsPick: BestOn, the registry's cached choice with rank, is
// Pick's rule over Backends(), for every unit and dtype, with all the
// CPU's features and with AVX-512 (or SVE/SME) and then all SIMD disabled.
func TestBestOnIsPick(t *testing.T) {
	check := func(what string) {
		t.Helper()
		for _, u := range []Unit{Cores, MatrixUnit} {
			for _, dt := range append(slices.Clone(dtypeOrder), "", "fp8") {
				if dt == "" {
					continue // BestOn takes one dtype; "" is Pick's any
				}
				if dt == "fp8" {
					if _, err := BestOn(u, dt); err == nil || !strings.Contains(err.Error(), `dtype "fp8": unknown`) {
						t.Errorf("%s: BestOn(%s, fp8) = %v", what, u, err)
					}
					continue
				}
				want, ok := Pick(Backends(), u, dt)
				got, err := BestOn(u, dt)
				if ok != (err == nil) || got.Name != want.Name {
					t.Errorf("%s: BestOn(%s, %s) = %s, %v; Pick = %s, %v", what, u, dt, got.Name, err, want.Name, ok)
				}
				if err == nil && got != want {
					t.Errorf("%s: BestOn(%s, %s) = %+v, Pick %+v", what, u, dt, got, want)
				}
			}
		}
	}
	check("all features")
	func() {
		defer cpu.DisableAVX512()()
		defer cpu.DisableSVE()()
		check("AVX-512, SVE and SME disabled")
	}()
	func() {
		defer cpu.DisableSIMD()()
		check("SIMD disabled")
		if b, _ := Best(FP32); b.Name != "go-fp32" {
			t.Errorf("SIMD disabled: Best(fp32) = %s", b.Name)
		}
	}()
	check("features restored")
}
