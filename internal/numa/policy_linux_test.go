//go:build linux

package numa

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPolicyError(t *testing.T) {
	sysNodeDir = t.TempDir() // no has_memory file
	defer func() { sysNodeDir = "/sys/devices/system/node" }()
	for _, tc := range []struct {
		errno  unix.Errno
		node   int
		noNUMA bool
		want   string
	}{
		{unix.ENOSYS, 1, true, "mbind: function not implemented: numa: NUMA memory policy unavailable"},
		{unix.EPERM, 1, true, "mbind: operation not permitted"},
		{unix.EINVAL, 3, true, "node 3 does not exist or has no memory (nodes with memory: unknown)"},
		{unix.EINVAL, -1, false, "mbind: invalid argument"},
		{unix.ENOMEM, 1, false, "mbind: cannot allocate memory"},
	} {
		err := policyError("mbind", tc.node, tc.errno)
		if errors.Is(err, ErrNoNUMA) != tc.noNUMA || !errors.Is(err, tc.errno) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("policyError(mbind, %d, %v) = %q; want it to contain %q, wrap the errno and wrap ErrNoNUMA: %v",
				tc.node, tc.errno, err, tc.want, tc.noNUMA)
		}
	}
}
