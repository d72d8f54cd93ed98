//go:build !(linux && amd64)

package amx

import (
	"errors"
	"runtime"
)

// Permit reports that the AMX tile-data permission is only requested on
// Linux/amd64: other systems enable the tile state themselves where they support
// AMX, which this module has not checked, so it does not use AMX there.
func Permit() error {
	return errors.New("AMX tile data: the permission is only requested on Linux/amd64 (this is " + runtime.GOOS + "/" + runtime.GOARCH + ")")
}
