//go:build !race

package peak

const raceEnabled = false
