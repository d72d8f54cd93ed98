//go:build purego || !amd64

package quant

// pfImpls: no prefill kernels in this build (tag purego, or not amd64).
var pfImpls = map[string]*pfImpl{}
