//go:build !purego

package quant

// colSelfTestFn is the self-test of backend name's column-order tiles.
func colSelfTestFn(name string) string {
	if name == "avx512bw" {
		return bwSelfTest()
	}
	return colSelfTest()
}
