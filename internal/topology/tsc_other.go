//go:build !amd64 || purego

package topology

// tscHz returns 0: the TSC frequency is read with CPUID (amd64 assembly,
// left out under the purego tag).
func tscHz() float64 { return 0 }
