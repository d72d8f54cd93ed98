//go:build purego || !amd64

package kernels

// No prefetching read kernel in this build (tag purego, or not amd64):
// ReadPF is its Go specification.
func readPF(x []float64, ahead int) float64 { return readPFGo(x, ahead) }

func readPFISA() string { return "go" }
