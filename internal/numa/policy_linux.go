//go:build linux

package numa

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// More of <linux/mempolicy.h>.
const (
	mpolInterleave = 3      // MPOL_INTERLEAVE
	mpolMFMove     = 1 << 1 // MPOL_MF_MOVE: move this process's pages already placed elsewhere
)

// sysCPUDir is where the kernel lists CPUs (cpuN/nodeM links).
var sysCPUDir = "/sys/devices/system/cpu"

// nodeMask builds the C nodemask of nodes, or an error naming a bad node.
func nodeMask(what string, nodes []int) ([]uint, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("numa: %s: no nodes", what)
	}
	top := 0
	for _, n := range nodes {
		if n < 0 || n >= maxNodes {
			return nil, fmt.Errorf("numa: %s: node %d: no such node: %w", what, n, ErrNoNUMA)
		}
		top = max(top, n)
	}
	mask := make([]uint, top/bits.UintSize+1)
	for _, n := range nodes {
		mask[n/bits.UintSize] |= 1 << (n % bits.UintSize)
	}
	return mask, nil
}

// checkRange checks that b is a non-empty sub-slice of a mapping starting on
// a page boundary.
func checkRange(what string, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("numa: %s: empty buffer", what)
	}
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%uintptr(os.Getpagesize()) != 0 {
		return fmt.Errorf("numa: %s: buffer at %#x does not start on a page boundary", what, p)
	}
	return nil
}

// Bind sets the memory policy of the pages of b, a page-aligned part of a
// buffer from Alloc (its length is rounded up to whole pages, so the page
// holding b's last byte is bound too), to MPOL_BIND on node, moving pages
// already placed elsewhere (MPOL_MF_MOVE). Pages not yet touched are placed
// on node when first written, by any thread. Errors: b empty or not
// starting on a page boundary, and mbind's, naming node and wrapping
// ErrNoNUMA as AllocOnNode's do.
func Bind(b []byte, node int) error {
	what := fmt.Sprintf("bind %d bytes to node %d", len(b), node)
	if err := checkRange(what, b); err != nil {
		return err
	}
	mask, err := nodeMask(what, []int{node})
	if err != nil {
		return err
	}
	if err := mbindFlags(b, mpolBind, mask, mpolMFMove); err != nil {
		return fmt.Errorf("numa: %s: %w", what, policyError("mbind", node, err))
	}
	return nil
}

// Interleave sets the memory policy of the pages of b (page-aligned, as
// Bind) to MPOL_INTERLEAVE over nodes: page i of the range goes to the
// nodes in turn, as `numactl --interleave` places a process's memory.
// Pages already placed are moved (MPOL_MF_MOVE). Errors: b empty or not
// page-aligned, no nodes, and mbind's (a node that does not exist or has
// no memory wraps ErrNoNUMA).
func Interleave(b []byte, nodes []int) error {
	what := fmt.Sprintf("interleave %d bytes over nodes %v", len(b), nodes)
	if err := checkRange(what, b); err != nil {
		return err
	}
	mask, err := nodeMask(what, nodes)
	if err != nil {
		return err
	}
	if err := mbindFlags(b, mpolInterleave, mask, mpolMFMove); err != nil {
		node := -1
		if len(nodes) == 1 || errors.Is(err, unix.EINVAL) {
			node = nodes[len(nodes)-1] // policyError's "no such node" message names one
		}
		return fmt.Errorf("numa: %s: %w", what, policyError("mbind", node, err))
	}
	return nil
}

// BindPages binds the pages of b (a buffer from Alloc, or a page-aligned
// part of one) to the nodes owners gives them (PageOwners: owners[i] for
// page i; -1 leaves a page's policy as it is), one mbind per run of pages
// with the same node. Errors: len(owners) not the number of pages of b,
// and Bind's.
func BindPages(b []byte, owners []int) error {
	ps := os.Getpagesize()
	if np := (len(b) + ps - 1) / ps; np != len(owners) {
		return fmt.Errorf("numa: bind pages: %d owners for %d pages", len(owners), np)
	}
	return runs(owners, func(p0, p1, node int) error {
		return Bind(b[p0*ps:min(p1*ps, len(b))], node)
	})
}

// mbindFlags is mbind with flags (MPOL_MF_*).
func mbindFlags(b []byte, mode int, mask []uint, flags int) error {
	maskp := unsafe.Pointer(&mask[0])
	maxnode := uintptr(len(mask))*bits.UintSize + 1
	_, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		uintptr(mode), uintptr(maskp), maxnode, uintptr(flags))
	if e != 0 {
		return e
	}
	return nil
}

// CPUNode returns the NUMA node of CPU cpu, from the nodeN link in
// /sys/devices/system/cpu/cpuN. A kernel without NUMA (no such link) puts
// every CPU on node 0. Errors: cpu < 0, or no /sys entry for it.
func CPUNode(cpu int) (int, error) {
	if cpu < 0 {
		return 0, fmt.Errorf("numa: node of CPU %d: no such CPU", cpu)
	}
	dir := filepath.Join(sysCPUDir, "cpu"+strconv.Itoa(cpu))
	if _, err := os.Stat(dir); err != nil {
		return 0, fmt.Errorf("numa: node of CPU %d: %w", cpu, err)
	}
	links, _ := filepath.Glob(filepath.Join(dir, "node[0-9]*"))
	for _, l := range links {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(l), "node")); err == nil {
			return n, nil
		}
	}
	return 0, nil
}
