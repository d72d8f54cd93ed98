package amx

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// The arch_prctl request and the XSAVE state component of the tile data
// (Linux arch/x86/include/uapi/asm/prctl.h, asm/fpu/types.h).
const (
	archReqXcompPerm  = 0x1023
	xfeatureXtiledata = 18
)

var permit = sync.OnceValue(func() error {
	if _, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); errno != 0 {
		return fmt.Errorf("Linux refused AMX tile data: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): %v", errno)
	}
	return nil
})

// Permit asks Linux, once per process, for permission to use the AMX tile
// data state; later calls return the first call's result. Error: the
// kernel refused (it predates 5.16, the CPU has no AMX, or the process's
// signal stacks are too small for the tile state: ENOSPC).
func Permit() error { return permit() }
