//go:build purego

package gemm

const purego = true
