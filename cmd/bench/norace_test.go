//go:build !race

package main

// raceEnabled: tests that only measure size (a real model's shapes)
// skip under the race detector, which makes them minutes long; the
// purego pass of scripts/test.sh runs them.
const raceEnabled = false
