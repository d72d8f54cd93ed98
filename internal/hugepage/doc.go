// Package hugepage allocates the long-lived buffers that kernels stream
// (packed weights, the KV cache, the memory probe's arrays) advised for
// transparent huge pages: madvise(MADV_HUGEPAGE) on Linux, before the
// first touch, where /sys/kernel/mm/transparent_hugepage/enabled is
// "always" or "madvise". A buffer streamed on 4 KiB pages pays a TLB miss
// every 4 KiB and its hardware prefetch stops at every page boundary,
// which the memory probe's roofs, measured on advised pages, do not:
// measured on the repository's Zen 5 VM (THP "madvise"), a DRAM-sized
// fp32 GEMV (bench gemm --m 1 --n 16384 --k 8192 --threads 1, 3
// alternated rounds) streamed 37.7-41.9 GB/s on 4 KiB pages and
// 41.5-42.8 on advised ones, and kernels/quant's GEMV markedly below its
// roof before its weights were advised.
//
// The advice is best effort: with THP "never", an old kernel, fragmented
// memory or under qemu-user the buffer keeps 4 KiB pages, and nothing
// fails; Allowed says whether advice can take effect, Advised what smaps
// shows.
//
// This package imports no other package of bench.
package hugepage
