package kernels

import (
	"fmt"
	"math/rand/v2"
)

// BuildChase lays a random cyclic permutation of the lines of buf into buf
// for Chase and returns the index to start from. buf holds one uint64 per
// element and is viewed as lines of lineBytes (a positive multiple of 8);
// only the first element of each line is used: buf[i*stride] (stride =
// lineBytes/8) is set to the index of the next line's first element. The
// permutation is one cycle through every whole line of buf (Sattolo's
// algorithm), drawn from a PCG seeded with seed, so the same (len(buf),
// lineBytes, seed) always gives the same chain. The other elements, and a
// partial last line, are not touched. start is 0 (line 0's element; on a
// single cycle every line is an equally good start).
//
// BuildChase panics if lineBytes is not a positive multiple of 8 or buf
// holds no whole line.
func BuildChase(buf []uint64, lineBytes int, seed uint64) (start uint64) {
	if lineBytes <= 0 || lineBytes%8 != 0 {
		panic(fmt.Sprintf("kernels: BuildChase: lineBytes %d: must be a positive multiple of 8", lineBytes))
	}
	stride := lineBytes / 8
	lines := len(buf) / stride
	if lines == 0 {
		panic(fmt.Sprintf("kernels: BuildChase: len(buf) %d elements: less than one line of %d bytes", len(buf), lineBytes))
	}
	// next[i] is the line after line i; Sattolo's shuffle of the identity
	// yields a permutation that is a single cycle of length lines.
	next := make([]uint64, lines)
	for i := range next {
		next[i] = uint64(i)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := lines - 1; i > 0; i-- {
		j := r.IntN(i) // j < i: this is what makes it one cycle
		next[i], next[j] = next[j], next[i]
	}
	for i, n := range next {
		buf[i*stride] = n * uint64(stride)
	}
	return 0
}

// Chase follows steps dependent loads from start and returns the final
// index (the checksum that keeps the loads alive):
//
//	i := start
//	for range steps {
//		i = buf[i]
//	}
//	return i
//
// Each load's address is the previous load's value, so the loop runs at one
// load-to-use latency per step; the bounds check is a predicted branch off
// the critical path.
func Chase(buf []uint64, start uint64, steps int) uint64 {
	i := start
	for range steps {
		i = buf[i]
	}
	return i
}
