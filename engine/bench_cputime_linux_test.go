package engine

import "syscall"

// threadCPUSeconds is the CPU time (user + system) of the calling OS
// thread, from getrusage(RUSAGE_THREAD): on a loaded machine the
// benchmarks report rates per second of their thread's CPU time beside
// the wall-clock ones. ok is false where it cannot be read.
func threadCPUSeconds() (sec float64, ok bool) {
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0, false
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6, true
}
