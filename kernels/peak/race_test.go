//go:build race

package peak

const raceEnabled = true
