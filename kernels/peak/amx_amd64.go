//go:build !purego && amd64

package peak

import "github.com/cpubench/bench/internal/amx"

// amxPermission is the process-wide AMX tile-data permission (Linux
// arch_prctl ARCH_REQ_XCOMP_PERM), shared with kernels/gemm's AMX
// backends: internal/amx.Permit.
func amxPermission() error { return amx.Permit() }
