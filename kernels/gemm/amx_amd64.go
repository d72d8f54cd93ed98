//go:build !purego

package gemm

import (
	"sync"

	"github.com/cpubench/bench/internal/amx"
	"github.com/cpubench/bench/internal/cpu"
)

// The AMX backends (amx.go describes the tiles, layouts and arithmetic):
// amx-bf16 runs amxTileBF16 (TDPBF16PS), amx-int8 amxTileI8 (TDPBSSD),
// both in amx_amd64.s. They are usable where the CPU reports AMX-TILE and
// AMX-BF16 or AMX-INT8, Linux grants the tile data (internal/amx.Permit),
// and the kernel's first-use self-test against its Go specification
// passes; how far this has run on hardware: internal/amx.Verified.
var (
	amxBF16Op = &amxOp{bf16: true, tile: amxTileBF16}
	amxI8Op   = &amxOp{tile: amxTileI8}
)

func amxImpls() []*impl {
	return []*impl{
		{name: "amx-bf16", isa: "amx", unit: MatrixUnit, dt: BF16, mr: amxMR, nr: amxNR, amx: amxBF16Op, verified: amx.Verified,
			lacks: func() string { return amxLacks("AMX-BF16", cpu.X86.HasAMXBF16, amxBF16Op) }},
		{name: "amx-int8", isa: "amx", unit: MatrixUnit, dt: Int8, mr: amxMR, nr: amxNR, amx: amxI8Op, verified: amx.Verified,
			lacks: func() string { return amxLacks("AMX-INT8", cpu.X86.HasAMXInt8, amxI8Op) }},
	}
}

// amxLacks is "" where the backend of op can run: the CPU features (read
// on every call, so cpu.Disable takes effect), then, once per process, the
// permission and the self-test (amxReady).
func amxLacks(feat string, has bool, op *amxOp) string {
	if l := lacks("AMX-TILE", cpu.X86.HasAMXTile, feat, has); l != "" {
		return l
	}
	return amxReady(op)
}

// amxReady asks Linux for the tile data and self-tests op's kernel, once
// per kernel; tests that fake an AMX CPU replace it.
var amxReady = func(op *amxOp) string {
	if op.bf16 {
		return amxBF16Ready()
	}
	return amxI8Ready()
}

var (
	amxBF16Ready = sync.OnceValue(func() string { return amxCheck(amxBF16Op, "TDPBF16PS") })
	amxI8Ready   = sync.OnceValue(func() string { return amxCheck(amxI8Op, "TDPBSSD") })
)

func amxCheck(op *amxOp, mnemonic string) string {
	if err := amx.Permit(); err != nil {
		return "unavailable: " + err.Error()
	}
	return amxSelfTest(op, op.tile, mnemonic)
}

// amxTileBF16 and amxTileI8 are amxTileFn (see amx.go) with TDPBF16PS and
// TDPBSSD. They load the tile configuration at cfg on entry and release
// the tiles on exit.
//
//go:noescape
func amxTileBF16(cfg *byte, a *byte, b *byte, bstride int, np int, nkb int, parts int, c *byte, load int)

//go:noescape
func amxTileI8(cfg *byte, a *byte, b *byte, bstride int, np int, nkb int, parts int, c *byte, load int)
