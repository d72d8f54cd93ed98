//go:build !purego

package quant

// archImpls: the AVX2 and AVX512-VNNI kernels, not yet generated.
func archImpls() []*impl { return nil }
