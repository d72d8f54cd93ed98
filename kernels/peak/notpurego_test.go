//go:build !purego

package peak

const purego = false
