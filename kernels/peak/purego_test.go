//go:build purego

package peak

const purego = true
