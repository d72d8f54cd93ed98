//go:build amd64 && !purego

package topology

// cpuidex executes CPUID with EAX = leaf, ECX = sub.
//
//go:noescape
func cpuidex(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// tscHz returns the TSC frequency in Hz that the CPU reports in CPUID leaf
// 0x15 (crystal Hz × EBX/EAX), else the one a hypervisor reports in leaf
// 0x40000010 (EAX, kHz), else 0.
func tscHz() float64 {
	if maxLeaf, _, _, _ := cpuidex(0, 0); maxLeaf >= 0x15 {
		den, num, crystal, _ := cpuidex(0x15, 0)
		if den != 0 && num != 0 && crystal != 0 {
			return float64(crystal) * float64(num) / float64(den)
		}
	}
	if _, _, ecx, _ := cpuidex(1, 0); ecx&(1<<31) != 0 { // hypervisor present
		if maxHV, _, _, _ := cpuidex(0x40000000, 0); maxHV >= 0x40000010 && maxHV < 0x50000000 {
			if khz, _, _, _ := cpuidex(0x40000010, 0); khz != 0 {
				return float64(khz) * 1e3
			}
		}
	}
	return 0
}
