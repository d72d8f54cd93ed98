package quant

import "github.com/cpubench/bench/internal/hugepage"

// makeBytes returns n zeroed bytes for packed quants, advised for
// transparent huge pages from hugepage.Min bytes (internal/hugepage): a
// DRAM-sized weight streamed on 4 KiB pages pays a TLB miss every 4 KiB
// and its hardware prefetch stops at every page boundary, which the
// memory probe's DRAM read roof, measured on pages advised huge (probes:
// memory.dram), does not.
func makeBytes(n int) []byte { return hugepage.Make[byte](n) }

// makeWords is makeBytes for n 32-bit scale words.
func makeWords(n int) []uint32 { return hugepage.Make[uint32](n) }
