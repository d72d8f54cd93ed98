//go:build !purego

package peak

import (
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// Run these under qemu-user, e.g.
//
//	GOARCH=arm64 go test -exec 'qemu-aarch64 -cpu max,sme512=on,sme_fa64=off' ./kernels/peak/
//	GOARCH=arm64 go test -exec 'qemu-aarch64 -cpu max,sme=off' ./kernels/peak/
//	GOARCH=arm64 go test -exec 'qemu-aarch64 -cpu max,sve=off,sme=off' ./kernels/peak/

// Every arm64 kernel is listed, with ops per instruction from the vector
// lengths, and availability that follows internal/cpu.
func TestARM64KernelSet(t *testing.T) {
	want := map[string]string{
		"neon_fma_fp32": "neon", "neon_fma_fp64": "neon", "neon_fma_fp16": "neon",
		"neon_bfdot": "neon", "neon_bfmmla": "neon", "neon_sdot": "neon", "neon_smmla": "neon",
		"sve_fma_fp32":   "sve",
		"sme_fmopa_fp32": "sme", "sme_fmopa_bf16": "sme", "sme_fmopa_fp16": "sme", "sme_smopa_int8": "sme",
	}
	ops := map[string]int{
		"neon_fma_fp32": 8, "neon_fma_fp64": 4, "neon_fma_fp16": 16,
		"neon_bfdot": 16, "neon_bfmmla": 32, "neon_sdot": 32, "neon_smmla": 64,
	}
	if cpu.ARM64.HasSVE {
		ops["sve_fma_fp32"] = 2 * sveVL() * 8 / 32
	}
	if cpu.ARM64.HasSME {
		n := smeSVL() * 8 / 32
		ops["sme_fmopa_fp32"] = 2 * n * n
		ops["sme_fmopa_bf16"] = 2 * 2 * n * n
		ops["sme_fmopa_fp16"] = 2 * 2 * n * n
		ops["sme_smopa_int8"] = 2 * 4 * n * n
		t.Logf("SVL %d bits, VL %d bits", 8*smeSVL(), 8*sveVL())
	}
	ks := Kernels()
	if len(ks) != len(want) {
		t.Errorf("%d kernels, want %d", len(ks), len(want))
	}
	for _, k := range ks {
		isa, ok := want[k.Name]
		if !ok || k.ISA != isa {
			t.Errorf("%s: ISA %q, want %q", k.Name, k.ISA, isa)
		}
		if o, ok := ops[k.Name]; ok && k.OpsPerInstruction != o {
			t.Errorf("%s: %d ops per instruction, want %d", k.Name, k.OpsPerInstruction, o)
		}
		if k.Unavailable == "" && k.OpsPerIter != int64(k.Accumulators*k.OpsPerInstruction) {
			t.Errorf("%s: OpsPerIter %d != %d x %d", k.Name, k.OpsPerIter, k.Accumulators, k.OpsPerInstruction)
		}
		if (k.Unavailable == "") != (k.Run != nil) {
			t.Errorf("%s: unavailable %q but Run set: %v", k.Name, k.Unavailable, k.Run != nil)
		}
		switch {
		case k.ISA == "sve" && !cpu.ARM64.HasSVE, k.ISA == "sme" && !cpu.ARM64.HasSME:
			if !strings.HasPrefix(k.Unavailable, "unavailable: CPU lacks "+strings.ToUpper(k.ISA)+" (HWCAP") {
				t.Errorf("%s: reason %q", k.Name, k.Unavailable)
			}
		case k.ISA == "neon" && cpu.ARM64.HasASIMD && k.Name != "neon_fma_fp16" && k.Name != "neon_bfdot" &&
			k.Name != "neon_bfmmla" && k.Name != "neon_sdot" && k.Name != "neon_smmla":
			if k.Unavailable != "" {
				t.Errorf("%s unavailable on a CPU with ASIMD: %s", k.Name, k.Unavailable)
			}
		}
	}
}

// Disabling SME leaves NEON and SVE alone; disabling SVE removes both.
func TestARM64Disable(t *testing.T) {
	avail := func() map[string]bool {
		m := map[string]bool{}
		for _, k := range Kernels() {
			m[k.Name] = k.Unavailable == ""
		}
		return m
	}
	before := avail()
	func() {
		defer cpu.DisableSME()()
		for name, ok := range avail() {
			isSME := strings.HasPrefix(name, "sme_")
			if isSME && ok || !isSME && ok != before[name] {
				t.Errorf("DisableSME: %s available %v (before %v)", name, ok, before[name])
			}
		}
	}()
	func() {
		defer cpu.DisableSVE()()
		for name, ok := range avail() {
			isSVE := strings.HasPrefix(name, "sme_") || strings.HasPrefix(name, "sve_")
			if isSVE && ok || !isSVE && ok != before[name] {
				t.Errorf("DisableSVE: %s available %v (before %v)", name, ok, before[name])
			}
		}
	}()
}

// The SME kernels split long runs into calls of at most smeChunk
// iterations, carrying ZA through buf; the checksum is still the model's.
func TestSMEChunks(t *testing.T) {
	k, _ := KernelByName("sme_fmopa_fp32")
	if k.Run == nil {
		t.Skip(k.Unavailable)
	}
	for _, iters := range []int{smeChunk, smeChunk + 1, 2*smeChunk + 3} {
		if got, want := k.Run(iters), k.Model(iters); got != want {
			t.Errorf("Run(%d) = %v, model %v", iters, got, want)
		}
	}
}

// When the SMOPA self-test fails it must be the known QEMU error (only the
// first half of every tile's rows gain their products), not a bug of the
// loop; on hardware it must pass.
func TestSMOPASelfTest(t *testing.T) {
	if !cpu.ARM64.HasSME || !cpu.ARM64.HasSMEI8I32 {
		t.Skip("no SME_I8I32")
	}
	k, _ := KernelByName("sme_smopa_int8")
	if smopaCheck.reason == "" {
		if k.Unavailable != "" {
			t.Fatalf("self-test passed but %s", k.Unavailable)
		}
		return
	}
	t.Logf("%s", smopaCheck.reason)
	rows := smeSVL() / 4
	// Row r of tile t is seeded 1 + t·rows + r; one iteration adds -24 to
	// each of its rows elements.
	var qemu float64
	for tile := 0; tile < 4; tile++ {
		for r := 0; r < rows; r++ {
			v := float64(1 + tile*rows + r)
			if r < rows/2 {
				v -= 24
			}
			qemu += v * float64(rows)
		}
	}
	if smopaCheck.got != qemu {
		t.Fatalf("SMOPA self-test checksum %v is neither the model %v nor the QEMU issue 2083 result %v", smopaCheck.got, k.Model(1), qemu)
	}
}

// Run allocates nothing (the buffer stays on the stack).
func TestARM64RunAllocs(t *testing.T) {
	for _, k := range Kernels() {
		if k.Run == nil {
			continue
		}
		if n := testing.AllocsPerRun(3, func() { k.Run(3) }); n != 0 {
			t.Errorf("%s: %v allocations per Run", k.Name, n)
		}
	}
}
