//go:build !purego && amd64 && !linux

package peak

import "errors"

func amxPermission() error {
	return errors.New("AMX tile-data permission is only requested on Linux")
}
