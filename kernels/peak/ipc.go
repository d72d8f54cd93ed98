package peak

import (
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// Microarch identifies the core design the IPC table is keyed by.
type Microarch struct {
	Vendor string // "Intel", "AMD", or cpuid's name for others
	Family int
	Model  int
	Brand  string
}

// DetectMicroarch reads the running CPU's vendor, family, model and brand
// string from cpuid.
func DetectMicroarch() Microarch {
	c := &cpuid.CPU
	v := c.VendorString
	switch c.VendorID {
	case cpuid.Intel:
		v = "Intel"
	case cpuid.AMD:
		v = "AMD"
	}
	return Microarch{Vendor: v, Family: c.Family, Model: c.Model, Brand: c.BrandName}
}

// Name is the core family: "zen4", "skylake-sp", "sapphire-rapids", ... or
// "unknown".
func (m Microarch) Name() string {
	in := func(lo, hi int) bool { return m.Model >= lo && m.Model <= hi }
	switch {
	case m.Vendor == "AMD" && m.Family == 0x17:
		if m.Model < 0x30 {
			return "zen1"
		}
		return "zen2"
	case m.Vendor == "AMD" && m.Family == 0x19:
		if in(0x10, 0x1f) || in(0x60, 0x7f) || in(0xa0, 0xaf) {
			return "zen4"
		}
		return "zen3"
	case m.Vendor == "AMD" && m.Family == 0x1a:
		if in(0x00, 0x1f) || in(0x40, 0x4f) {
			return "zen5" // Turin, Granite Ridge: full 512-bit datapath
		}
		return "zen5-mobile"
	case m.Vendor == "Intel" && m.Family == 6:
		switch m.Model {
		case 0x3c, 0x3f, 0x45, 0x46:
			return "haswell"
		case 0x3d, 0x47, 0x4f, 0x56:
			return "broadwell"
		case 0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6:
			return "skylake"
		case 0x55:
			return "skylake-sp" // also Cascade Lake, Cooper Lake
		case 0x6a, 0x6c:
			return "icelake-sp"
		case 0x7d, 0x7e, 0x8c, 0x8d, 0xa7:
			return "icelake-client" // also Tiger Lake, Rocket Lake
		case 0x8f, 0xcf, 0xad, 0xae:
			return "sapphire-rapids" // also Emerald Rapids, Granite Rapids
		case 0x97, 0x9a, 0xb7, 0xba, 0xbf:
			return "alderlake-hybrid"
		}
	}
	return "unknown"
}

// ipcFor is the number of instructions of kernel family fam ("sse_mul_add",
// "avx2_fma", "avx512_fma", "avx512_fp16_fma", "amx", ...) one core issues
// per cycle, or 0 when bench does not know it for m. Sources: Intel 64 and
// IA-32 Optimization Reference Manual, AMD Software Optimization Guides for
// family 17h/19h/1Ah, uops.info measurements.
//
//	core             SSE mul+add  256-bit FMA  512-bit FMA  FP16 FMA zmm  AMX TDP*
//	zen1             4            1            -            -             -
//	zen2, zen3       4            2            -            -             -
//	zen4             4            2            1 (2x256)    -             -
//	zen5 (Turin,     4            2            2            -             -
//	  Granite Ridge)
//	haswell,         2            2            -            -             -
//	  broadwell, skylake
//	skylake-sp       2            2            2 Platinum/Gold 6, 1 Silver/Bronze,
//	                                           else unknown (1 or 2 FMA units)
//	icelake-sp       2            2            2            -             -
//	icelake-client   2            2            1            -             -
//	sapphire-rapids  unknown (3   2            2            2             1/16
//	                 FADD ports)
//	alderlake-hybrid unknown: P- and E-cores differ
//
// SSE mul+add counts MULPx and ADDPx together: AMD cores have two FMUL and
// two FADD pipes, Intel cores before Golden Cove two ports that do both.
// AMX: one TDPBF16PS/TDPBUSD (16x16x32 bf16 or 16x16x64 int8) per 16
// cycles, i.e. 1024 bf16 / 2048 int8 FLOP-or-op per cycle per core. The dot
// products (VDPBF16PS, VPDPBUSD) are left unknown: their port assignment is
// not documented consistently.
func ipcFor(fam string, m Microarch) float64 {
	name := m.Name()
	switch fam {
	case "sse_mul_add":
		switch name {
		case "zen1", "zen2", "zen3", "zen4", "zen5", "zen5-mobile":
			return 4
		case "haswell", "broadwell", "skylake", "skylake-sp", "icelake-sp", "icelake-client":
			return 2
		}
	case "avx2_fma":
		switch name {
		case "zen1":
			return 1
		case "zen2", "zen3", "zen4", "zen5", "zen5-mobile",
			"haswell", "broadwell", "skylake", "skylake-sp", "icelake-sp", "icelake-client", "sapphire-rapids":
			return 2
		}
	case "avx512_fma":
		switch name {
		case "zen4", "icelake-client":
			return 1
		case "zen5", "icelake-sp", "sapphire-rapids":
			return 2
		case "skylake-sp":
			switch b := m.Brand; {
			case strings.Contains(b, "Platinum"), strings.Contains(b, "Gold 6"):
				return 2
			case strings.Contains(b, "Silver"), strings.Contains(b, "Bronze"):
				return 1
			}
		}
	case "avx512_fp16_fma":
		if name == "sapphire-rapids" {
			return 2
		}
	case "amx":
		if name == "sapphire-rapids" {
			return 1.0 / 16
		}
	}
	return 0
}
