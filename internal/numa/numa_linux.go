//go:build linux

package numa

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory policy constants from <linux/mempolicy.h>; golang.org/x/sys/unix
// does not define them.
const (
	mpolDefault = 0 // MPOL_DEFAULT
	mpolBind    = 2 // MPOL_BIND
	mpolFNode   = 1 // MPOL_F_NODE: get_mempolicy returns a node id
	mpolFAddr   = 2 // MPOL_F_ADDR: get_mempolicy looks up an address

	maxNodes = 4096 * 8 // the kernel rejects nodemasks longer than a page of bits
)

// sysNodeDir is where the kernel lists NUMA nodes; used for error messages.
var sysNodeDir = "/sys/devices/system/node"

// Alloc maps size bytes of private anonymous read-write memory with mmap: the
// slice has len size and starts on a page boundary; it is not on the Go heap
// and must be released with Free. Pages are not touched, so none is placed
// until first written. size <= 0 is an error naming it.
func Alloc(size int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return nil, err
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("numa: alloc %d bytes: mmap: %w", size, err)
	}
	return b, nil
}

// AllocOnNode maps size bytes like Alloc, binds them to node with
// mbind(MPOL_BIND) before any page is touched, then writes one byte (zero) to
// every page from the calling thread so every page is placed on node now
// rather than at first use. If node runs out of memory while touching, the
// kernel's OOM killer acts, as for any MPOL_BIND allocation.
//
// Errors name size and node. They wrap ErrNoNUMA (and the errno) when mbind is
// missing (ENOSYS: kernel without CONFIG_NUMA), denied (EPERM: e.g. a seccomp
// profile) or when node does not exist or has no memory (EINVAL); on error
// nothing stays mapped.
func AllocOnNode(size int, node int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return nil, err
	}
	if node < 0 || node >= maxNodes {
		return nil, fmt.Errorf("numa: alloc %d bytes on node %d: no such node: %w", size, node, ErrNoNUMA)
	}
	b, err := Alloc(size)
	if err != nil {
		return nil, fmt.Errorf("numa: alloc %d bytes on node %d: %w", size, node, err)
	}
	mask := make([]uint, node/bits.UintSize+1)
	mask[node/bits.UintSize] = 1 << (node % bits.UintSize)
	if err := mbind(b, mpolBind, mask); err != nil {
		unix.Munmap(b)
		return nil, fmt.Errorf("numa: alloc %d bytes on node %d: %w", size, node, policyError("mbind", node, err))
	}
	ps := os.Getpagesize()
	for i := 0; i < len(b); i += ps {
		b[i] = 0
	}
	return b, nil
}

// policyError wraps an errno from a memory-policy syscall, adding ErrNoNUMA
// when it means "no NUMA here" or "no such node".
func policyError(call string, node int, errno error) error {
	switch {
	case errors.Is(errno, unix.ENOSYS), errors.Is(errno, unix.EPERM):
		return fmt.Errorf("%s: %w: %w", call, errno, ErrNoNUMA)
	case errors.Is(errno, unix.EINVAL) && node >= 0:
		have := "unknown"
		if s, err := os.ReadFile(sysNodeDir + "/has_memory"); err == nil {
			have = strings.TrimSpace(string(s))
		}
		return fmt.Errorf("%s: node %d does not exist or has no memory (nodes with memory: %s): %w: %w",
			call, node, have, errno, ErrNoNUMA)
	}
	return fmt.Errorf("%s: %w", call, errno)
}

// mbind sets the memory policy of the pages of b (page-aligned) to mode with
// the nodes in mask (a C unsigned long array: bit n%UintSize of
// mask[n/UintSize] is node n; nil for MPOL_DEFAULT).
func mbind(b []byte, mode int, mask []uint) error {
	var maskp unsafe.Pointer
	var maxnode uintptr
	if len(mask) > 0 {
		maskp = unsafe.Pointer(&mask[0])
		// The kernel reads maxnode-1 bits (as libnuma, pass one more).
		maxnode = uintptr(len(mask))*bits.UintSize + 1
	}
	_, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		uintptr(mode), uintptr(maskp), maxnode, 0)
	runtime.KeepAlive(mask)
	if e != 0 {
		return e
	}
	return nil
}

// Free unmaps a buffer returned by Alloc or AllocOnNode (or a reslice of it
// that keeps its start). Free(nil) does nothing. Using b after Free faults.
func Free(b []byte) error {
	if cap(b) == 0 {
		return nil
	}
	if err := unix.Munmap(b[:cap(b)]); err != nil {
		return fmt.Errorf("numa: free %d bytes at %p: munmap: %w (not from Alloc?)", cap(b), unsafe.SliceData(b), err)
	}
	return nil
}

// PageNodes samples up to samples pages spread evenly over b (its first and
// last page included) and returns how many of them are on each node: the map's
// keys are node numbers, its values page counts summing to
// min(samples, pages in b). It asks move_pages with nodes = NULL, which moves
// nothing and does not fault pages in; a page it cannot report is counted
// under the negative errno it gives: -2 (-ENOENT) or -14 (-EFAULT, where no
// page table covers it yet) for a page not yet touched. Resident pages that
// move_pages reports so (Linux < 6.5 does for pages marked by automatic NUMA
// balancing) are asked about again with get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR). Where move_pages is missing or denied
// get_mempolicy answers for every page, and then faults untouched pages in
// (on the node their policy chooses).
//
// Errors: empty b, samples <= 0, and both syscalls failing (wrapping ErrNoNUMA
// for ENOSYS or EPERM).
func PageNodes(b []byte, samples int) (map[int]int, error) {
	_, nodes, err := SamplePages(b, samples)
	if err != nil {
		return nil, err
	}
	count := make(map[int]int)
	for _, s := range nodes {
		count[s]++
	}
	return count, nil
}

// SamplePages is PageNodes page by page: it samples the same pages and
// returns their indices in b (pages[i]: page pages[i] of the pages b
// touches, counted from the one holding b[0], ascending) and the node each
// is on (nodes[i], or the negative errno PageNodes counts it under), so a
// caller can compare every sampled page with the node it was meant for.
// Errors as PageNodes'.
func SamplePages(b []byte, samples int) (pages, nodes []int, err error) {
	if len(b) == 0 {
		return nil, nil, errors.New("numa: page nodes: empty buffer")
	}
	if samples <= 0 {
		return nil, nil, fmt.Errorf("numa: page nodes: %d samples: must be positive", samples)
	}
	ps := uintptr(os.Getpagesize())
	first := uintptr(unsafe.Pointer(&b[0])) &^ (ps - 1)
	last := uintptr(unsafe.Pointer(&b[len(b)-1])) &^ (ps - 1)
	npages := int((last-first)/ps) + 1
	n := min(samples, npages)
	addrs := make([]uintptr, n)
	pages = make([]int, n)
	for i := range addrs {
		idx := 0
		if n > 1 {
			idx = i * (npages - 1) / (n - 1)
		}
		pages[i] = idx
		addrs[i] = first + uintptr(idx)*ps
	}
	status := make([]int32, n)
	_, _, e := unix.Syscall6(unix.SYS_MOVE_PAGES, 0, uintptr(n), uintptr(unsafe.Pointer(&addrs[0])),
		0, uintptr(unsafe.Pointer(&status[0])), 0)
	switch {
	case e == unix.ENOSYS || e == unix.EPERM:
		for i, p := range addrs {
			node, e2 := pageNode(p)
			if e2 != 0 {
				runtime.KeepAlive(b)
				return nil, nil, fmt.Errorf("numa: page nodes: move_pages: %w; %w", e, policyError("get_mempolicy", -1, e2))
			}
			status[i] = node
		}
	case e != 0:
		runtime.KeepAlive(b)
		return nil, nil, fmt.Errorf("numa: page nodes: %w", policyError("move_pages", -1, e))
	default:
		// Before Linux 6.5, move_pages reports -ENOENT (or -EFAULT for a
		// transparent huge page) for a present page that automatic NUMA
		// balancing has marked for a hinting fault (kernel.numa_balancing=1,
		// default-policy memory). Ask get_mempolicy about those pages that
		// mincore says are resident.
		vec := make([]byte, 1)
		for i, p := range addrs {
			if status[i] != -int32(unix.ENOENT) && status[i] != -int32(unix.EFAULT) {
				continue
			}
			_, _, e2 := unix.Syscall(unix.SYS_MINCORE, p, ps, uintptr(unsafe.Pointer(&vec[0])))
			if e2 != 0 || vec[0]&1 == 0 {
				continue
			}
			if node, e2 := pageNode(p); e2 == 0 {
				status[i] = node
			}
		}
	}
	runtime.KeepAlive(b)
	nodes = make([]int, n)
	for i, s := range status {
		nodes[i] = int(s)
	}
	return pages, nodes, nil
}

// pageNode returns the node of the page at address p with
// get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR), which faults the page in if needed.
func pageNode(p uintptr) (int32, unix.Errno) {
	var node int32
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&node)), 0, 0,
		p, mpolFNode|mpolFAddr, 0)
	return node, e
}

// Available reports nil if the NUMA memory-policy syscalls work here, else an
// error saying why, wrapping ErrNoNUMA for ENOSYS and EPERM:
// "numa: mbind: function not implemented: numa: NUMA memory policy unavailable".
// It maps one page and sets its policy to MPOL_DEFAULT, which works on any
// NUMA-capable kernel, even with a single node.
func Available() error {
	b, err := Alloc(os.Getpagesize())
	if err != nil {
		return err
	}
	defer unix.Munmap(b)
	if err := mbind(b, mpolDefault, nil); err != nil {
		return fmt.Errorf("numa: %w", policyError("mbind", -1, err))
	}
	return nil
}
