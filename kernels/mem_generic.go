//go:build purego || !(amd64 || arm64)

package kernels

import "github.com/cpubench/bench/kernels/registry"

// archMemImpls: no assembly in this build (tag purego, or a GOARCH without
// kernels); only the "go" implementation exists.
func archMemImpls() []registry.Entry[MemImpl] { return nil }
