//go:build !purego

package quant

func colSelfTestFn() string { return colSelfTest() }
