//go:build !purego && amd64 && linux

package peak

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Linux keeps AMX tile data (XFEATURE_XTILEDATA, state component 18) off
// until a process asks for it with arch_prctl(ARCH_REQ_XCOMP_PERM); a
// thread that executes a tile instruction before that gets SIGILL. The
// permission is process-wide and asked for once.
const (
	archReqXcompPerm  = 0x1023
	xfeatureXtiledata = 18
)

var amxPerm = sync.OnceValue(func() error {
	if _, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); errno != 0 {
		return fmt.Errorf("Linux refused AMX tile data: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): %v", errno)
	}
	return nil
})

func amxPermission() error { return amxPerm() }
