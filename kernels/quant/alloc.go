package quant

import "unsafe"

// hugeMin is the smallest buffer makeBytes and makeWords advise for
// transparent huge pages: one 2 MiB page.
const hugeMin = 2 << 20

// makeBytes returns n zeroed bytes for packed quants. A buffer of at least
// hugeMin bytes is advised for transparent huge pages before the caller
// first writes it (adviseHuge; Linux, where THP is "always" or "madvise";
// best effort): a DRAM-sized weight streamed on 4 KiB pages pays a TLB
// miss every 4 KiB and its hardware prefetch stops at every page
// boundary, which the memory probe's DRAM read roof, measured on pages
// advised huge (probes: memory.dram), does not.
func makeBytes(n int) []byte {
	b := make([]byte, n)
	if n >= hugeMin {
		adviseHuge(unsafe.Pointer(unsafe.SliceData(b)), n)
	}
	return b
}

// makeWords is makeBytes for n 32-bit scale words.
func makeWords(n int) []uint32 {
	w := make([]uint32, n)
	if 4*n >= hugeMin {
		adviseHuge(unsafe.Pointer(unsafe.SliceData(w)), 4*n)
	}
	return w
}
