//go:build arm64 && linux

package cpu

import "golang.org/x/sys/unix"

// Linux arm64 hwcap bits (arch/arm64/include/uapi/asm/hwcap.h).
const (
	hwcapFP      = 1 << 0
	hwcapASIMD   = 1 << 1
	hwcapFPHP    = 1 << 9
	hwcapASIMDHP = 1 << 10
	hwcapASIMDDP = 1 << 20
	hwcapSVE     = 1 << 22

	hwcap2SVE2      = 1 << 1
	hwcap2I8MM      = 1 << 13
	hwcap2BF16      = 1 << 14
	hwcap2SMEI8I32  = 1 << 26
	hwcap2SMEF16F32 = 1 << 27
	hwcap2SMEB16F32 = 1 << 28
	hwcap2SMEF32F32 = 1 << 29
	hwcap2SMEFA64   = 1 << 30
	hwcap2SME       = 1 << 23
	hwcap2SME2      = 1 << 37

	atHWCAP  = 16
	atHWCAP2 = 26
)

// HWCAP and HWCAP2 are the raw auxiliary-vector words read at init.
var HWCAP, HWCAP2 uint64

func detect() {
	auxv, err := unix.Auxv()
	if err != nil {
		return
	}
	for _, kv := range auxv {
		switch kv[0] {
		case atHWCAP:
			HWCAP = uint64(kv[1])
		case atHWCAP2:
			HWCAP2 = uint64(kv[1])
		}
	}
	decodeHWCAP(HWCAP, HWCAP2)
}

func decodeHWCAP(h1, h2 uint64) {
	set := func(ok bool, name string, dst *bool) {
		*dst = ok
		if ok {
			RawFeatures = append(RawFeatures, name)
		}
	}
	var fp bool
	set(h1&hwcapFP != 0, "FP", &fp)
	set(h1&hwcapASIMD != 0, "ASIMD", &ARM64.HasASIMD)
	set(h1&hwcapFPHP != 0, "FPHP", &ARM64.HasFPHP)
	set(h1&hwcapASIMDHP != 0, "ASIMDHP", &ARM64.HasASIMDHP)
	set(h1&hwcapASIMDDP != 0, "ASIMDDP", &ARM64.HasASIMDDP)
	set(h1&hwcapSVE != 0, "SVE", &ARM64.HasSVE)
	set(h2&hwcap2SVE2 != 0, "SVE2", &ARM64.HasSVE2)
	set(h2&hwcap2I8MM != 0, "I8MM", &ARM64.HasI8MM)
	set(h2&hwcap2BF16 != 0, "BF16", &ARM64.HasBF16)
	set(h2&hwcap2SME != 0, "SME", &ARM64.HasSME)
	set(h2&hwcap2SME2 != 0, "SME2", &ARM64.HasSME2)
	set(h2&hwcap2SMEF32F32 != 0, "SMEF32F32", &ARM64.HasSMEF32F32)
	set(h2&hwcap2SMEB16F32 != 0, "SMEB16F32", &ARM64.HasSMEB16F32)
	set(h2&hwcap2SMEF16F32 != 0, "SMEF16F32", &ARM64.HasSMEF16F32)
	set(h2&hwcap2SMEI8I32 != 0, "SMEI8I32", &ARM64.HasSMEI8I32)
	set(h2&hwcap2SMEFA64 != 0, "SMEFA64", &ARM64.HasSMEFA64)
}
