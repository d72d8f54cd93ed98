//go:build !linux

package quant

import "unsafe"

// adviseHuge does nothing off Linux (no transparent huge pages).
func adviseHuge(unsafe.Pointer, int) {}
