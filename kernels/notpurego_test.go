//go:build !purego

package kernels

const purego = false
