//go:build !race

package engine

// raceEnabled: under the race detector, the attention and quantized-model
// tests leave out their pure-Go backends' variants when an assembly backend
// is present (attnBackends, TestQuantReference): the race detector makes
// them minutes long, and the purego pass of scripts/test.sh, where the Go
// backends are the only ones, runs each of them.
const raceEnabled = false
