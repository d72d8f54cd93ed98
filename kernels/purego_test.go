//go:build purego

package kernels

const purego = true
